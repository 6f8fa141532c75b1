// Slice: clamping, negative steps, INT64 extremes, the attribute form of version 1, errors.
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor ints(std::vector<int64_t> v) { return tensor<int64_t>({int64_t(v.size())}, v); }
const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
}  // namespace

TEST_CASE("Slice along one axis of a 1-D tensor") {
  const Tensor x = tensor<int32_t>({5}, {0, 1, 2, 3, 4});
  struct Case { const char* what; int64_t start, end, step; std::vector<int32_t> expected; };
  const Case cases[] = {
      {"plain", 1, 3, 1, {1, 2}},
      {"step 2", 0, kMax, 2, {0, 2, 4}},
      {"reverse everything", -1, kMin, -1, {4, 3, 2, 1, 0}},
      {"reverse with step -2 from past the end", 100, -100, -2, {4, 2, 0}},
      {"start past end is empty", 4, 1, 1, {}},
      {"negative start and end", -3, -1, 1, {2, 3}},
      {"huge negative step picks the start only", 3, kMin, kMin, {3}},
      {"huge positive step picks the start only", 1, kMax, kMax, {1}},
      {"spec clamping: start before the beginning, negative step keeps element 0", -7, -10, -2, {0}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(node("Slice", {"x", "s", "e", "a", "p"}, {"y"}), {x, ints({c.start}), ints({c.end}), ints({0}), ints({c.step})});
    check_equal(out[0], tensor<int32_t>({int64_t(c.expected.size())}, c.expected));
  }
}

TEST_CASE("Slice of an empty axis with a negative step is empty") {
  auto out = run_node(node("Slice", {"x", "s", "e", "a", "p"}, {"y"}),
                      {tensor<float>({0}, {}), ints({-1}), ints({kMin}), ints({0}), ints({-1})});
  check_equal(out[0], tensor<float>({0}, {}));
}

TEST_CASE("Slice with omitted axes and steps, on strings") {
  const Tensor x = tensor<std::string>({2, 3}, {"a", "b", "c", "d", "e", "f"});
  auto out = run_node(node("Slice", {"x", "s", "e"}, {"y"}), {x, ints({1, 1}), ints({2, 3})});
  check_equal(out[0], tensor<std::string>({1, 2}, {"e", "f"}));
}

TEST_CASE("Slice-1 reads starts, ends and axes from attributes") {
  const Tensor x = tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  auto out = run_node(node("Slice", {"x"}, {"y"}, {attr("starts", std::vector<int64_t>{1}), attr("ends", std::vector<int64_t>{kMax}),
                                                    attr("axes", std::vector<int64_t>{1})}),
                      {x}, 9);
  check_equal(out[0], tensor<float>({2, 2}, {1, 2, 4, 5}));
}

TEST_CASE("Slice errors") {
  const Tensor x = tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  CHECK_THROWS_WITH_AS(run_node(node("Slice", {"x", "s", "e", "a", "p"}, {"y"}), {x, ints({0}), ints({1}), ints({0}), ints({0})}),
                       doctest::Contains("step cannot be 0"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("Slice", {"x", "s", "e", "a"}, {"y"}), {x, ints({0, 0}), ints({1, 1}), ints({1, -1})}),
                       doctest::Contains("appears twice"), Error);
  CHECK_THROWS_AS(run_node(node("Slice", {"x", "s", "e", "a"}, {"y"}), {x, ints({0}), ints({1}), ints({2})}), Error);
  CHECK_THROWS_AS(run_node(node("Slice", {"x", "s", "e"}, {"y"}), {x, ints({0}), ints({1, 2})}), Error);
}
