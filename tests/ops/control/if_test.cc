// If: branch choice, outer-scope reads, condition checks, branch/node output agreement.
#include "body_util.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

namespace {

// If(c) with then = x + x and else = x * y; both read x and y from the enclosing graph.
Graph if_graph(int then_outputs = 1) {
  Graph then_g = graph("then", {node("Add", {"x", "x"}, {"t"})}, {}, {untyped_info("t")});
  if (then_outputs == 2) then_g.outputs.push_back(untyped_info("x"));
  Graph else_g = graph("else", {node("Mul", {"x", "y"}, {"e"})}, {}, {untyped_info("e")});
  return graph("g", {node("If", {"c"}, {"z"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "if")},
               {untyped_info("c"), untyped_info("x"), untyped_info("y")}, {untyped_info("z")});
}

}  // namespace

TEST_CASE("If runs the branch the condition picks") {
  struct Case { const char* what; Tensor cond; std::vector<float> expected; };
  const Case cases[] = {
      {"true scalar runs then_branch", boolean(true), {2, 4}},
      {"false scalar runs else_branch", boolean(false), {10, 40}},
      {"a one-element 1-D condition counts", tensor<bool>({1}, {true}), {2, 4}},
      {"a one-element 3-D condition counts", tensor<bool>({1, 1, 1}, {false}), {10, 40}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_graph(if_graph(), {{"c", c.cond}, {"x", tensor<float>({2}, {1, 2})}, {"y", tensor<float>({2}, {10, 20})}});
    check_equal(out[0], tensor<float>({2}, c.expected));
  }
}

TEST_CASE("If refuses conditions that are not one bool") {
  struct Case { const char* what; Tensor cond; const char* message; };
  const Case cases[] = {
      {"two elements", tensor<bool>({2}, {true, true}), "exactly one element"},
      {"no element", tensor<bool>({0}, {}), "exactly one element"},
      {"not bool", tensor<float>({}, {1}), "must be a bool tensor"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK_THROWS_WITH_AS(run_graph(if_graph(), {{"c", c.cond}, {"x", tensor<float>({1}, {1})}, {"y", tensor<float>({1}, {1})}}),
                         doctest::Contains(c.message), Error);
  }
}

TEST_CASE("If branches must yield as many outputs as the node has") {
  CHECK_THROWS_WITH_AS(run_graph(if_graph(2), {{"c", boolean(true)}, {"x", tensor<float>({1}, {1})}, {"y", tensor<float>({1}, {1})}}),
                       doctest::Contains("then_branch has 2 outputs but else_branch has 1"), Error);
}

TEST_CASE("If passes sequences and optionals through") {
  Graph then_g = graph("then", {node("SequenceConstruct", {"x", "x"}, {"s"})}, {}, {untyped_info("s")});
  Graph else_g = graph("else", {node("SequenceConstruct", {"x"}, {"s1"})}, {}, {untyped_info("s1")});
  Graph g = graph("g", {node("If", {"c"}, {"z"}, {attr("then_branch", then_g), attr("else_branch", else_g)}),
                        node("SequenceLength", {"z"}, {"n"})},
                  {untyped_info("c"), untyped_info("x")}, {untyped_info("n")});
  check_equal(run_graph(g, {{"c", boolean(true)}, {"x", tensor<float>({1}, {1})}})[0], i64(2));
  check_equal(run_graph(g, {{"c", boolean(false)}, {"x", tensor<float>({1}, {1})}})[0], i64(1));
}
