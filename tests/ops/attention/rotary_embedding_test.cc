// RotaryEmbedding-23, inputs (X, cos_cache, sin_cache, position_ids?): 4-D and 3-D inputs,
// 2-D caches gathered by position_ids or 3-D (batch, seq, dim / 2) caches without them, full
// (rotary_embedding_dim 0) and partial rotation (the tail passes through), halves and
// interleaved pairs, broadcasting and negative ids as the function body's Gather / Mul allow,
// and errors. Expected values come from a double-precision oracle written here.
#include <cmath>

#include "refeval/builder.h"
#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

namespace {

std::vector<double> wave(int64_t n, double f) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(f * double(i + 1)) + 0.25 * double(i % 3));
  return v;
}

struct Rope {
  int64_t B = 1, N = 1, S = 1, H = 4, rot = 0;  // rot 0: full
  bool three_d = false, interleaved = false;
  std::vector<int64_t> pos;  // (B, S) ids into a (max_pos, rot / 2) cache; empty: 3-D caches
  Shape pos_shape;           // defaults to (B, S)
  int64_t max_pos = 8;
};

// The rotation for X laid out (B, N, S, H) in `x4`; cos/sin of angle(row, i) = (row + 1) * (i + 1) / 7.
std::vector<double> oracle(const Rope& r, const std::vector<double>& x4) {
  const int64_t rd = r.rot == 0 ? r.H : r.rot, half = rd / 2;
  std::vector<double> y = x4;
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t n = 0; n < r.N; ++n)
      for (int64_t s = 0; s < r.S; ++s) {
        const int64_t row = r.pos.empty() ? b * r.S + s : r.pos[size_t(b * r.S + s)];
        const int64_t base = ((b * r.N + n) * r.S + s) * r.H;
        for (int64_t i = 0; i < half; ++i) {
          const double angle = double(row + 1) * double(i + 1) / 7;
          const int64_t a = r.interleaved ? 2 * i : i, c = r.interleaved ? 2 * i + 1 : i + half;
          const double x1 = x4[size_t(base + a)], x2 = x4[size_t(base + c)];
          y[size_t(base + a)] = std::cos(angle) * x1 - std::sin(angle) * x2;
          y[size_t(base + c)] = std::sin(angle) * x1 + std::cos(angle) * x2;
        }
      }
  return y;
}

// (B, N, S, H) -> (B, S, N * H)
std::vector<double> to_3d(const Rope& r, const std::vector<double>& x4) {
  std::vector<double> out;
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t s = 0; s < r.S; ++s)
      for (int64_t n = 0; n < r.N; ++n)
        for (int64_t h = 0; h < r.H; ++h) out.push_back(x4[size_t(((b * r.N + n) * r.S + s) * r.H + h)]);
  return out;
}

void check_rope(const Rope& r, DType dt = DType::Float, Tolerance tol = {1e-5, 1e-6}) {
  const int64_t half = (r.rot == 0 ? r.H : r.rot) / 2;
  const std::vector<double> x4 = wave(r.B * r.N * r.S * r.H, 0.7);
  // Caches: (max_pos, half) with row = position, or (B, S, half) with row = b * S + s.
  const int64_t rows = r.pos.empty() ? r.B * r.S : r.max_pos;
  std::vector<double> cs, sn;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t i = 0; i < half; ++i) {
      cs.push_back(std::cos(double(row + 1) * double(i + 1) / 7));
      sn.push_back(std::sin(double(row + 1) * double(i + 1) / 7));
    }
  const Shape cache_shape = r.pos.empty() ? Shape{r.B, r.S, half} : Shape{r.max_pos, half};
  std::vector<Attribute> attrs;
  if (r.three_d) attrs.push_back(attr("num_heads", r.N));
  if (r.rot) attrs.push_back(attr("rotary_embedding_dim", r.rot));
  if (r.interleaved) attrs.push_back(attr("interleaved", int64_t(1)));
  const Shape xs = r.three_d ? Shape{r.B, r.S, r.N * r.H} : Shape{r.B, r.N, r.S, r.H};
  Values in = {from_doubles(dt, xs, r.three_d ? to_3d(r, x4) : x4), from_doubles(dt, cache_shape, cs), from_doubles(dt, cache_shape, sn)};
  std::vector<std::string> names = {"x", "c", "s"};
  if (!r.pos.empty()) {
    names.push_back("p");
    std::vector<int64_t> fed = r.pos;
    if (!r.pos_shape.empty()) fed.resize(size_t(shape_size(r.pos_shape)));
    in.push_back(tensor<int64_t>(r.pos_shape.empty() ? Shape{r.B, r.S} : r.pos_shape, fed));
  }
  // Negative ids count from the end of the cache: the oracle sees the row they name.
  Rope resolved = r;
  for (int64_t& p : resolved.pos) p = p < 0 ? p + r.max_pos : p;
  const std::vector<double> want = oracle(resolved, x4);
  auto out = run_node(node("RotaryEmbedding", names, {"y"}, attrs), in, 23);
  check_equal(out[0], from_doubles(dt, xs, r.three_d ? to_3d(r, want) : want), tol);
}

}  // namespace

TEST_CASE("RotaryEmbedding rotates pairs by the cached angles (hand-checked)") {
  // A quarter turn (cos 0, sin 1) maps (x1, x2) to (-x2, x1); features past the rotary dim stay.
  const Tensor cos_c = tensor<float>({1, 1, 1}, {0}), sin_c = tensor<float>({1, 1, 1}, {1});
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor x; Tensor expected; };
  const Case cases[] = {
      {"halves", {}, tensor<float>({1, 1, 1, 2}, {1, 2}), tensor<float>({1, 1, 1, 2}, {-2, 1})},
      {"3-D with num_heads", {attr("num_heads", int64_t(1))}, tensor<float>({1, 1, 2}, {1, 2}), tensor<float>({1, 1, 2}, {-2, 1})},
      {"partial rotary dim", {attr("rotary_embedding_dim", int64_t(2))}, tensor<float>({1, 1, 1, 4}, {1, 2, 3, 4}),
       tensor<float>({1, 1, 1, 4}, {-2, 1, 3, 4})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(node("RotaryEmbedding", {"x", "c", "s"}, {"y"}, c.attrs), {c.x, cos_c, sin_c});
    check_equal(out[0], c.expected);
  }
  // Interleaved pairs with position_ids picking row 1 of a (2, 1) cache.
  auto out = run_node(node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}, {attr("interleaved", int64_t(1))}),
                      {tensor<float>({1, 1, 1, 2}, {1, 2}), tensor<float>({2, 1}, {1, 0}), tensor<float>({2, 1}, {0, 1}),
                       tensor<int64_t>({1, 1}, {1})});
  check_equal(out[0], tensor<float>({1, 1, 1, 2}, {-2, 1}));
}

TEST_CASE("RotaryEmbedding against the oracle") {
  struct Case { const char* what; Rope r; };
  auto R = [](auto f) { Rope r; f(r); return r; };
  const Case cases[] = {
      {"4-D, position_ids, full rotation", R([](Rope& r) { r.B = 2, r.N = 2, r.S = 3, r.H = 6, r.pos = {0, 1, 2, 5, 6, 7}; })},
      {"4-D, position_ids, interleaved", R([](Rope& r) { r.B = 2, r.N = 2, r.S = 3, r.H = 6, r.interleaved = true, r.pos = {3, 1, 2, 0, 0, 7}; })},
      {"3-D, position_ids, partial 4 of 8", R([](Rope& r) { r.B = 2, r.N = 3, r.S = 2, r.H = 8, r.rot = 4, r.three_d = true, r.pos = {1, 2, 4, 5}; })},
      {"3-D, position_ids, partial interleaved", R([](Rope& r) { r.B = 1, r.N = 2, r.S = 3, r.H = 6, r.rot = 2, r.three_d = true, r.interleaved = true, r.pos = {0, 3, 6}; })},
      {"4-D, 3-D caches (no position_ids)", R([](Rope& r) { r.B = 2, r.N = 2, r.S = 3, r.H = 4; })},
      {"3-D, 3-D caches, partial", R([](Rope& r) { r.B = 2, r.N = 2, r.S = 2, r.H = 6, r.rot = 4, r.three_d = true; })},
      {"4-D, 3-D caches, interleaved, partial", R([](Rope& r) { r.B = 1, r.N = 3, r.S = 4, r.H = 8, r.rot = 6, r.interleaved = true; })},
      {"rotary_embedding_dim equal to head_size", R([](Rope& r) { r.N = 2, r.S = 2, r.H = 4, r.rot = 4, r.pos = {2, 3}; })},
      {"position_ids of batch 1 broadcast over the batch", R([](Rope& r) { r.B = 2, r.N = 1, r.S = 3, r.H = 4, r.pos = {4, 5, 6, 4, 5, 6}, r.pos_shape = {1, 3}; })},
      {"negative position ids count from the cache end", R([](Rope& r) { r.B = 1, r.N = 1, r.S = 2, r.H = 4, r.pos = {-1, -8}; })},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_rope(c.r);
  }
  check_rope(R([](Rope& r) { r.B = 2, r.N = 2, r.S = 2, r.H = 4, r.pos = {0, 1, 1, 2}; }), DType::Float16, {2e-3, 2e-3});
  check_rope(R([](Rope& r) { r.B = 1, r.N = 2, r.S = 2, r.H = 4, r.rot = 2; }), DType::BFloat16, {2e-2, 2e-2});
}

TEST_CASE("RotaryEmbedding errors") {
  const Tensor x4 = tensor<float>({1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor c2 = tensor<float>({2, 2}, {1, 1, 1, 1}), pos = tensor<int64_t>({1, 1}, {0});
  auto run = [](std::vector<Attribute> attrs, Values in) {
    std::vector<std::string> names = {"x", "c", "s", "p"};
    names.resize(in.size());
    return run_node(node("RotaryEmbedding", names, {"y"}, std::move(attrs)), in, 23);
  };
  CHECK_THROWS_WITH_AS(run({}, {tensor<float>({1, 1, 4}, {1, 2, 3, 4}), c2, c2, pos}), doctest::Contains("3-D input needs the num_heads attribute"), Error);
  CHECK_THROWS_WITH_AS(run({attr("num_heads", int64_t(3))}, {tensor<float>({1, 1, 4}, {1, 2, 3, 4}), c2, c2, pos}),
                       doctest::Contains("hidden size is not a multiple of num_heads"), Error);
  CHECK_THROWS_WITH_AS(run({}, {tensor<float>({1, 4}, {1, 2, 3, 4}), c2, c2, pos}), doctest::Contains("input must be 3-D or 4-D"), Error);
  CHECK_THROWS_WITH_AS(run({attr("rotary_embedding_dim", int64_t(3))}, {x4, c2, c2, pos}),
                       doctest::Contains("rotary_embedding_dim 3 must be even and at most head_size 4"), Error);
  CHECK_THROWS_WITH_AS(run({attr("rotary_embedding_dim", int64_t(6))}, {x4, c2, c2, pos}),
                       doctest::Contains("rotary_embedding_dim 6 must be even and at most head_size 4"), Error);
  CHECK_THROWS_WITH_AS(run({}, {x4, tensor<float>({2, 1}, {1, 1}), tensor<float>({2, 1}, {1, 1}), pos}),
                       doctest::Contains("caches must have shape (max_position, 2)"), Error);
  CHECK_THROWS_WITH_AS(run({}, {x4, c2, c2, tensor<int64_t>({1, 1}, {2})}), doctest::Contains("position id 2 is outside [-2, 2)"), Error);
  CHECK_THROWS_WITH_AS(run({}, {x4, c2, c2, tensor<int64_t>({1, 1}, {-3})}), doctest::Contains("position id -3 is outside [-2, 2)"), Error);
  CHECK_THROWS_WITH_AS(run({}, {x4, c2, c2, tensor<int64_t>({1, 2}, {0, 0})}), doctest::Contains("position_ids of shape (1, 2) does not broadcast"), Error);
  CHECK_THROWS_WITH_AS(run({}, {x4, c2, c2, tensor<int32_t>({1, 1}, {0})}), doctest::Contains("position_ids must be int64"), Error);
  CHECK_THROWS_WITH_AS(run({}, {x4, c2, c2}), doctest::Contains("without position_ids the caches must have shape (1, 1, 2)"), Error);
  CHECK_THROWS_WITH_AS(run({}, {x4, tensor<double>({2, 2}, {1, 1, 1, 1}), c2, pos}), doctest::Contains("cos_cache and sin_cache must have the input's type"), Error);
}
