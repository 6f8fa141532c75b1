// The graph edits every pass shares, on graphs with If bodies that read values of the outer graph:
// what a node reads, renaming those reads (but not a body's own value of the same name), the order
// of producers, dropping nodes no output needs (while a body still reads them) and fresh names.
// Each edited model runs in the evaluator and gives the original's outputs.
#include <doctest/doctest.h>

#include "graph_edit.h"
#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::optimize;
using refeval::testing::count_ops;
using refeval::testing::optimized;
using refeval::testing::ramp_feeds;

namespace {

// A branch of an If: one node reading `reads` (outer values, or its own), writing `out`.
Graph branch(const std::string& name, const std::string& op, std::vector<std::string> reads, const std::string& out) {
  return graph(name, {node(op, std::move(reads), {out})}, {}, {tensor_info(out, DType::Float, {4})});
}

// y = If(c, then: Relu(a), else: Neg(b)) + a, where a = Abs(x) and b = Sigmoid(x): both branches
// read the outer graph; `shadow` makes the else branch define its own "a" (Neg(b)) and return it.
Model if_reading_outer(bool shadow = false) {
  const Graph then_branch = branch("then", "Relu", {"a"}, "t");
  const Graph else_branch = shadow ? branch("else", "Neg", {"b"}, "a") : branch("else", "Neg", {"b"}, "e");
  std::vector<Node> nodes = {node("Abs", {"x"}, {"a"}), node("Sigmoid", {"x"}, {"b"}),
                             node("If", {"c"}, {"r"}, {attr("then_branch", then_branch), attr("else_branch", else_branch)}),
                             node("Add", {"r", "a"}, {"y"})};
  return model(graph("g", nodes, {tensor_info("x", DType::Float, {4}), tensor_info("c", DType::Bool, {})}, {tensor_info("y", DType::Float, {4})}));
}

Values run(const Model& m, bool cond) {
  std::map<std::string, Value> feeds = testing::ramp_feeds(m);
  feeds["c"] = Tensor::scalar<bool>(cond);
  return ReferenceEvaluator(m).run({}, feeds);
}

void check_same_outputs(const Model& original, const Model& edited) {
  for (bool cond : {true, false}) {
    CAPTURE(cond);
    const Values a = run(original, cond), b = run(edited, cond);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) testing::check_equal(b[i], a[i], {0, 0});
  }
}

const Node& producer_of(const Graph& g, const std::string& value) {
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs)
      if (o == value) return n;
  FAIL("no producer of " << value);
  return g.nodes.front();
}

}  // namespace

TEST_CASE("graph_edit: a node reads its inputs and what its bodies read from outside") {
  const Model m = if_reading_outer();
  CHECK(reads_of(m.graph.nodes[2]) == std::set<std::string>{"c", "a", "b"});
  // A body's own values, and values it only returns from outside, as a GRAPHS attribute holds them.
  Graph body = graph("body", {node("Relu", {"inner_in"}, {"inner"}), node("Add", {"inner", "outer1"}, {"sum"})},
                     {tensor_info("inner_in", DType::Float, {4})}, {tensor_info("sum", DType::Float, {4}), tensor_info("outer2", DType::Float, {4})});
  Node custom = node("Custom", {"x", ""}, {"y"});
  Attribute bodies;
  bodies.name = "bodies", bodies.type = AttrType::Graphs;
  bodies.graphs = {std::make_shared<Graph>(body), nullptr};
  custom.attributes.push_back(bodies);
  CHECK(reads_of(custom) == std::set<std::string>{"x", "outer1", "outer2"});
}

TEST_CASE("graph_edit: renaming a value renames its reads inside bodies, not a body's own value of that name") {
  // Two instances: a copied Model would share its bodies (shared_ptr) with the original.
  const Model original = if_reading_outer(true);
  Model m = if_reading_outer(true);
  // a2 = Abs(x), a copy of a, placed last: every reader of a then reads a2, and topological_sort
  // moves it before them.
  m.graph.nodes.push_back(node("Abs", {"x"}, {"a2"}));
  rename_uses(m.graph, "a", "a2");
  topological_sort(m.graph);
  const Node& if_node = producer_of(m.graph, "r");
  CHECK(if_node.attributes[0].g->nodes[0].inputs == std::vector<std::string>{"a2"});  // then: reads the outer a
  CHECK(if_node.attributes[1].g->outputs[0].name == "a");  // else: its own a, kept
  CHECK(producer_of(m.graph, "y").inputs == std::vector<std::string>{"r", "a2"});
  std::vector<std::string> order;
  for (const Node& n : m.graph.nodes) order.push_back(n.outputs[0]);
  CHECK(order == std::vector<std::string>{"a", "b", "a2", "r", "y"});  // a2 before the If that reads it in a body
  check_same_outputs(original, m);
  // The original Abs is now dead; the one the body reads is not.
  CHECK(remove_dead(m.graph) == 1);
  CHECK(producer_of(m.graph, "a2").op_type == "Abs");
  check_same_outputs(original, m);
}

TEST_CASE("graph_edit: renaming a value leaves a body whose input or initializer has that name") {
  // A Loop-style body declaring an input "a", and one holding an initializer "a": their reads of
  // "a" are their own, not the outer value's.
  const auto body = [](std::vector<ValueInfo> inputs, std::vector<Initializer> inits) {
    return std::make_shared<Graph>(graph("body", {node("Relu", {"a"}, {"r"})}, std::move(inputs), {tensor_info("r", DType::Float, {4})}, std::move(inits)));
  };
  Node custom = node("Custom", {"a"}, {"y"});
  Attribute bodies;
  bodies.name = "bodies", bodies.type = AttrType::Graphs;
  bodies.graphs = {body({tensor_info("a", DType::Float, {4})}, {}), body({}, {{"a", Tensor::from_vector<float>({4}, {1, 2, 3, 4})}})};
  custom.attributes.push_back(bodies);
  Graph g = graph("g", {node("Abs", {"x"}, {"a"}), custom}, {tensor_info("x", DType::Float, {4})}, {tensor_info("y", DType::Float, {4})});
  rename_uses(g, "a", "a2");
  CHECK(g.nodes[1].inputs == std::vector<std::string>{"a2"});
  for (const auto& b : g.nodes[1].attributes[0].graphs) CHECK(b->nodes[0].inputs == std::vector<std::string>{"a"});
}

TEST_CASE("graph_edit: a value only a body reads keeps its producer alive; unread initializers go") {
  const Model original = if_reading_outer();
  Model m = if_reading_outer();
  m.graph.nodes.push_back(node("Exp", {"x"}, {"unused"}));
  m.graph.initializers.push_back({"stale", Tensor::from_vector<float>({1}, {1})});
  m.graph.value_info.push_back(tensor_info("unused", DType::Float, {4}));
  CHECK(remove_dead(m.graph) == 1);
  CHECK(count_ops(m, "Sigmoid") == 1);  // b: read by the else branch only
  CHECK(count_ops(m, "Exp") == 0);
  CHECK(m.graph.initializers.empty());
  CHECK(m.graph.value_info.empty());
  check_same_outputs(original, m);
}

TEST_CASE("graph_edit: dropping nodes renames their readers in order") {
  Model m = if_reading_outer();
  // Two copies of Abs(x): drop them and send their readers to a (a chain c2 -> c1 -> a).
  m.graph.nodes.push_back(node("Abs", {"x"}, {"c1"}));
  m.graph.nodes.push_back(node("Identity", {"c1"}, {"c2"}));
  m.graph.nodes.push_back(node("Add", {"y", "c2"}, {"y2"}));
  m.graph.outputs = {tensor_info("y2", DType::Float, {4})};
  const Model expected = m;  // its bodies are m's, which dropping leaves as they are
  std::vector<bool> drop(m.graph.nodes.size(), false);
  drop[4] = drop[5] = true;
  CHECK(drop_nodes(m.graph, drop, {{"c2", "c1"}, {"c1", "a"}}) == 2);
  CHECK(producer_of(m.graph, "y2").inputs == std::vector<std::string>{"y", "a"});
  check_same_outputs(expected, m);
}

TEST_CASE("graph_edit: fresh names skip every value and node name in use") {
  Model m = if_reading_outer();
  m.graph.nodes[0].name = "abs";
  NameGen names(m.graph);
  CHECK(names.value("a") == "a_1");
  CHECK(names.value("a") == "a_2");
  CHECK(names.value("x") == "x_1");  // a graph input
  CHECK(names.value("fresh") == "fresh");
  CHECK(names.node("abs") == "abs_1");
  CHECK(names.node("If") == "If");
}

TEST_CASE("graph_edit: optimize renames a fused value inside the If bodies that read it") {
  // Transpose and its inverse feed both branches: the chain becomes an Identity of x, and its
  // readers inside the bodies read x. The condition comes from x (sum > 0), so the evaluator's
  // check of the result feeds only x.
  const Attribute p = attr("perm", std::vector<int64_t>{1, 0}), q = attr("perm", std::vector<int64_t>{1, 0});
  const Graph then_branch = graph("then", {node("Relu", {"back"}, {"t"})}, {}, {tensor_info("t", DType::Float, {2, 3})});
  const Graph else_branch = graph("else", {node("Neg", {"back"}, {"e"})}, {}, {tensor_info("e", DType::Float, {2, 3})});
  const Model m = model(graph("g",
                              {node("Transpose", {"x"}, {"xt"}, {p}), node("Transpose", {"xt"}, {"back"}, {q}),
                               node("ReduceSum", {"x"}, {"sum"}, {attr("keepdims", int64_t(0))}), node("Greater", {"sum", "zero"}, {"c"}),
                               node("If", {"c"}, {"y"}, {attr("then_branch", then_branch), attr("else_branch", else_branch)})},
                              {tensor_info("x", DType::Float, {2, 3})}, {tensor_info("y", DType::Float, {2, 3})},
                              {{"zero", Tensor::scalar<float>(0)}}));
  const Model out = optimized(m, {"transpose-chain", "identity"});
  CHECK(count_ops(out, "Transpose") == 0);
  CHECK(count_ops(out, "Identity") == 0);
  const Node& if_node = producer_of(out.graph, "y");
  CHECK(if_node.attributes[0].g->nodes[0].inputs == std::vector<std::string>{"x"});
  CHECK(if_node.attributes[1].g->nodes[0].inputs == std::vector<std::string>{"x"});
  // The model given to optimize is untouched: its bodies still read 'back'.
  const Node& given_if = producer_of(m.graph, "y");
  CHECK(given_if.attributes[0].g->nodes[0].inputs == std::vector<std::string>{"back"});
  CHECK(given_if.attributes[1].g->nodes[0].inputs == std::vector<std::string>{"back"});
}
