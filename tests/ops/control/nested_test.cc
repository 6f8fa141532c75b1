// Four levels of bodies: Loop > If > Loop > If, with an LSTM in the innermost If branches that
// reads X, W and R from the main graph (outer-scope capture through every level). The result
// must equal the same LSTM run at top level, and the trace must show each level indented.
#include <cstdio>

#include "refeval/trace.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {

const int64_t kHidden = 2;

Node lstm(const std::string& x, const std::string& out) {
  return node("LSTM", {x, "W", "R"}, {"", out}, {attr("hidden_size", kHidden)});
}

ValueInfo state(const std::string& name) { return tensor_info(name, DType::Float, {1, 1, kHidden}); }

Graph nested_model() {
  // level 4: If on the captured flag; both branches run an LSTM on captured tensors
  Graph then4 = graph("then4", {lstm("X", "h4")}, {}, {state("h4")});
  Graph else4 = graph("else4", {node("Neg", {"X"}, {"nx"}), lstm("nx", "h4e")}, {}, {state("h4e")});
  // level 3: Loop body (one iteration) around the level-4 If
  Graph body3 = graph("body3",
                      {node("If", {"flag"}, {"h3"}, {attr("then_branch", then4), attr("else_branch", else4)}, "if4"),
                       node("Identity", {"c3"}, {"c3_out"})},
                      {tensor_info("i3", DType::Int64, {}), tensor_info("c3", DType::Bool, {}), state("h3_in")},
                      {tensor_info("c3_out", DType::Bool, {}), state("h3")});
  // level 2: If whose then-branch holds the level-3 Loop
  Graph then2 = graph("then2", {node("Loop", {"one", "", "zeros"}, {"h2"}, {attr("body", body3)}, "loop3")}, {}, {state("h2")});
  Graph else2 = graph("else2", {node("Identity", {"zeros"}, {"z2"})}, {}, {state("z2")});
  // level 1: the outer Loop accumulates the level-2 result twice
  Graph body1 = graph("body1",
                      {node("If", {"flag"}, {"h1"}, {attr("then_branch", then2), attr("else_branch", else2)}, "if2"),
                       node("Add", {"acc", "h1"}, {"acc_out"}), node("Identity", {"c1"}, {"c1_out"})},
                      {tensor_info("i1", DType::Int64, {}), tensor_info("c1", DType::Bool, {}), state("acc")},
                      {tensor_info("c1_out", DType::Bool, {}), state("acc_out")});
  return graph("nested", {node("Loop", {"two", "", "zeros"}, {"total"}, {attr("body", body1)}, "loop1")},
               {tensor_info("X", DType::Float, {2, 1, 3})}, {state("total")},
               {{"W", tensor<float>({1, 4 * kHidden, 3}, {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, 0.8f, -0.9f, 0.1f, 0.2f, 0.3f,
                                                          -0.4f, 0.5f, 0.6f, 0.7f, 0.1f, -0.1f, 0.2f, 0.3f, 0.4f, -0.6f, 0.2f, 0.9f})},
                {"R", tensor<float>({1, 4 * kHidden, kHidden}, {0.2f, 0.1f, -0.3f, 0.4f, 0.5f, -0.6f, 0.1f, 0.2f,
                                                                  0.3f, 0.3f, -0.2f, 0.1f, 0.4f, 0.5f, -0.1f, 0.2f})},
                {"flag", Tensor::scalar<bool>(true)},
                {"one", Tensor::scalar<int64_t>(1)},
                {"two", Tensor::scalar<int64_t>(2)},
                {"zeros", Tensor(DType::Float, {1, 1, kHidden})}});
}

}  // namespace

TEST_CASE("an LSTM four bodies deep sees the main graph's values and gives the top-level result") {
  const Tensor x = tensor<float>({2, 1, 3}, {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f});
  Graph flat = nested_model();
  flat.nodes = {lstm("X", "h"), node("Add", {"h", "h"}, {"total"})};
  const Value expected = ReferenceEvaluator(model(flat, {{"", 17}})).run({}, {{"X", x}})[0];

  ReferenceEvaluator ev(model(nested_model(), {{"", 17}}));
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  TraceObserver trace(4, f);
  ev.add_observer(&trace);
  testing::check_equal(ev.run({}, {{"X", x}})[0], expected, {1e-6, 1e-7});
  std::rewind(f);
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  std::fclose(f);
  // --verbose 4: the main graph with values, level 1 with summaries, level 2 with node lines.
  CHECK(text.find("Loop(two, , zeros) -> total\n") != std::string::npos);
  CHECK(text.find("  -- Loop 'loop1': body iteration 1\n") != std::string::npos);
  CHECK(text.find("  If(flag) -> h1\n") != std::string::npos);
  CHECK(text.find("    -- If 'if2': then_branch\n") != std::string::npos);
  CHECK(text.find("    Loop(one, , zeros) -> h2\n") != std::string::npos);
  CHECK(text.find("      ") == std::string::npos);  // level 3 is traced at 4 - 3 = 1: nothing
}
