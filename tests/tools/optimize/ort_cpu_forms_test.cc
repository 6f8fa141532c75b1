// --target ort --forms cpu (the default): the forms ONNX Runtime's CPU kernels run fastest
// (ort_cpu_forms.h). The same graphs with --forms all get every fusion; both are checked against
// the original with the evaluator.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "tools/fusion/fusion_models.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::ramp;
using refeval::testing::optimized;

namespace {

// a + b -> LayerNormalization: BERT's post-LN residual
Model residual_norm() {
  return model(graph("residual", {node("Add", {"a", "b"}, {"sum"}), node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}, {attr("epsilon", 1e-5f)})},
                     {tensor_info("a", DType::Float, {"batch", 3, 16}), tensor_info("b", DType::Float, {"batch", 3, 16})},
                     {tensor_info("y", DType::Float, {"batch", 3, 16})}, {{"gamma", ramp({16}, 0.5f, 0.1f)}, {"beta", ramp({16}, -0.2f, 0.02f)}}),
               {{"", 17}});
}

}  // namespace

TEST_CASE("--forms cpu: a residual norm stays Add-free LayerNormalization, which ORT does not turn into SkipLayerNormalization") {
  const Model cpu = optimized(residual_norm(), {}, "", "cpu");
  CHECK(count_ops(cpu, "SkipLayerNormalization") == 0);
  CHECK(count_ops(cpu, "Add") == 0);
  CHECK(count_ops(cpu, "Sum") == 1);
  CHECK(count_ops(cpu, "LayerNormalization") == 1);
  const Model all = optimized(residual_norm(), {}, "", "all");
  CHECK(count_ops(all, "SkipLayerNormalization") == 1);
  // named by --only, the fusion runs whatever the forms
  CHECK(count_ops(optimized(residual_norm(), {"skip-layer-norm"}, "", "cpu"), "SkipLayerNormalization") == 1);
}

TEST_CASE("--forms cpu: GPT-2's attention is MultiHeadAttention on the projection, Attention only at a batch fixed at 1") {
  const Model cpu = optimized(testing::gpt2_attention_unfused(0), {}, "", "cpu");
  CHECK(count_ops(cpu, "Attention") == 0);
  CHECK(count_ops(cpu, "MultiHeadAttention") == 1);
  CHECK(count_ops(cpu, "MatMul") == 1);  // the projection stays outside, one product for q, k and v
  CHECK(count_ops(optimized(testing::gpt2_attention_unfused(0), {}, "", "all"), "Attention") == 1);

  Model one = testing::gpt2_attention_unfused(0);
  one.graph.inputs[0].type.dims[0] = Dim{1, ""};
  one.graph.outputs[0].type.dims[0] = Dim{1, ""};
  const Model cpu_one = optimized(one, {}, "", "cpu");
  CHECK(count_ops(cpu_one, "Attention") == 1);
  CHECK(count_ops(cpu_one, "MultiHeadAttention") == 0);
}
