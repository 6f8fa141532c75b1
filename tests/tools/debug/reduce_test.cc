// refeval reduce's library (tools/debug/reduce.h) on small graphs whose culprit is known: each
// result is checked by what it holds (nodes, inputs and their values), not by the search's path.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "refeval/builder.h"
#include "refeval/error.h"
#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "debug/reduce.h"

using namespace refeval;
using namespace refeval::build;
namespace fs = std::filesystem;

namespace {

Value floats(std::vector<float> v) {
  const int64_t n = int64_t(v.size());
  return Value(Tensor::from_vector<float>({n}, v));
}

std::set<std::string> names_of(const Model& m) {
  std::set<std::string> out;
  for (const Node& n : m.graph.nodes) out.insert(n.name);
  return out;
}

// X -> n0 Neg -> n1 Exp -> n2 Neg -> bad Sqrt (NaN: its input is negative) -> n4 Abs -> n5 Relu -> Y
Model chain_with_sqrt() {
  return model(graph("g",
                     {node("Neg", {"X"}, {"a"}, {}, "n0"), node("Exp", {"a"}, {"b"}, {}, "n1"),
                      node("Neg", {"b"}, {"c"}, {}, "n2"), node("Sqrt", {"c"}, {"d"}, {}, "bad"),
                      node("Abs", {"d"}, {"e"}, {}, "n4"), node("Relu", {"e"}, {"Y"}, {}, "n5")},
                     {tensor_info("X", DType::Float, {3})}, {tensor_info("Y", DType::Float, {3})}));
}

// Holds while every named node is in the candidate.
class NodesPresent : public reduce::Predicate {
 public:
  explicit NodesPresent(std::set<std::string> names) : names_(std::move(names)) {}
  std::string name() const override { return "nodes present"; }
  reduce::Verdict test(const reduce::Candidate& c) override {
    ++runs;
    const std::set<std::string> have = names_of(c.model);
    for (const auto& n : names_)
      if (!have.count(n)) return {false, n + " missing"};
    return {true, "all present"};
  }
  int runs = 0;

 private:
  std::set<std::string> names_;
};

}  // namespace

TEST_CASE("reduce --nan: a chain shrinks to the Sqrt that makes the NaN, its input fed with the recorded value") {
  for (auto mode : {reduce::Mode::Bisect, reduce::Mode::Linear, reduce::Mode::Both}) {
    CAPTURE(int(mode));
    auto pred = reduce::nan_predicate();
    reduce::Options opt;
    opt.mode = mode;
    std::vector<reduce::Step> steps;
    opt.on_step = [&](const reduce::Step& s) { steps.push_back(s); };
    const reduce::Result r = reduce::reduce(chain_with_sqrt(), {{{"X", floats({0.5f, 1.f, 2.f})}}}, *pred, opt);
    REQUIRE(r.model.graph.nodes.size() == 1);
    CHECK(r.model.graph.nodes[0].name == "bad");
    CHECK(r.kept == std::vector<std::string>{"'bad' (Sqrt)"});
    CHECK(r.original_nodes == 6);
    REQUIRE(r.model.graph.inputs.size() == 1);
    CHECK(r.model.graph.inputs[0].name == "c");
    // c = -exp(-x): the value the full run made.
    const auto c = r.feeds.at(0).at("c").tensor().to_vector<float>();
    CHECK(c[0] == doctest::Approx(-std::exp(-0.5)));
    CHECK(c[2] == doctest::Approx(-std::exp(-2.0)));
    CHECK(r.detail.find("new NaN in 'd' from node 'bad' (Sqrt)") != std::string::npos);
    CHECK(!r.stopped);
    REQUIRE(!steps.empty());
    CHECK(steps[0].phase == "full model");
    CHECK(steps[0].holds);
    CHECK(steps[0].nodes == 6);
  }
}

TEST_CASE("reduce: NaN that only propagates is not a new NaN; a predicate false on the full model is refused") {
  auto pred = reduce::nan_predicate();
  // All positive: Sqrt of a negative number never happens.
  Model m = model(graph("g", {node("Exp", {"X"}, {"a"}, {}, "e"), node("Sqrt", {"a"}, {"Y"}, {}, "s")},
                        {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})}));
  CHECK_THROWS_WITH(reduce::reduce(m, {{{"X", floats({1.f, 2.f})}}}, *pred),
                    doctest::Contains("--nan does not hold on the full model"));
  // A NaN fed in is no failure of the model.
  CHECK_THROWS_WITH(reduce::reduce(m, {{{"X", floats({NAN, 2.f})}}}, *pred), doctest::Contains("does not hold"));
  CHECK_THROWS_WITH(reduce::reduce(m, {}, *pred), doctest::Contains("no input set"));
}

TEST_CASE("reduce: a failure needing two nodes keeps both; a branch it does not need is cut and frozen") {
  // X -> p1 Neg -> p2 Abs ---+
  // X -> q1 Exp ------------- bad Add -> Y
  Model m = model(graph("g",
                        {node("Neg", {"X"}, {"p1o"}, {}, "p1"), node("Exp", {"X"}, {"q1o"}, {}, "q1"),
                         node("Abs", {"p1o"}, {"p2o"}, {}, "p2"), node("Add", {"p2o", "q1o"}, {"Y"}, {}, "bad")},
                        {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})}));
  const std::vector<reduce::Feeds> sets = {{{"X", floats({1.f, 2.f})}}};
  for (auto freeze : {reduce::Freeze::Inputs, reduce::Freeze::Constants}) {
    CAPTURE(int(freeze));
    NodesPresent pred({"p1", "bad"});
    reduce::Options opt;
    opt.freeze = freeze;
    const reduce::Result r = reduce::reduce(m, sets, pred, opt);
    CHECK(names_of(r.model) == std::set<std::string>{"p1", "p2", "bad"});
    // q1's output exp(x) is frozen: an input, or a constant.
    const bool as_input = r.model.graph.find_input("q1o") != nullptr;
    const Initializer* as_const = r.model.graph.find_initializer("q1o");
    CHECK(as_input == (freeze == reduce::Freeze::Inputs));
    CHECK((as_const != nullptr) == (freeze == reduce::Freeze::Constants));
    const Tensor frozen = as_input ? r.feeds[0].at("q1o").tensor() : as_const->value;
    CHECK(frozen.to_vector<float>()[1] == doctest::Approx(std::exp(2.0)));
  }
  NodesPresent two({"p1", "q1"});
  const reduce::Result r = reduce::reduce(m, sets, two);
  CHECK(names_of(r.model) == std::set<std::string>{"p1", "q1"});
  CHECK(r.model.graph.outputs.size() == 2);
}

TEST_CASE("reduce --error: the node whose run fails is kept, with a matching message") {
  Model m = model(graph("g",
                        {node("Relu", {"X"}, {"a"}, {}, "r"), node("Reshape", {"a", "shape"}, {"b"}, {}, "reshape"),
                         node("Abs", {"b"}, {"Y"}, {}, "abs")},
                        {tensor_info("X", DType::Float, {6})}, {tensor_info("Y", DType::Float, {5})},
                        {{"shape", Tensor::from_vector<int64_t>({1}, {5})}}));
  auto pred = reduce::error_predicate("Reshape");
  const reduce::Result r = reduce::reduce(m, {{{"X", floats({1, 2, 3, 4, 5, 6})}}}, *pred);
  CHECK(names_of(r.model) == std::set<std::string>{"reshape"});
  CHECK(r.model.graph.find_initializer("shape") != nullptr);
  CHECK(r.detail.find("reshape") != std::string::npos);
  CHECK_THROWS_WITH(reduce::error_predicate("("), doctest::Contains("not a regular expression"));
  auto other = reduce::error_predicate("no such message");
  CHECK_THROWS_WITH(reduce::reduce(m, {{{"X", floats({1, 2, 3, 4, 5, 6})}}}, *other), doctest::Contains("does not hold"));
}

TEST_CASE("reduce --compare-with: the node reading a changed weight; cut values come from the dump") {
  auto make = [](float w) {
    return model(graph("g",
                       {node("Relu", {"X"}, {"a"}, {}, "r"), node("Mul", {"a", "W"}, {"b"}, {}, "scale"),
                        node("Neg", {"b"}, {"c"}, {}, "neg"), node("Exp", {"c"}, {"Y"}, {}, "exp")},
                       {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})},
                       {{"W", Tensor::from_vector<float>({2}, {w, 2.f})}}));
  };
  const reduce::Feeds feeds = {{"X", floats({1.f, 3.f})}};
  ReferenceEvaluator original(make(1.f));
  RecordObserver rec;
  original.add_observer(&rec);
  original.run({}, feeds);
  const Model changed = make(1.5f);
  const auto differ = reduce::differing_initializers(changed, rec.records(), {});
  REQUIRE(differ.size() == 1);
  CHECK(differ[0].rfind("'W'", 0) == 0);
  auto pred = reduce::compare_predicate(rec.records(), {});
  const reduce::Result r = reduce::reduce(changed, {feeds}, *pred);
  CHECK(names_of(r.model) == std::set<std::string>{"scale"});
  CHECK(r.detail.find("'b' from node 'scale' (Mul) differs") != std::string::npos);
  // The model's own weight stays; the input is the dump's value of a.
  CHECK(r.model.graph.find_initializer("W")->value.to_vector<float>()[0] == 1.5f);
  CHECK(r.feeds[0].at("a").tensor().to_vector<float>() == std::vector<float>{1.f, 3.f});
  // Within a loose tolerance nothing differs.
  auto loose = reduce::compare_predicate(rec.records(), {1.0, 1.0});
  CHECK_THROWS_WITH(reduce::reduce(changed, {feeds}, *loose), doctest::Contains("does not hold"));
}

TEST_CASE("reduce --compare-with: a dump that lacks a value compares the others") {
  // The dump of the first run lost 'a' (a dump filtered by name, or written by another tool).
  auto make = [](float w) {
    return model(graph("g", {node("Relu", {"X"}, {"a"}, {}, "r"), node("Mul", {"a", "W"}, {"b"}, {}, "scale"), node("Neg", {"b"}, {"Y"}, {}, "neg")},
                       {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})}, {{"W", Tensor::from_vector<float>({2}, {w, 2.f})}}));
  };
  const reduce::Feeds feeds = {{"X", floats({1.f, 3.f})}};
  ReferenceEvaluator original(make(1.f));
  RecordObserver rec;
  original.add_observer(&rec);
  original.run({}, feeds);
  std::vector<ValueRecord> dump;
  for (const ValueRecord& r : rec.records())
    if (r.name != "a") dump.push_back(r);
  auto pred = reduce::compare_predicate(dump, {});
  const reduce::Result r = reduce::reduce(make(1.5f), {feeds}, *pred);
  CHECK(names_of(r.model).count("scale"));
  CHECK(r.detail.find("'b' from node 'scale' (Mul) differs") != std::string::npos);
}

TEST_CASE("reduce --nan: a weight holding NaN is the failure, named as the initializer") {
  // Relu(X) * W with W[1] NaN: the Mul's NaN comes from its weight, not from its arithmetic.
  const Model m = model(graph("g", {node("Relu", {"X"}, {"a"}, {}, "r"), node("Mul", {"a", "W"}, {"b"}, {}, "scale"), node("Neg", {"b"}, {"Y"}, {}, "neg")},
                              {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})},
                              {{"W", Tensor::from_vector<float>({2}, {1.f, NAN})}}));
  auto pred = reduce::nan_predicate();
  const reduce::Result r = reduce::reduce(m, {{{"X", floats({1.f, 3.f})}}}, *pred);
  CHECK(r.detail == "initializer 'W' holds NaN");
  CHECK(names_of(r.model) == std::set<std::string>{"scale"});
}

TEST_CASE("reduce: several input sets, all or any; --freeze constants needs one set") {
  // Sqrt(X - 1): NaN only where some X < 1.
  Model m = model(graph("g",
                        {node("Relu", {"X"}, {"a"}, {}, "r"), node("Sub", {"a", "one"}, {"b"}, {}, "sub"),
                         node("Sqrt", {"b"}, {"c"}, {}, "sqrt"), node("Abs", {"c"}, {"Y"}, {}, "abs")},
                        {tensor_info("X", DType::Float, {"n"})}, {tensor_info("Y", DType::Float, {"n"})},
                        {{"one", Tensor::scalar<float>(1.f)}}));
  const std::vector<reduce::Feeds> sets = {{{"X", floats({2.f, 3.f})}}, {{"X", floats({0.5f, 2.f, 4.f})}}};
  auto pred = reduce::nan_predicate();
  CHECK_THROWS_WITH(reduce::reduce(m, sets, *pred), doctest::Contains("does not hold"));
  reduce::Options any;
  any.all_sets = false;
  const reduce::Result r = reduce::reduce(m, sets, *pred, any);
  CHECK(names_of(r.model) == std::set<std::string>{"sqrt"});
  REQUIRE(r.feeds.size() == 2);
  CHECK(r.feeds[1].at("b").tensor().shape() == Shape{3});
  // The sets' shapes differ, so the cut input's dimension is left open.
  REQUIRE(r.model.graph.inputs.size() == 1);
  CHECK(!r.model.graph.inputs[0].type.dims[0].fixed());
  reduce::Options constants;
  constants.freeze = reduce::Freeze::Constants;
  constants.all_sets = false;
  CHECK_THROWS_WITH(reduce::reduce(m, sets, *pred, constants), doctest::Contains("--freeze constants needs a single input set"));
}

TEST_CASE("reduce: sets of different ranks leave the cut input's rank open; a cycle is refused") {
  // Sqrt(X - 1) over a vector in one set and a matrix in the other: the cut value b has rank 1, then 2.
  const Model m = model(graph("g",
                              {node("Relu", {"X"}, {"a"}, {}, "r"), node("Sub", {"a", "one"}, {"b"}, {}, "sub"),
                               node("Sqrt", {"b"}, {"Y"}, {}, "sqrt")},
                              {tensor_info_unknown_rank("X", DType::Float)}, {tensor_info_unknown_rank("Y", DType::Float)},
                              {{"one", Tensor::scalar<float>(1.f)}}));
  const std::vector<reduce::Feeds> sets = {{{"X", floats({0.5f, 2.f})}}, {{"X", Tensor::from_vector<float>({2, 2}, {0.5f, 2.f, 3.f, 0.f})}}};
  auto pred = reduce::nan_predicate();
  const reduce::Result r = reduce::reduce(m, sets, *pred);
  CHECK(names_of(r.model) == std::set<std::string>{"sqrt"});
  REQUIRE(r.model.graph.inputs.size() == 1);
  CHECK(r.model.graph.inputs[0].name == "b");
  CHECK(r.model.graph.inputs[0].type.dtype == DType::Float);
  CHECK(!r.model.graph.inputs[0].type.has_shape);
  // Neg feeds Abs feeds Neg: no order runs them
  const Model cycle = model(graph("g", {node("Neg", {"q"}, {"p"}, {}, "n1"), node("Abs", {"p"}, {"q"}, {}, "n2")},
                                  {tensor_info("X", DType::Float, {2})}, {tensor_info("p", DType::Float, {2})}));
  CHECK_THROWS_WITH_AS(reduce::reduce(cycle, {{{"X", floats({1.f, 2.f})}}}, *pred), "the graph has a cycle: it cannot be reduced", Error);
}

TEST_CASE("reduce: --max-steps stops early and keeps the smallest failing subgraph so far") {
  auto pred = reduce::nan_predicate();
  reduce::Options opt;
  opt.max_steps = 1;
  const reduce::Result r = reduce::reduce(chain_with_sqrt(), {{{"X", floats({1.f, 2.f, 3.f})}}}, *pred, opt);
  CHECK(r.stopped);
  CHECK(r.steps == 2);  // the full model, then one step
  CHECK(names_of(r.model).count("bad") == 1);
  std::atomic<bool> stop{true};
  reduce::Options interrupted;
  interrupted.stop = &stop;
  const reduce::Result s = reduce::reduce(chain_with_sqrt(), {{{"X", floats({1.f, 2.f, 3.f})}}}, *pred, interrupted);
  CHECK(s.stopped);
  CHECK(s.model.graph.nodes.size() == 6);
}

TEST_CASE("reduce: an If is kept whole with its branches, the values they capture becoming inputs") {
  // then: Sqrt(t) with t captured from the outer graph (negative: NaN inside the body).
  Graph then_g = graph("then", {node("Sqrt", {"t"}, {"tv"}, {}, "inner_sqrt")}, {}, {tensor_info("tv", DType::Float, {2})});
  Graph else_g = graph("else", {node("Identity", {"t"}, {"ev"}, {}, "inner_id")}, {}, {tensor_info("ev", DType::Float, {2})});
  Model m = model(graph("g",
                        {node("Neg", {"X"}, {"t"}, {}, "neg"), node("Greater", {"X", "zero"}, {"gt"}, {}, "gt"),
                         node("ReduceMin", {"gt_f"}, {"cond_f"}, {attr("keepdims", int64_t(0))}, "min"),
                         node("Cast", {"gt"}, {"gt_f"}, {attr("to", int64_t(1))}, "cast"),
                         node("Cast", {"cond_f"}, {"cond"}, {attr("to", int64_t(9))}, "cast_b"),
                         node("If", {"cond"}, {"y"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "if"),
                         node("Abs", {"y"}, {"Y"}, {}, "abs")},
                        {tensor_info("X", DType::Float, {2})}, {tensor_info("Y", DType::Float, {2})},
                        {{"zero", Tensor::scalar<float>(0.f)}}));
  auto pred = reduce::nan_predicate();
  const reduce::Result r = reduce::reduce(m, {{{"X", floats({1.f, 2.f})}}}, *pred);
  CHECK(names_of(r.model) == std::set<std::string>{"if"});
  std::set<std::string> inputs;
  for (const ValueInfo& vi : r.model.graph.inputs) inputs.insert(vi.name);
  CHECK(inputs == std::set<std::string>{"cond", "t"});
  CHECK(r.detail.find("inner_sqrt") != std::string::npos);
}

TEST_CASE("reduce: write_result writes a backend test whose expected outputs refeval computes") {
  auto pred = reduce::nan_predicate();
  const reduce::Result r = reduce::reduce(chain_with_sqrt(), {{{"X", floats({1.f, 2.f, 3.f})}}}, *pred);
  const fs::path dir = fs::temp_directory_path() / ("refeval_reduce_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CHECK(reduce::write_result(r, (dir / "model.onnx").string()) == "");
  const Model back = load_model((dir / "model.onnx").string());
  CHECK(back.graph.nodes.size() == 1);
  const Tensor in = read_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string());
  const Tensor out = read_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string());
  CHECK(in.to_vector<float>()[0] == doctest::Approx(-std::exp(-1.0)));
  CHECK(std::isnan(out.to_vector<float>()[0]));
  fs::remove_all(dir);
}

TEST_CASE("reduce: a model of no nodes and an output folder that cannot be made are refused in one line") {
  auto pred = reduce::nan_predicate();
  const Model empty = model(graph("g", {}, {tensor_info("X", DType::Float, {2})}, {tensor_info("X", DType::Float, {2})}));
  CHECK_THROWS_WITH_AS(reduce::reduce(empty, {{{"X", floats({1.f, 2.f})}}}, *pred), "the model has no nodes: nothing to reduce", Error);
  // the folder's place is taken by a file
  const reduce::Result r = reduce::reduce(chain_with_sqrt(), {{{"X", floats({1.f, 2.f, 3.f})}}}, *pred);
  const fs::path file = fs::temp_directory_path() / ("refeval_reduce_test_file_" + std::to_string(::getpid()));
  { std::ofstream(file) << "not a folder"; }
  CHECK_THROWS_WITH_AS(reduce::write_result(r, (file / "sub" / "model.onnx").string()),
                       doctest::Contains(((file / "sub").string() + ": cannot create the folder").c_str()), Error);
  fs::remove(file);
}
