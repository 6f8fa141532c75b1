// Unary math functions: integer edge cases, NaN/sign handling, half-to-even rounding, IsInf/IsNaN.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
Value unary(const char* op, const Tensor& x, std::vector<Attribute> attrs = {}) {
  return run_node(node(op, {"x"}, {"y"}, attrs), {x})[0];
}
}  // namespace

TEST_CASE("unary functions on edge values") {
  struct Case { const char* op; Tensor x, expected; };
  const Case cases[] = {
      // abs(INT_MIN) wraps to INT_MIN; unsigned is unchanged
      {"Abs", tensor<int8_t>({3}, {-128, -5, 5}), tensor<int8_t>({3}, {-128, 5, 5})},
      {"Abs", tensor<uint16_t>({1}, {65535}), tensor<uint16_t>({1}, {65535})},
      // -INT_MIN wraps
      {"Neg", tensor<int32_t>({2}, {INT32_MIN, 3}), tensor<int32_t>({2}, {INT32_MIN, -3})},
      // half to even
      {"Round", tensor<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f}), tensor<float>({6}, {0.f, 2.f, 2.f, -0.f, -2.f, 3.f})},
      {"Sign", tensor<int64_t>({3}, {-7, 0, 9}), tensor<int64_t>({3}, {-1, 0, 1})},
      {"Sign", tensor<uint8_t>({2}, {0, 200}), tensor<uint8_t>({2}, {0, 1})},
      {"Sign", tensor<float>({2}, {-0.5f, kNaN}), tensor<float>({2}, {-1.f, kNaN})},
      // Erf on integers truncates its result back
      {"Erf", tensor<int32_t>({2}, {3, -3}), tensor<int32_t>({2}, {0, 0})},
      {"Reciprocal", tensor<double>({2}, {4.0, 0.0}), tensor<double>({2}, {0.25, INFINITY})},
      {"Ceil", tensor<bfloat16>({1}, {bfloat16(1.25f)}), tensor<bfloat16>({1}, {bfloat16(2.f)})},
      {"Sqrt", tensor<float16>({1}, {float16(9.f)}), tensor<float16>({1}, {float16(3.f)})},
      {"IsNaN", tensor<float>({3}, {kNaN, kInf, 0.f}), tensor<bool>({3}, {true, false, false})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    check_equal(unary(c.op, c.x), c.expected);
  }
}

TEST_CASE("IsInf detects the requested signs") {
  const Tensor x = tensor<float>({4}, {kInf, -kInf, kNaN, 1.f});
  check_equal(unary("IsInf", x), tensor<bool>({4}, {true, true, false, false}));
  check_equal(unary("IsInf", x, {attr("detect_negative", int64_t(0))}), tensor<bool>({4}, {true, false, false, false}));
  check_equal(unary("IsInf", x, {attr("detect_positive", int64_t(0))}), tensor<bool>({4}, {false, true, false, false}));
}

TEST_CASE("unary ops refuse element types outside their schema") {
  CHECK_THROWS_AS(unary("Sqrt", tensor<int32_t>({1}, {4})), Error);
  CHECK_THROWS_AS(unary("Neg", tensor<uint8_t>({1}, {4})), Error);
}
