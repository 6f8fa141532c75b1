// Node addressing as CLI.md defines it: names, #I, op:TYPE and paths into bodies.
#include <doctest/doctest.h>

#include "refeval/address.h"
#include "refeval/builder.h"
#include "refeval/error.h"

using namespace refeval;
using namespace refeval::build;

namespace {

// Main graph: "/h.0/Relu" (a name with slashes), an unnamed Neg (#1), and an If named "cond_if"
// whose then_branch holds an unnamed Relu (#0) and a named Abs.
Graph sample() {
  Graph then_g = graph("then", {node("Relu", {"X"}, {"t0"}), node("Abs", {"t0"}, {"t1"}, {}, "inner_abs")}, {},
                       {tensor_info("t1", DType::Float, {2})});
  Graph else_g = graph("else", {node("Neg", {"X"}, {"e0"}, {}, "inner_neg")}, {}, {tensor_info("e0", DType::Float, {2})});
  return graph("main",
               {node("Relu", {"X"}, {"a"}, {}, "/h.0/Relu"), node("Neg", {"a"}, {"b"}),
                node("If", {"C"}, {"Y"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "cond_if")},
               {tensor_info("X", DType::Float, {2}), tensor_info("C", DType::Bool, {})},
               {tensor_info("Y", DType::Float, {2})});
}

std::vector<std::string> ids(const std::vector<NodeMatch>& m) {
  std::vector<std::string> out;
  for (const auto& x : m) out.push_back(x.id);
  return out;
}

}  // namespace

TEST_CASE("address: a node name, even one with slashes") {
  const Graph g = sample();
  auto m = find_nodes(g, "/h.0/Relu");
  REQUIRE(m.size() == 1);
  CHECK(m[0].node == &g.nodes[0]);
  CHECK(m[0].id == "/h.0/Relu");
  CHECK(m[0].depth == 0);
}

TEST_CASE("address: #I counts stored positions and gives the engine's id") {
  const Graph g = sample();
  auto m = find_nodes(g, "#1");
  REQUIRE(m.size() == 1);
  CHECK(m[0].node->op_type == "Neg");
  CHECK(m[0].id == "#1");
  CHECK(find_nodes(g, "#0")[0].id == "/h.0/Relu");  // a named node keeps its name as id
  CHECK_THROWS_AS(find_nodes(g, "#3"), Error);       // out of range
}

TEST_CASE("address: op:TYPE finds every node of the type, bodies included") {
  const Graph g = sample();
  CHECK(ids(find_nodes(g, "op:Relu")) == std::vector<std::string>{"/h.0/Relu", "cond_if/then_branch/#0"});
  CHECK(ids(find_nodes(g, "op:Neg")) == std::vector<std::string>{"#1", "cond_if/else_branch/inner_neg"});
  CHECK(ids(find_nodes(g, "op::Neg")).size() == 2);  // domain "" spelled out
  CHECK_THROWS_AS(find_nodes(g, "op:com.microsoft:Neg"), Error);
}

TEST_CASE("address: PARENT/ATTRIBUTE/NODE reaches into bodies") {
  const Graph g = sample();
  auto m = find_nodes(g, "cond_if/then_branch/inner_abs");
  REQUIRE(m.size() == 1);
  CHECK(m[0].node->op_type == "Abs");
  CHECK(m[0].depth == 1);
  CHECK(find_nodes(g, "#2/then_branch/#0")[0].id == "cond_if/then_branch/#0");  // parent by index
  CHECK_THROWS_WITH_AS(find_nodes(g, "cond_if/then_branch/nothing"), doctest::Contains("no node matches"), Error);
}

TEST_CASE("address: a name wins over an op type") {
  Graph g = graph("g", {node("Relu", {"X"}, {"a"}, {}, "op:Relu"), node("Relu", {"a"}, {"b"})},
                  {tensor_info("X", DType::Float, {1})}, {tensor_info("b", DType::Float, {1})});
  CHECK(ids(find_nodes(g, "op:Relu")) == std::vector<std::string>{"op:Relu"});
}
