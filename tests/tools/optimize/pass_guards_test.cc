// Refusals no model file reaches through `refeval optimize`, because an earlier pass rewrites the
// form first (the no-op rules), or the form needs what inference always gives a loaded model. Each
// pass runs alone here with --explain on a graph in memory, so the guard still says why.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "pass.h"
#include "refeval/model_io.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ramp;

namespace {

// The "not fused" lines of `pass` alone on `m`, with `inference` (optimize::infer(m) unless given).
std::string not_fused(Model m, const optimize::Pass& pass, const optimize::Inference& inference) {
  optimize::Explain explain;
  optimize::PassContext ctx{Registry::builtin(), &inference, &explain};
  pass.run(m, ctx);
  return testing::not_fused_lines(explain);
}

std::string not_fused(const Model& m, const optimize::Pass& pass) { return not_fused(m, pass, optimize::infer(m)); }

}  // namespace

TEST_CASE("rotary-embedding: a partial rotation of every column (rotary_pct = 1.0) is left to the no-op rules, explained") {
  // Concat(RotaryEmbedding(q[..., :8]), q[..., 8:]) with torch.split(q, [8, 0]): the whole
  // rotation plus an empty rest. The no-op rules reduce it to RotaryEmbedding(q) before this pass
  // runs in `refeval optimize`; alone, the pass refuses rotary_embedding_dim = h, which ORT's
  // RotaryEmbedding does not take (it must be less than the head size).
  const Model m = model(graph("partial",
                              {node("Split", {"q", "sizes"}, {"rot", "rest"}, {attr("axis", int64_t(-1))}, "/Split"),
                               node("RotaryEmbedding", {"rot", "position_ids", "cos", "sin"}, {"rotated"}, {}, "/RotaryEmbedding", "com.microsoft"),
                               node("Concat", {"rotated", "rest"}, {"y"}, {attr("axis", int64_t(-1))}, "/Concat")},
                              {f32("q", {1, 2, 3, 8}), tensor_info("position_ids", DType::Int64, {1, 3})}, {f32("y", {1, 2, 3, 8})},
                              {{"sizes", Tensor::from_vector<int64_t>({2}, {8, 0})}, {"cos", ramp({16, 4}, 0.9f, -0.01f)},
                               {"sin", ramp({16, 4}, 0.1f, 0.01f)}}),
                        {{"", 17}, {"com.microsoft", 1}});
  const std::string lines = not_fused(m, optimize::rotary_embedding_pass());
  CHECK(lines == "not fused: rotary-embedding at '/Concat': the partial rotation stays Slice + RotaryEmbedding + Concat: the rotated part has 8 "
                 "of 8 columns\n");
}

TEST_CASE("layer-norm: a LayerNorm decomposition over a value of unknown type is refused, named") {
  // x - mean, over the standard deviation, times gamma plus beta: everything fits but x's type,
  // which inference did not give (kept out of the inference here).
  const Model m = model(graph("ln",
                              {node("ReduceMean", {"x"}, {"mean"}, {attr("axes", std::vector<int64_t>{-1})}, "/ReduceMean"),
                               node("Sub", {"x", "mean"}, {"d"}, {}, "/Sub"), node("Pow", {"d", "two"}, {"sq"}, {}, "/Pow"),
                               node("ReduceMean", {"sq"}, {"var"}, {attr("axes", std::vector<int64_t>{-1})}, "/ReduceMean_1"),
                               node("Add", {"var", "eps"}, {"ve"}, {}, "/Add"), node("Sqrt", {"ve"}, {"std"}, {}, "/Sqrt"),
                               node("Div", {"d", "std"}, {"n"}, {}, "/Div"), node("Mul", {"n", "gamma"}, {"g"}, {}, "/Mul"),
                               node("Add", {"g", "beta"}, {"y"}, {}, "/Add_1")},
                              {f32("x", {2, 3, 8})}, {f32("y", {2, 3, 8})},
                              {{"two", Tensor::scalar<float>(2.0f)}, {"eps", Tensor::scalar<float>(1e-5f)}, {"gamma", ramp({8}, 0.9f, 0.01f)},
                               {"beta", ramp({8}, -0.1f, 0.01f)}}),
                        {{"", 17}});
  optimize::Inference inference = optimize::infer(m);
  REQUIRE(inference.types.erase("x") == 1);
  CHECK(not_fused(m, optimize::layer_norm_pass(), inference) ==
        "not fused: layer-norm at '/Sqrt': the element type of 'x' is not known\n");
  CHECK(not_fused(m, optimize::layer_norm_pass()).empty());  // with x's type it fuses
}

TEST_CASE("attention: keys rotated by a RotaryEmbedding without its caches are refused, named") {
  // Hugging Face Llama with the rotations fused, every pass but attention; then each
  // RotaryEmbedding loses its sin cache, as a hand-edited graph would.
  const Model llama = load_model(std::string(REFEVAL_SOURCE_DIR) + "/tests/data/optimize/hf_llama_opset17/model.onnx");
  optimize::OptimizeOptions o;
  o.disable = {"attention"};
  Model m = optimize::optimize(llama, Registry::builtin(), o).model;
  REQUIRE(count_ops(m, "RotaryEmbedding") == 4);
  CHECK(not_fused(m, optimize::attention_pass()).empty());  // both layers fuse as exported
  for (Node& n : m.graph.nodes)
    if (n.op_type == "RotaryEmbedding") n.inputs.resize(3);
  const std::string lines = not_fused(m, optimize::attention_pass());
  CHECK(lines.find("not fused: attention at '/layers.0/self_attn/Softmax': a RotaryEmbedding with too few inputs\n") != std::string::npos);
}

TEST_CASE("rotary-embedding: frequencies of another head size than the rotated value's are refused, named") {
  // HF >= 4.38's rotate-half with computed frequencies, but inv_freq has 2 values (a head of 4)
  // for a query of head size 8: cat(freqs, freqs) is 4 wide, so x * cos does not even broadcast.
  // The pass must not write RotaryEmbedding caches of the wrong width for it.
  auto ints = [](std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({int64_t(v.size())}, v); };
  const Model m = model(graph("rope",
                              {node("Unsqueeze", {"position_ids", "axis_1"}, {"pu"}), node("Cast", {"pu"}, {"pf"}, {attr("to", int64_t(DType::Float))}),
                               node("MatMul", {"inv_freq", "pf"}, {"f"}), node("Transpose", {"f"}, {"ft"}, {attr("perm", std::vector<int64_t>{0, 2, 1})}),
                               node("Concat", {"ft", "ft"}, {"emb"}, {attr("axis", int64_t(-1))}), node("Cos", {"emb"}, {"c"}),
                               node("Sin", {"emb"}, {"s"}), node("Unsqueeze", {"c", "axis_1"}, {"cos"}), node("Unsqueeze", {"s", "axis_1"}, {"sin"}),
                               node("Slice", {"q", "zero", "four", "last"}, {"x1"}), node("Slice", {"q", "four", "eight", "last"}, {"x2"}),
                               node("Neg", {"x2"}, {"neg"}, {}, "/Neg"), node("Concat", {"neg", "x1"}, {"rot"}, {attr("axis", int64_t(-1))}),
                               node("Mul", {"rot", "sin"}, {"rs"}), node("Mul", {"q", "cos"}, {"xc"}), node("Add", {"rs", "xc"}, {"y"})},
                              {f32("q", {1, 2, 3, 8}), tensor_info("position_ids", DType::Int64, {1, 3})}, {f32("y", {})},
                              {{"inv_freq", Tensor::from_vector<float>({1, 2, 1}, {1.0f, 0.01f})}, {"axis_1", ints({1})}, {"zero", ints({0})},
                               {"four", ints({4})}, {"eight", ints({8})}, {"last", ints({-1})}}),
                        {{"", 17}});
  CHECK(not_fused(m, optimize::rotary_embedding_pass()) ==
        "not fused: rotary-embedding at '/Neg': the frequencies 'inv_freq' have 2 values for 8 rotated columns\n");
}

TEST_CASE("attention: queries and keys split into other head sizes are refused, named") {
  // q split into 2 heads of 8 and k into 4 heads of 4, multiplied by a FusedMatMul with transB (as
  // the fused-matmul pass writes Q K^T): a graph ONNX Runtime rejects, which inference still
  // types, and `refeval optimize` reads without ONNX's checker.
  auto ints = [](std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({int64_t(v.size())}, v); };
  const std::vector<int64_t> to_heads = {0, 2, 1, 3};
  auto heads = [&](const std::string& w, const std::string& view, const std::string& out) {
    return std::vector<Node>{node("MatMul", {"x", w}, {out + "_proj"}), node("Reshape", {out + "_proj", view}, {out + "_view"}),
                             node("Transpose", {out + "_view"}, {out}, {attr("perm", to_heads)})};
  };
  std::vector<Node> nodes;
  for (const auto& [w, view, out] : {std::tuple{"wq", "heads_2x8", "q"}, {"wk", "heads_4x4", "k"}, {"wv", "heads_2x8", "v"}})
    for (Node& n : heads(w, view, out)) nodes.push_back(std::move(n));
  nodes.push_back(node("FusedMatMul", {"q", "k"}, {"scores"}, {attr("transB", int64_t(1)), attr("alpha", 0.35f)}, "/FusedMatMul", "com.microsoft"));
  nodes.push_back(node("Softmax", {"scores"}, {"probs"}, {attr("axis", int64_t(-1))}, "/attn/Softmax"));
  nodes.push_back(node("MatMul", {"probs", "v"}, {"context"}));
  nodes.push_back(node("Transpose", {"context"}, {"context_t"}, {attr("perm", to_heads)}));
  nodes.push_back(node("Reshape", {"context_t", "merged"}, {"y"}));
  const Model m = model(graph("attention", std::move(nodes), {f32("x", {1, 3, 16})}, {f32("y", {1, 3, 16})},
                              {{"wq", ramp({16, 16}, -0.2f, 0.02f)}, {"wk", ramp({16, 16}, 0.2f, -0.02f)}, {"wv", ramp({16, 16}, -0.1f, 0.01f)},
                               {"heads_2x8", ints({0, 0, 2, 8})}, {"heads_4x4", ints({0, 0, 4, 4})}, {"merged", ints({0, 0, 16})}}),
                        {{"", 17}, {"com.microsoft", 1}});
  CHECK(not_fused(m, optimize::attention_pass()) == "not fused: attention at '/attn/Softmax': Q and K have different head sizes\n");
}

TEST_CASE("attention: a second layer reading the values the first layer's attention took is refused, named") {
  // Values shared across layers (tests/data/optimize/make_lookalikes.py, att_values_shared_by_layers):
  // the first layer fuses; the second, in the same round, would need its nodes.
  const Model m = load_model(std::string(REFEVAL_SOURCE_DIR) + "/tests/data/optimize/lookalikes/att_values_shared_by_layers.onnx");
  CHECK(not_fused(m, optimize::attention_pass()) == "not fused: attention at '/Softmax_1': it shares nodes with another attention\n");
}

TEST_CASE("optimize --opset: a com.microsoft Gelu written at opset 17 stays when the model moves to opset 20, which has its own Gelu") {
  // The erf GELU x / 2 * (1 + erf(x / sqrt 2)) at opset 17, fused into com.microsoft's Gelu, then
  // --opset 20: only ai.onnx operators are checked for a change of version.
  const Model m = model(graph("gelu",
                              {node("Div", {"x", "sqrt2"}, {"d"}), node("Erf", {"d"}, {"e"}), node("Add", {"e", "one"}, {"e1"}), node("Mul", {"x", "e1"}, {"m"}),
                               node("Mul", {"m", "half"}, {"y"})},
                              {f32("x", {2, 16})}, {f32("y", {2, 16})},
                              {{"sqrt2", Tensor::scalar<float>(1.4142135f)}, {"one", Tensor::scalar<float>(1.0f)}, {"half", Tensor::scalar<float>(0.5f)}}),
                        {{"", 17}});
  optimize::OptimizeOptions o;
  o.opset = 20;
  const Model out = optimize::optimize(m, Registry::builtin(), o).model;
  CHECK(out.opsets.at("") == 20);
  REQUIRE(out.graph.nodes.size() == 1);
  CHECK(out.graph.nodes[0].op_type == "Gelu");
  CHECK(out.graph.nodes[0].domain == "com.microsoft");
}
