// Optional, OptionalHasElement, OptionalGetElement, before and from opset 18.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Optional holding(Value v) { return Optional{std::make_shared<const Value>(std::move(v)), nullptr}; }
Optional empty_optional() { return Optional{}; }
const Tensor x = tensor<int32_t>({2}, {1, 2});
const Sequence s{DType::Int32, {x}};

Attribute type_attr(ValueType t) {
  Attribute a;
  a.name = "type";
  a.type = AttrType::TypeProto;
  a.tp = std::move(t);
  return a;
}
}  // namespace

TEST_CASE("Optional wraps a value or makes an empty optional of a type") {
  auto full = run_node(node("Optional", {"x"}, {"o"}), {x}, 15)[0];
  REQUIRE(full.is_optional());
  check_equal(*full.optional().value, x);
  auto of_seq = run_node(node("Optional", {"s"}, {"o"}), {s}, 15)[0];
  check_equal(*of_seq.optional().value, s);
  auto empty = run_node(node("Optional", {}, {"o"}, {type_attr(ValueType::tensor(DType::Float, {}))}), {}, 15)[0];
  CHECK_FALSE(empty.optional().has_value());
  REQUIRE(empty.optional().type);
  CHECK(empty.optional().type->dtype == DType::Float);
  CHECK_THROWS_WITH_AS(run_node(node("Optional", {}, {"o"}), {}, 15), doctest::Contains("needs the 'type' attribute"), Error);
}

TEST_CASE("OptionalHasElement") {
  struct Case { const char* what; int64_t opset; Value input; bool expected; };
  const Case cases[] = {
      {"a full optional", 15, holding(x), true},
      {"an empty optional", 15, empty_optional(), false},
      {"from 18: a plain tensor", 18, x, true},
      {"from 18: a plain sequence", 18, s, true},
      {"from 18: an omitted input", 18, Value(), false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const auto n = node("OptionalHasElement", {c.input.is_absent() ? "" : "o"}, {"b"});
    check_equal(run_node(n, {c.input}, c.opset)[0], Tensor::scalar<bool>(c.expected));
  }
  CHECK_THROWS_WITH_AS(run_node(node("OptionalHasElement", {"o"}, {"b"}), {x}, 15), doctest::Contains("before opset 18"), Error);
  CHECK_THROWS_AS(run_node(node("OptionalHasElement", {""}, {"b"}), {Value()}, 15), Error);
}

TEST_CASE("OptionalGetElement") {
  struct Case { const char* what; int64_t opset; Value input; Value expected; };
  const Case cases[] = {
      {"a full optional of a tensor", 15, holding(x), x},
      {"a full optional of a sequence", 15, holding(s), s},
      {"from 18: a tensor passes through", 18, x, x},
      {"from 18: a sequence passes through", 18, s, s},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("OptionalGetElement", {"o"}, {"v"}), {c.input}, c.opset)[0], c.expected);
  }
  CHECK_THROWS_WITH_AS(run_node(node("OptionalGetElement", {"o"}, {"v"}), {empty_optional()}, 18), doctest::Contains("empty"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("OptionalGetElement", {"o"}, {"v"}), {x}, 15), doctest::Contains("before opset 18"), Error);
}
