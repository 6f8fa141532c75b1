// Graphs ONNX's rules reject still reach the optimizer when a user hands it one (refeval optimize
// does not run ONNX's checker first): each pass refuses such a match with its reason instead of
// reading past a tensor's dims.
#include <doctest/doctest.h>
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include "optimize_test_util.h"
#include "pass.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::ramp;

namespace {

std::vector<std::string> not_fused(Model m, const optimize::Pass& pass) {
  const optimize::Inference inference = optimize::infer(m);
  optimize::Explain explain;
  optimize::PassContext ctx{Registry::builtin(), &inference, &explain};
  pass.run(m, ctx);
  CHECK(count_ops(m, "MatMul") == 0);  // nothing rewritten
  return explain.not_fused;
}

}  // namespace

TEST_CASE("gemm-reshape: a Gemm whose B is a 3-D constant is refused, named") {
  // Hugging Face's Conv1D form (Reshape -> Gemm -> Reshape) with B stored (16, 24, 1).
  const Model m = model(graph("conv1d",
                              {node("Reshape", {"x", "flat_shape"}, {"flat"}), node("Gemm", {"flat", "w", "b"}, {"h"}, {}, "/c_fc/Gemm"),
                               node("Reshape", {"h", "out_shape"}, {"y"})},
                              {tensor_info("x", DType::Float, {2, 6, 16})}, {tensor_info("y", DType::Float, {2, 6, 24})},
                              {{"flat_shape", Tensor::from_vector<int64_t>({2}, {-1, 16})},
                               {"out_shape", Tensor::from_vector<int64_t>({3}, {2, 6, 24})},
                               {"w", ramp({16, 24, 1}, 0.1f, 0.01f)},
                               {"b", ramp({24}, 0.0f, 0.1f)}}),
                        {{"", 17}});
  const std::vector<std::string> lines = not_fused(m, optimize::gemm_reshape_pass());
  INFO(fmt::format("{}", fmt::join(lines, " | ")));
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("not fused: gemm-reshape at ", 0) == 0 && l.find("the Gemm's B is not a 2-D constant") != std::string::npos;
  }));
}

TEST_CASE("attention: a Softmax without an input is refused, named") {
  const Model m = model(graph("softmax", {node("Softmax", {}, {"y"}, {attr("axis", int64_t(-1))}, "/attn/Softmax")}, {},
                              {tensor_info("y", DType::Float, {2, 4})}, {}),
                        {{"", 17}});
  const optimize::Inference inference = optimize::infer(m);
  optimize::Explain explain;
  optimize::PassContext ctx{Registry::builtin(), &inference, &explain};
  Model out = m;
  optimize::attention_pass().run(out, ctx);
  CHECK(out.graph.nodes.size() == 1);
  INFO(fmt::format("{}", fmt::join(explain.not_fused, " | ")));
  CHECK(std::any_of(explain.not_fused.begin(), explain.not_fused.end(),
                    [](const std::string& l) { return l.find("a Softmax without input or output") != std::string::npos; }));
}

TEST_CASE("transpose perms out of range or repeated: nothing composed, no crash") {
  // x (2, 3) through Transpose perm (1, 0), then a perm the evaluator refuses when it runs: out
  // of range (0, 5), or repeated (1, 1). Shape inference once read dims past the rank here (a
  // crash), and transpose-chain composed (0, 5) into a perm of whatever memory followed.
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{0, 5}, std::vector<int64_t>{1, 1}}) {
    CAPTURE(bad);
    const Model m = model(graph("perms",
                                {node("Transpose", {"x"}, {"t"}, {attr("perm", std::vector<int64_t>{1, 0})}, "/t0"),
                                 node("Transpose", {"t"}, {"y"}, {attr("perm", bad)}, "/t1")},
                                {tensor_info("x", DType::Float, {2, 3})}, {tensor_info("y", DType::Float, {})}, {}),
                          {{"", 17}});
    optimize::OptimizeOptions o;
    const Model out = optimize::optimize(m, Registry::builtin(), o).model;
    REQUIRE(count_ops(out, "Transpose") == 2);
    CHECK(out.graph.nodes[1].find_attribute("perm")->ints == bad);
  }
}

TEST_CASE("an Expand to 2^40 dims: ONNX's inference gives up in its child, optimize goes on") {
  // Expand(a, ConstantOfShape([2^40])): a shape of 2^40 ones. ONNX's data propagation builds that
  // many dims (it once grew the child process to 14 GB); the child's memory and CPU limits end it,
  // and the optimizer goes on without those shapes.
  const Model m = model(graph("huge_rank",
                              {node("ConstantOfShape", {"n"}, {"ones"}, {attr("value", Tensor::from_vector<int64_t>({1}, {1}))}, "/ones"),
                               node("Expand", {"a", "ones"}, {"y"}, {}, "/expand")},
                              {tensor_info("a", DType::Float, {2, 3})}, {tensor_info("y", DType::Float, {})},
                              {{"n", Tensor::from_vector<int64_t>({1}, {int64_t(1) << 40})}}),
                        {{"", 17}});
  optimize::OptimizeOptions o;
  const Model out = optimize::optimize(m, Registry::builtin(), o).model;
  CHECK(count_ops(out, "Expand") == 1);
}

TEST_CASE("constant folding leaves a ConstantOfShape of 2^31 elements unfolded") {
  // A computed size of 2^31 (an invalid graph, or a mask buffer no model needs that large): folding
  // would allocate 8 GB and write it into the model. ONNX's inference knows the output's dims.
  const Model m = model(graph("huge_constant",
                              {node("ConstantOfShape", {"n"}, {"ones"}, {attr("value", Tensor::from_vector<float>({1}, {1.0f}))}, "/ones"),
                               node("Add", {"a", "ones"}, {"y"}, {}, "/add")},
                              {tensor_info("a", DType::Float, {1})}, {tensor_info("y", DType::Float, {})},
                              {{"n", Tensor::from_vector<int64_t>({1}, {int64_t(1) << 31})}}),
                        {{"", 17}});
  optimize::OptimizeOptions o;
  o.only = {"constant-folding"};
  const Model out = optimize::optimize(m, Registry::builtin(), o).model;
  CHECK(count_ops(out, "ConstantOfShape") == 1);
}
