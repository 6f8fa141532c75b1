// SplitToSequence and ConcatFromSequence.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Sequence seq(std::vector<Tensor> items) {
  Sequence s{items.empty() ? DType::Float : items[0].dtype(), {}};
  for (auto& t : items) s.items.push_back(t);
  return s;
}
// x is (2, 3) = [[1, 2, 3], [4, 5, 6]].
const Tensor x = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
}  // namespace

TEST_CASE("SplitToSequence cuts by length") {
  struct Case { const char* what; std::vector<Attribute> attrs; Value split; Sequence expected; };
  const Case cases[] = {
      {"no split: pieces of 1 along axis 0", {}, Value(), seq({tensor<float>({1, 3}, {1, 2, 3}), tensor<float>({1, 3}, {4, 5, 6})})},
      {"no split, keepdims 0 drops the axis", {attr("keepdims", int64_t(0))}, Value(),
       seq({tensor<float>({3}, {1, 2, 3}), tensor<float>({3}, {4, 5, 6})})},
      {"scalar split, last piece shorter, axis 1", {attr("axis", int64_t(1))}, Tensor::scalar<int64_t>(2),
       seq({tensor<float>({2, 2}, {1, 2, 4, 5}), tensor<float>({2, 1}, {3, 6})})},
      {"1-D split ignores keepdims, axis -1", {attr("axis", int64_t(-1)), attr("keepdims", int64_t(0))}, tensor<int32_t>({2}, {1, 2}),
       seq({tensor<float>({2, 1}, {1, 4}), tensor<float>({2, 2}, {2, 3, 5, 6})})},
      {"1-D split with a zero length", {attr("axis", int64_t(1))}, tensor<int64_t>({3}, {0, 3, 0}),
       seq({Tensor(DType::Float, {2, 0}), x, Tensor(DType::Float, {2, 0})})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(node("SplitToSequence", {"x", c.split.is_absent() ? "" : "split"}, {"s"}, c.attrs), {x, c.split})[0];
    check_equal(out, c.expected);
    CHECK(out.sequence().elem_dtype == DType::Float);
  }
  auto strings = run_node(node("SplitToSequence", {"x"}, {"s"}, {attr("keepdims", int64_t(0))}),
                          {tensor<std::string>({2}, {"a", "bc"})})[0];
  check_equal(strings, seq({tensor<std::string>({}, {"a"}), tensor<std::string>({}, {"bc"})}));
}

TEST_CASE("SplitToSequence refuses bad splits") {
  struct Case { const char* what; Tensor split; const char* message; };
  const Case cases[] = {
      {"lengths not adding up", tensor<int64_t>({2}, {1, 2}), "add up to 3 but axis 0 has length 2"},
      {"negative length", tensor<int64_t>({2}, {3, -1}), "must be positive"},
      {"zero scalar", Tensor::scalar<int64_t>(0), "must be positive"},
      {"2-D split", tensor<int64_t>({1, 1}, {2}), "scalar or 1-D"},
      {"float split", Tensor::scalar<float>(1), "int32 or int64"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK_THROWS_WITH_AS(run_node(node("SplitToSequence", {"x", "split"}, {"s"}), {x, c.split}), doctest::Contains(c.message), Error);
  }
  CHECK_THROWS_WITH_AS(run_node(node("SplitToSequence", {"x"}, {"s"}, {attr("axis", int64_t(2))}), {x}),
                       doctest::Contains("out of range"), Error);
}

TEST_CASE("ConcatFromSequence joins or stacks") {
  const Sequence two = seq({tensor<int64_t>({1, 2}, {1, 2}), tensor<int64_t>({1, 2}, {3, 4})});
  struct Case { const char* what; int64_t axis, new_axis; Tensor expected; };
  const Case cases[] = {
      {"join along 0", 0, 0, tensor<int64_t>({2, 2}, {1, 2, 3, 4})},
      {"join along -1", -1, 0, tensor<int64_t>({1, 4}, {1, 2, 3, 4})},
      {"stack at 0", 0, 1, tensor<int64_t>({2, 1, 2}, {1, 2, 3, 4})},
      {"stack at the end (axis = rank)", 2, 1, tensor<int64_t>({1, 2, 2}, {1, 3, 2, 4})},
      {"stack at -1 means after the last axis", -1, 1, tensor<int64_t>({1, 2, 2}, {1, 3, 2, 4})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("ConcatFromSequence", {"s"}, {"y"}, {attr("axis", c.axis), attr("new_axis", c.new_axis)}), {two})[0],
                c.expected);
  }
  const Sequence scalars = seq({Tensor::scalar<float>(1), Tensor::scalar<float>(2)});
  check_equal(run_node(node("ConcatFromSequence", {"s"}, {"y"}, {attr("axis", int64_t(0)), attr("new_axis", int64_t(1))}), {scalars})[0],
              tensor<float>({2}, {1, 2}));
  CHECK_THROWS_WITH_AS(run_node(node("ConcatFromSequence", {"s"}, {"y"}, {attr("axis", int64_t(0))}), {scalars}),
                       doctest::Contains("scalars"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("ConcatFromSequence", {"s"}, {"y"}, {attr("axis", int64_t(0))}), {seq({})}),
                       doctest::Contains("empty sequence"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("ConcatFromSequence", {"s"}, {"y"}, {attr("axis", int64_t(1))}),
                                {seq({tensor<float>({1, 2}, {1, 2}), tensor<float>({2, 1}, {1, 2})})}),
                       doctest::Contains("cannot join shapes"), Error);
  CHECK_THROWS_AS(run_node(node("ConcatFromSequence", {"s"}, {"y"}), {two}), Error);  // axis is required
}

TEST_CASE("SplitToSequence and ConcatFromSequence move every element width") {
  using C = std::complex<double>;
  struct Case { const char* what; Tensor x; };
  const Case cases[] = {
      {"bool (1 byte)", tensor<bool>({2, 2}, {true, false, false, true})},
      {"float16 (2 bytes)", tensor<float16>({2, 2}, {float16(1.5f), float16(-2.0f), float16(0.0f), float16(8.0f)})},
      {"complex128 (16 bytes)", tensor<C>({2, 2}, {C(1, 2), C(3, 4), C(5, 6), C(7, 8)})},
      {"string", tensor<std::string>({2, 2}, {"a", "b", "c", "d"})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    // Split (2, 2) into its columns, then join them back along the same axis: the identity.
    auto s = run_node(node("SplitToSequence", {"x"}, {"s"}, {attr("axis", int64_t(1))}), {c.x})[0];
    REQUIRE(s.sequence().items.size() == 2);
    CHECK(s.sequence().items[0].tensor().shape() == Shape{2, 1});
    check_equal(run_node(node("ConcatFromSequence", {"s"}, {"y"}, {attr("axis", int64_t(1))}), {s})[0], c.x);
  }
}
