// SequenceConstruct, SequenceEmpty, SequenceLength, SequenceAt, SequenceInsert, SequenceErase.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

Sequence seq(std::vector<Tensor> items) {
  Sequence s;
  s.elem_dtype = items.empty() ? DType::Float : items[0].dtype();
  for (auto& t : items) s.items.push_back(t);
  return s;
}
Tensor f(float v) { return Tensor::scalar<float>(v); }
const Sequence abc = seq({f(1), f(2), f(3)});

}  // namespace

TEST_CASE("SequenceConstruct and SequenceEmpty keep the element type") {
  auto s = run_node(node("SequenceConstruct", {"a", "b"}, {"s"}), {tensor<int8_t>({2}, {1, 2}), tensor<int8_t>({0}, {})})[0];
  check_equal(s, seq({tensor<int8_t>({2}, {1, 2}), tensor<int8_t>({0}, {})}));
  CHECK(s.sequence().elem_dtype == DType::Int8);
  CHECK_THROWS_WITH_AS(run_node(node("SequenceConstruct", {"a", "b"}, {"s"}), {f(1), Tensor::scalar<double>(1)}),
                       doctest::Contains("cannot add a double tensor to a sequence of float"), Error);
  struct Case { const char* what; std::vector<Attribute> attrs; DType expected; };
  const Case cases[] = {
      {"default dtype is float", {}, DType::Float},
      {"dtype attribute", {attr("dtype", int64_t(DType::String))}, DType::String},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto e = run_node(node("SequenceEmpty", {}, {"s"}, c.attrs), {})[0];
    CHECK(e.sequence().items.empty());
    CHECK(e.sequence().elem_dtype == c.expected);
  }
  CHECK_THROWS_AS(run_node(node("SequenceEmpty", {}, {"s"}, {attr("dtype", int64_t(99))}), {}), Error);
}

TEST_CASE("SequenceLength and SequenceAt") {
  check_equal(run_node(node("SequenceLength", {"s"}, {"n"}), {abc})[0], Tensor::scalar<int64_t>(3));
  check_equal(run_node(node("SequenceLength", {"s"}, {"n"}), {seq({})})[0], Tensor::scalar<int64_t>(0));
  struct Case { const char* what; Tensor pos; float expected; };
  const Case cases[] = {
      {"first", Tensor::scalar<int64_t>(0), 1}, {"last", Tensor::scalar<int64_t>(2), 3},
      {"negative counts from the back", Tensor::scalar<int64_t>(-3), 1}, {"int32 position", Tensor::scalar<int32_t>(1), 2},
      {"a one-element 1-D position", tensor<int64_t>({1}, {-1}), 3},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("SequenceAt", {"s", "p"}, {"x"}), {abc, c.pos})[0], f(c.expected));
  }
  for (int64_t bad : {3, -4}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(run_node(node("SequenceAt", {"s", "p"}, {"x"}), {abc, Tensor::scalar<int64_t>(bad)}),
                         doctest::Contains("out of range for a sequence of 3"), Error);
  }
  CHECK_THROWS_WITH_AS(run_node(node("SequenceAt", {"s", "p"}, {"x"}), {abc, Tensor::scalar<float>(0)}),
                       doctest::Contains("int32 or int64"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("SequenceAt", {"s", "p"}, {"x"}), {f(1), Tensor::scalar<int64_t>(0)}),
                       doctest::Contains("must be a sequence, got a tensor"), Error);
}

TEST_CASE("SequenceInsert and SequenceErase return edited copies") {
  struct Case { const char* what; const char* op; Value pos; Sequence expected; };
  const Case cases[] = {
      {"insert at the end by default", "SequenceInsert", Value(), seq({f(1), f(2), f(3), f(9)})},
      {"insert at the front", "SequenceInsert", Tensor::scalar<int64_t>(0), seq({f(9), f(1), f(2), f(3)})},
      {"insert at position n (the end)", "SequenceInsert", Tensor::scalar<int64_t>(3), seq({f(1), f(2), f(3), f(9)})},
      {"insert before the last", "SequenceInsert", Tensor::scalar<int32_t>(-1), seq({f(1), f(2), f(9), f(3)})},
      {"erase the last by default", "SequenceErase", Value(), seq({f(1), f(2)})},
      {"erase the first", "SequenceErase", Tensor::scalar<int64_t>(0), seq({f(2), f(3)})},
      {"erase counting from the back", "SequenceErase", Tensor::scalar<int64_t>(-2), seq({f(1), f(3)})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const bool insert = std::string(c.op) == "SequenceInsert";
    std::vector<std::string> names{"s"};
    Values inputs{abc};
    if (insert) { names.push_back("t"); inputs.push_back(f(9)); }
    names.push_back(c.pos.is_absent() ? "" : "p");
    inputs.push_back(c.pos);
    check_equal(run_node(node(c.op, names, {"out"}), inputs)[0], c.expected);
  }
  CHECK(abc.items.size() == 3);  // the input was not edited
  CHECK_THROWS_WITH_AS(run_node(node("SequenceInsert", {"s", "t", "p"}, {"o"}), {abc, f(9), Tensor::scalar<int64_t>(4)}),
                       doctest::Contains("out of range"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("SequenceInsert", {"s", "t"}, {"o"}), {abc, Tensor::scalar<int64_t>(1)}),
                       doctest::Contains("cannot add a int64 tensor"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("SequenceErase", {"s"}, {"o"}), {seq({})}), doctest::Contains("empty sequence"), Error);
  // Inserting into an empty sequence of unknown element type sets it.
  auto grown = run_node(node("SequenceInsert", {"s", "t"}, {"o"}), {Sequence{}, Tensor::scalar<int32_t>(5)})[0];
  CHECK(grown.sequence().elem_dtype == DType::Int32);
}
