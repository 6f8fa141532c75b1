// ArgMax / ArgMin: ties (first vs select_last_index), NaN, keepdims, dtypes and bad axes.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("ArgMax and ArgMin") {
  const Tensor x = tensor<float>({2, 3}, {1, 3, 3, 0, -1, 0});
  struct Case { const char* what; const char* op; std::vector<Attribute> attrs; Tensor x; Tensor expected; };
  const Case cases[] = {
      {"default axis 0, keepdims", "ArgMax", {}, x, tensor<int64_t>({1, 3}, {0, 0, 0})},
      {"axis 1, first of ties", "ArgMax", {attr("axis", int64_t(1))}, x, tensor<int64_t>({2, 1}, {1, 0})},
      {"axis -1, last of ties, no keepdims", "ArgMax", {attr("axis", int64_t(-1)), attr("select_last_index", int64_t(1)), attr("keepdims", int64_t(0))}, x,
       tensor<int64_t>({2}, {2, 2})},
      {"ArgMin last of ties", "ArgMin", {attr("axis", int64_t(1)), attr("select_last_index", int64_t(1))}, x, tensor<int64_t>({2, 1}, {0, 1})},
      {"NaN is the extreme", "ArgMin", {}, tensor<float>({3}, {1, NAN, -5}), tensor<int64_t>({1}, {1})},
      {"uint8", "ArgMax", {}, tensor<uint8_t>({3}, {0, 255, 7}), tensor<int64_t>({1}, {1})},
      {"float16", "ArgMin", {}, tensor<float16>({2}, {float16(2.f), float16(-2.f)}), tensor<int64_t>({1}, {1})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node(c.op, {"x"}, {"y"}, c.attrs), {c.x}, 13)[0], c.expected);
  }
}

TEST_CASE("ArgMax errors") {
  CHECK_THROWS_AS(run_node(node("ArgMax", {"x"}, {"y"}, {attr("axis", int64_t(1))}), {tensor<float>({2}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_node(node("ArgMax", {"x"}, {"y"}), {tensor<float>({0, 2}, {})}), Error);
}
