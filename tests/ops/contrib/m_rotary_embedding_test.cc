// com.microsoft MRotaryEmbedding against an oracle written here (Qwen-VL's recipe: build each
// token's cos/sin row from the T, H, W streams, then rotate): sectioned and interleaved layouts,
// halves and adjacent pairs, partial rotary dim, 3-D and 4-D inputs, scale, float16 / bfloat16;
// text tokens (T = H = W) equal com.microsoft RotaryEmbedding; errors.
#include <cmath>

#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

struct Case {
  int64_t B = 2, S = 3, N = 2, h = 8, rot = 0, layout = 0;
  std::vector<int64_t> section = {2, 1, 1};
  bool interleaved = false, bnsh = false;
  float scale = 1;
  int64_t max_pos = 12;
};

struct Data { std::vector<float> x, cos, sin; std::vector<int64_t> pos; };

Data make_data(const Case& c) {
  const int64_t half = (c.rot ? c.rot : c.h) / 2;
  Data d;
  for (int64_t i = 0; i < c.B * c.S * c.N * c.h; ++i) d.x.push_back(std::sin(0.37f * float(i) + 0.2f));
  for (int64_t p = 0; p < c.max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(p) / std::pow(50.0, double(i) / double(half));
      d.cos.push_back(float(std::cos(angle))), d.sin.push_back(float(std::sin(angle)));
    }
  // T, H, W streams differ from each other and from token to token
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t t = 0; t < c.B * c.S; ++t) d.pos.push_back((t * (a + 2) + 3 * a) % c.max_pos);
  return d;
}

std::vector<double> oracle(const Case& c, const Data& d) {
  const int64_t rot = c.rot ? c.rot : c.h, half = rot / 2;
  // stream of each cos/sin column
  std::vector<int64_t> axis(size_t(half), 0);
  if (c.layout == 0) {
    int64_t col = 0;
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t k = 0; k < c.section[size_t(a)]; ++k) axis[size_t(col++)] = a;
  } else {
    for (int64_t col = 0; col < half; ++col) {
      if (col % 3 == 1 && col < 3 * c.section[1]) axis[size_t(col)] = 1;
      if (col % 3 == 2 && col < 3 * c.section[2]) axis[size_t(col)] = 2;
    }
  }
  std::vector<double> y(d.x.begin(), d.x.end());
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t s = 0; s < c.S; ++s)
      for (int64_t n = 0; n < c.N; ++n) {
        const int64_t at = c.bnsh ? ((b * c.N + n) * c.S + s) * c.h : ((b * c.S + s) * c.N + n) * c.h;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t p = d.pos[size_t((axis[size_t(i)] * c.B + b) * c.S + s)];
          const double co = double(d.cos[size_t(p * half + i)]) * c.scale, si = double(d.sin[size_t(p * half + i)]) * c.scale;
          const int64_t i1 = at + (c.interleaved ? 2 * i : i), i2 = at + (c.interleaved ? 2 * i + 1 : i + half);
          y[size_t(i1)] = d.x[size_t(i1)] * co - d.x[size_t(i2)] * si;
          y[size_t(i2)] = d.x[size_t(i2)] * co + d.x[size_t(i1)] * si;
        }
      }
  return y;
}

Shape input_shape(const Case& c) { return c.bnsh ? Shape{c.B, c.N, c.S, c.h} : Shape{c.B, c.S, c.N * c.h}; }

Value run_case(const Case& c, const Data& d, DType dtype = DType::Float) {
  const int64_t half = (c.rot ? c.rot : c.h) / 2;
  auto t = [&](Shape s, const std::vector<float>& v) { return from_doubles(dtype, std::move(s), std::vector<double>(v.begin(), v.end())); };
  std::vector<Attribute> attrs = {attr("mrope_section", c.section), attr("num_heads", c.N)};
  if (c.rot) attrs.push_back(attr("rotary_embedding_dim", c.rot));
  if (c.layout) attrs.push_back(attr("mrope_layout", c.layout));
  if (c.interleaved) attrs.push_back(attr("interleaved", int64_t(1)));
  if (c.scale != 1) attrs.push_back(attr("scale", c.scale));
  return run_node(node("MRotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, attrs, "mrope", "com.microsoft"),
                  {t(input_shape(c), d.x), tensor<int64_t>({3, c.B, c.S}, d.pos), t({c.max_pos, half}, d.cos), t({c.max_pos, half}, d.sin)})[0];
}

void check_case(const Case& c) {
  const Data d = make_data(c);
  check_equal(run_case(c, d), from_doubles(DType::Float, input_shape(c), oracle(c, d)), {1e-6, 1e-7});
}

}  // namespace

TEST_CASE("MRotaryEmbedding: layouts, pairings, partial rotary dim, 4-D input and scale") {
  SUBCASE("sectioned") { check_case({}); }
  SUBCASE("sectioned, one stream empty") { check_case({.section = {3, 0, 1}}); }
  SUBCASE("interleaved layout") { check_case({.h = 16, .layout = 1, .section = {4, 2, 2}}); }
  SUBCASE("interleaved layout, long H section") { check_case({.h = 16, .layout = 1, .section = {1, 4, 3}}); }
  SUBCASE("adjacent pairs") { check_case({.interleaved = true}); }
  SUBCASE("partial rotary dim") { check_case({.h = 8, .rot = 4, .section = {1, 1, 0}}); }
  SUBCASE("4-D input, batch 1") { check_case({.B = 1, .layout = 1, .bnsh = true}); }
  SUBCASE("scale multiplies cos and sin") { check_case({.scale = 0.5f}); }
}

TEST_CASE("MRotaryEmbedding on text tokens (T = H = W) is com.microsoft RotaryEmbedding") {
  const Case c{.layout = 1, .section = {2, 1, 1}};
  Data d = make_data(c);
  std::vector<int64_t> text;
  for (int64_t t = 0; t < c.B * c.S; ++t) text.push_back((5 * t + 1) % c.max_pos);
  d.pos.clear();
  for (int a = 0; a < 3; ++a) d.pos.insert(d.pos.end(), text.begin(), text.end());
  const Value rope = run_node(node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {}, "rope", "com.microsoft"),
                              {tensor<float>({c.B, c.S, c.N * c.h}, d.x), tensor<int64_t>({c.B, c.S}, text),
                               tensor<float>({c.max_pos, 4}, d.cos), tensor<float>({c.max_pos, 4}, d.sin)})[0];
  check_equal(run_case(c, d), rope, {1e-6, 1e-7});
}

TEST_CASE("MRotaryEmbedding in float16 and bfloat16") {
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    CAPTURE(dtype_short_name(dt));
    const Case c{.layout = 1};
    Data d = make_data(c);
    for (auto* v : {&d.x, &d.cos, &d.sin})
      for (float& f : *v) f = float(to_doubles(from_doubles(dt, {1}, {double(f)}))[0]);
    const Value got = run_case(c, d, dt);
    REQUIRE(got.tensor().dtype() == dt);
    check_equal(got, from_doubles(dt, input_shape(c), oracle(c, d)));
  }
}

TEST_CASE("MRotaryEmbedding errors name the problem") {
  auto fails = [](Case c, const char* message, std::vector<int64_t> pos = {}) {
    CAPTURE(message);
    Data d = make_data(c);
    if (!pos.empty()) d.pos = pos;
    CHECK_THROWS_WITH_AS(run_case(c, d), doctest::Contains(message), Error);
  };
  fails({.section = {2, 1, 2}}, "mrope_section sums to 5, expected rotary dim / 2 = 4");
  fails({.section = {2, 2}}, "mrope_section must be 3 non-negative integers");
  fails({.layout = 2}, "mrope_layout must be 0 (sectioned) or 1 (interleaved), got 2");
  fails({.B = 1, .S = 1}, "position_ids holds 12 (stream 1), outside the cos/sin caches' 12 rows", {0, 12, 0});
  fails({.rot = 10}, "the rotary dimension 10 must be even and at most the head size 8");
  const Case c{};
  const Data d = make_data(c);
  CHECK_THROWS_WITH_AS(run_node(node("MRotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {attr("mrope_section", c.section), attr("num_heads", c.N)}, "m", "com.microsoft"),
                                {tensor<float>({2, 3, 16}, d.x), tensor<int64_t>({2, 3}, std::vector<int64_t>(6, 0)),
                                 tensor<float>({12, 4}, d.cos), tensor<float>({12, 4}, d.sin)}),
                       doctest::Contains("position_ids has shape (2, 3), expected (3, 2, 3)"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("MRotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {attr("mrope_section", c.section), attr("num_heads", c.N)}, "m", "com.microsoft"),
                                {tensor<float>({2, 3, 16}, d.x), tensor<int64_t>({3, 2, 3}, d.pos), tensor<float>({12, 3}, std::vector<float>(36, 0.f)),
                                 tensor<float>({12, 3}, std::vector<float>(36, 0.f))}),
                       doctest::Contains("cos_cache has shape (12, 3), expected 4 columns"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("MRotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {attr("mrope_section", c.section)}, "m", "com.microsoft"),
                                {tensor<float>({2, 3, 16}, d.x), tensor<int64_t>({3, 2, 3}, d.pos), tensor<float>({12, 4}, d.cos),
                                 tensor<float>({12, 4}, d.sin)}),
                       doctest::Contains("a 3-D input needs num_heads dividing its hidden size 16 (num_heads = 0)"), Error);
}

TEST_CASE("MRotaryEmbedding refusals: one exact line each") {
  const std::string A = "node 'r' (com.microsoft:MRotaryEmbedding): ";
  auto zeros = [](Shape s) { return tensor<float>(s, std::vector<float>(size_t(shape_size(s)), 0.0f)); };
  const Tensor x4 = zeros({1, 2, 3, 4}), pos = tensor<int64_t>({3, 1, 3}, std::vector<int64_t>(9, 0)), cache = zeros({4, 2});
  const Attribute section = attr("mrope_section", std::vector<int64_t>{1, 1, 0});
  struct Case { std::string message; std::vector<Attribute> attrs; Values feeds; };
  const Case cases[] = {
      {"num_heads must be >= 0 and rotary_embedding_dim even and >= 0", {section, attr("rotary_embedding_dim", int64_t(-2))}, {x4, pos, cache, cache}},
      {"num_heads is required when rotary_embedding_dim is set", {section, attr("rotary_embedding_dim", int64_t(4))}, {x4, pos, cache, cache}},
      {"mrope_section must be 3 non-negative integers (T, H, W)", {attr("mrope_section", std::vector<int64_t>{1, -1, 2})}, {x4, pos, cache, cache}},
      {"a 3-D input needs num_heads dividing its hidden size 8 (num_heads = 3)", {section, attr("num_heads", int64_t(3))},
       {zeros({1, 3, 8}), pos, cache, cache}},
      {"the rotary dimension 6 must be even and at most the head size 4", {section, attr("num_heads", int64_t(2)), attr("rotary_embedding_dim", int64_t(6))},
       {x4, pos, cache, cache}},
      {"position_ids holds 4 (stream 2), outside the cos/sin caches' 4 rows", {section},
       {x4, tensor<int64_t>({3, 1, 3}, {0, 0, 0, 1, 1, 1, 2, 3, 4}), cache, cache}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(run_node(node("MRotaryEmbedding", {"x", "p", "c", "s"}, {"y"}, c.attrs, "r", "com.microsoft"), c.feeds, 1),
                         (A + c.message).c_str(), Error);
  }
}
