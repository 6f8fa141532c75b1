// Cutting one node out of a model: the values it reads (inputs and what its bodies capture), its
// types from actual values, and the model-local functions it needs; the result runs alone.
#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "refeval/node_extract.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

TEST_CASE("a node reads its inputs once each, then what its bodies capture") {
  Graph then_branch = graph("then", {node("Add", {"outer", "local"}, {"r"})}, {}, {untyped_info("r")},
                            {{"local", tensor<float>({1}, {1})}});
  Graph else_branch = graph("else", {node("Identity", {"outer2"}, {"r2"})}, {}, {untyped_info("r2")});
  Node n = node("If", {"cond"}, {"out"}, {attr("then_branch", then_branch), attr("else_branch", else_branch)}, "if");
  CHECK(node_reads(n) == std::vector<std::string>{"cond", "outer", "outer2"});
  CHECK(node_reads(node("Add", {"x", "x"}, {"y"})) == std::vector<std::string>{"x"});
  CHECK(node_reads(node("Clip", {"x", "", "hi"}, {"y"})) == std::vector<std::string>{"x", "hi"});
}

TEST_CASE("values give their declared types") {
  CHECK(type_of_value(tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})).to_string() == "tensor(float)[2,3]");
  Sequence s{DType::Int64, {tensor<int64_t>({1}, {1}), tensor<int64_t>({2}, {1, 2})}};
  CHECK(type_of_value(s).to_string() == "seq(tensor(int64))");
}

TEST_CASE("a one-node model calls the model-local functions it needs and runs alone") {
  // Function Twice(x) = Add(x, x) in domain "local"; the model calls it, then a Relu.
  Function twice;
  twice.domain = "local";
  twice.name = "Twice";
  twice.inputs = {"x"};
  twice.outputs = {"y"};
  twice.nodes = {node("Add", {"x", "x"}, {"y"})};
  twice.opsets = {{"", 17}};
  Function unused = twice;
  unused.name = "Unused";
  Graph g = graph("g", {node("Twice", {"X"}, {"T"}, {}, "call", "local"), node("Relu", {"T"}, {"Y"}, {}, "relu")},
                  {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})});
  Model source = model(g, {{"", 17}, {"local", 1}}, 8, {twice, unused});
  const Tensor x = tensor<float>({2}, {-1, 2});
  const Tensor t = tensor<float>({2}, {-2, 4});
  Model one = single_node_model(source, source.graph.nodes[0], {{"X", x}, {"T", t}});
  REQUIRE(one.functions.size() == 1);
  CHECK(one.functions[0].name == "Twice");
  CHECK(one.opsets == source.opsets);
  CHECK(one.graph.inputs[0].type.to_string() == "tensor(float)[2]");
  CHECK(one.graph.outputs[0].type.to_string() == "tensor(float)[2]");
  // Through bytes, as --extract writes it.
  ReferenceEvaluator ev(parse_model(serialize_model(one), ""));
  testing::check_equal(ev.run({}, {{"X", x}})[0], t);
  CHECK_THROWS_WITH_AS(single_node_model(source, source.graph.nodes[1], {}), doctest::Contains("no value for 'T'"), Error);
}
