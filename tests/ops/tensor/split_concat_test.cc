// Split and Concat: sizes from attribute / input / num_outputs, uneven chunks, negative axes, errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor ints(std::vector<int64_t> v) { return tensor<int64_t>({int64_t(v.size())}, v); }
Tensor seq7() { return tensor<int16_t>({7}, {0, 1, 2, 3, 4, 5, 6}); }
}  // namespace

TEST_CASE("Split: the ways to give the sizes across versions") {
  struct Case { const char* what; Node n; Values in; int64_t opset; std::vector<Tensor> expected; };
  const Case cases[] = {
      {"num_outputs: uneven last chunk (18)", node("Split", {"x"}, {"a", "b", "c"}, {attr("num_outputs", int64_t(3))}), {seq7()}, 18,
       {tensor<int16_t>({3}, {0, 1, 2}), tensor<int16_t>({3}, {3, 4, 5}), tensor<int16_t>({1}, {6})}},
      {"split input (13)", node("Split", {"x", "s"}, {"a", "b"}), {seq7(), ints({2, 5})}, 13,
       {tensor<int16_t>({2}, {0, 1}), tensor<int16_t>({5}, {2, 3, 4, 5, 6})}},
      {"split attribute (11), a zero-size part", node("Split", {"x"}, {"a", "b"}, {attr("split", std::vector<int64_t>{0, 7})}),
       {seq7()}, 11, {tensor<int16_t>({0}, {}), seq7()}},
      {"equal parts without sizes (13)", node("Split", {"x"}, {"a"}), {seq7()}, 13, {seq7()}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(c.n, c.in, c.opset);
    REQUIRE(out.size() == c.expected.size());
    for (size_t i = 0; i < out.size(); ++i) check_equal(out[i], c.expected[i]);
  }
}

TEST_CASE("Split along a negative axis keeps strings intact") {
  auto out = run_node(node("Split", {"x"}, {"a", "b"}, {attr("axis", int64_t(-1)), attr("num_outputs", int64_t(2))}),
                      {tensor<std::string>({2, 2}, {"p", "q", "r", "s"})});
  check_equal(out[0], tensor<std::string>({2, 1}, {"p", "r"}));
  check_equal(out[1], tensor<std::string>({2, 1}, {"q", "s"}));
}

TEST_CASE("Split errors") {
  CHECK_THROWS_WITH_AS(run_node(node("Split", {"x", "s"}, {"a", "b"}), {seq7(), ints({2, 2})}), doctest::Contains("add up to 4"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("Split", {"x"}, {"a", "b"}), {seq7()}, 13), doctest::Contains("equal parts"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("Split", {"x"}, {"a", "b"}), {seq7()}, 18), doctest::Contains("num_outputs"), Error);
  CHECK_THROWS_AS(run_node(node("Split", {"x", "s"}, {"a", "b"}), {seq7(), ints({-1, 8})}), Error);
  CHECK_THROWS_AS(run_node(node("Split", {"x"}, {"a", "b"}, {attr("num_outputs", int64_t(3))}), {seq7()}), Error);
}

TEST_CASE("Concat along negative and inner axes") {
  const Tensor a = tensor<uint8_t>({2, 1}, {1, 2}), b = tensor<uint8_t>({2, 2}, {3, 4, 5, 6});
  check_equal(run_node(node("Concat", {"a", "b"}, {"c"}, {attr("axis", int64_t(-1))}), {a, b})[0],
              tensor<uint8_t>({2, 3}, {1, 3, 4, 2, 5, 6}));
  const Tensor e = tensor<uint8_t>({2, 0}, {});
  check_equal(run_node(node("Concat", {"a", "e", "a"}, {"c"}, {attr("axis", int64_t(1))}), {a, e, a})[0],
              tensor<uint8_t>({2, 2}, {1, 1, 2, 2}));
}

TEST_CASE("Concat errors: mismatched shapes, types, scalars, bad axis") {
  const Tensor a = tensor<float>({2, 1}, {1, 2});
  CHECK_THROWS_AS(run_node(node("Concat", {"a", "b"}, {"c"}, {attr("axis", int64_t(1))}), {a, tensor<float>({3, 1}, {1, 2, 3})}), Error);
  CHECK_THROWS_AS(run_node(node("Concat", {"a", "b"}, {"c"}, {attr("axis", int64_t(1))}), {a, tensor<double>({2, 1}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_node(node("Concat", {"a"}, {"c"}, {attr("axis", int64_t(0))}), {tensor<float>({}, {1})}), Error);
  CHECK_THROWS_AS(run_node(node("Concat", {"a"}, {"c"}, {attr("axis", int64_t(2))}), {a}), Error);
}
