// The trace of bodies: a Loop whose body holds an If. Each body execution opens with a header
// line naming the node and the body ("body iteration K", "then_branch"), indented two spaces per
// depth, and is traced one level lower than its caller.
#include <cstdio>

#include "body_util.h"
#include "refeval/trace.h"

using namespace refeval;
using namespace refeval::testing;
using namespace refeval::build;

namespace {

std::string trace_of(int level, bool c) {
  Graph then_g = graph("then", {node("Add", {"x", "one"}, {"t"})}, {}, {untyped_info("t")});
  Graph else_g = graph("else", {node("Sub", {"x", "one"}, {"e"})}, {}, {untyped_info("e")});
  Graph body = graph("body", {node("If", {"c"}, {"y"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "branch")},
                     {tensor_info("i", DType::Int64, {}), tensor_info("cond", DType::Bool, {}), untyped_info("x")},
                     {untyped_info("cond"), untyped_info("y")});
  Graph g = graph("g", {node("Loop", {"M", "", "x0"}, {"x_final"}, {attr("body", body)}, "loop")},
                  {untyped_info("M"), untyped_info("c"), untyped_info("x0"), untyped_info("one")}, {untyped_info("x_final")});
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  TraceObserver trace(level, f);
  auto out = run_graph(g, {{"M", i64(2)}, {"c", boolean(c)}, {"x0", tensor<float>({1}, {10})}, {"one", tensor<float>({1}, {1})}},
                       17, &trace);
  check_equal(out[0], tensor<float>({1}, {c ? 12.0f : 8.0f}));
  std::string text;
  std::rewind(f);
  for (int ch; (ch = std::fgetc(f)) != EOF;) text += char(ch);
  std::fclose(f);
  return text;
}

}  // namespace

TEST_CASE("a Loop holding an If is traced with one header per body run, indented by depth") {
  CHECK(trace_of(4, true) ==
        " +I M: int64:():[2]\n"
        " +I c: bool:():[True]\n"
        " +I x0: float32:(1,):[10.0]\n"
        " +I one: float32:(1,):[1.0]\n"
        "Loop(M, , x0) -> x_final\n"
        "  -- Loop 'loop': body iteration 0\n"
        "   +I i: int64:() in [0, 0]\n"
        "   +I cond: bool:() in [True, True]\n"
        "   +I x: float32:(1,) in [10.0, 10.0]\n"
        "  If(c) -> y\n"
        "    -- If 'branch': then_branch\n"
        "    Add(x, one) -> t\n"
        "   + y: float32:(1,) in [11.0, 11.0]\n"
        "  -- Loop 'loop': body iteration 1\n"
        "   +I i: int64:() in [1, 1]\n"
        "   +I cond: bool:() in [True, True]\n"
        "   +I x: float32:(1,) in [11.0, 11.0]\n"
        "  If(c) -> y\n"
        "    -- If 'branch': then_branch\n"
        "    Add(x, one) -> t\n"
        "   + y: float32:(1,) in [12.0, 12.0]\n"
        " + x_final: float32:(1,):[12.0]\n");
}

TEST_CASE("the trace names the branch taken and hides bodies below level 3") {
  const std::string three = trace_of(3, false);
  CHECK(three.find("  -- Loop 'loop': body iteration 1\n") != std::string::npos);
  CHECK(three.find("  If(c) -> y\n") != std::string::npos);
  CHECK(three.find("else_branch") == std::string::npos);  // the If body is at level 1 there
  CHECK(trace_of(2, false) == "Loop(M, , x0) -> x_final\n");
  CHECK(trace_of(4, false).find("    -- If 'branch': else_branch\n    Sub(x, one) -> e\n") != std::string::npos);
}
