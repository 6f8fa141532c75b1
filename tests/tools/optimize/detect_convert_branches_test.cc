// What `refeval optimize` reads of a whole model before the passes: the model type it detects
// (model_type.h) from ORT-fused operators, norms and inputs, with --model-type's mismatch warning;
// and the opset converter's adapters (opset_convert.h) on the operators and cases the other tests
// do not raise.
#include <doctest/doctest.h>

#include "graph_index.h"
#include "model_type.h"
#include "opset_convert.h"
#include "optimize_test_util.h"
#include "refeval/compute_vector.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::f32;
using refeval::testing::ramp;
using refeval::testing::converted;
using refeval::testing::to_standard;

namespace {

optimize::ModelKind kind_of(const Model& m) {
  const optimize::Inference inference = optimize::infer(m);
  return optimize::detect_model_kind(optimize::GraphIndex(m.graph, &inference));
}

// An ORT-optimized block: (Conv patches over a 4-D or 3-D input ->) a fused `attention` op over
// x, then `extra` nodes after it (a norm, an activation).
Model fused_block(const std::string& attention, std::vector<Attribute> attention_attrs, std::vector<Node> extra = {}, int conv_rank = 0) {
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<Initializer> inits = {{"w", ramp({8, 24}, -0.3f, 0.03f)}, {"b", ramp({24}, 0.0f, 0.01f)}, {"gamma", ramp({8}, 0.5f, 0.1f)}};
  if (conv_rank == 4) {
    inputs.push_back(f32("pixels", {1, 3, 4, 4}));
    inits.push_back({"patch", ramp({8, 3, 2, 2}, -0.2f, 0.02f)});
    nodes.push_back(node("Conv", {"pixels", "patch"}, {"p"}, {attr("strides", std::vector<int64_t>{2, 2})}));
    nodes.push_back(node("Reshape", {"p", "to_rows"}, {"pr"}));
    nodes.push_back(node("Transpose", {"pr"}, {"x"}, {attr("perm", std::vector<int64_t>{0, 2, 1})}));
    inits.push_back({"to_rows", Tensor::from_vector<int64_t>({3}, {1, 8, 4})});
  } else if (conv_rank == 3) {
    inputs.push_back(f32("frames", {1, 3, 8}));
    inits.push_back({"kernel", ramp({8, 3, 3}, -0.2f, 0.02f)});
    nodes.push_back(node("Conv", {"frames", "kernel"}, {"c"}, {attr("pads", std::vector<int64_t>{1, 1})}));
    nodes.push_back(node("Transpose", {"c"}, {"x"}, {attr("perm", std::vector<int64_t>{0, 2, 1})}));
  } else {
    inputs.push_back(f32("x", {1, 4, 8}));
  }
  if (attention == "GroupQueryAttention")
    nodes.push_back(node(attention, {"x", "x", "x"}, {"att"}, std::move(attention_attrs), "/Attention", "com.microsoft"));
  else
    nodes.push_back(node(attention, {"x", "w", "b"}, {"att"}, std::move(attention_attrs), "/Attention", "com.microsoft"));
  std::string last = "att";
  for (Node& n : extra) last = n.outputs[0], nodes.push_back(std::move(n));
  return model(graph("block", std::move(nodes), std::move(inputs), {f32(last, {})}, std::move(inits)), {{"", 17}, {"com.microsoft", 1}});
}

}  // namespace

TEST_CASE("model type: ORT-fused graphs read as bert, gpt2, llama, t5, vit, clip and whisper; a lone Softmax as nothing") {
  const std::vector<Attribute> heads = {attr("num_heads", int64_t(2))};
  std::vector<Attribute> causal = heads;
  causal.push_back(attr("unidirectional", int64_t(1)));
  const Node rms = node("SimplifiedLayerNormalization", {"att", "gamma"}, {"n"}, {}, "/norm");
  // CLIP's activation after the block: x * Sigmoid(1.702 x).
  auto quick_gelu = [] {
    return std::vector<Node>{node("Mul", {"att", "k1702"}, {"scaled"}), node("Sigmoid", {"scaled"}, {"gate"}), node("Mul", {"att", "gate"}, {"act"})};
  };
  struct Case {
    const char* what;
    Model m;
    const char* type;
    const char* family;
  };
  Model clip = fused_block("Attention", heads, quick_gelu(), 4);
  clip.graph.initializers.push_back({"k1702", Tensor::scalar<float>(1.702f)});
  Model clip_text = fused_block("Attention", causal, quick_gelu());
  clip_text.graph.initializers.push_back({"k1702", Tensor::scalar<float>(1.702f)});
  std::vector<Case> cases;
  cases.push_back({"bidirectional Attention", fused_block("Attention", heads), "bert", "encoder"});
  cases.push_back({"unidirectional Attention", fused_block("Attention", causal), "gpt2", "decoder"});
  cases.push_back({"GroupQueryAttention and RMS norm", fused_block("GroupQueryAttention", heads, {rms}), "llama", "decoder"});
  cases.push_back({"bidirectional Attention with RMS norm", fused_block("Attention", heads, {rms}), "t5", "encoder"});
  cases.push_back({"patches and bidirectional Attention", fused_block("Attention", heads, {}, 4), "vit", "vision"});
  cases.push_back({"patches, Attention, QuickGelu", std::move(clip), "clip", "vision"});
  cases.push_back({"causal Attention and QuickGelu (CLIP's text tower)", std::move(clip_text), "clip", "decoder"});
  cases.push_back({"audio frames and Attention", fused_block("Attention", heads, {}, 3), "whisper", "encoder"});
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const optimize::ModelKind k = kind_of(c.m);
    CHECK(k.type == c.type);
    CHECK(k.family == c.family);
  }
  // x * Sigmoid(2 x): not CLIP's constant; a ViT.
  Model not_quick = fused_block("Attention", heads, quick_gelu(), 4);
  not_quick.graph.initializers.push_back({"k1702", Tensor::scalar<float>(2.0f)});
  CHECK(kind_of(not_quick).type == "vit");
  // One Softmax that is no attention (a classifier head).
  const Model softmax = model(graph("cls", {node("Softmax", {"x"}, {"y"}, {attr("axis", int64_t(-1))})}, {f32("x", {1, 10})}, {f32("y", {1, 10})}));
  const optimize::ModelKind none = kind_of(softmax);
  CHECK(none.type.empty());
  CHECK(none.reason == "1 Softmax node, none read as attention");
}

TEST_CASE("model type: a mean of squares is an RMS norm unless its input is centred, through a Cast or not") {
  // ReduceMean(Pow(Cast(x - mean), 2)): LayerNorm's variance in float32 of a float16 x (not RMS);
  // ReduceMean(Pow(Cast(x), 2)): Llama's RMS in float32 (RMS); with a fused Attention to read.
  auto norm = [](bool centred) {
    std::vector<Node> extra;
    std::string v = "att";
    if (centred) extra.push_back(node("ReduceMean", {"att"}, {"mu"}, {attr("axes", std::vector<int64_t>{-1})})), extra.push_back(node("Sub", {"att", "mu"}, {"d"})), v = "d";
    extra.push_back(node("Cast", {v}, {"c"}, {attr("to", int64_t(DType::Float))}));
    extra.push_back(node("Pow", {"c", "two"}, {"sq"}));
    extra.push_back(node("ReduceMean", {"sq"}, {"var"}, {attr("axes", std::vector<int64_t>{-1})}));
    Model m = fused_block("Attention", {attr("num_heads", int64_t(2))}, std::move(extra));
    m.graph.initializers.push_back({"two", Tensor::scalar<float>(2.0f)});
    return m;
  };
  CHECK(kind_of(norm(true)).type == "bert");
  CHECK(kind_of(norm(false)).type == "t5");
}

TEST_CASE("model type: --model-type fits its own family, an encoder-decoder's encoder, and vit/clip either way; otherwise a warning") {
  auto found = [](const char* type, const char* family) { return optimize::ModelKind{type, family, "what the graph shows"}; };
  CHECK(optimize::type_mismatch("bart", found("bert", "encoder")).empty());     // BART's encoder alone
  CHECK(optimize::type_mismatch("bert", found("t5", "encoder-decoder")).empty());  // T5's encoder named BERT
  CHECK(optimize::type_mismatch("vit", found("clip", "decoder")).empty());      // CLIP's text tower for a ViT-named CLIP
  CHECK(optimize::type_mismatch("clip", found("vit", "vision")).empty());
  CHECK(optimize::type_mismatch("gpt2", found("llama", "decoder")).empty());    // the same family
  CHECK(optimize::type_mismatch("llama", found("", "")).empty());               // nothing found
  CHECK(optimize::type_mismatch("", found("bert", "encoder")).empty());
  CHECK(optimize::type_mismatch("gpt2", found("bert", "encoder")) ==
        "--model-type gpt2, but the graph shows bert (encoder: what the graph shows); every fusion the graph allows is applied");
  CHECK_FALSE(optimize::type_mismatch("bert", found("whisper", "encoder-decoder")).empty());
  CHECK_FALSE(optimize::type_mismatch("vit", found("gpt2", "decoder")).empty());
}

// ---------------------------------------------------------------------------------------------
// convert_opset

TEST_CASE("convert_opset: inference BatchNormalization, RoiAlign's old coordinates, GridSample's renamed modes") {
  // BatchNormalization-9 with one output (model.eval()), raised across 14: unchanged.
  const Model bn = model(graph("bn", {node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {}, "bn")}, {f32("x", {1, 2, 3})}, {f32("y", {1, 2, 3})},
                               {{"s", ramp({2}, 1, 0.1f)}, {"b", ramp({2}, 0, 0.1f)}, {"m", ramp({2}, 0, 0.1f)}, {"v", ramp({2}, 1, 0.1f)}}),
                         {{"", 13}});
  CHECK(converted(bn, 23).graph.nodes[0].attributes.empty());
  // RoiAlign-10 computed output_half_pixel; 16 defaults to half_pixel, so the old one is written.
  const Model roi = model(graph("roi", {node("RoiAlign", {"x", "rois", "idx"}, {"y"}, {attr("output_height", int64_t(2)), attr("output_width", int64_t(2))})},
                                {f32("x", {1, 1, 4, 4})}, {f32("y", {1, 1, 2, 2})},
                                {{"rois", Tensor::from_vector<float>({1, 4}, {0, 0, 3, 3})}, {"idx", Tensor::from_vector<int64_t>({1}, {0})}}),
                          {{"", 13}});
  const Model roi16 = converted(roi, 16);
  const Attribute* mode = roi16.graph.nodes[0].find_attribute("coordinate_transformation_mode");
  REQUIRE(mode != nullptr);
  CHECK(mode->s == "output_half_pixel");
  // GridSample-16's bilinear and bicubic are 20's linear and cubic; nearest keeps its name.
  for (const auto& [before, after] : {std::pair{"bilinear", "linear"}, std::pair{"bicubic", "cubic"}, std::pair{"nearest", "nearest"}}) {
    const std::string mode = before;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(mode);
    const Model gs = model(graph("gs", {node("GridSample", {"x", "grid"}, {"y"}, {attr("mode", before), attr("align_corners", int64_t(1))})}, {f32("x", {1, 1, 4, 4})},
                                 {f32("y", {1, 1, 2, 2})}, {{"grid", ramp({1, 2, 2, 2}, -0.8f, 0.2f)}}),
                           {{"", 16}});
    CHECK(converted(gs, 20).graph.nodes[0].find_attribute("mode")->s == after);
  }
}

TEST_CASE("convert_opset: an empty axes list, a list of graphs, and the opsets it cannot convert between") {
  // ReduceMean with axes = [] (an exporter writing the default explicitly): every axis, as before.
  const Model empty_axes = model(graph("r", {node("ReduceMean", {"x"}, {"y"}, {attr("axes", std::vector<int64_t>{})})}, {f32("x", {2, 3})}, {f32("y", {1, 1})}),
                                 {{"", 13}});
  const Model r18 = converted(empty_axes, 18);
  CHECK(r18.graph.nodes[0].inputs.size() == 1);
  CHECK(r18.graph.nodes[0].find_attribute("axes") == nullptr);
  // A custom node with a list of graphs (ONNX's GRAPHS attribute): each body converted too.
  Model custom = model(graph("c", {node("Bodies", {"x"}, {"y"}, {}, "bodies", "my.domain")}, {f32("x", {2, 3})}, {f32("y", {})}), {{"", 13}, {"my.domain", 1}});
  Attribute bodies;
  bodies.name = "bodies";
  bodies.type = AttrType::Graphs;
  bodies.graphs.push_back(std::make_shared<Graph>(
      graph("b0", {node("ReduceMean", {"x"}, {"r"}, {attr("axes", std::vector<int64_t>{1})})}, {}, {f32("r", {2, 1})})));
  bodies.graphs.push_back(nullptr);
  custom.graph.nodes[0].attributes.push_back(bodies);
  Model custom18 = converted(custom, 18, false);
  CHECK(custom18.graph.nodes[0].attributes[0].graphs[0]->nodes[0].inputs.size() == 2);
  // Gelu did not exist at 13: the model could not have used it.
  Model gelu = model(graph("g", {node("Gelu", {"x"}, {"y"}, {}, "gelu")}, {f32("x", {2})}, {f32("y", {2})}), {{"", 13}});
  CHECK_THROWS_WITH_AS(optimize::convert_opset(gelu, Registry::builtin(), 23),
                       "cannot raise node 'gelu' (Gelu) from opset 13 to 23: no registration of Gelu at opset 13", Error);
  // Lowering, and a model that imports no ai.onnx opset at all.
  Model relu = model(graph("r", {node("Relu", {"x"}, {"y"})}, {f32("x", {2})}, {f32("y", {2})}), {{"", 17}});
  CHECK_THROWS_WITH_AS(optimize::convert_opset(relu, Registry::builtin(), 15), "cannot lower a model from ai.onnx opset 17 to 15", Error);
  Model no_onnx = model(graph("r", {}, {f32("x", {2})}, {f32("x", {2})}), {{"my.domain", 1}});
  CHECK_THROWS_WITH_AS(optimize::convert_opset(no_onnx, Registry::builtin(), 23), doctest::Contains("from ai.onnx opset 0"), Error);
  // The same opset: nothing to do.
  CHECK(converted(relu, 17).graph.nodes[0].op_type == "Relu");
}

// ---------------------------------------------------------------------------------------------
// --target onnx (passes/standard_ops.cc): forms the standard-ops tests do not write

namespace {

// Rewritten without a refusal and equivalent to the original (float16 rounds: 1e-3).
Model standard(const Model& m, double atol = 1e-5) {
  auto [out, why] = to_standard(m);
  CHECK(why.empty());
  for (const Node& n : out.graph.nodes) CHECK_MESSAGE(n.domain.empty(), n.describe());
  fusion::CheckOptions check;
  check.repeat = 1;
  check.tolerance.atol = atol;
  check.tolerance.rtol = atol;
  check.sets.edge_cases = false;
  std::map<std::string, Value> feeds = testing::ramp_feeds(m);  // float32; float16 inputs get the same values rounded
  for (const ValueInfo* in : m.graph.feed_inputs())
    if (in->type.dtype == DType::Float16) feeds[in->name] = from_doubles(DType::Float16, feeds[in->name].tensor().shape(), to_doubles(feeds[in->name].tensor()));
  CHECK_MESSAGE(optimize::verify(m, out, Registry::builtin(), feeds, check).equivalent(), "the standard model differs");
  return out;
}

Model ms_one(Node n, std::vector<ValueInfo> inputs, std::vector<ValueInfo> outputs, std::vector<Initializer> inits = {}) {
  n.domain = "com.microsoft";
  n.name = n.op_type;
  return model(graph("g", {std::move(n)}, std::move(inputs), std::move(outputs), std::move(inits)), {{"", 17}, {"com.microsoft", 1}});
}

}  // namespace

TEST_CASE("standard-ops: float16 QuickGelu and FusedMatMul scale in the input's type; a vector operand's transpose is itself") {
  // CLIP exported in float16: the alpha constant is cast like x (CastLike), not float.
  const ValueInfo h = tensor_info("x", DType::Float16, {"batch", 3, 8});
  const Model quick = standard(ms_one(node("QuickGelu", {"x"}, {"y"}, {attr("alpha", 1.702f)}), {h}, {tensor_info("y", DType::Float16, {"batch", 3, 8})}), 2e-3);
  CHECK(testing::count_ops(quick, "CastLike") == 1);
  const Model fm = standard(ms_one(node("FusedMatMul", {"x", "w"}, {"y"}, {attr("alpha", 0.5f)}), {h, tensor_info("w", DType::Float16, {8, 4})},
                                   {tensor_info("y", DType::Float16, {"batch", 3, 4})}),
                            2e-3);
  CHECK(testing::count_ops(fm, "CastLike") == 1);
  // FusedMatMul(a, v, transB = 1) with v a vector: no Transpose.
  const Model vec = standard(ms_one(node("FusedMatMul", {"a", "v"}, {"y"}, {attr("transB", int64_t(1))}), {f32("a", {2, 3, 4}), f32("v", {4})}, {f32("y", {2, 3})}));
  CHECK(testing::count_ops(vec, "Transpose") == 0);
  CHECK(testing::count_ops(vec, "MatMul") == 1);
}

TEST_CASE("standard-ops: ORT's com.microsoft LayerNormalization becomes ONNX's as it is") {
  const Model m = ms_one(node("LayerNormalization", {"x", "gamma", "beta"}, {"y"}, {attr("epsilon", 1e-6f), attr("axis", int64_t(-1))}), {f32("x", {2, 3, 8})},
                         {f32("y", {2, 3, 8})}, {{"gamma", ramp({8}, 0.5f, 0.1f)}, {"beta", ramp({8}, -0.2f, 0.05f)}});
  auto [out, why] = to_standard(m);
  CHECK(why.empty());
  REQUIRE(out.graph.nodes.size() == 1);
  CHECK(out.graph.nodes[0].op_type == "LayerNormalization");
  CHECK(out.graph.nodes[0].domain.empty());
  CHECK(out.graph.nodes[0].find_attribute("epsilon")->f == doctest::Approx(1e-6f));
  CHECK(out.opsets.count("com.microsoft") == 0);
}

TEST_CASE("standard-ops: a transposed operand of unknown rank, a rotation of unknown width and ORT's (B, 1) dummy mask are refused") {
  // transA over an input of unknown rank.
  const auto [unknown, why_rank] = to_standard(ms_one(node("FusedMatMul", {"a", "w"}, {"y"}, {attr("transA", int64_t(1))}),
                                                      {tensor_info_unknown_rank("a", DType::Float)}, {f32("y", {})}, {{"w", ramp({8, 4}, 0, 0.1f)}}));
  CHECK(why_rank.find("transA is set and the rank of 'a' is unknown") != std::string::npos);
  // 3-D RotaryEmbedding without num_heads, of a symbolic hidden size.
  const auto [rope, why_rope] = to_standard(ms_one(node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}),
                                                   {f32("x", {"batch", "seq", "hidden"}), tensor_info("pos", DType::Int64, {"batch", "seq"})}, {f32("y", {})},
                                                   {{"cos", ramp({16, 4}, 0.9f, -0.01f)}, {"sin", ramp({16, 4}, 0.1f, 0.01f)}}));
  CHECK(why_rope.find("num_heads is not given and the input's hidden size or the cache width is unknown") != std::string::npos);
  // MultiHeadAttention with a (B, 1) key padding mask (ORT's placeholder).
  const auto [mha, why_mask] = to_standard(ms_one(node("MultiHeadAttention", {"q", "k", "v", "", "mask"}, {"y"}, {attr("num_heads", int64_t(2))}),
                                                  {f32("q", {"batch", 3, 8}), f32("k", {"batch", 3, 8}), f32("v", {"batch", 3, 8}),
                                                   tensor_info("mask", DType::Int32, {"batch", 1})},
                                                  {f32("y", {"batch", 3, 8})}));
  CHECK(why_mask.find("key_padding_mask 'mask' has shape (B, 1), ORT's dummy mask") != std::string::npos);
}
