// Every built-in decomposition against the registry's kernel of the same operator (a passing
// check): refeval's standard kernels and its com.microsoft kernels (ops/contrib), which are
// written independently of these decompositions.
#include <limits>
#include <random>

#include "decompositions/decompositions.h"
#include "node_check.h"
#include "refeval/address.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::fusion;

namespace {

Tensor uniform(Shape shape, uint64_t seed, float lo = -2, float hi = 2) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(size_t(shape_size(shape)));
  for (float& x : v) x = lo + (hi - lo) * float(double(rng() >> 11) * 0x1.0p-53);
  return Tensor::from_vector<float>(std::move(shape), v);
}

template <class T>
Tensor values(Shape shape, std::vector<T> v) { return Tensor::from_vector<T>(std::move(shape), v); }

struct Case {
  const char* what;
  Node node;
  std::vector<std::pair<std::string, Tensor>> inputs;  // every non-empty node input, by name
  int64_t opset;
};

Model single_node_model(const Case& c) {
  std::vector<ValueInfo> inputs, outputs;
  for (const auto& [name, t] : c.inputs) {
    std::vector<DimSpec> dims(t.shape().begin(), t.shape().end());
    inputs.push_back(tensor_info(name, t.dtype(), dims));
  }
  for (const auto& o : c.node.outputs)
    if (!o.empty()) outputs.push_back(untyped_info(o));
  OpsetMap opsets{{"", c.node.domain.empty() ? c.opset : 21}};
  if (!c.node.domain.empty()) opsets[c.node.domain] = c.opset;
  return model(graph("g", {c.node}, inputs, outputs), opsets, 9);
}

std::map<std::string, Value> feeds_of(const Case& c) {
  std::map<std::string, Value> feeds;
  for (const auto& [name, t] : c.inputs) feeds[name] = t;
  return feeds;
}

void check_case(const Case& c) {
  const std::string what = c.what;
  CAPTURE(what);
  const Model m = single_node_model(c);
  REQUIRE(Registry::builtin().resolve(c.node.domain, c.node.op_type, c.opset));
  const FusionReport r = check_node(m, find_nodes(m.graph, "#0")[0], Registry::builtin(), feeds_of(c), {.repeat = 1});
  const SetResult* failure = r.first_failure();
  CHECK_MESSAGE(r.equivalent(), (failure ? failure->set + ": " + failure->outputs[0].reason : ""));
}

const char* const kMs = "com.microsoft";

}  // namespace

TEST_CASE("standard function operators match their decompositions") {
  const Tensor x = uniform({2, 3, 8}, 1), scale = uniform({8}, 2), bias = uniform({8}, 3);
  const Tensor img = uniform({2, 4, 3, 3}, 4);
  const Tensor cos = uniform({10, 4}, 5, -1, 1), sin = uniform({10, 4}, 6, -1, 1);
  const Tensor pos = values<int64_t>({1, 4}, {3, 0, 9, 5});
  for (const Case& c : std::vector<Case>{
           {"LayerNormalization", node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv_std"}, {attr("epsilon", 1e-3f)}),
            {{"x", x}, {"s", scale}, {"b", bias}}, 17},
           {"LayerNormalization axis 1", node("LayerNormalization", {"x", "s"}, {"y"}, {attr("axis", int64_t(1))}),
            {{"x", x}, {"s", uniform({3, 8}, 7)}}, 17},
           {"Gelu", node("Gelu", {"x"}, {"y"}), {{"x", x}}, 20},
           {"Gelu tanh", node("Gelu", {"x"}, {"y"}, {attr("approximate", "tanh")}), {{"x", x}}, 20},
           {"GroupNormalization-18", node("GroupNormalization", {"x", "s", "b"}, {"y"}, {attr("num_groups", int64_t(2))}),
            {{"x", img}, {"s", uniform({2}, 8)}, {"b", uniform({2}, 9)}}, 18},
           {"GroupNormalization-21", node("GroupNormalization", {"x", "s", "b"}, {"y"}, {attr("num_groups", int64_t(2))}),
            {{"x", img}, {"s", uniform({4}, 8)}, {"b", uniform({4}, 9)}}, 21},
           {"MeanVarianceNormalization", node("MeanVarianceNormalization", {"x"}, {"y"}), {{"x", img}}, 13},
           {"RMSNormalization", node("RMSNormalization", {"x", "s"}, {"y"}), {{"x", x}, {"s", scale}}, 23},
           {"RotaryEmbedding 4-D", node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"}),
            {{"x", uniform({1, 2, 4, 8}, 10)}, {"cos", cos}, {"sin", sin}, {"pos", pos}}, 23},
           {"RotaryEmbedding 3-D interleaved, partial", node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"},
                                                              {attr("interleaved", int64_t(1)), attr("num_heads", int64_t(2)),
                                                               attr("rotary_embedding_dim", int64_t(8))}),
            {{"x", uniform({1, 4, 24}, 11)}, {"cos", cos}, {"sin", sin}, {"pos", pos}}, 23},
       })
    check_case(c);
}

TEST_CASE("com.microsoft kernels match their decompositions") {
  const Tensor x = uniform({2, 3, 8}, 1), skip = uniform({2, 3, 8}, 12), gamma = uniform({8}, 2), beta = uniform({8}, 3);
  const Tensor hidden = uniform({2, 4, 8}, 13), weights = uniform({8, 24}, 14, -0.5f, 0.5f), qkv_bias = uniform({24}, 15);
  const Tensor mask = values<int32_t>({2, 6}, {1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0});
  const Tensor past = uniform({2, 2, 2, 2, 4}, 16);
  const Tensor ids = values<int32_t>({2, 3}, {0, 4, 2, 1, 1, 3});
  const Tensor cos = uniform({10, 2}, 5, -1, 1), sin = uniform({10, 2}, 6, -1, 1);
  const auto heads = attr("num_heads", int64_t(2));
  for (const Case& c : std::vector<Case>{
           {"LayerNormalization", node("LayerNormalization", {"x", "g", "b"}, {"y"}, {}, "", kMs), {{"x", x}, {"g", gamma}, {"b", beta}}, 1},
           {"SimplifiedLayerNormalization", node("SimplifiedLayerNormalization", {"x", "g"}, {"y", "inv"}, {}, "", kMs),
            {{"x", x}, {"g", gamma}}, 1},
           {"SkipLayerNormalization", node("SkipLayerNormalization", {"x", "s", "g", "b", "bias"}, {"y", "mean", "inv", "sum"}, {}, "", kMs),
            {{"x", x}, {"s", skip}, {"g", gamma}, {"b", beta}, {"bias", uniform({8}, 17)}}, 1},
           {"SkipSimplifiedLayerNormalization", node("SkipSimplifiedLayerNormalization", {"x", "s", "g"}, {"y", "", "inv", "sum"}, {}, "", kMs),
            {{"x", x}, {"s", skip}, {"g", gamma}}, 1},
           {"Gelu", node("Gelu", {"x"}, {"y"}, {}, "", kMs), {{"x", x}}, 1},
           {"BiasGelu", node("BiasGelu", {"x", "b"}, {"y"}, {}, "", kMs), {{"x", x}, {"b", beta}}, 1},
           {"FastGelu", node("FastGelu", {"x", "b"}, {"y"}, {}, "", kMs), {{"x", x}, {"b", beta}}, 1},
           {"QuickGelu", node("QuickGelu", {"x"}, {"y"}, {attr("alpha", 1.5f)}, "", kMs), {{"x", x}}, 1},
           // a float attribute an exporter wrote as an INT reads as that number, as the kernel reads it
           {"QuickGelu, alpha an INT", node("QuickGelu", {"x"}, {"y"}, {attr("alpha", int64_t(2))}, "", kMs), {{"x", x}}, 1},
           {"BiasAdd", node("BiasAdd", {"x", "b", "s"}, {"y"}, {}, "", kMs), {{"x", x}, {"b", beta}, {"s", skip}}, 1},
           {"FusedMatMul", node("FusedMatMul", {"a", "b"}, {"y"}, {attr("alpha", 0.5f), attr("transB", int64_t(1))}, "", kMs),
            {{"a", x}, {"b", uniform({2, 5, 8}, 18)}}, 1},
           {"Attention GPT-2 (past, causal, mask)",
            node("Attention", {"in", "w", "bias", "mask", "past"}, {"y", "present"}, {heads, attr("unidirectional", int64_t(1))}, "", kMs),
            {{"in", hidden}, {"w", weights}, {"bias", qkv_bias}, {"mask", mask}, {"past", past}}, 1},
           {"MultiHeadAttention", node("MultiHeadAttention", {"q", "k", "v", "bias", "mask"}, {"y"}, {heads}, "", kMs),
            {{"q", hidden}, {"k", uniform({2, 6, 8}, 19)}, {"v", uniform({2, 6, 8}, 20)}, {"bias", qkv_bias}, {"mask", mask}}, 1},
           {"EmbedLayerNormalization",
            node("EmbedLayerNormalization", {"ids", "seg", "word", "pos", "segemb", "g", "b", "m"}, {"y", "mask_index", "sum"}, {}, "", kMs),
            {{"ids", ids}, {"seg", values<int32_t>({2, 3}, {0, 0, 1, 0, 1, 1})}, {"word", uniform({5, 8}, 21)}, {"pos", uniform({4, 8}, 22)},
             {"segemb", uniform({2, 8}, 23)}, {"g", gamma}, {"b", beta}, {"m", values<int32_t>({2, 3}, {1, 1, 0, 1, 0, 0})}}, 1},
           {"RotaryEmbedding", node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {heads}, "", kMs),
            {{"x", x}, {"pos", values<int64_t>({2, 3}, {0, 1, 2, 7, 8, 9})}, {"cos", cos}, {"sin", sin}}, 1},
       })
    check_case(c);
}

TEST_CASE("every table entry is exercised by the tests above") {
  CHECK(decomposed_ops().size() == 21);
  const bool same_domain = find_decomposition("ai.onnx", "Gelu") == find_decomposition("", "Gelu");
  CHECK(same_domain);
  const bool none_for_relu = find_decomposition("", "Relu") == nullptr;
  CHECK(none_for_relu);
}

namespace {

// Runs a standard operator in place of a com.microsoft one of the same meaning, so the
// com.microsoft decompositions are also checked against refeval's standard kernels, a second
// opinion independent of the contrib kernels. The standard node reads the com.microsoft node's
// own value names.
using Translate = Node (*)(const Node& ms);

class Borrowed : public OpRun {
 public:
  Borrowed(const NodeContext& ctx, Translate translate)
      : names_(ctx.node().inputs), ev_(ReferenceEvaluator::from_node(translate(ctx.node()), {{"", 23}})) {
    for (const Attribute& a : ctx.node().attributes) ctx.ignore(a.name);
  }
  Values run(const Values& in, RunContext&) override {
    std::map<std::string, Value> feeds;
    for (size_t i = 0; i < names_.size(); ++i)
      if (!names_[i].empty()) feeds[names_[i]] = in[i];
    return ev_.run({}, feeds);
  }

 private:
  std::vector<std::string> names_;
  ReferenceEvaluator ev_;
};

void borrow(Registry& reg, const char* op_type, Translate translate) {
  reg.add(kMs, op_type, {1}, OpFactory{[translate](const NodeContext& ctx) -> std::unique_ptr<OpRun> {
                                         return std::make_unique<Borrowed>(ctx, translate);
                                       }, {}});
}

}  // namespace

TEST_CASE("com.microsoft decompositions agree with the standard operators of the same meaning") {
  Registry reg(&Registry::builtin(), "borrowed");
  borrow(reg, "Gelu", [](const Node& n) { return node("Gelu", n.inputs, n.outputs); });
  borrow(reg, "FastGelu", [](const Node& n) { return node("Gelu", n.inputs, n.outputs, {attr("approximate", "tanh")}); });
  borrow(reg, "LayerNormalization", [](const Node& n) { return node("LayerNormalization", n.inputs, n.outputs, n.attributes); });
  borrow(reg, "SimplifiedLayerNormalization", [](const Node& n) { return node("RMSNormalization", n.inputs, n.outputs, n.attributes); });
  borrow(reg, "RotaryEmbedding", [](const Node& n) {
    return node("RotaryEmbedding", {n.inputs[0], n.inputs[2], n.inputs[3], n.inputs[1]}, n.outputs, n.attributes);
  });
  borrow(reg, "MultiHeadAttention", [](const Node& n) {
    const int64_t heads = n.find_attribute("num_heads")->i;
    const Attribute* causal = n.find_attribute("unidirectional");
    return node("Attention", n.inputs, n.outputs,
                {attr("q_num_heads", heads), attr("kv_num_heads", heads), attr("is_causal", causal ? causal->i : int64_t(0))});
  });
  const Tensor x = uniform({2, 3, 8}, 1), gamma = uniform({8}, 2), beta = uniform({8}, 3);
  const Tensor q = uniform({2, 4, 8}, 13), k = uniform({2, 4, 8}, 19), v = uniform({2, 4, 8}, 20);
  const Tensor cos = uniform({10, 2}, 5, -1, 1), sin = uniform({10, 2}, 6, -1, 1);
  const auto heads = attr("num_heads", int64_t(2));
  for (const Case& c : std::vector<Case>{
           {"Gelu", node("Gelu", {"x"}, {"y"}, {}, "", kMs), {{"x", x}}, 1},
           {"FastGelu", node("FastGelu", {"x"}, {"y"}, {}, "", kMs), {{"x", x}}, 1},
           {"LayerNormalization", node("LayerNormalization", {"x", "g", "b"}, {"y", "mean", "inv"}, {attr("epsilon", 1e-3f)}, "", kMs),
            {{"x", x}, {"g", gamma}, {"b", beta}}, 1},
           {"SimplifiedLayerNormalization", node("SimplifiedLayerNormalization", {"x", "g"}, {"y"}, {}, "", kMs), {{"x", x}, {"g", gamma}}, 1},
           {"RotaryEmbedding", node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {heads}, "", kMs),
            {{"x", x}, {"pos", values<int64_t>({2, 3}, {0, 1, 2, 7, 8, 9})}, {"cos", cos}, {"sin", sin}}, 1},
           {"RotaryEmbedding interleaved", node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}, {heads, attr("interleaved", int64_t(1))}, "", kMs),
            {{"x", x}, {"pos", values<int64_t>({2, 3}, {4, 1, 2, 3, 3, 0})}, {"cos", cos}, {"sin", sin}}, 1},
           {"MultiHeadAttention", node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, {heads}, "", kMs), {{"q", q}, {"k", k}, {"v", v}}, 1},
           // ORT adds mask_filter_value (-10000 by default) to masked scores, ONNX's Attention masks with
           // -inf; they agree until scores reach 1e4 (the "large" set), so the filter is -inf here.
           {"MultiHeadAttention causal",
            node("MultiHeadAttention", {"q", "k", "v"}, {"y"},
                 {heads, attr("unidirectional", int64_t(1)), attr("mask_filter_value", -std::numeric_limits<float>::infinity())}, "", kMs),
            {{"q", q}, {"k", k}, {"v", v}}, 1},
       }) {
    const std::string what = c.what;
    CAPTURE(what);
    const Model m = single_node_model(c);
    const FusionReport r = check_node(m, find_nodes(m.graph, "#0")[0], reg, feeds_of(c), {.repeat = 1});
    const SetResult* failure = r.first_failure();
    CHECK_MESSAGE(r.equivalent(), (failure ? failure->set + ": " + failure->outputs[0].reason : ""));
  }
}
