// Reshape, Flatten, Squeeze, Unsqueeze: shape rules, storage sharing, legacy attribute forms, errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor shape_of(std::vector<int64_t> dims) { return tensor<int64_t>({int64_t(dims.size())}, dims); }
Tensor iota_f(Shape s) {
  std::vector<float> v(size_t(shape_size(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  return tensor<float>(s, v);
}
}  // namespace

TEST_CASE("Reshape resolves 0 and -1 as the spec says") {
  struct Case { const char* what; Shape in; std::vector<int64_t> shape; int64_t allowzero; Shape expected; };
  const Case cases[] = {
      {"-1 is inferred", {2, 3, 4}, {4, -1}, 0, {4, 6}},
      {"0 copies the input dim", {2, 3, 4}, {0, -1}, 0, {2, 12}},
      {"empty shape makes a scalar", {1, 1}, {}, 0, {}},
      {"allowzero keeps an explicit 0", {0, 3}, {3, 0}, 1, {3, 0}},
      {"-1 next to a zero-size input", {0, 3}, {-1, 3}, 0, {0, 3}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(node("Reshape", {"x", "s"}, {"y"}, {attr("allowzero", c.allowzero)}), {iota_f(c.in), shape_of(c.shape)});
    CHECK(out[0].tensor().shape() == c.expected);
  }
}

TEST_CASE("Reshape shares the input's storage and keeps strings") {
  const Tensor x = tensor<std::string>({2, 2}, {"a", "b", "c", "d"});
  auto out = run_node(node("Reshape", {"x", "s"}, {"y"}), {x, shape_of({4})});
  CHECK(out[0].tensor().raw_data() == x.raw_data());
  check_equal(out[0], tensor<std::string>({4}, {"a", "b", "c", "d"}));
}

TEST_CASE("Reshape-1 takes the shape attribute") {
  auto out = run_node(node("Reshape", {"x"}, {"y"}, {attr("shape", std::vector<int64_t>{3, -1})}), {iota_f({6})}, 4);
  CHECK(out[0].tensor().shape() == Shape{3, 2});
}

TEST_CASE("Reshape errors") {
  auto bad = [](std::vector<int64_t> s, int64_t allowzero = 0) {
    return run_node(node("Reshape", {"x", "s"}, {"y"}, {attr("allowzero", allowzero)}), {iota_f({2, 3}), shape_of(s)});
  };
  CHECK_THROWS_WITH_AS(bad({4, -1}), doctest::Contains("cannot reshape"), Error);
  CHECK_THROWS_WITH_AS(bad({-1, -1}), doctest::Contains("more than one -1"), Error);
  CHECK_THROWS_WITH_AS(bad({-2, 3}), doctest::Contains("invalid dimension"), Error);
  CHECK_THROWS_WITH_AS(bad({0, 0, 0}), doctest::Contains("input has rank 2"), Error);
  CHECK_THROWS_AS(bad({0, -1}, 1), Error);  // allowzero: 0 and -1 together cannot be resolved
  // (0, 3) to [0, -1]: any size fits the -1 (numpy: "cannot reshape array of size 0 into shape (0,newaxis)")
  CHECK_THROWS_WITH_AS(run_node(node("Reshape", {"x", "s"}, {"y"}), {tensor<float>({0, 3}, {}), shape_of({0, -1})}),
                       doctest::Contains("cannot infer the -1 of (0, -1) beside a dim of 0"), Error);
}

TEST_CASE("Flatten around every axis, negative included") {
  struct Case { int64_t axis; Shape expected; };
  const Case cases[] = {{0, {1, 24}}, {1, {2, 12}}, {3, {24, 1}}, {-1, {6, 4}}, {-2, {2, 12}}, {-3, {1, 24}}};
  for (const auto& c : cases) {
    CAPTURE(c.axis);
    auto out = run_node(node("Flatten", {"x"}, {"y"}, {attr("axis", c.axis)}), {iota_f({2, 3, 4})});
    CHECK(out[0].tensor().shape() == c.expected);
  }
  CHECK_THROWS_AS(run_node(node("Flatten", {"x"}, {"y"}, {attr("axis", int64_t(4))}), {iota_f({2, 3, 4})}), Error);
}

TEST_CASE("Squeeze and Unsqueeze with attribute (before 13) and input axes") {
  const Tensor x = iota_f({1, 3, 1});
  CHECK(run_node(node("Squeeze", {"x"}, {"y"}), {x})[0].tensor().shape() == Shape{3});
  CHECK(run_node(node("Squeeze", {"x", "a"}, {"y"}), {x, shape_of({-1})})[0].tensor().shape() == Shape{1, 3});
  CHECK(run_node(node("Squeeze", {"x"}, {"y"}, {attr("axes", std::vector<int64_t>{0})}), {x}, 11)[0].tensor().shape() == Shape{3, 1});
  CHECK(run_node(node("Unsqueeze", {"x", "a"}, {"y"}), {iota_f({3}), shape_of({-1, 0})})[0].tensor().shape() == Shape{1, 3, 1});
  CHECK(run_node(node("Unsqueeze", {"x"}, {"y"}, {attr("axes", std::vector<int64_t>{1})}), {iota_f({3})}, 11)[0].tensor().shape() ==
        Shape{3, 1});
  CHECK_THROWS_WITH_AS(run_node(node("Squeeze", {"x", "a"}, {"y"}), {x, shape_of({1})}), doctest::Contains("not 1"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("Unsqueeze", {"x", "a"}, {"y"}), {iota_f({3}), shape_of({0, 0})}),
                       doctest::Contains("appears twice"), Error);
  CHECK_THROWS_AS(run_node(node("Unsqueeze", {"x", "a"}, {"y"}), {iota_f({3}), shape_of({2})}), Error);
}
