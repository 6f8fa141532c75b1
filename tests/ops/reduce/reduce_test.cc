// Reduce*: axes as attribute and as input, keepdims, noop_with_empty_axes, empty-set identities,
// integer wrap-around and NaN propagation.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const Tensor x23 = tensor<float>({2, 3}, {1, -2, 3, -4, 5, -6});
Tensor axes(std::vector<int64_t> v) { return tensor<int64_t>({int64_t(v.size())}, v); }
}  // namespace

TEST_CASE("each Reduce op over axis 1 of a 2x3 matrix, axes as input (opset 18)") {
  struct Case { const char* op; Tensor expected; };
  const Case cases[] = {
      {"ReduceSum", tensor<float>({2, 1}, {2, -5})},
      {"ReduceMean", tensor<float>({2, 1}, {2.f / 3, -5.f / 3})},
      {"ReduceMax", tensor<float>({2, 1}, {3, 5})},
      {"ReduceMin", tensor<float>({2, 1}, {-2, -6})},
      {"ReduceProd", tensor<float>({2, 1}, {-6, 120})},
      {"ReduceL1", tensor<float>({2, 1}, {6, 15})},
      {"ReduceL2", tensor<float>({2, 1}, {std::sqrt(14.f), std::sqrt(77.f)})},
      {"ReduceSumSquare", tensor<float>({2, 1}, {14, 77})},
      {"ReduceLogSumExp", tensor<float>({2, 1}, {std::log(std::exp(1.f) + std::exp(-2.f) + std::exp(3.f)),
                                                 std::log(std::exp(-4.f) + std::exp(5.f) + std::exp(-6.f))})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    check_equal(run_node(node(c.op, {"x", "axes"}, {"y"}), {x23, axes({1})}, 18)[0], c.expected);
  }
}

TEST_CASE("axes attribute in old versions, keepdims=0, negative and multiple axes") {
  const Tensor x = tensor<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  struct Case { const char* what; const char* op; std::vector<Attribute> attrs; int64_t opset; Tensor expected; };
  const Case cases[] = {
      {"ReduceMean-13 axes attr", "ReduceMean", {attr("axes", std::vector<int64_t>{0, 2}), attr("keepdims", int64_t(0))}, 13,
       tensor<float>({2}, {3.5f, 5.5f})},
      {"ReduceSum-11 negative axis", "ReduceSum", {attr("axes", std::vector<int64_t>{-1})}, 11, tensor<float>({2, 2, 1}, {3, 7, 11, 15})},
      {"ReduceMax-1 no axes reduces all", "ReduceMax", {}, 1, tensor<float>({1, 1, 1}, {8})},
      {"ReduceMax-1 all, keepdims=0 is a scalar", "ReduceMax", {attr("keepdims", int64_t(0))}, 1, tensor<float>({}, {8})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node(c.op, {"x"}, {"y"}, c.attrs), {x}, c.opset)[0], c.expected);
  }
}

TEST_CASE("empty axes: reduce all, or with noop_with_empty_axes reduce nothing") {
  const Tensor x = tensor<float>({2}, {-3, 4});
  const auto noop = attr("noop_with_empty_axes", int64_t(1));
  check_equal(run_node(node("ReduceSum", {"x", "axes"}, {"y"}), {x, axes({})}, 13)[0], tensor<float>({1}, {1}));
  check_equal(run_node(node("ReduceSum", {"x"}, {"y"}, {noop}), {x}, 13)[0], x);
  // Reducing nothing still applies the per-element map.
  check_equal(run_node(node("ReduceSumSquare", {"x", "axes"}, {"y"}, {noop}), {x, axes({})}, 18)[0], tensor<float>({2}, {9, 16}));
  check_equal(run_node(node("ReduceL1", {"x"}, {"y"}, {noop}), {x}, 18)[0], tensor<float>({2}, {3, 4}));
}

TEST_CASE("reducing an empty set gives each op's identity") {
  const Tensor x = tensor<float>({2, 0}, {});
  struct Case { const char* op; float expected; };
  const Case cases[] = {{"ReduceSum", 0}, {"ReduceProd", 1}, {"ReduceMax", -kInf}, {"ReduceMin", kInf}, {"ReduceL1", 0},
                        {"ReduceL2", 0}, {"ReduceSumSquare", 0}, {"ReduceLogSum", -kInf}, {"ReduceLogSumExp", -kInf}};
  for (const auto& c : cases) {
    CAPTURE(c.op);
    check_equal(run_node(node(c.op, {"x", "axes"}, {"y"}), {x, axes({1})}, 18)[0], tensor<float>({2, 1}, {c.expected, c.expected}));
  }
  CHECK(std::isnan(run_node(node("ReduceMean", {"x", "axes"}, {"y"}), {x, axes({1})}, 18)[0].tensor().data<float>()[0]));
}

TEST_CASE("integer and narrow types") {
  struct Case { const char* what; const char* op; Tensor x; Tensor expected; };
  const Case cases[] = {
      {"int32 sum wraps", "ReduceSum", tensor<int32_t>({2}, {2147483647, 1}), tensor<int32_t>({1}, {-2147483647 - 1})},
      {"int64 mean truncates", "ReduceMean", tensor<int64_t>({2}, {-3, 0}), tensor<int64_t>({1}, {-1})},
      {"uint8 max (v18)", "ReduceMax", tensor<uint8_t>({3}, {7, 255, 3}), tensor<uint8_t>({1}, {255})},
      {"bool min (v20)", "ReduceMin", tensor<bool>({2}, {true, false}), tensor<bool>({1}, {false})},
      {"int32 log-sum of 0 clamps, no UB", "ReduceLogSum", tensor<int32_t>({1}, {0}), tensor<int32_t>({1}, {-2147483647 - 1})},
      {"float16 sum accumulates wide", "ReduceSum", tensor<float16>({3}, {float16(2048.f), float16(1.f), float16(1.f)}), tensor<float16>({1}, {float16(2050.f)})},
      {"NaN propagates through max", "ReduceMax", tensor<float>({3}, {1, NAN, 2}), tensor<float>({1}, {NAN})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node(c.op, {"x"}, {"y"}), {c.x}, 20)[0], c.expected);
  }
}

TEST_CASE("bad axes are errors") {
  CHECK_THROWS_AS(run_node(node("ReduceSum", {"x", "axes"}, {"y"}), {x23, axes({2})}, 13), Error);
  CHECK_THROWS_AS(run_node(node("ReduceMean", {"x", "axes"}, {"y"}), {x23, axes({1, -1})}, 18), Error);
  CHECK_THROWS_AS(run_node(node("ReduceSum", {"x", "axes"}, {"y"}), {x23, tensor<int32_t>({1}, {0})}, 13), Error);
}

TEST_CASE("sum-like reductions of long and short rows match a double oracle (partial sums, tails, NaN, inf)") {
  // Rows of 1 to 9 elements (every tail of the four partial sums) and one of 100003; float values
  // whose double sum is exact, so that any order gives the oracle's value.
  for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 100003}) {
    CAPTURE(n);
    std::vector<float> x(size_t(2 * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7919 % 2001) - 1000) * 0.125f;
    double sum[2] = {0, 0}, sq[2] = {0, 0}, abs1[2] = {0, 0};
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[size_t(r * n + i)];
        sum[r] += v, sq[r] += v * v, abs1[r] += std::abs(v);
      }
    const Tensor xt = tensor<float>({2, n}, x), axes = tensor<int64_t>({1}, {-1});
    auto reduce = [&](const char* op) { return run_node(node(op, {"x", "a"}, {"y"}, {attr("keepdims", int64_t(0))}), {xt, axes})[0]; };
    check_equal(reduce("ReduceSum"), tensor<float>({2}, {float(sum[0]), float(sum[1])}), Tolerance{0, 0});
    check_equal(reduce("ReduceMean"), tensor<float>({2}, {float(sum[0] / double(n)), float(sum[1] / double(n))}), Tolerance{0, 0});
    check_equal(reduce("ReduceSumSquare"), tensor<float>({2}, {float(sq[0]), float(sq[1])}), Tolerance{0, 0});
    check_equal(reduce("ReduceL1"), tensor<float>({2}, {float(abs1[0]), float(abs1[1])}), Tolerance{0, 0});
    check_equal(reduce("ReduceL2"), tensor<float>({2}, {float(std::sqrt(sq[0])), float(std::sqrt(sq[1]))}), Tolerance{0, 0});
  }
  // NaN anywhere in a row, or +inf and -inf together, make its sum NaN; +inf alone gives +inf.
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor special = tensor<float>({3, 6}, {1, 2, 3, 4, 5, std::nanf(""), inf, 1, 2, 3, -inf, 4, 1, 2, 3, 4, 5, inf});
  const Tensor y = run_node(node("ReduceSum", {"x", "a"}, {"y"}, {attr("keepdims", int64_t(0))}), {special, tensor<int64_t>({1}, {1})})[0].tensor();
  CHECK(std::isnan(y.data<float>()[0]));
  CHECK(std::isnan(y.data<float>()[1]));
  CHECK(y.data<float>()[2] == inf);
}
