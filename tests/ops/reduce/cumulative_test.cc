// CumSum / CumProd: exclusive, reverse, axis input types, integer wrap-around.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("CumSum and CumProd with exclusive and reverse") {
  const Tensor x = tensor<double>({3}, {1, 2, 3});
  const Tensor axis0 = tensor<int32_t>({}, {0});
  const auto ex = attr("exclusive", int64_t(1)), rev = attr("reverse", int64_t(1));
  struct Case { const char* what; const char* op; std::vector<Attribute> attrs; Tensor expected; };
  const Case cases[] = {
      {"inclusive sum", "CumSum", {}, tensor<double>({3}, {1, 3, 6})},
      {"exclusive sum", "CumSum", {ex}, tensor<double>({3}, {0, 1, 3})},
      {"reverse sum", "CumSum", {rev}, tensor<double>({3}, {6, 5, 3})},
      {"reverse exclusive sum", "CumSum", {ex, rev}, tensor<double>({3}, {5, 3, 0})},
      {"inclusive product", "CumProd", {}, tensor<double>({3}, {1, 2, 6})},
      {"reverse exclusive product", "CumProd", {ex, rev}, tensor<double>({3}, {6, 3, 1})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node(c.op, {"x", "axis"}, {"y"}, c.attrs), {x, axis0}, 26)[0], c.expected);
  }
}

TEST_CASE("CumSum along a negative int64 axis, integer wrap, float16") {
  check_equal(run_node(node("CumSum", {"x", "a"}, {"y"}), {tensor<float>({2, 2}, {1, 2, 3, 4}), tensor<int64_t>({}, {-1})})[0],
              tensor<float>({2, 2}, {1, 3, 3, 7}));
  check_equal(run_node(node("CumSum", {"x", "a"}, {"y"}), {tensor<int32_t>({2}, {2147483647, 1}), tensor<int64_t>({}, {0})})[0],
              tensor<int32_t>({2}, {2147483647, -2147483647 - 1}));
  check_equal(run_node(node("CumProd", {"x", "a"}, {"y"}), {tensor<float16>({2}, {float16(3.f), float16(.5f)}), tensor<int64_t>({}, {0})}, 26)[0],
              tensor<float16>({2}, {float16(3.f), float16(1.5f)}));
}

TEST_CASE("Cumulative errors") {
  CHECK_THROWS_AS(run_node(node("CumSum", {"x", "a"}, {"y"}), {tensor<float>({2}, {1, 2}), tensor<int64_t>({}, {1})}), Error);
  CHECK_THROWS_AS(run_node(node("CumSum", {"x", "a"}, {"y"}), {tensor<float>({2}, {1, 2}), tensor<float>({}, {0})}), Error);
  CHECK_THROWS_AS(run_node(node("CumProd", {"x", "a"}, {"y"}), {tensor<float>({2}, {1, 2}), tensor<int64_t>({}, {0})}, 25), Error);
}
