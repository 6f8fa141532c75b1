// ScatterElements / Scatter, ScatterND: reductions, wrapping, NaN, errors (TensorScatter:
// tensor_scatter_test.cc).
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("ScatterElements reductions, duplicates accumulate") {
  const Tensor x = tensor<int8_t>({3}, {100, 2, 3});
  const Tensor idx = tensor<int64_t>({3}, {0, 0, -1});
  const Tensor upd = tensor<int8_t>({3}, {20, 10, 5});
  struct Case { const char* reduction; std::vector<int8_t> expected; };
  const Case cases[] = {
      {"add", {-126, 2, 8}},  // 100 + 20 + 10 wraps to -126
      {"mul", {32, 2, 15}},   // 100 * 20 * 10 = 20000 = 32 mod 256
      {"max", {100, 2, 5}},
      {"min", {10, 2, 3}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.reduction);
    auto out = run_node(node("ScatterElements", {"x", "i", "u"}, {"y"}, {attr("reduction", c.reduction)}), {x, idx, upd});
    check_equal(out[0], tensor<int8_t>({3}, c.expected));
  }
  // reduction none: the last write wins; the input is not modified.
  check_equal(run_node(node("ScatterElements", {"x", "i", "u"}, {"y"}), {x, idx, upd})[0], tensor<int8_t>({3}, {10, 2, 5}));
  CHECK(x.data<int8_t>()[0] == 100);
}

TEST_CASE("ScatterElements max propagates NaN; Scatter-9 is the same op on strings") {
  const float nan = std::nanf("");
  auto out = run_node(node("ScatterElements", {"x", "i", "u"}, {"y"}, {attr("reduction", "max")}),
                      {tensor<float>({2}, {1, nan}), tensor<int64_t>({2}, {0, 1}), tensor<float>({2}, {nan, 5})});
  CHECK(std::isnan(out[0].tensor().data<float>()[0]));
  CHECK(std::isnan(out[0].tensor().data<float>()[1]));
  auto s = run_node(node("Scatter", {"x", "i", "u"}, {"y"}, {attr("axis", int64_t(1))}),
                    {tensor<std::string>({1, 3}, {"a", "b", "c"}), tensor<int32_t>({1, 1}, {2}), tensor<std::string>({1, 1}, {"z"})}, 9);
  check_equal(s[0], tensor<std::string>({1, 3}, {"a", "b", "z"}));
}

TEST_CASE("ScatterElements errors: range, unknown reduction, reduction on strings, max before 18") {
  const Tensor x = tensor<float>({2}, {1, 2});
  CHECK_THROWS_WITH_AS(run_node(node("ScatterElements", {"x", "i", "u"}, {"y"}), {x, tensor<int64_t>({1}, {2}), tensor<float>({1}, {0})}),
                       doctest::Contains("out of range"), Error);
  CHECK_THROWS_AS(run_node(node("ScatterElements", {"x", "i", "u"}, {"y"}, {attr("reduction", "avg")}),
                           {x, tensor<int64_t>({1}, {0}), tensor<float>({1}, {0})}), Error);
  CHECK_THROWS_AS(run_node(node("ScatterElements", {"x", "i", "u"}, {"y"}, {attr("reduction", "max")}),
                           {x, tensor<int64_t>({1}, {0}), tensor<float>({1}, {0})}, 16), Error);
  CHECK_THROWS_AS(run_node(node("ScatterElements", {"x", "i", "u"}, {"y"}, {attr("reduction", "add")}),
                           {tensor<std::string>({1}, {"a"}), tensor<int64_t>({1}, {0}), tensor<std::string>({1}, {"b"})}), Error);
}

TEST_CASE("ScatterND writes slices and reduces") {
  const Tensor x = tensor<double>({2, 2}, {1, 2, 3, 4});
  check_equal(run_node(node("ScatterND", {"x", "i", "u"}, {"y"}), {x, tensor<int64_t>({1, 1}, {-1}), tensor<double>({1, 2}, {9, 8})})[0],
              tensor<double>({2, 2}, {1, 2, 9, 8}));
  check_equal(run_node(node("ScatterND", {"x", "i", "u"}, {"y"}, {attr("reduction", "mul")}),
                       {x, tensor<int64_t>({2, 2}, {0, 1, 0, 1}), tensor<double>({2}, {2, 5})})[0],
              tensor<double>({2, 2}, {1, 20, 3, 4}));
  CHECK_THROWS_AS(run_node(node("ScatterND", {"x", "i", "u"}, {"y"}), {x, tensor<int64_t>({1, 1}, {2}), tensor<double>({1, 2}, {9, 8})}), Error);
  CHECK_THROWS_AS(run_node(node("ScatterND", {"x", "i", "u"}, {"y"}), {x, tensor<int64_t>({1, 1}, {0}), tensor<double>({1, 3}, {9, 8, 7})}), Error);
}
