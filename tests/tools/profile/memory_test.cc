// `refeval profile --memory`: the live bytes of each node worked out by hand for small graphs
// (feeds until their last reader, graph outputs to the end, outputs nobody reads at their node,
// outer values a body reads kept to the If that runs it), and what the profiler writes from a run.
#include <doctest/doctest.h>

#include "memory.h"
#include "memory_report.h"
#include "profile_file.h"
#include "profiler.h"
#include "runs.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::profile;
using refeval::testing::tensor;

TEST_CASE("live memory: a value lives from its producer to its last reader; outputs to the end") {
  // x (100) -> A -> y (200) -> B -> z (50, a graph output) -> C -> w (10, a graph output); A also
  // makes d (30), which nobody reads.
  const std::vector<MemoryNode> nodes = {
      {"A", "Relu", {"x"}, {{"y", 200}, {"d", 30}}},
      {"B", "MatMul", {"y", "weight"}, {{"z", 50}}},
      {"C", "Neg", {"z"}, {{"w", 10}}},
  };
  const MemoryTimeline t = live_memory(nodes, {{"x", 100}}, {"z", "w"});
  // A: x, y, d; B: y, z (x died at A, d at A); C: z (a graph output), w
  CHECK(t.live_bytes == std::vector<int64_t>{330, 250, 60});
  CHECK(t.peak_bytes == 330);
  CHECK(t.peak_index == 0);
  REQUIRE(t.at_peak.size() == 3);
  CHECK(t.at_peak[0].name == "y");
  CHECK(t.at_peak[0].producer == "A");
  CHECK(t.at_peak[0].last_reader == "B");
  CHECK(t.at_peak[1].name == "x");
  CHECK(t.at_peak[1].producer == "(graph input)");
  CHECK(t.at_peak[1].last_reader == "A");
  CHECK(t.at_peak[2].name == "d");
  CHECK(t.at_peak[2].last_reader == "(nobody)");
}

TEST_CASE("live memory: a graph of no nodes has no timeline and no peak") {
  const MemoryTimeline t = live_memory({}, {{"x", 100}}, {"x"});
  CHECK(t.live_bytes.empty());
  CHECK(t.peak_bytes == 0);
  CHECK(t.at_peak.empty());
}

TEST_CASE("live memory: an output nobody named counts at its node only; weights never") {
  const std::vector<MemoryNode> nodes = {
      {"A", "Split", {"x", "w"}, {{"a", 40}, {"", 40}}},
      {"B", "Relu", {"a"}, {{"b", 40}}},
  };
  const MemoryTimeline t = live_memory(nodes, {{"x", 80}}, {"b"});
  CHECK(t.live_bytes == std::vector<int64_t>{160, 80});
  // "" is no value's name: an optional input left out ("") does not keep an unnamed output alive,
  // and no listing names it.
  const MemoryTimeline skipped = live_memory({nodes[0], {"B", "Clip", {"a", "", ""}, {{"b", 40}}}}, {{"x", 80}}, {"b"});
  CHECK(skipped.live_bytes == std::vector<int64_t>{160, 80});
  for (const auto& v : skipped.at_peak) CHECK(!v.name.empty());
}

TEST_CASE("live memory: in-place reuse takes an elementwise node's dying input of its output's size") {
  // x -> MatMul -> h (400) -> Relu -> r (400) -> MatMul -> o (40): at Relu h and r are both alive,
  // but r could take h's buffer; a feed is the caller's and is never taken.
  const std::vector<MemoryNode> nodes = {
      {"mm1", "MatMul", {"x", "w1"}, {{"h", 400}}},
      {"relu", "Relu", {"h"}, {{"r", 400}}},
      {"mm2", "MatMul", {"r", "w2"}, {{"o", 40}}},
  };
  const MemoryTimeline t = live_memory(nodes, {{"x", 100}}, {"o"});
  CHECK(t.live_bytes == std::vector<int64_t>{500, 800, 440});
  CHECK(t.peak_bytes == 800);
  CHECK(t.inplace_peak_bytes == 500);  // relu: 800 - 400; mm1 then holds the peak
  const MemoryTimeline feed_only = live_memory({{"relu", "Relu", {"x"}, {{"r", 100}}}}, {{"x", 100}}, {"r"});
  CHECK(feed_only.inplace_peak_bytes == 200);
}

TEST_CASE("live memory: the outer names an If's branches read, nested bodies included") {
  Graph inner = graph("inner", {node("Mul", {"T", "outer2"}, {"U"})}, {}, {tensor_info("U", DType::Float, {2})});
  Graph then_g = graph("then", {node("Add", {"X", "W"}, {"T"}), node("Identity", {"T"}, {"V"}),
                                node("If", {"C2"}, {"R"}, {attr("then_branch", inner), attr("else_branch", inner)})},
                       {}, {tensor_info("R", DType::Float, {2})});
  const Node n = node("If", {"C"}, {"Y"}, {attr("then_branch", then_g), attr("else_branch", then_g)});
  // T is made inside the branch; X, W, C2 and outer2 come from outside.
  CHECK(outer_names(n) == std::set<std::string>{"C2", "W", "X", "outer2"});
}

TEST_CASE("profiler --memory: live_bytes on each main-graph node, a counter track, the peak in model_run") {
  // Y = If(C) then X + W else X - W, Z = Relu(Y): X (8 bytes) is read inside the branch, so it lives
  // until the If ends; W is a weight.
  Graph then_g = graph("then", {node("Add", {"X", "W"}, {"T"}, {}, "add")}, {}, {tensor_info("T", DType::Float, {2})});
  Graph else_g = graph("else", {node("Sub", {"X", "W"}, {"E"}, {}, "sub")}, {}, {tensor_info("E", DType::Float, {2})});
  Graph g = graph("g",
                  {node("If", {"C"}, {"Y"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "if"),
                   node("Relu", {"Y"}, {"Z"}, {}, "relu")},
                  {tensor_info("C", DType::Bool, {}), tensor_info("X", DType::Float, {2})}, {tensor_info("Z", DType::Float, {2})},
                  {{"W", tensor<float>({2}, {1, 2})}});
  ReferenceEvaluator ev(model(g));
  Profiler p;
  p.record_memory();
  ev.add_observer(&p);
  p.begin_run();
  ev.run({}, {{"C", Tensor::from_vector<bool>({}, {true})}, {"X", tensor<float>({2}, {3, 4})}});
  p.end_run();
  ProfileFile file = parse_profile(format_profile(p.events()), "mem.json");  // written and read back
  const std::vector<Run> runs = split_runs(file);
  REQUIRE(runs.size() == 1);
  std::vector<int64_t> live;
  for (const Event* e : runs[0].kernels)
    if (!e->extra_args.contains("depth")) live.push_back(e->extra_args.at("live_bytes").get<int64_t>());
  // if: C (1) + X (8) + Y (8); relu: Y + Z
  CHECK(live == std::vector<int64_t>{17, 16});
  int counters = 0;
  for (const Event& e : file.events)
    if (e.kind == EventKind::Counter) {
      ++counters;
      CHECK(e.name == "Memory");
    }
  CHECK(counters == 3);  // one per node, one at the run's end
  REQUIRE(runs[0].memory);
  const MemoryReport m = memory_report(runs, "mem.json");
  CHECK(m.peak_run().peak_bytes == 17);
  CHECK(m.peak_run().peak_node == "if");
  CHECK(m.peak_run().weights_bytes == 8);
  CHECK(m.peak_run().at_peak.size() == 3);
}

TEST_CASE("report --by memory: the timeline is the main graph's nodes; a body's node with live_bytes stays inside its caller") {
  // A file edited or written by another tool may give a body's node (depth 1) its own live_bytes:
  // the If's figure already holds its branch, so the branch's node is no point of the timeline.
  const ProfileFile file = parse_profile(R"([
{"cat":"Session","name":"model_run","ts":0,"dur":10,"args":{"memory":{"peak_bytes":24,"peak_node":"if"}}},
{"cat":"Node","name":"if_kernel_time","ts":1,"dur":5,"args":{"op_name":"If","live_bytes":24}},
{"cat":"Node","name":"add_kernel_time","ts":2,"dur":1,"args":{"op_name":"Add","depth":1,"live_bytes":16}},
{"cat":"Node","name":"relu_kernel_time","ts":7,"dur":1,"args":{"op_name":"Relu","live_bytes":8}}
])",
                                         "edited.json");
  const std::vector<Run> runs = split_runs(file);
  REQUIRE(runs.size() == 1);
  REQUIRE(runs[0].memory);
  const MemoryReport m = memory_report(runs, "edited.json");
  REQUIRE(m.peak_run().timeline.size() == 2);
  CHECK(m.peak_run().timeline[0].live_bytes == 24);
  CHECK(m.peak_run().timeline[1].live_bytes == 8);
}

TEST_CASE("report --by memory: a profile without memory figures is refused in one line") {
  Graph g = graph("g", {node("Relu", {"X"}, {"Y"})}, {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})});
  ReferenceEvaluator ev(model(g));
  Profiler p;
  ev.add_observer(&p);
  p.begin_run();
  ev.run({}, {{"X", tensor<float>({2}, {1, 2})}});
  p.end_run();
  ProfileFile file{"plain.json", p.events(), {}};
  const std::vector<Run> runs = split_runs(file);
  CHECK_THROWS_WITH_AS(memory_report(runs, "plain.json"), doctest::Contains("--memory"), Error);
}
