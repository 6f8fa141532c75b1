// The NaN/Inf finder stops at the first node whose output holds NaN or Inf, with the node's
// inputs and the first offending positions; NaN already in an initializer or feed is reported
// before any node runs.
#include <cmath>
#include <limits>

#include "refeval/evaluator.h"
#include "refeval/finite_check.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {

// Y = Exp(Log(X - 1)): Log of a negative element plants a NaN; Exp must never run.
Model log_of_shifted() {
  Graph g = graph("g",
                  {node("Sub", {"X", "one"}, {"shifted"}, {}, "shift"), node("Log", {"shifted"}, {"logged"}, {}, "the_log"),
                   node("Exp", {"logged"}, {"Y"}, {}, "the_exp")},
                  {tensor_info("X", DType::Float, {2, 3})}, {tensor_info("Y", DType::Float, {2, 3})},
                  {{"one", Tensor::scalar<float>(1)}});
  return model(g);
}

struct NodeCounter : Observer {
  std::vector<std::string> ran;
  void before_node(const NodeEvent& e) override { ran.push_back(e.id); }
};

}  // namespace

TEST_CASE("a NaN planted by Log of a negative value is found at that Log node") {
  ReferenceEvaluator ev(log_of_shifted());
  NodeCounter counter;
  FiniteCheckObserver check;
  ev.add_observer(&counter);
  ev.add_observer(&check);
  const Tensor x = tensor<float>({2, 3}, {2, 3, 4, 5, 0.5f, 6});  // element [1, 1] becomes log(-0.5)
  CHECK_THROWS_AS(ev.run({}, {{"X", x}}), NonFiniteFound);
  REQUIRE(check.finding());
  const NonFinite& f = *check.finding();
  CHECK(f.node_id == "the_log");
  CHECK(f.node->op_type == "Log");
  CHECK(f.value == "logged");
  CHECK(f.stats.nan == 1);
  CHECK(f.stats.first_nonfinite == std::vector<int64_t>{4});
  CHECK(counter.ran == std::vector<std::string>{"shift", "the_log"});  // stopped before Exp
  REQUIRE(f.inputs.size() == 1);
  CHECK(f.inputs[0].first == "shifted");
  const std::string text = format_finding(f);
  CHECK(text.find("first NaN or Inf: node 'the_log' (Log), id the_log") == 0);
  CHECK(text.find("first at [1, 1]") != std::string::npos);
  CHECK(text.find("input 'shifted': float32:(2, 3) min -0.5 max 5.0 mean 2.4166666666666665, 0 NaN, 0 Inf") != std::string::npos);
}

TEST_CASE("finite values pass and are counted") {
  ReferenceEvaluator ev(log_of_shifted());
  FiniteCheckObserver check;
  ev.add_observer(&check);
  ev.run({}, {{"X", tensor<float>({2, 3}, {2, 3, 4, 5, 6, 7})}});
  CHECK_FALSE(check.finding());
  CHECK(check.values_checked() == 5);  // one initializer, one feed, three outputs
}

TEST_CASE("NaN or Inf in a feed is reported before any node runs") {
  ReferenceEvaluator ev(log_of_shifted());
  NodeCounter counter;
  FiniteCheckObserver check;
  ev.add_observer(&counter);
  ev.add_observer(&check);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(ev.run({}, {{"X", tensor<float>({2, 3}, {2, 3, 4, 5, 6, -inf})}}), NonFiniteFound);
  CHECK(counter.ran.empty());
  REQUIRE(check.finding());
  CHECK(check.finding()->source == NonFinite::Source::Input);
  CHECK(check.finding()->stats.inf == 1);
  CHECK(format_finding(*check.finding()).find("input 'X' holds NaN or Inf before any node runs") == 0);
}

TEST_CASE("a NaN inside a Loop body is found at the body's node, with the iteration") {
  // Loop body: acc_out = Log(acc_in - 2): acc 3 -> log 1 = 0 -> log(-2) = NaN in iteration 1.
  Graph body = graph("body",
                     {node("Sub", {"acc_in", "two"}, {"d"}, {}, "minus_two"), node("Log", {"d"}, {"acc_out"}, {}, "body_log"),
                      node("Identity", {"cond_in"}, {"cond_out"})},
                     {tensor_info("i", DType::Int64, {}), tensor_info("cond_in", DType::Bool, {}),
                      tensor_info("acc_in", DType::Float, {1})},
                     {tensor_info("cond_out", DType::Bool, {}), tensor_info("acc_out", DType::Float, {1})});
  Graph g = graph("g", {node("Loop", {"n", "", "start"}, {"final"}, {attr("body", body)}, "loop")},
                  {tensor_info("start", DType::Float, {1})}, {tensor_info("final", DType::Float, {1})},
                  {{"n", Tensor::scalar<int64_t>(3)}, {"two", Tensor::scalar<float>(2)}});
  ReferenceEvaluator ev(model(g));
  FiniteCheckObserver check;
  ev.add_observer(&check);
  CHECK_THROWS_AS(ev.run({}, {{"start", tensor<float>({1}, {3})}}), NonFiniteFound);
  REQUIRE(check.finding());
  CHECK(check.finding()->node_id == "loop/body/body_log");
  REQUIRE(check.finding()->bodies.size() == 1);
  CHECK(check.finding()->bodies[0] == "Loop 'loop': body iteration 1");
}
