// com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu and BiasAdd: hand-computed values (erf vs
// tanh form differ in the 4th digit), bias broadcast over the last dimension, agreement with the
// standard ops they fuse, and errors.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
const char* kMs = "com.microsoft";
Value run1(const char* op, const Tensor& a, const Tensor& b = Tensor(), std::vector<Attribute> attrs = {}) {
  std::vector<std::string> ins = {"a"};
  Values feeds = {a};
  if (b.defined()) { ins.push_back("b"); feeds.push_back(b); }
  return run_node(node(op, ins, {"y"}, std::move(attrs), op, kMs), feeds)[0];
}
// The standard op `op` on its own, for the compositions.
Value std_op(const char* op, Values feeds, std::vector<Attribute> attrs = {}, int64_t opset = 20) {
  std::vector<std::string> ins;
  for (size_t i = 0; i < feeds.size(); ++i) ins.push_back("i" + std::to_string(i));
  return run_node(node(op, ins, {"y"}, std::move(attrs)), feeds, opset)[0];
}
Tensor scalar(float v) { return Tensor::scalar<float>(v); }
}  // namespace

TEST_CASE("GELU variants: hand-computed values") {
  const Tensor x = tensor<float>({7}, {-3, -1, -0.5f, 0, 0.5f, 1, 3});
  struct Case { const char* op; std::vector<Attribute> attrs; Tensor expected; };
  const Case cases[] = {
      // 0.5 x (1 + erf(x / sqrt 2))
      {"Gelu", {}, tensor<float>({7}, {-0.004049694f, -0.1586553f, -0.1542688f, 0, 0.3457312f, 0.8413447f, 2.99595f})},
      // tanh approximation: close to, but not equal to, the erf form
      {"FastGelu", {}, tensor<float>({7}, {-0.003637392f, -0.158808f, -0.154286f, 0, 0.345714f, 0.841192f, 2.996363f})},
      // x * sigmoid(1.702 x)
      {"QuickGelu", {}, tensor<float>({7}, {-0.01807131f, -0.1542042f, -0.1496116f, 0, 0.3503884f, 0.8457958f, 2.981929f})},
      // alpha 1: x * sigmoid(x) (SiLU)
      {"QuickGelu", {attr("alpha", 1.0f)}, tensor<float>({7}, {-0.1422776f, -0.2689414f, -0.1887703f, 0, 0.3112297f, 0.7310586f, 2.857722f})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    check_equal(run1(c.op, x, Tensor(), c.attrs), c.expected, {1e-5, 1e-7});
  }
}

TEST_CASE("BiasGelu and FastGelu add a bias over the last dimension first") {
  const Tensor a = tensor<float>({2, 2}, {0, 2, -2, 0}), b = tensor<float>({2}, {1, -1});  // z = [[1, 1], [-1, -1]]
  check_equal(run1("BiasGelu", a, b), tensor<float>({2, 2}, {0.8413447f, 0.8413447f, -0.1586553f, -0.1586553f}));
  check_equal(run1("FastGelu", a, b), tensor<float>({2, 2}, {0.841192f, 0.841192f, -0.158808f, -0.158808f}));
}

TEST_CASE("GELU variants equal the standard-op graphs they replace") {
  const Tensor x = tensor<float>({2, 3}, {-2.5f, -0.3f, 0.1f, 0.7f, 1.9f, 4}), bias = tensor<float>({3}, {0.5f, -0.25f, 1});
  const Value z = std_op("Add", {x, bias});
  SUBCASE("BiasGelu = Gelu-20(A + B)") { check_equal(run1("BiasGelu", x, bias), std_op("Gelu", {z})); }
  SUBCASE("FastGelu = the GPT-2 tanh graph, and Gelu-20 approximate=tanh") {
    const Value half = std_op("Mul", {z, scalar(0.5f)});
    const Value cube = std_op("Pow", {z, scalar(3)});
    const Value inner = std_op("Add", {z, std_op("Mul", {cube, scalar(0.044715f)})});
    const Value t = std_op("Tanh", {std_op("Mul", {inner, scalar(0.7978845608f)})});
    const Value graph = std_op("Mul", {half, std_op("Add", {t, scalar(1)})});
    check_equal(run1("FastGelu", x, bias), graph, {1e-5, 1e-6});
    check_equal(run1("FastGelu", x, bias), std_op("Gelu", {z}, {attr("approximate", "tanh")}), {1e-5, 1e-6});
  }
  SUBCASE("QuickGelu = x * Sigmoid(alpha x)") {
    const Value sig = std_op("Sigmoid", {std_op("Mul", {x, scalar(1.5f)})});
    check_equal(run1("QuickGelu", x, Tensor(), {attr("alpha", 1.5f)}), std_op("Mul", {x, sig}));
  }
}

TEST_CASE("BiasAdd: X + bias + skip") {
  const Tensor x = tensor<float>({1, 2, 2}, {1, 2, 3, 4}), skip = tensor<float>({1, 2, 2}, {10, 20, 30, 40});
  const Value y = run_node(node("BiasAdd", {"x", "bias", "skip"}, {"y"}, {}, "ba", kMs), {x, tensor<float>({2}, {0.5f, -1}), skip})[0];
  check_equal(y, tensor<float>({1, 2, 2}, {11.5f, 21, 33.5f, 43}));
  CHECK_THROWS_WITH_AS(run_node(node("BiasAdd", {"x", "bias", "skip"}, {"y"}, {}, "ba", kMs),
                                {x, tensor<float>({2}, {0, 0}), tensor<float>({2, 2}, {1, 2, 3, 4})}),
                       doctest::Contains("skip has shape (2, 2), expected (1, 2, 2)"), Error);
}

TEST_CASE("GELU variants refuse a bias that is not X's last dimension, and non-float types") {
  CHECK_THROWS_WITH_AS(run1("FastGelu", tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}), tensor<float>({2}, {1, 1})),
                       doctest::Contains("bias has shape (2,), expected (3,)"), Error);
  CHECK_THROWS_WITH_AS(run1("BiasGelu", tensor<float>({2}, {1, 2}), tensor<double>({2}, {1, 1})),
                       doctest::Contains("bias has element type"), Error);
  CHECK_THROWS_AS(run1("Gelu", tensor<int32_t>({1}, {1})), Error);
}

namespace {
// x values for the float32 paths: a spread over [-8, 8] (both tails of each function), with
// NaN, infinities, signed zeros and huge values planted at positions that move with n (first,
// middle of a vector, the tail).
std::vector<float> gelu_inputs(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 8.0f * std::sin(0.731f * float(i) + 0.2f) * std::cos(0.057f * float(i));
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e20f, -1e20f, 1e-30f, -3.0f, -5.5f};
  for (size_t k = 0; k < std::size(specials); ++k)
    if (n > 0) v[(k * 37 + n / 2 + k * (n / 11)) % n] = specials[k];
  return v;
}
// The double oracle of each op at z (already X + bias rounded to float, as ORT adds it).
double gelu_oracle(const std::string& op, double z, double alpha) {
  if (op == "FastGelu") return 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z)));
  if (op == "QuickGelu") return z / (1.0 + std::exp(-alpha * z));
  return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
}
}  // namespace

TEST_CASE("GELU variants' float32 paths match a double oracle at every size, tail, NaN and infinity") {
  // float formulas: the tanh and erf forms lose digits where 1 + tanh (1 + erf) cancels, an
  // absolute error of a few float ulps of 1 times |z|; elsewhere a few ulps relative.
  for (const std::string op : {"Gelu", "BiasGelu", "FastGelu", "QuickGelu"})
    for (size_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 1023, 1024, 1025, 3072 * 2 + 5, 20011}) {
      CAPTURE(op);
      CAPTURE(n);
      const bool with_bias = op == "BiasGelu" || (op == "FastGelu" && n % 2 == 1);
      const size_t h = with_bias ? (n % 3 == 0 ? 3 : 1) : 1;  // a bias over a last dim of 3 or 1
      const std::vector<float> xv = gelu_inputs(n);
      const std::vector<float> bv = {0.25f, -0.5f, 1.0f};
      const Tensor x = tensor<float>({int64_t(n / h), int64_t(h)}, xv);
      const Tensor bias = with_bias ? tensor<float>({int64_t(h)}, std::vector<float>(bv.begin(), bv.begin() + long(h))) : Tensor();
      const double alpha = 1.702;
      const Value got = run1(op.c_str(), x, bias);
      REQUIRE(got.is_tensor());
      const float* y = got.tensor().data<float>();
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        const float z = with_bias ? xv[i] + bv[i % h] : xv[i];
        const double want = gelu_oracle(op, double(z), alpha);
        const bool ok = std::isnan(want) ? std::isnan(y[i])
                        : std::isinf(want) ? y[i] == want
                                           : std::fabs(double(y[i]) - want) <= 1e-6 * std::fabs(want) + 4e-7 * std::max(1.0, std::fabs(double(z)));
        if (!ok && bad++ < 5) FAIL_CHECK("z = " << z << ": got " << y[i] << ", oracle " << want);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("GELU variants: -inf gives NaN as ORT's formulas (and the unfused graphs) do; +inf stays") {
  const Tensor x = tensor<float>({3}, {-INFINITY, INFINITY, NAN});
  for (const char* op : {"Gelu", "FastGelu", "QuickGelu"}) {
    CAPTURE(op);
    const Value out = run1(op, x);
    const float* y = out.tensor().data<float>();
    CHECK(std::isnan(y[0]));  // -inf * (1 + (-1)) or -inf * sigmoid(-inf) = -inf * 0
    CHECK(y[1] == INFINITY);
    CHECK(std::isnan(y[2]));
  }
}

TEST_CASE("GELU variants: double input computes in double (the reference path)") {
  const std::vector<double> xv = {-3, -0.7, 0, 0.4, 2.5};
  const Value y = run1("FastGelu", tensor<double>({5}, xv));
  for (size_t i = 0; i < xv.size(); ++i) CHECK(y.tensor().data<double>()[i] == doctest::Approx(gelu_oracle("FastGelu", xv[i], 0)).epsilon(1e-14));
}

TEST_CASE("Gelu and BiasGelu in float stay within a few ulps of the double formula, the negative tail too") {
  // z from -12 to 12 (4801 values: every lane and the tail of the vector code): for z < 0, 1 + erf
  // cancels, and a result through 1 + erff would lose its relative accuracy where the value is
  // tiny (at z = -5 it would be off by 3%).
  std::vector<float> z;
  for (int i = -2400; i <= 2400; ++i) z.push_back(float(i) * 0.005f);
  const Tensor x = tensor<float>({int64_t(z.size())}, z);
  const Tensor zero_bias = tensor<float>({int64_t(z.size())}, std::vector<float>(z.size(), 0.0f));
  for (const Value& y : {run1("Gelu", x), run1("BiasGelu", x, zero_bias)}) {
    const float* got = y.tensor().data<float>();
    for (size_t i = 0; i < z.size(); ++i) {
      const double v = double(z[i]), u = -v / std::sqrt(2.0), want = 0.5 * v * std::erfc(u);
      // erfc's condition number: the float argument's own rounding (up to 2^-23 relative: two
      // roundings, z / sqrt 2 and sqrt 2) scales by 2 u^2 in the result for u >> 1.
      const double bound = (8 + (u > 0 ? 2 * u * u : 0)) * 0x1p-23;
      CAPTURE(v);
      CHECK(std::abs(double(got[i]) - want) <= bound * std::abs(want));
    }
  }
}

TEST_CASE("FastGelu and BiasGelu refuse a bias on a scalar X, one line") {
  for (const char* op : {"FastGelu", "BiasGelu"}) {
    CAPTURE(op);
    CHECK_THROWS_WITH_AS(run1(op, Tensor::scalar<float>(1.0f), tensor<float>({1}, {0.5f})),
                         (std::string("node '") + op + "' (com.microsoft:" + op + "): X must have at least one dimension to take a bias").c_str(), Error);
  }
}
