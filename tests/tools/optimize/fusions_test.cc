// Each fusion on the pattern it replaces and on near misses that must stay as they are; every
// result is checked against the original with the evaluator (optimize_test_util.h).
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "tools/fusion/fusion_models.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::ramp;
using refeval::testing::optimized;

namespace {

Initializer scalar(const std::string& name, float v) { return {name, Tensor::scalar<float>(v)}; }

}  // namespace

TEST_CASE("fast-gelu: GPT-2's tanh GELU becomes one FastGelu; another coefficient or an exposed tanh does not") {
  const Model fused = optimized(testing::fast_gelu_unfused(0.044715f), {"fast-gelu"});
  CHECK(count_ops(fused, "FastGelu") == 1);
  CHECK(fused.graph.nodes.size() == 1);
  CHECK(fused.opsets.at("com.microsoft") == 1);
  CHECK(count_ops(optimized(testing::fast_gelu_unfused(0.05f), {"fast-gelu"}), "FastGelu") == 0);
  CHECK(count_ops(optimized(testing::fast_gelu_unfused(0.044715f, true), {"fast-gelu"}), "FastGelu") == 0);
  CHECK(count_ops(optimized(testing::fast_gelu_unfused(0.05f)), "Tanh") == 1);  // every pass: still the original chain
}

TEST_CASE("gelu: the erf form becomes com.microsoft Gelu") {
  const Model fused = optimized(testing::gelu_erf_unfused(), {"gelu"});
  CHECK(count_ops(fused, "Gelu") == 1);
  CHECK(fused.graph.nodes.size() == 1);
}

TEST_CASE("layer-norm: the decomposition fuses; epsilon outside the square root or a first-axis mean does not") {
  const Model fused = optimized(testing::layer_norm_unfused(false), {"layer-norm"});
  REQUIRE(fused.graph.nodes.size() == 1);
  CHECK(fused.graph.nodes[0].op_type == "LayerNormalization");
  CHECK(fused.graph.nodes[0].find_attribute("epsilon")->f == doctest::Approx(1e-5f));
  CHECK(count_ops(optimized(testing::layer_norm_unfused(true)), "LayerNormalization") == 0);
  Model first_axis = testing::layer_norm_unfused(false);
  for (Initializer& i : first_axis.graph.initializers)
    if (i.name == "axes") i.value = Tensor::from_vector<int64_t>({1}, {0});
  CHECK(count_ops(optimized(first_axis), "LayerNormalization") == 0);
}

TEST_CASE("skip-layer-norm: a residual Add and LayerNormalization, or a constant skip; the sum stays an output when read again") {
  auto ln_model = [](bool residual_used, bool constant_skip) {
    std::vector<Node> nodes = {node("Add", {"a", constant_skip ? "c" : "b"}, {"sum"}),
                               node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}, {attr("epsilon", 1e-5f)})};
    std::vector<ValueInfo> outputs = {tensor_info("y", DType::Float, {"batch", 3, 16})};
    if (residual_used) nodes.push_back(node("Neg", {"sum"}, {"n"})), outputs.push_back(tensor_info("n", DType::Float, {"batch", 3, 16}));
    return model(graph("skip", nodes, {tensor_info("a", DType::Float, {"batch", 3, 16}), tensor_info("b", DType::Float, {"batch", 3, 16})},
                       outputs, {{"gamma", ramp({16}, 0.5f, 0.1f)}, {"beta", ramp({16}, -0.2f, 0.02f)}, {"c", ramp({3, 16}, 0, 0.1f)}}),
                 {{"", 17}});
  };
  const Model plain = optimized(ln_model(false, false), {"skip-layer-norm"});
  REQUIRE(count_ops(plain, "SkipLayerNormalization") == 1);
  CHECK(plain.graph.nodes[0].outputs.size() == 1);
  const Model residual = optimized(ln_model(true, false), {"skip-layer-norm"});
  REQUIRE(count_ops(residual, "SkipLayerNormalization") == 1);
  CHECK(residual.graph.nodes[0].outputs == std::vector<std::string>{"y", "", "", "sum"});
  // A constant (S, H) skip (position embeddings folded for fixed shapes) is a skip too.
  CHECK(count_ops(optimized(ln_model(false, true), {"skip-layer-norm"}), "SkipLayerNormalization") == 1);
}

TEST_CASE("attention: GPT-2's causal self-attention becomes one Attention; a mask off by one does not") {
  const Model fused = optimized(testing::gpt2_attention_unfused(0));
  REQUIRE(count_ops(fused, "Attention") == 1);
  CHECK(count_ops(fused, "Softmax") == 0);
  const Node& att = *std::find_if(fused.graph.nodes.begin(), fused.graph.nodes.end(), [](const Node& n) { return n.op_type == "Attention"; });
  CHECK(att.find_attribute("num_heads")->i == 2);
  CHECK(att.find_attribute("unidirectional")->i == 1);
  CHECK(att.find_attribute("scale") == nullptr);  // the divisor was sqrt(head size)
  CHECK(fused.graph.nodes.size() == 1);
  // The fused node's provenance: the 16 nodes of the pattern, by name, in the metadata.
  const auto provenance = std::find_if(fused.metadata.begin(), fused.metadata.end(),
                                       [&](const auto& kv) { return kv.first == std::string(optimize::kFusedFromKey) + att.name; });
  REQUIRE(provenance != fused.metadata.end());
  CHECK(std::count(provenance->second.begin(), provenance->second.end(), ',') == 15);
  const Model shifted = optimized(testing::gpt2_attention_unfused(1));
  CHECK(count_ops(shifted, "Attention") == 0);
  CHECK(count_ops(shifted, "Softmax") == 1);
}

TEST_CASE("bias-gelu and fused-matmul: the bias add and a transposed operand are absorbed") {
  const Model m = model(graph("mlp",
                              {node("Transpose", {"W"}, {"Wt"}, {attr("perm", std::vector<int64_t>{1, 0})}), node("MatMul", {"x", "Wt"}, {"mm"}),
                               node("Add", {"mm", "bias"}, {"pre"}), node("FastGelu", {"pre"}, {"y"}, {}, "", "com.microsoft")},
                              {tensor_info("x", DType::Float, {2, 3, 4})}, {tensor_info("y", DType::Float, {2, 3, 5})},
                              {{"W", ramp({5, 4}, -0.5f, 0.05f)}, {"bias", ramp({5}, -0.1f, 0.05f)}}),
                        {{"", 17}, {"com.microsoft", 1}});
  const Model fused = optimized(m, {"bias-gelu", "fused-matmul"});
  REQUIRE(fused.graph.nodes.size() == 2);
  CHECK(fused.graph.nodes[0].op_type == "FusedMatMul");
  CHECK(fused.graph.nodes[0].find_attribute("transB")->i == 1);
  CHECK(fused.graph.nodes[1].op_type == "FastGelu");
  CHECK(fused.graph.nodes[1].inputs.size() == 2);
}

TEST_CASE("basic: Identity removed, constants folded, common subexpressions merged, dead nodes dropped") {
  const Model m = model(graph("basic",
                              {node("Identity", {"x"}, {"xi"}), node("Constant", {}, {"two"}, {attr("value", Tensor::scalar<float>(2))}),
                               node("Mul", {"two", "three"}, {"six"}), node("Add", {"xi", "six"}, {"a"}), node("Add", {"xi", "six"}, {"b"}),
                               node("Mul", {"a", "b"}, {"y"}), node("Neg", {"x"}, {"unused"})},
                              {tensor_info("x", DType::Float, {4})}, {tensor_info("y", DType::Float, {4})}, {scalar("three", 3)}));
  const Model out = optimized(m);
  CHECK(out.graph.nodes.size() == 2);  // Add(x, 6) once, then Mul
  CHECK(count_ops(out, "Identity") == 0);
  CHECK(count_ops(out, "Neg") == 0);
  CHECK(out.graph.find_initializer("six") != nullptr);
}

TEST_CASE("conv-bn: an inference BatchNormalization folds into the Conv's weights") {
  const Model m = model(graph("cbn",
                              {node("Conv", {"x", "w", "b"}, {"c"}, {attr("kernel_shape", std::vector<int64_t>{3, 3})}),
                               node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, {attr("epsilon", 1e-5f)})},
                              {tensor_info("x", DType::Float, {1, 2, 5, 5})}, {tensor_info("y", DType::Float, {1, 3, 3, 3})},
                              {{"w", ramp({3, 2, 3, 3}, -0.4f, 0.04f)}, {"b", ramp({3}, 0.1f, 0.1f)}, {"scale", ramp({3}, 0.5f, 0.3f)},
                               {"shift", ramp({3}, -0.2f, 0.2f)}, {"mean", ramp({3}, 0.05f, 0.1f)}, {"var", ramp({3}, 0.5f, 0.25f)}}));
  const Model out = optimized(m, {"conv-bn"});
  CHECK(out.graph.nodes.size() == 1);
  CHECK(count_ops(out, "Conv") == 1);
}

TEST_CASE("optimize: unknown passes, levels and model types are usage errors") {
  CHECK_THROWS_WITH_AS(optimize::parse_level("max"), doctest::Contains("not basic, extended or all"), Error);
  optimize::OptimizeOptions o;
  o.only = {"fast-gelu", "warp-drive"};
  CHECK_THROWS_WITH_AS(optimize::optimize(testing::fast_gelu_unfused(0.044715f), Registry::builtin(), o), doctest::Contains("unknown pass 'warp-drive'"), Error);
  o.only.clear();
  o.model_type = "resnet";
  CHECK_THROWS_WITH_AS(optimize::optimize(testing::fast_gelu_unfused(0.044715f), Registry::builtin(), o),
                       doctest::Contains("'resnet' is not one of bert, vit, clip, t5, bart, whisper, gpt2, llama"), Error);
  o.model_type = "";
  o.target = "tensorrt";
  CHECK_THROWS_WITH_AS(optimize::optimize(testing::fast_gelu_unfused(0.044715f), Registry::builtin(), o), doctest::Contains("not ort or onnx"), Error);
}
