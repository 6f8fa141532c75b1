// Reduce*: axes as attribute and as input, keepdims, noop_with_empty_axes, empty-set identities,
// integer wrap-around and NaN propagation.
#include <cmath>
#include <bit>
#include <cstdint>
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

TEST_CASE("ReduceMax/ReduceMin of float rows equal an in-order scan bit for bit (tails, signed zeros, NaN payloads, several runs)") {
  // The in-order scan the spec's numpy reference does: NaN propagates (the last NaN seen wins),
  // otherwise a strictly larger (smaller) element replaces the running value, so among equal zeros
  // the first one stays.
  auto scan = [](const float* p, int64_t n, int64_t stride, bool is_max) {
    float a = is_max ? -kInf : kInf;
    for (int64_t i = 0; i < n; ++i) {
      const float v = p[i * stride];
      if (std::isnan(v)) a = v;
      else if (is_max ? v > a : v < a) a = v;
    }
    return a;
  };
  const float nan1 = std::bit_cast<float>(0x7fc00001u), nan2 = std::bit_cast<float>(0xffc00002u);
  for (int64_t n : {1, 3, 8, 9, 17, 64, 131}) {
    CAPTURE(n);
    const int64_t rows = 7;
    std::vector<float> x(size_t(rows * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7919 % 2001) - 1000) * 0.125f;
    // Row 1: zeros of both signs as its max (-0 at 1, +0 at 8: lane 0 of a vector scan meets +0 first);
    // row 2: two NaNs; row 3: one NaN at the end; row 4: all equal; row 5: +-inf; row 6: plain.
    for (int64_t i = 0; i < n; ++i) x[size_t(n + i)] = i % 3 == 1 ? -0.0f : (i % 3 == 2 && i >= 8 ? 0.0f : -1.0f - float(i));
    x[size_t(2 * n)] = nan1;
    x[size_t(3 * n - 1)] = nan2;
    x[size_t(4 * n - 1)] = nan1;
    for (int64_t i = 0; i < n; ++i) x[size_t(4 * n + i)] = 2.5f;
    x[size_t(5 * n)] = kInf;
    x[size_t(6 * n - 1)] = -kInf;
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      const bool is_max = op[6] == 'M' && op[7] == 'a';
      // axis 1: one run per row; axes {0, 1} of a [rows, 1, n] view: runs combined across rows.
      const Tensor y = run_node(node(op, {"x", "a"}, {"y"}, {attr("keepdims", int64_t(0))}),
                                {tensor<float>({rows, n}, x), axes({1})})[0].tensor();
      for (int64_t r = 0; r < rows; ++r) {
        const float want = scan(&x[size_t(r * n)], n, 1, is_max);
        CHECK(std::bit_cast<uint32_t>(y.data<float>()[r]) == std::bit_cast<uint32_t>(want));
      }
      const Tensor all = run_node(node(op, {"x", "a"}, {"y"}, {attr("keepdims", int64_t(0))}),
                                  {tensor<float>({rows, n}, x), axes({0, 1})})[0].tensor();
      CHECK(std::bit_cast<uint32_t>(all.data<float>()[0]) == std::bit_cast<uint32_t>(scan(x.data(), rows * n, 1, is_max)));
      // Without the NaN rows the zero row decides ReduceMax across all: signed zeros in order.
      std::vector<float> no_nan(x.begin() + n, x.begin() + 2 * n);
      const Tensor z = run_node(node(op, {"x", "a"}, {"y"}, {attr("keepdims", int64_t(0))}),
                                {tensor<float>({1, n}, no_nan), axes({1})})[0].tensor();
      CHECK(std::bit_cast<uint32_t>(z.data<float>()[0]) == std::bit_cast<uint32_t>(scan(no_nan.data(), n, 1, is_max)));
    }
  }
}
