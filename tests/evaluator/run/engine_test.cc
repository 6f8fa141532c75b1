// The planner and the run loop: errors name the node and tensor, values are freed after their
// last use, observers see every node, and any value can be asked for.
#include "refeval/evaluator.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {

Graph add_chain() {
  return graph("g", {node("Add", {"X", "X"}, {"T"}, {}, "first"), node("Mul", {"T", "X"}, {"Y"}, {}, "second")},
               {tensor_info("X", DType::Float, {"N"})}, {tensor_info("Y", DType::Float, {"N"})});
}

struct Recorder : Observer {
  std::vector<std::string> events;
  bool keep = false;
  void before_node(const NodeEvent& e) override { events.push_back("before " + e.id); }
  void after_node(const NodeEvent& e, Values& outs) override { events.push_back("after " + e.id + " " + std::to_string(outs.size())); }
  bool keeps_values() const override { return keep; }
};

}  // namespace

TEST_CASE("outputs, intermediates and observers") {
  ReferenceEvaluator ev(model(add_chain()));
  Recorder rec;
  ev.add_observer(&rec);
  const Tensor x = tensor<float>({2}, {1, 2});
  testing::check_equal(ev.run({}, {{"X", x}})[0], tensor<float>({2}, {2, 8}));
  CHECK(rec.events == std::vector<std::string>{"before first", "after first 1", "before second", "after second 1"});
  testing::check_equal(ev.run({"T"}, {{"X", x}})[0], tensor<float>({2}, {2, 4}));  // an intermediate
  const NamedValues all = ev.run_all({{"X", x}});
  REQUIRE(all.size() == 3);
  CHECK(all[1].first == "T");
}

TEST_CASE("an observer can replay a node's outputs: its kernel does not run, downstream reads them") {
  // What `refeval accuracy` does to re-run only the nodes downstream of one node.
  struct Replayer : Observer {
    int replayed = 0;
    bool replay(const NodeEvent& e, Values& outputs) override {
      if (e.id != "first") return false;
      ++replayed;
      outputs = {tensor<float>({2}, {10, 20})};
      return true;
    }
  };
  ReferenceEvaluator ev(model(add_chain()));
  Replayer replayer;
  Recorder rec;
  ev.add_observer(&replayer);
  ev.add_observer(&rec);
  testing::check_equal(ev.run({}, {{"X", tensor<float>({2}, {1, 2})}})[0], tensor<float>({2}, {10, 40}));  // (10, 20) * X
  CHECK(replayer.replayed == 1);
  CHECK(rec.events == std::vector<std::string>{"before first", "after first 1", "before second", "after second 1"});
  ev.remove_observer(&replayer);
  testing::check_equal(ev.run({}, {{"X", tensor<float>({2}, {1, 2})}})[0], tensor<float>({2}, {2, 8}));
}

TEST_CASE("feeds are checked against the declared types") {
  ReferenceEvaluator ev(model(add_chain()));
  CHECK_THROWS_WITH_AS(ev.run({}, {{"X", tensor<double>({2}, {1, 2})}}), doctest::Contains("input 'X': expected tensor(float)[N]"), Error);
  CHECK_THROWS_WITH_AS(ev.run({}, {{"X", tensor<float>({1, 2}, {1, 2})}}), doctest::Contains("rank differs"), Error);
  CHECK_THROWS_WITH_AS(ev.run({}, {}), doctest::Contains("missing input 'X'"), Error);
  CHECK_THROWS_WITH_AS(ev.run({}, {{"X", tensor<float>({1}, {1})}, {"Z", tensor<float>({1}, {1})}}),
                       doctest::Contains("'Z' is not an input"), Error);
}

TEST_CASE("planning errors name the node") {
  SUBCASE("unknown operator") {
    Graph g = graph("g", {node("NoSuchOp", {"X"}, {"Y"}, {}, "mystery")}, {tensor_info("X", DType::Float, {1})},
                    {tensor_info("Y", DType::Float, {1})});
    CHECK_THROWS_WITH_AS(ReferenceEvaluator(model(g)), doctest::Contains("node 'mystery' (NoSuchOp): unknown operator"), Error);
  }
  SUBCASE("an input nobody produces") {
    Graph g = graph("g", {node("Add", {"X", "ghost"}, {"Y"}, {}, "adder")}, {tensor_info("X", DType::Float, {1})},
                    {tensor_info("Y", DType::Float, {1})});
    CHECK_THROWS_WITH_AS(ReferenceEvaluator(model(g)), doctest::Contains("input 'ghost' is not a graph input"), Error);
  }
  SUBCASE("an unknown attribute") {
    Graph g = graph("g", {node("Add", {"X", "X"}, {"Y"}, {attr("alpha", 1.0f)}, "adder")},
                    {tensor_info("X", DType::Float, {1})}, {tensor_info("Y", DType::Float, {1})});
    CHECK_THROWS_WITH_AS(ReferenceEvaluator(model(g)), doctest::Contains("unknown attribute alpha"), Error);
  }
  SUBCASE("a cycle") {
    Graph g = graph("g", {node("Add", {"X", "B"}, {"A"}, {}, "a"), node("Add", {"A", "X"}, {"B"}, {}, "b")},
                    {tensor_info("X", DType::Float, {1})}, {tensor_info("B", DType::Float, {1})});
    CHECK_THROWS_WITH_AS(ReferenceEvaluator(model(g)), doctest::Contains("cycle"), Error);
  }
  SUBCASE("a domain the model does not import") {
    Graph g = graph("g", {node("Foo", {"X"}, {"Y"}, {}, "f", "com.example")}, {tensor_info("X", DType::Float, {1})},
                    {tensor_info("Y", DType::Float, {1})});
    CHECK_THROWS_WITH_AS(ReferenceEvaluator(model(g)), doctest::Contains("domain 'com.example' is not imported"), Error);
  }
}

TEST_CASE("nodes stored out of order run in dependency order") {
  Graph g = graph("g", {node("Mul", {"T", "X"}, {"Y"}, {}, "second"), node("Add", {"X", "X"}, {"T"}, {}, "first")},
                  {tensor_info("X", DType::Float, {1})}, {tensor_info("Y", DType::Float, {1})});
  ReferenceEvaluator ev(model(g));
  testing::check_equal(ev.run({}, {{"X", tensor<float>({1}, {3})}})[0], tensor<float>({1}, {18}));
}

TEST_CASE("a memory cap refuses huge tensors with an error instead of crashing") {
  set_memory_cap(1 << 20);
  CHECK_THROWS_WITH_AS(Tensor(DType::Float, {1 << 20}), doctest::Contains("exceeds the memory cap"), Error);
  set_memory_cap(0);
  CHECK_THROWS_WITH_AS(Tensor(DType::Float, {INT64_MAX / 2, 4}), doctest::Contains("64 bits"), Error);
}

TEST_CASE("nodes that depend only on initializers are computed once and reused") {
  const Tensor w = tensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  Graph g = graph("g", {node("Transpose", {"W"}, {"WT"}, {}, "t"), node("Add", {"WT", "X"}, {"Y"}, {}, "a")},
                  {tensor_info("X", DType::Float, {3, 2})}, {tensor_info("Y", DType::Float, {3, 2}), tensor_info("WT", DType::Float, {3, 2})},
                  {{"W", w}});
  ReferenceEvaluator ev(model(g));
  Recorder rec;
  ev.add_observer(&rec);
  const Tensor x = tensor<float>({3, 2}, {1, 1, 1, 1, 1, 1});
  const Values first = ev.run({}, {{"X", x}});
  const Values second = ev.run({}, {{"X", tensor<float>({3, 2}, {2, 2, 2, 2, 2, 2})}});
  CHECK(first[1].tensor().raw_data() == second[1].tensor().raw_data());  // the folded Transpose, not recomputed
  testing::check_equal(second[0], tensor<float>({3, 2}, {2, 5, 3, 6, 4, 7}));
  CHECK(rec.events.size() == 8);  // observers still see both nodes on both runs
}

TEST_CASE("an initializer that a feed may replace is not folded") {
  Graph g = graph("g", {node("Neg", {"W"}, {"Y"}, {}, "n")}, {tensor_info("W", DType::Float, {2})},
                  {tensor_info("Y", DType::Float, {2})}, {{"W", tensor<float>({2}, {1, 2})}});
  ReferenceEvaluator ev(model(g));
  testing::check_equal(ev.run({}, {})[0], tensor<float>({2}, {-1, -2}));
  testing::check_equal(ev.run({}, {{"W", tensor<float>({2}, {5, 6})}})[0], tensor<float>({2}, {-5, -6}));
}

// A value read for the last time moves from the frame into the node's inputs (no copy): the node
// and every observer still see it, a value named twice by its last reader reaches both inputs, and
// one the caller asked for or an observer keeps is copied, never taken.
TEST_CASE("values read for the last time reach the node and observers, and asked-for values stay") {
  Graph g = graph("g", {node("Add", {"X", "X"}, {"T"}, {}, "a"), node("Mul", {"T", "T"}, {"U"}, {}, "m"),
                        node("Sub", {"U", "T"}, {"Y"}, {}, "s")},
                  {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})});
  struct Inputs : Observer {
    std::vector<std::string> seen;
    bool keep = false;
    void before_node(const NodeEvent& e) override {
      for (const Value& v : e.inputs) seen.push_back(e.id + " " + std::to_string(v.tensor().data<float>()[1]));
    }
    bool keeps_values() const override { return keep; }
  } obs;
  ReferenceEvaluator ev(model(g));
  ev.add_observer(&obs);
  const Tensor x = tensor<float>({2}, {1, 3});
  testing::check_equal(ev.run({}, {{"X", x}})[0], tensor<float>({2}, {2, 30}));  // T = 2X, U = T^2, Y = U - T
  CHECK(obs.seen == std::vector<std::string>{"a 3.000000", "a 3.000000", "m 6.000000", "m 6.000000", "s 36.000000", "s 6.000000"});
  const Values asked = ev.run({"T", "Y", "U"}, {{"X", x}});
  testing::check_equal(asked[0], tensor<float>({2}, {2, 6}));
  testing::check_equal(asked[2], tensor<float>({2}, {4, 36}));
  obs.keep = true;
  obs.seen.clear();
  testing::check_equal(ev.run({}, {{"X", x}})[0], tensor<float>({2}, {2, 30}));
  CHECK(obs.seen.size() == 6);
  CHECK(x.data<float>()[1] == 3.f);  // the caller's feed is never taken
}
