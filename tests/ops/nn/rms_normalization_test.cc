// RMSNormalization-23: the axes axis..rank-1, epsilon's default, scale broadcasting (to the
// normalised shape or, as the function body's Mul allows, to X), Y in scale's type, errors.
// Expected values come from a double-precision oracle written here.
#include <cmath>

#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

std::vector<double> ramp(int64_t n, double a, double b) {  // n values spread over [a, b), sign-alternating
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back((i % 2 ? -1 : 1) * (a + (b - a) * double(i) / double(n)));
  return v;
}

// y = x / sqrt(mean(x^2 over dims[axis:]) + eps) * scale, with scale given over X's full shape.
std::vector<double> oracle(const std::vector<double>& x, const Shape& shape, int64_t axis, double eps, const std::vector<double>& scale_full) {
  int64_t n = 1;
  for (size_t d = size_t(axis); d < shape.size(); ++d) n *= shape[d];
  std::vector<double> y(x.size());
  for (size_t o = 0; o < x.size() / size_t(n); ++o) {
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += x[o * size_t(n) + size_t(j)] * x[o * size_t(n) + size_t(j)];
    const double rms = std::sqrt(ss / double(n) + eps);
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = o * size_t(n) + size_t(j);
      y[i] = x[i] / rms * scale_full[i];
    }
  }
  return y;
}

}  // namespace

TEST_CASE("RMSNormalization against the oracle") {
  const Shape shape{2, 3, 4};
  const std::vector<double> x = ramp(24, 0.1, 3);
  struct Case { const char* what; std::vector<Attribute> attrs; int64_t axis; double eps; Shape scale_shape; };
  const Case cases[] = {
      {"defaults: last axis, epsilon 1e-5", {}, 2, 1e-5, {4}},
      {"axis 1: the last two axes", {attr("axis", int64_t(1))}, 1, 1e-5, {3, 4}},
      {"axis -2, scale broadcast over the normalised rows", {attr("axis", int64_t(-2))}, 1, 1e-5, {1, 4}},
      {"axis 0: everything", {attr("axis", int64_t(0)), attr("epsilon", 0.5f)}, 0, 0.5, {2, 3, 4}},
      {"scalar scale", {attr("epsilon", 1e-3f)}, 2, double(1e-3f), {}},
      {"scale of rank above the normalised shape varies per row", {}, 2, 1e-5, {3, 4}},
      {"scale broadcast from X's leading axes", {}, 2, 1e-5, {2, 1, 4}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::vector<double> s = ramp(shape_size(c.scale_shape), 0.5, 2);
    // The scale over X's whole shape, by right-aligned broadcasting written out.
    std::vector<double> full(24);
    Shape ss = c.scale_shape;
    while (ss.size() < 3) ss.insert(ss.begin(), 1);
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t e = 0; e < 4; ++e)
          full[size_t((a * 3 + b) * 4 + e)] =
              s[size_t(((ss[0] == 1 ? 0 : a) * ss[1] + (ss[1] == 1 ? 0 : b)) * ss[2] + (ss[2] == 1 ? 0 : e))];
    const double eps = c.eps == 1e-5 ? double(1e-5f) : c.eps;  // the attribute is a float
    auto out = run_node(node("RMSNormalization", {"x", "s"}, {"y"}, c.attrs),
                        {from_doubles(DType::Double, shape, x), from_doubles(DType::Double, c.scale_shape, s)}, 23);
    check_equal(out[0], from_doubles(DType::Double, shape, oracle(x, shape, c.axis, eps, full)), {1e-12, 1e-14});
  }
}

TEST_CASE("RMSNormalization: epsilon defaults to 1e-5, which matters for tiny inputs") {
  // mean(x^2) = 1e-6, so 1 / sqrt(1e-6 + 1e-5) = 301.5 rather than 1000.
  auto out = run_node(node("RMSNormalization", {"x", "s"}, {"y"}), {tensor<double>({2}, {1e-3, -1e-3}), tensor<double>({2}, {1, 1})}, 23);
  const double r = 1e-3 / std::sqrt(1e-6 + double(1e-5f));
  check_equal(out[0], tensor<double>({2}, {r, -r}), {1e-12, 0});
}

TEST_CASE("RMSNormalization: Y has scale's type") {
  const std::vector<double> x = {1, 2, 3, 4};
  const std::vector<double> want = oracle(x, {2, 2}, 1, double(1e-5f), {1, 2, 1, 2});
  auto half_in = run_node(node("RMSNormalization", {"x", "s"}, {"y"}), {from_doubles(DType::Float16, {2, 2}, x), tensor<float>({2}, {1, 2})}, 23);
  CHECK(half_in[0].tensor().dtype() == DType::Float);
  check_equal(half_in[0], from_doubles(DType::Float, {2, 2}, want), {1e-6, 1e-6});
  auto half_out = run_node(node("RMSNormalization", {"x", "s"}, {"y"}), {from_doubles(DType::Float, {2, 2}, x), from_doubles(DType::BFloat16, {2}, {1, 2})}, 23);
  CHECK(half_out[0].tensor().dtype() == DType::BFloat16);
  check_equal(half_out[0], from_doubles(DType::BFloat16, {2, 2}, want), {1e-2, 1e-2});
}

TEST_CASE("RMSNormalization errors") {
  const Tensor x = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(run_node(node("RMSNormalization", {"x", "s"}, {"y"}), {x, tensor<float>({2}, {1, 1})}, 23),
                       doctest::Contains("does not broadcast"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("RMSNormalization", {"x", "s"}, {"y"}, {attr("axis", int64_t(2))}), {x, tensor<float>({3}, {1, 1, 1})}, 23),
                       doctest::Contains("axis 2 is out of range for rank 2"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("RMSNormalization", {"x", "s"}, {"y"}, {attr("stash_type", int64_t(7))}), {x, tensor<float>({3}, {1, 1, 1})}, 23),
                       doctest::Contains("stash_type 7 is not a floating type"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("RMSNormalization", {"x", "s"}, {"y"}), {tensor<int32_t>({1}, {1}), tensor<float>({1}, {1})}, 23),
                       doctest::Contains("element type int32 is not supported"), Error);
}

TEST_CASE("RMSNormalization in float (rows read in place) against the oracle, row lengths off the four partial sums") {
  // Rows of 7 and 13 values: the four interleaved partial sums and a tail; scale of the row's shape.
  for (int64_t n : {7, 13}) {
    CAPTURE(n);
    const Shape shape{3, n};
    const std::vector<double> x = ramp(3 * n, 0.1, 3), s = ramp(n, 0.5, 2);
    // The float inputs' own values, so that the oracle sees what the kernel sees.
    const Tensor tx = from_doubles(DType::Float, shape, x), ts = from_doubles(DType::Float, {n}, s);
    const std::vector<float> xf = tx.to_vector<float>(), sf = ts.to_vector<float>();
    const std::vector<double> xd(xf.begin(), xf.end());
    std::vector<double> full(size_t(3 * n));
    for (int64_t i = 0; i < 3 * n; ++i) full[size_t(i)] = double(sf[size_t(i % n)]);
    auto out = run_node(node("RMSNormalization", {"x", "s"}, {"y"}, {attr("epsilon", 0.25f)}), {tx, ts}, 23);
    REQUIRE(out[0].tensor().dtype() == DType::Float);
    check_equal(out[0], from_doubles(DType::Float, shape, oracle(xd, shape, 1, 0.25, full)), {1e-6, 1e-7});
  }
}
