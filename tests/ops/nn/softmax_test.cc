// Softmax, LogSoftmax, Hardmax: the 2-D coercion of versions 1/11 against the single axis of 13,
// stability with large inputs, ties and dtypes.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("Softmax along one axis (13) versus coerced to 2-D (11)") {
  const Tensor x = tensor<float>({2, 2}, {0, 0, 0, 0});
  const Tensor x3 = tensor<float>({1, 2, 2}, {1, 1, 1, 1});
  // opset 13, default axis -1: each row of 2
  check_equal(run_node(node("Softmax", {"x"}, {"y"}), {x}, 13)[0], tensor<float>({2, 2}, {.5f, .5f, .5f, .5f}));
  // opset 11, default axis 1 on a 3-D input: each batch row holds 4 elements
  check_equal(run_node(node("Softmax", {"x"}, {"y"}), {x3}, 11)[0], tensor<float>({1, 2, 2}, {.25f, .25f, .25f, .25f}));
  // opset 13, axis 1 on a 3-D input: normalises the middle axis only
  check_equal(run_node(node("Softmax", {"x"}, {"y"}, {attr("axis", int64_t(1))}), {x3}, 13)[0], tensor<float>({1, 2, 2}, {.5f, .5f, .5f, .5f}));
}

TEST_CASE("Softmax and LogSoftmax stay finite on large inputs") {
  const Tensor x = tensor<float>({3}, {1000, 1001, 1002});
  const float e1 = std::exp(-1.f), e2 = std::exp(-2.f), s = 1 + e1 + e2;
  check_equal(run_node(node("Softmax", {"x"}, {"y"}), {x})[0], tensor<float>({3}, {e2 / s, e1 / s, 1 / s}));
  check_equal(run_node(node("LogSoftmax", {"x"}, {"y"}), {x})[0], tensor<float>({3}, {-2 - std::log(s), -1 - std::log(s), -std::log(s)}));
}

TEST_CASE("Hardmax marks the first maximum") {
  check_equal(run_node(node("Hardmax", {"x"}, {"y"}), {tensor<float>({2, 3}, {3, 1, 3, -1, 2, 0})})[0],
              tensor<float>({2, 3}, {1, 0, 0, 0, 1, 0}));
  check_equal(run_node(node("Hardmax", {"x"}, {"y"}, {attr("axis", int64_t(0))}), {tensor<double>({2, 1}, {1, 2})}, 13)[0],
              tensor<double>({2, 1}, {0, 1}));
}

TEST_CASE("narrow floats, empty tensors and bad axes") {
  check_equal(run_node(node("Softmax", {"x"}, {"y"}), {tensor<float16>({2}, {float16(1.f), float16(1.f)})})[0],
              tensor<float16>({2}, {float16(.5f), float16(.5f)}));
  check_equal(run_node(node("LogSoftmax", {"x"}, {"y"}), {tensor<float>({0, 3}, {})})[0], tensor<float>({0, 3}, {}));
  CHECK_THROWS_AS(run_node(node("Softmax", {"x"}, {"y"}, {attr("axis", int64_t(2))}), {tensor<float>({2}, {1, 2})}), Error);
  // a scalar has no axis (ONNX Runtime refuses it too)
  CHECK_THROWS_WITH_AS(run_node(node("Softmax", {"x"}, {"y"}, {attr("axis", int64_t(0))}), {tensor<float>({}, {1})}),
                       doctest::Contains("axis 0 is out of range for rank 0"), Error);
  CHECK_THROWS_AS(run_node(node("Softmax", {"x"}, {"y"}), {tensor<int32_t>({2}, {1, 2})}), Error);
}

TEST_CASE("Softmax and LogSoftmax of long rows, on the last and a middle axis, match the formulas in double") {
  // Rows of 5, 100, 300 and 1000 values (the pairwise sum's short, one-block and split forms).
  for (int64_t n : {5, 100, 300, 1000}) {
    CAPTURE(n);
    std::vector<float> x(size_t(3 * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7919 % 201) - 100) * 0.05f;
    x[size_t(n + 3)] = -std::numeric_limits<float>::infinity();  // row 1 holds -inf: exp gives 0
    for (int64_t axis : {1, 0}) {  // x as (3, n) along n, and as (n, 3) along n (a strided axis)
      CAPTURE(axis);
      const Tensor xt = axis == 1 ? tensor<float>({3, n}, x) : tensor<float>({n, 3}, x);
      const Tensor sm = run_node(node("Softmax", {"x"}, {"y"}, {attr("axis", axis)}), {xt})[0].tensor();
      const Tensor lsm = run_node(node("LogSoftmax", {"x"}, {"y"}, {attr("axis", axis)}), {xt})[0].tensor();
      std::vector<float> want_sm(x.size()), want_lsm(x.size());
      for (int64_t r = 0; r < 3; ++r) {
        auto at = [&](int64_t j) { return size_t(axis == 1 ? r * n + j : j * 3 + r); };
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j) m = std::max(m, double(x[at(j)]));
        for (int64_t j = 0; j < n; ++j) sum += std::exp(double(x[at(j)]) - m);
        for (int64_t j = 0; j < n; ++j) {
          want_sm[at(j)] = float(std::exp(double(x[at(j)]) - m) / sum);
          want_lsm[at(j)] = float(double(x[at(j)]) - m - std::log(sum));
        }
      }
      check_equal(sm, tensor<float>(xt.shape(), want_sm), Tolerance{2e-6, 1e-9});
      check_equal(lsm, tensor<float>(xt.shape(), want_lsm), Tolerance{2e-6, 1e-6});
    }
  }
}

TEST_CASE("Softmax of a long row holding NaN is NaN throughout; other rows are unaffected") {
  std::vector<float> x(2 * 100, 1.0f);
  x[50] = std::numeric_limits<float>::quiet_NaN();
  const Tensor y = run_node(node("Softmax", {"x"}, {"y"}), {tensor<float>({2, 100}, x)})[0].tensor();
  for (int64_t j = 0; j < 100; ++j) CHECK(std::isnan(y.data<float>()[j]));
  for (int64_t j = 100; j < 200; ++j) CHECK(y.data<float>()[j] == doctest::Approx(0.01f));
}

TEST_CASE("Softmax over a middle axis: a NaN makes its own column NaN, the other columns are unaffected") {
  // (2, 100, 3) along axis 1: columns side by side; x[0, 40, 1] is NaN.
  std::vector<float> x(2 * 100 * 3, 1.0f);
  x[size_t(40 * 3 + 1)] = std::numeric_limits<float>::quiet_NaN();
  const Tensor y = run_node(node("Softmax", {"x"}, {"y"}, {attr("axis", int64_t(1))}), {tensor<float>({2, 100, 3}, x)})[0].tensor();
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t j = 0; j < 100; ++j)
      for (int64_t c = 0; c < 3; ++c) {
        const float v = y.data<float>()[(o * 100 + j) * 3 + c];
        if (o == 0 && c == 1) CHECK(std::isnan(v));
        else CHECK(v == doctest::Approx(0.01f));
      }
}
