// The basic removals (identity, dropout, noop: passes/eliminate.cc) on the forms their guards
// check: unnamed and unread extra outputs, a chain of hand-overs to graph outputs, a producer of
// several outputs, inputs given as "", zeros whose shape is a run-time value, half-precision
// constants, and the opset-1 Slice of attributes.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "pass.h"
#include "refeval/compute_vector.h"
#include "refeval/builder.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
using refeval::testing::optimized;

namespace {

int run_pass(Model& m, const optimize::Pass& pass) {
  const optimize::Inference inference = optimize::infer(m);
  optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
  return pass.run(m, ctx);
}

}  // namespace

TEST_CASE("passes branches: a Dropout whose mask output is unnamed, or whose ratio and training_mode are given as \"\", is removed") {
  Model unnamed = model(graph("drop", {node("Dropout", {"x"}, {"d", ""}), node("Neg", {"d"}, {"y"})}, {f32("x", {2, 3})}, {f32("y", {2, 3})}), {{"", 13}});
  CHECK(count_ops(optimized(unnamed, {"dropout"}), "Dropout") == 0);
  Model blanks = model(graph("drop", {node("Dropout", {"x", "", ""}, {"d"}), node("Neg", {"d"}, {"y"})}, {f32("x", {2, 3})}, {f32("y", {2, 3})}), {{"", 13}});
  const Model out = optimized(blanks, {"dropout"});
  CHECK(count_ops(out, "Dropout") == 0);
  REQUIRE(count_ops(out, "Neg") == 1);
  CHECK(out.graph.nodes[0].inputs == std::vector<std::string>{"x"});
}

TEST_CASE("passes branches: an Identity with its output unnamed, or of two inputs (invalid), or no outputs, stays") {
  Model unnamed = model(graph("ids", {node("Identity", {"x"}, {""}), node("Neg", {"x"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})}));
  CHECK(run_pass(unnamed, optimize::identity_elimination_pass()) == 0);
  CHECK(count_ops(unnamed, "Identity") == 1);
  Model two = model(graph("ids", {node("Identity", {"x", "x"}, {"i"}), node("Neg", {"i"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})}));
  CHECK(run_pass(two, optimize::identity_elimination_pass()) == 0);
  Model none = model(graph("ids", {node("Identity", {"x"}, {}), node("Neg", {"x"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})}));
  CHECK(run_pass(none, optimize::identity_elimination_pass()) == 0);
  CHECK(count_ops(none, "Identity") == 1);
}

TEST_CASE("passes branches: identity hands a graph output's name over once; the next Identity on that output stays") {
  // Neg -> n -> Identity -> a (graph output) -> Identity -> b (graph output): Neg writes a; the
  // second Identity reads a, whose producer was just taken out, and stays.
  const Model out = optimized(model(graph("ids", {node("Neg", {"x"}, {"n"}), node("Identity", {"n"}, {"a"}), node("Identity", {"a"}, {"b"})}, {f32("x", {4})},
                                          {f32("a", {4}), f32("b", {4})})),
                              {"identity"});
  REQUIRE(out.graph.nodes.size() == 2);
  CHECK(out.graph.nodes[0].op_type == "Neg");
  CHECK(out.graph.nodes[0].outputs == std::vector<std::string>{"a"});
  CHECK(out.graph.nodes[1].op_type == "Identity");
  CHECK(out.graph.nodes[1].inputs == std::vector<std::string>{"a"});
}

TEST_CASE("passes branches: identity renames one output of a Split, its other output kept") {
  const Model out = optimized(model(graph("ids", {node("Split", {"x"}, {"p", "q"}, {attr("axis", int64_t(0))}), node("Identity", {"p"}, {"y"}), node("Neg", {"q"}, {"z"})},
                                          {f32("x", {4})}, {f32("y", {2}), f32("z", {2})})),
                              {"identity"});
  CHECK(count_ops(out, "Identity") == 0);
  REQUIRE(count_ops(out, "Split") == 1);
  CHECK(out.graph.nodes[0].outputs == std::vector<std::string>{"y", "q"});
}

TEST_CASE("passes branches: noop drops x * 1 in float16 and bfloat16, and x + zeros of ConstantOfShape without a value") {
  for (const DType t : {DType::Float16, DType::BFloat16}) {
    CAPTURE(int(t));
    Model m = model(graph("mul", {node("Cast", {"x"}, {"h"}, {attr("to", int64_t(t))}), node("Mul", {"h", "one"}, {"m"}),
                                  node("Cast", {"m"}, {"y"}, {attr("to", int64_t(DType::Float))})},
                          {f32("x", {2, 3})}, {f32("y", {2, 3})}, {{"one", from_doubles(t, {}, {1.0})}}));
    const Model out = optimized(m, {"noop"});
    CHECK(count_ops(out, "Mul") == 0);
    CHECK(count_ops(out, "Cast") == 2);
  }
  // ConstantOfShape with no value attribute: float zeros.
  Model zeros = model(graph("zeros", {node("ConstantOfShape", {"shape"}, {"z"}), node("Add", {"z", "x"}, {"s"}), node("Neg", {"s"}, {"y"})}, {f32("x", {2, 3})},
                            {f32("y", {})}, {{"shape", ints({2, 3})}}));
  CHECK(count_ops(optimized(zeros, {"noop"}), "Add") == 0);
  // Zeros of a shape fed at run time, of any rank, or of rank 2 against x (1, 3): they may
  // broadcast x larger; the Add stays. (Against x (2, 3), rank-2 zeros cannot: removed.)
  auto fed = [](std::vector<DimSpec> x, DimSpec rank) {
    return model(graph("zeros", {node("ConstantOfShape", {"shape"}, {"z"}, {attr("value", Tensor::from_vector<float>({1}, {0.0f}))}), node("Add", {"x", "z"}, {"s"}),
                                 node("Neg", {"s"}, {"y"})},
                       {f32("x", std::move(x)), tensor_info("shape", DType::Int64, {rank})}, {f32("y", {})}));
  };
  Model any_rank = fed({2, 3}, "n");
  CHECK(run_pass(any_rank, optimize::noop_elimination_pass()) == 0);
  CHECK(count_ops(any_rank, "Add") == 1);
  Model row = fed({1, 3}, 2);
  CHECK(run_pass(row, optimize::noop_elimination_pass()) == 0);
  CHECK(count_ops(row, "Add") == 1);
  Model full = fed({2, 3}, 2);
  CHECK(run_pass(full, optimize::noop_elimination_pass()) == 1);
  CHECK(count_ops(full, "Add") == 0);
}

TEST_CASE("passes branches: noop drops a Slice of everything with its steps given as \"\"; the opset-1 Slice of attributes stays") {
  Model blank = model(graph("slice", {node("Slice", {"x", "zero", "big", "axis", ""}, {"t"}), node("Neg", {"t"}, {"y"})}, {f32("x", {2, 4})}, {f32("y", {})},
                            {{"zero", ints({0})}, {"big", ints({100})}, {"axis", ints({1})}}));
  CHECK(count_ops(optimized(blank, {"noop"}), "Slice") == 0);
  // Slice-1 (starts and ends as attributes) of everything: not this rule's form.
  Model old = model(graph("slice", {node("Slice", {"x"}, {"t"}, {attr("starts", std::vector<int64_t>{0}), attr("ends", std::vector<int64_t>{100}), attr("axes", std::vector<int64_t>{1})}),
                                    node("Neg", {"t"}, {"y"})},
                          {f32("x", {2, 4})}, {f32("y", {})}),
                    {{"", 9}});
  CHECK(run_pass(old, optimize::noop_elimination_pass()) == 0);
  CHECK(count_ops(old, "Slice") == 1);
}
