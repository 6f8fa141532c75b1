// Add, Sub, Mul, Div: broadcasting, integer wrap-around and integer division rules.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::node;

TEST_CASE("Add broadcasts a row over a matrix") {
  auto out = run_node(node("Add", {"a", "b"}, {"c"}),
                      {tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5}), tensor<float>({3}, {10, 20, 30})});
  check_equal(out[0], tensor<float>({2, 3}, {10, 21, 32, 13, 24, 35}));
}

TEST_CASE("integer arithmetic wraps and division truncates toward zero") {
  struct Case { const char* op; Tensor a, b, expected; };
  const Case cases[] = {
      {"Add", tensor<int8_t>({2}, {127, -128}), tensor<int8_t>({2}, {1, -1}), tensor<int8_t>({2}, {-128, 127})},
      {"Mul", tensor<int32_t>({1}, {65536}), tensor<int32_t>({1}, {65536}), tensor<int32_t>({1}, {0})},
      {"Div", tensor<int32_t>({3}, {7, -7, 7}), tensor<int32_t>({3}, {2, 2, -2}), tensor<int32_t>({3}, {3, -3, -3})},
      {"Sub", tensor<uint8_t>({1}, {0}), tensor<uint8_t>({1}, {1}), tensor<uint8_t>({1}, {255})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    check_equal(run_node(node(c.op, {"a", "b"}, {"c"}), {c.a, c.b})[0], c.expected);
  }
}

TEST_CASE("integer division by zero is an error naming the node") {
  CHECK_THROWS_WITH_AS(run_node(node("Div", {"a", "b"}, {"c"}, {}, "div0"), {tensor<int64_t>({1}, {1}), tensor<int64_t>({1}, {0})}),
                       doctest::Contains("node 'div0' (Div): integer division by zero"), Error);
}

TEST_CASE("mixed element types are refused") {
  CHECK_THROWS_AS(run_node(node("Add", {"a", "b"}, {"c"}), {tensor<float>({1}, {1}), tensor<double>({1}, {1})}), Error);
}
