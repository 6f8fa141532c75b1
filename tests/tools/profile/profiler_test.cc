// The profiler as an observer: ORT's event kinds and fields for every node of every run, bodies
// included, every node event inside its run's model_run span; and its file read back unchanged.
#include <doctest/doctest.h>

#include "profile_file.h"
#include "profiler.h"
#include "runs.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::profile;
using refeval::testing::tensor;

namespace {

// Y = If(C) then X + W else X - W, then Z = Relu(Y); W is an initializer (a parameter).
Model if_model() {
  Graph then_g = graph("then", {node("Add", {"X", "W"}, {"T"}, {}, "add")}, {}, {tensor_info("T", DType::Float, {2})});
  Graph else_g = graph("else", {node("Sub", {"X", "W"}, {"E"}, {}, "sub")}, {}, {tensor_info("E", DType::Float, {2})});
  Graph g = graph("g",
                  {node("If", {"C"}, {"Y"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "if"),
                   node("Relu", {"Y"}, {"Z"})},
                  {tensor_info("C", DType::Bool, {}), tensor_info("X", DType::Float, {2})}, {tensor_info("Z", DType::Float, {2})},
                  {{"W", tensor<float>({2}, {1, 2})}});
  return model(g);
}

}  // namespace

TEST_CASE("profiler: a Node event per node call, bodies named by qualified id, inside model_run") {
  ReferenceEvaluator ev(if_model());
  Profiler p;
  ev.add_observer(&p);
  for (int i = 0; i < 3; ++i) {
    p.begin_run();
    ev.run({}, {{"C", Tensor::from_vector<bool>({}, {i != 1})}, {"X", tensor<float>({2}, {3, 4})}});
    p.end_run();
  }
  ProfileFile file{"mem", p.events(), {}};
  std::stable_sort(file.events.begin(), file.events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
  const std::vector<Run> runs = split_runs(file);
  REQUIRE(runs.size() == 3);
  for (const Run& r : runs) {
    REQUIRE(r.kernels.size() == 3);  // If, its branch's node, Relu
    for (const Event* e : r.kernels) {
      CHECK(e->ts >= r.ts);
      CHECK(e->ts + e->dur <= r.ts + r.dur);
    }
    CHECK(r.top_level_kernel_us() <= r.dur);
  }
  const Event& if_event = *runs[0].kernels[0];
  CHECK(if_event.name == "if_kernel_time");
  CHECK(if_event.op_type == "If");
  CHECK(if_event.provider == "refeval");
  CHECK(if_event.node_index == 0);
  CHECK(if_event.inputs == std::vector<TypeShape>{{"bool", {}}});
  CHECK(if_event.outputs == std::vector<TypeShape>{{"float", {2}}});
  const Event& add = *runs[0].kernels[1];
  CHECK(add.node == "if/then_branch/add");
  CHECK(add.extra_args.value("depth", 0) == 1);
  CHECK(add.parameter_size == 0);  // W comes from the outer graph: only a graph's own initializers count as parameters
  CHECK(runs[1].kernels[1]->node == "if/else_branch/sub");
  const Event& relu = *runs[0].kernels[2];
  CHECK(relu.name == "Relu_1_kernel_time");  // an unnamed node: "<OpType>_<index>", as ORT names it
  CHECK(relu.activation_size == 8);
  CHECK(relu.output_size == 8);
}

TEST_CASE("profiler: initializer inputs count as parameter_size, the others as activation_size") {
  Graph g = graph("g", {node("Add", {"X", "W"}, {"Y"}, {}, "add")}, {tensor_info("X", DType::Float, {3})},
                  {tensor_info("Y", DType::Float, {3})}, {{"W", tensor<float>({3}, {1, 2, 3})}});
  ReferenceEvaluator ev(model(g));
  Profiler p;
  ev.add_observer(&p);
  p.begin_run();
  ev.run({}, {{"X", tensor<float>({3}, {1, 1, 1})}});
  p.end_run();
  const std::vector<Event> events = p.events();
  REQUIRE(events.size() == 2);
  const Event& add = events[1].kind == EventKind::Kernel ? events[1] : events[0];
  CHECK(add.parameter_size == 12);
  CHECK(add.activation_size == 12);
}

TEST_CASE("a written profile reads back to the same events") {
  ReferenceEvaluator ev(if_model());
  Profiler p;
  ev.add_observer(&p);
  const Profiler::Clock::time_point load_start = Profiler::Clock::now();  // taken in order: argument order is unspecified
  p.add_session_event("model_loading_uri", load_start, Profiler::Clock::now());
  p.begin_run();
  ev.run({}, {{"C", Tensor::from_vector<bool>({}, {true})}, {"X", tensor<float>({2}, {3, 4})}});
  p.end_run();
  const std::vector<Event> written = p.events();
  const ProfileFile back = parse_profile(format_profile(written), "mem");
  CHECK(back.warnings.empty());
  REQUIRE(back.events.size() == written.size());
  for (const Event& w : written) {
    const auto it = std::find_if(back.events.begin(), back.events.end(), [&](const Event& b) { return b.name == w.name; });
    REQUIRE(it != back.events.end());
    CHECK(it->ts == w.ts);
    CHECK(it->dur == w.dur);
    CHECK(it->kind == w.kind);
    CHECK(it->op_type == w.op_type);
    CHECK(it->node_index == w.node_index);
    CHECK(it->inputs == w.inputs);
    CHECK(it->outputs == w.outputs);
    CHECK(it->activation_size == w.activation_size);
    CHECK(it->extra_args.value("depth", 0) == w.extra_args.value("depth", 0));
  }
}
