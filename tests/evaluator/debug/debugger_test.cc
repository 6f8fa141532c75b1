// The Debugger API driven as an IDE would: breakpoints by address, step/next/finish through a
// Loop body, values in scope while stopped, set() changing what runs downstream, and the NaN watch.
#include "refeval/debugger.h"

#include <cmath>

#include <fmt/format.h>

#include "refeval/evaluator.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::check_equal;
using refeval::testing::tensor;

namespace {

// Y = sqrt(X + X) * W, W = [10, 10]: a negative X makes the NaN appear at "root".
Model chain_model() {
  Graph g = graph("chain",
                  {node("Add", {"X", "X"}, {"T"}, {}, "double"), node("Sqrt", {"T"}, {"S"}, {}, "root"),
                   node("Mul", {"S", "W"}, {"Y"}, {}, "scale")},
                  {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})},
                  {{"W", tensor<float>({2}, {10, 10})}});
  return model(g);
}

// R = -(acc0 + M * step), the sum done by a Loop whose body reads `step` from the main graph.
Model loop_model() {
  Graph body = graph("body", {node("Add", {"acc", "step"}, {"acc_out"}, {}, "add_step"), node("Identity", {"cond"}, {"cond_out"}, {}, "keep_going")},
                     {tensor_info("i", DType::Int64, {}), tensor_info("cond", DType::Bool, {}), tensor_info("acc", DType::Float, {1})},
                     {tensor_info("cond_out", DType::Bool, {}), tensor_info("acc_out", DType::Float, {1})});
  Graph g = graph("g", {node("Loop", {"M", "", "acc0"}, {"acc"}, {attr("body", body)}, "loop"), node("Neg", {"acc"}, {"R"}, {}, "after")},
                  {tensor_info("M", DType::Int64, {}), tensor_info("acc0", DType::Float, {1}), tensor_info("step", DType::Float, {1})},
                  {tensor_info("R", DType::Float, {1})});
  return model(g);
}

std::map<std::string, Value> loop_feeds() {
  return {{"M", Tensor::scalar<int64_t>(2)}, {"acc0", tensor<float>({1}, {1})}, {"step", tensor<float>({1}, {5})}};
}

// Records every stop as "reason id" and answers with the scripted actions, then Continue.
struct Script {
  std::vector<DebugAction> actions;
  std::vector<std::string> stops;
  std::function<void(Debugger&, const Stop&)> inspect = [](Debugger&, const Stop&) {};

  void attach(Debugger& d) {
    d.on_stop([this](Debugger& dbg, const Stop& s) {
      static const char* reasons[] = {"break", "step", "finish", "watch", "interrupt"};
      stops.push_back(fmt::format("{} {}{}", reasons[int(s.reason)], s.after ? "after " : "", s.id));
      inspect(dbg, s);
      const size_t k = stops.size() - 1;
      return k < actions.size() ? actions[k] : DebugAction::Continue;
    });
  }
};

}  // namespace

TEST_CASE("a breakpoint stops before its node, with the inputs and the values so far") {
  ReferenceEvaluator ev(chain_model());
  Debugger dbg(ev.model());
  CHECK(dbg.add_breakpoint("root") == 1);
  Script script;
  script.inspect = [](Debugger& d, const Stop& s) {
    REQUIRE(s.inputs->size() == 1);
    check_equal((*s.inputs)[0], tensor<float>({2}, {4, 16}));
    CHECK(s.breakpoint == 1);
    REQUIRE(d.value("X"));
    check_equal(*d.value("W"), tensor<float>({2}, {10, 10}));  // initializers are values too
    CHECK(d.value("S") == nullptr);                              // not computed yet
    CHECK(d.value_names() == std::vector<std::string>{"W", "X", "T"});
  };
  script.attach(dbg);
  ev.add_observer(&dbg);
  check_equal(ev.run({}, {{"X", tensor<float>({2}, {2, 8})}})[0], tensor<float>({2}, {20, 40}));
  CHECK(script.stops == std::vector<std::string>{"break root"});
  CHECK(dbg.breakpoints()[0].hits == 1);
  CHECK(dbg.stop() == nullptr);  // not stopped once the run is over
  check_equal(*dbg.value("Y"), tensor<float>({2}, {20, 40}));  // the last run stays readable
}

TEST_CASE("step enters a Loop body, next runs over it") {
  ReferenceEvaluator ev(loop_model());
  Debugger dbg(ev.model());
  ev.add_observer(&dbg);
  Script script;
  script.attach(dbg);

  SUBCASE("step") {
    script.actions.assign(10, DebugAction::Step);
    dbg.set_action(DebugAction::Step);
    ev.run({}, loop_feeds());
    CHECK(script.stops == std::vector<std::string>{"step loop", "step loop/body/add_step", "step loop/body/keep_going",
                                                   "step loop/body/add_step", "step loop/body/keep_going", "step after"});
  }
  SUBCASE("next") {
    script.actions.assign(10, DebugAction::Next);
    dbg.set_action(DebugAction::Next);
    ev.run({}, loop_feeds());
    CHECK(script.stops == std::vector<std::string>{"step loop", "step after"});
  }
  SUBCASE("next inside a body stays in the body, then leaves it") {
    dbg.add_breakpoint("loop/body/keep_going");
    script.actions = {DebugAction::Next, DebugAction::Next, DebugAction::Next};
    ev.run({}, loop_feeds());
    // Iteration 0's last node, iteration 1's first (same depth), its last again (a breakpoint).
    CHECK(script.stops == std::vector<std::string>{"break loop/body/keep_going", "step loop/body/add_step",
                                                   "break loop/body/keep_going", "step after"});
  }
}

TEST_CASE("finish stops after the node whose body is running, with its outputs") {
  ReferenceEvaluator ev(loop_model());
  Debugger dbg(ev.model());
  ev.add_observer(&dbg);
  dbg.add_breakpoint("loop/body/add_step");
  dbg.clear_breakpoints();
  const int number = dbg.add_breakpoint("loop/body/#0");  // the same node by index
  CHECK(number == 2);                                      // numbers are never reused
  Script script;
  script.actions = {DebugAction::Finish};
  script.inspect = [&](Debugger& d, const Stop& s) {
    if (s.reason == StopReason::Breakpoint) d.delete_breakpoint(number);  // or iteration 1 stops again
    if (s.reason == StopReason::Finish) {
      REQUIRE(s.outputs);
      check_equal((*s.outputs)[0], tensor<float>({1}, {11}));
      CHECK(d.frames().size() == 1);  // back in the main graph
    }
  };
  script.attach(dbg);
  check_equal(ev.run({}, loop_feeds())[0], tensor<float>({1}, {-11}));
  CHECK(script.stops == std::vector<std::string>{"break loop/body/add_step", "finish after loop"});
}

TEST_CASE("inside a body, its values and those of the graphs around it are visible") {
  ReferenceEvaluator ev(loop_model());
  Debugger dbg(ev.model());
  ev.add_observer(&dbg);
  dbg.add_breakpoint("op:Identity");  // op:TYPE finds nodes in bodies
  Script script;
  script.inspect = [](Debugger& d, const Stop& s) {
    const auto frames = d.frames();
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].caller == "loop");
    CHECK(frames[1].caller == "");
    check_equal(*d.value("step"), tensor<float>({1}, {5}));  // the main graph's
    check_equal(*d.value("acc_out"), tensor<float>({1}, {frames[0].label == "body iteration 0" ? 6.0f : 11.0f}));
    CHECK(d.value("R") == nullptr);
  };
  script.attach(dbg);
  ev.run({}, loop_feeds());
  CHECK(script.stops.size() == 2);
}

TEST_CASE("set replaces a value and the downstream results change") {
  ReferenceEvaluator ev(chain_model());
  Debugger dbg(ev.model());
  ev.add_observer(&dbg);
  Script script;
  script.attach(dbg);
  const std::map<std::string, Value> feeds{{"X", tensor<float>({2}, {2, 8})}};  // S = [2, 4]

  SUBCASE("a value already computed: later readers see the new one") {
    dbg.add_breakpoint("scale");
    script.inspect = [](Debugger& d, const Stop&) { d.set("S", tensor<float>({2}, {1, -1})); };
    check_equal(ev.run({}, feeds)[0], tensor<float>({2}, {10, -10}));
    check_equal(*dbg.value("S"), tensor<float>({2}, {1, -1}));
  }
  SUBCASE("a value not computed yet: replaced when its node produces it") {
    dbg.add_breakpoint("double");
    script.inspect = [](Debugger& d, const Stop&) { d.set("S", tensor<float>({2}, {3, 3})); };
    check_equal(ev.run({}, feeds)[0], tensor<float>({2}, {30, 30}));
  }
  SUBCASE("a graph input, before the run") {
    dbg.set("X", tensor<float>({2}, {50, 50}));
    check_equal(ev.run({}, feeds)[0], tensor<float>({2}, {100, 100}));
    check_equal(ev.run({}, feeds)[0], tensor<float>({2}, {20, 40}));  // once only
  }
}

TEST_CASE("the NaN watch stops where NaN appears, not where it spreads") {
  ReferenceEvaluator ev(chain_model());
  Debugger dbg(ev.model());
  ev.add_observer(&dbg);
  dbg.watch_nonfinite(true);
  Script script;
  std::string detail;
  script.inspect = [&](Debugger& d, const Stop& s) {
    detail = s.detail;
    CHECK(s.after);
    d.set("S", tensor<float>({2}, {0, 0}));  // the stopped node's output: repaired before "scale" reads it
  };
  script.attach(dbg);
  check_equal(ev.run({}, {{"X", tensor<float>({2}, {1, -1})}})[0], tensor<float>({2}, {0, 0}));
  CHECK(script.stops == std::vector<std::string>{"watch after root"});
  CHECK(detail == "output 'S' holds 1 NaN and 0 Inf, the first at [1]");

  script.inspect = [](Debugger&, const Stop&) {};
  script.stops.clear();
  const Values out = ev.run({}, {{"X", tensor<float>({2}, {1, -1})}});
  CHECK(std::isnan(out[0].tensor().data<float>()[1]));
  CHECK(script.stops == std::vector<std::string>{"watch after root"});  // "scale" only spreads it
}

TEST_CASE("interrupt stops a running model before its next node") {
  ReferenceEvaluator ev(chain_model());
  Debugger dbg(ev.model());
  struct CtrlC : Observer {  // stands for the SIGINT handler of a terminal client
    Debugger* dbg = nullptr;
    void after_node(const NodeEvent& e, Values&) override {
      if (e.id == "double") dbg->interrupt();
    }
  } ctrl_c;
  ctrl_c.dbg = &dbg;
  ev.add_observer(&dbg);
  ev.add_observer(&ctrl_c);
  Script script;
  script.attach(dbg);
  ev.run({}, {{"X", tensor<float>({2}, {2, 8})}});
  CHECK(script.stops == std::vector<std::string>{"interrupt root"});
}

TEST_CASE("breakpoint addresses and quitting") {
  ReferenceEvaluator ev(loop_model());
  Debugger dbg(ev.model());
  dbg.add_breakpoint("op:Add");
  CHECK(dbg.breakpoints()[0].ids == std::vector<std::string>{"loop/body/add_step"});
  CHECK(dbg.breakpoints_at("loop/body/add_step") == std::vector<int>{1});
  CHECK_THROWS_WITH_AS(dbg.add_breakpoint("nowhere"), doctest::Contains("no node matches 'nowhere'"), Error);
  CHECK_THROWS_WITH_AS(dbg.delete_breakpoint(7), "no breakpoint number 7", Error);
  const NodeLocation* where = dbg.locate("loop/body/keep_going");
  REQUIRE(where);
  CHECK(where->index == 1);
  CHECK(where->prefix == "loop/body/");

  ev.add_observer(&dbg);
  Script script;
  script.actions = {DebugAction::Quit};
  script.attach(dbg);
  CHECK_THROWS_AS(ev.run({}, loop_feeds()), DebugQuit);
  CHECK(dbg.frames().size() == 2);  // left as they were: the run stopped inside the body
}
