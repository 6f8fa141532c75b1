// com.microsoft RotaryEmbedding: halves vs interleaved pairs, start position vs per-token
// position_ids, partial rotary dim, 3-D and 4-D layouts, agreement with ONNX RotaryEmbedding-23,
// and errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
// Position 0 is the identity; position 1 turns pair 0 by 90 degrees and leaves pair 1 alone.
const Tensor kCos = tensor<float>({2, 2}, {1, 1, 0, 1}), kSin = tensor<float>({2, 2}, {0, 0, 1, 0});
Value rope(const Tensor& x, const Tensor& pos, std::vector<Attribute> attrs, const Tensor& c = kCos, const Tensor& s = kSin) {
  return run_node(node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, std::move(attrs), "rope", "com.microsoft"), {x, pos, c, s})[0];
}
}  // namespace

TEST_CASE("RotaryEmbedding: which values pair up, and where positions come from") {
  const Tensor x = tensor<float>({1, 1, 4}, {1, 2, 3, 4}), start1 = tensor<int64_t>({1}, {1});
  struct Case { const char* what; Tensor x, pos; std::vector<Attribute> attrs; Tensor c, s, expected; };
  const Case cases[] = {
      // halves: pair 0 is (x0, x2) = (1, 3) -> (-3, 1)
      {"halves", x, start1, {}, kCos, kSin, tensor<float>({1, 1, 4}, {-3, 2, 1, 4})},
      // interleaved: pair 0 is (x0, x1) = (1, 2) -> (-2, 1)
      {"interleaved", x, start1, {attr("interleaved", int64_t(1))}, kCos, kSin, tensor<float>({1, 1, 4}, {-2, 1, 3, 4})},
      {"position 0 is the identity", x, tensor<int64_t>({1}, {0}), {}, kCos, kSin, x},
      // rotary dim 2 of a head of 4: (x0, x1) turns, x2 and x3 pass through
      {"partial rotary", x, start1, {attr("rotary_embedding_dim", int64_t(2)), attr("num_heads", int64_t(1))},
       tensor<float>({2, 1}, {1, 0}), tensor<float>({2, 1}, {0, 1}), tensor<float>({1, 1, 4}, {-2, 1, 3, 4})},
      // (B, N, S, h) with per-token positions (B, S) = [[1, 0]]: token 0 turns, token 1 does not
      {"4-D input, position_ids (B, S)", tensor<float>({1, 1, 2, 4}, {1, 2, 3, 4, 1, 2, 3, 4}), tensor<int64_t>({1, 2}, {1, 0}), {},
       kCos, kSin, tensor<float>({1, 1, 2, 4}, {-3, 2, 1, 4, 1, 2, 3, 4})},
      // start position 0 over two tokens: token 1 gets position 1; two heads of 4 in the hidden dim
      {"3-D, two heads, start 0", tensor<float>({1, 2, 8}, {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8}), tensor<int64_t>({1}, {0}), {},
       kCos, kSin, tensor<float>({1, 2, 8}, {1, 2, 3, 4, 5, 6, 7, 8, -3, 2, 1, 4, -7, 6, 5, 8})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(rope(c.x, c.pos, c.attrs, c.c, c.s), c.expected);
  }
}

TEST_CASE("RotaryEmbedding equals ONNX RotaryEmbedding-23 on the same caches") {
  std::vector<float> xv(2 * 2 * 3 * 4), cv(5 * 2), sv(5 * 2);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.37f * float(i));
  for (size_t i = 0; i < cv.size(); ++i) { cv[i] = std::cos(0.5f * float(i)); sv[i] = std::sin(0.5f * float(i)); }
  const Tensor x = tensor<float>({2, 2, 3, 4}, xv), c = tensor<float>({5, 2}, cv), s = tensor<float>({5, 2}, sv);
  const Tensor pos = tensor<int64_t>({2, 3}, {0, 1, 2, 4, 3, 2});
  for (int64_t inter : {0, 1}) {
    CAPTURE(inter);
    const Value onnx = run_node(node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}, {attr("interleaved", inter)}), {x, c, s, pos}, 23)[0];
    check_equal(rope(x, pos, {attr("interleaved", inter)}, c, s), onnx);
  }
}

TEST_CASE("RotaryEmbedding errors name the problem") {
  const Tensor x = tensor<float>({1, 1, 4}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1}, {2}), {}), doctest::Contains("position 2 is outside the cos/sin caches' 2 rows"), Error);
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1}, {0}), {}, tensor<float>({2, 3}, {1, 1, 1, 1, 1, 1}),
                            tensor<float>({2, 3}, {0, 0, 0, 0, 0, 0})),
                       doctest::Contains("input's hidden size 4 is not a multiple of the head size 6"), Error);
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1}, {0}), {attr("rotary_embedding_dim", int64_t(2))}), doctest::Contains("num_heads is required"), Error);
  CHECK_THROWS_WITH_AS(rope(x, tensor<int64_t>({1, 2}, {0, 0}), {}), doctest::Contains("position_ids has shape (1, 2), expected (1, 1)"), Error);
}

TEST_CASE("RotaryEmbedding float32 matches a double oracle: layouts, pairings, partial rotation, large caches") {
  // Computed in float, each product rounded (as the unfused Mul, Mul, Add graph and ORT do): a
  // few float ulps of the larger product off the exact rotation.
  struct Case { int64_t B, N, S, h, rot; bool bnsh, interleaved, start_only; int64_t max_pos; };
  const Case cases[] = {
      {1, 12, 7, 64, 0, true, false, false, 2048},  // Llama prefill
      {1, 12, 1, 64, 0, true, false, true, 2048},   // one decode token
      {2, 3, 5, 8, 0, false, true, false, 16},
      {2, 4, 3, 10, 6, false, false, true, 9},      // partial rotation: 4 values a head pass through
      {1, 2, 4, 6, 4, true, true, false, 300},      // partial, interleaved, odd half width 2
      {3, 1, 2, 2, 0, false, false, false, 4},
  };
  for (const Case& c : cases) {
    CAPTURE(c.B); CAPTURE(c.N); CAPTURE(c.S); CAPTURE(c.h); CAPTURE(c.rot); CAPTURE(c.interleaved);
    const int64_t rot = c.rot ? c.rot : c.h, half = rot / 2, n = c.B * c.N * c.S * c.h;
    std::vector<float> xv = wave(size_t(n), 0.91f), cv(size_t(c.max_pos * half)), sv(cv.size());
    for (size_t i = 0; i < cv.size(); ++i) cv[i] = std::cos(0.013f * float(i) + 0.1f), sv[i] = std::sin(0.013f * float(i) + 0.1f);
    xv[size_t(n / 2)] = NAN;  // poisons its own pair only
    std::vector<int64_t> pos(size_t(c.B * c.S));
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = (int64_t(i) * 7919 + 3) % c.max_pos;
    const int64_t first = c.max_pos - c.S;  // start_only: positions first .. max_pos - 1
    std::vector<Attribute> attrs = {attr("interleaved", int64_t(c.interleaved))};
    if (c.rot) attrs.push_back(attr("rotary_embedding_dim", c.rot)), attrs.push_back(attr("num_heads", c.N));
    const Shape shape = c.bnsh ? Shape{c.B, c.N, c.S, c.h} : Shape{c.B, c.S, c.N * c.h};
    const Tensor pt = c.start_only ? tensor<int64_t>({1}, {first}) : tensor<int64_t>({c.B, c.S}, pos);
    const Value got = rope(tensor<float>(shape, xv), pt, attrs, tensor<float>({c.max_pos, half}, cv), tensor<float>({c.max_pos, half}, sv));
    const float* y = got.tensor().data<float>();
    size_t bad = 0;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t s = 0; s < c.S; ++s)
        for (int64_t hd = 0; hd < c.N; ++hd) {
          const int64_t p = c.start_only ? first + s : pos[size_t(b * c.S + s)];
          const int64_t base = c.bnsh ? ((b * c.N + hd) * c.S + s) * c.h : ((b * c.S + s) * c.N + hd) * c.h;
          std::vector<double> want(size_t(c.h));
          for (int64_t d = 0; d < c.h; ++d) want[size_t(d)] = xv[size_t(base + d)];
          for (int64_t i = 0; i < half; ++i) {
            const int64_t i1 = c.interleaved ? 2 * i : i, i2 = c.interleaved ? 2 * i + 1 : i + half;
            const double x1 = xv[size_t(base + i1)], x2 = xv[size_t(base + i2)];
            const double co = cv[size_t(p * half + i)], si = sv[size_t(p * half + i)];
            want[size_t(i1)] = x1 * co - x2 * si;
            want[size_t(i2)] = x2 * co + x1 * si;
          }
          for (int64_t d = 0; d < c.h; ++d) {
            const double w = want[size_t(d)], g = y[base + d];
            const bool ok = std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= 1e-6;
            if (!ok && bad++ < 5) FAIL_CHECK("b " << b << " s " << s << " head " << hd << " d " << d << ": got " << g << ", oracle " << w);
          }
        }
    CHECK(bad == 0);
  }
}

TEST_CASE("RotaryEmbedding refusals: one exact line each") {
  const std::string A = "node 'r' (com.microsoft:RotaryEmbedding): ";
  auto rotary = [](std::vector<Attribute> attrs) {
    return node("RotaryEmbedding", {"x", "p", "c", "s"}, {"y"}, std::move(attrs), "r", "com.microsoft");
  };
  auto zeros = [](Shape s) { return tensor<float>(s, std::vector<float>(size_t(shape_size(s)), 0.0f)); };
  const Tensor x4 = zeros({1, 2, 3, 4}), pos = tensor<int64_t>({1, 3}, {0, 1, 2}), cache = zeros({4, 2});
  struct Case { std::string message; std::vector<Attribute> attrs; Values feeds; };
  const Case cases[] = {
      {"is_packed_batching=1 is not supported", {attr("is_packed_batching", int64_t(1))}, {x4, pos, cache, cache}},
      {"num_heads must be >= 0 and rotary_embedding_dim even and >= 0", {attr("num_heads", int64_t(-1))}, {x4, pos, cache, cache}},
      {"num_heads must be >= 0 and rotary_embedding_dim even and >= 0", {attr("rotary_embedding_dim", int64_t(3)), attr("num_heads", int64_t(2))},
       {x4, pos, cache, cache}},
      {"num_heads is required when rotary_embedding_dim is set", {attr("rotary_embedding_dim", int64_t(2))}, {x4, pos, cache, cache}},
      {"rotary_embedding_dim 6 exceeds the head size 4", {attr("rotary_embedding_dim", int64_t(6)), attr("num_heads", int64_t(2))},
       {x4, pos, zeros({4, 3}), zeros({4, 3})}},
      {"cos_cache has shape (4, 3), expected 2 columns (rotary dim / 2)", {}, {x4, pos, zeros({4, 3}), zeros({4, 3})}},
      {"input's hidden size 7 is not a multiple of the head size 4", {}, {zeros({1, 3, 7}), pos, cache, cache}},
      {"position 4 is outside the cos/sin caches' 4 rows", {}, {x4, tensor<int64_t>({1}, {2}), cache, cache}},
      {"position -1 is outside the cos/sin caches' 4 rows", {}, {x4, tensor<int64_t>({1, 3}, {0, -1, 2}), cache, cache}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(run_node(rotary(c.attrs), c.feeds, 1), (A + c.message).c_str(), Error);
  }
}
