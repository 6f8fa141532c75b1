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
  // the projection stays outside, as the three products ORT's kernel reads (its bias inside)
  CHECK(count_ops(cpu, "MatMul") == 3);
  CHECK(count_ops(optimized(testing::gpt2_attention_unfused(0), {}, "", "all"), "Attention") == 1);

  Model one = testing::gpt2_attention_unfused(0);
  one.graph.inputs[0].type.dims[0] = Dim{1, ""};
  one.graph.outputs[0].type.dims[0] = Dim{1, ""};
  const Model cpu_one = optimized(one, {}, "", "cpu");
  CHECK(count_ops(cpu_one, "Attention") == 1);
  CHECK(count_ops(cpu_one, "MultiHeadAttention") == 0);
}

namespace {

// MultiHeadAttention (2 heads of 4) on q, k and v cut from one (B, S, 8) x (8, 24) product plus a
// bias by `cut`: "slice" (three Slices of the last axis, as nn.MultiheadAttention's in_proj),
// "split" (one Split, as ORT writes those Slices) or "separate" (three biased products, BERT's).
// `read_elsewhere` also makes the packed product a graph output.
Model attention_on_projections(const std::string& cut, bool read_elsewhere = false) {
  std::vector<Node> nodes;
  std::map<std::string, Tensor> weights = {{"w", ramp({8, 24}, -0.3f, 0.03f)}, {"b", ramp({24}, 0.1f, -0.01f)}};
  std::vector<ValueInfo> outputs = {tensor_info("y", DType::Float, {"batch", "seq", 8})};
  if (cut == "separate") {
    for (const std::string p : {"q", "k", "v"}) {
      weights["w_" + p] = ramp({8, 8}, p == "k" ? 0.2f : -0.25f, p == "v" ? 0.05f : 0.02f);
      weights["b_" + p] = ramp({8}, p == "q" ? 0.3f : -0.1f, 0.04f);
      nodes.push_back(node("MatMul", {"x", "w_" + p}, {p + "_rows"}));
      nodes.push_back(node("Add", {"b_" + p, p + "_rows"}, {p}));
    }
  } else {
    nodes.push_back(node("MatMul", {"x", "w"}, {"rows"}));
    nodes.push_back(node("Add", {"rows", "b"}, {"packed"}));
    weights["axes"] = Tensor::from_vector<int64_t>({1}, {-1});
    if (cut == "split") {
      weights["sizes"] = Tensor::from_vector<int64_t>({3}, {8, 8, 8});
      nodes.push_back(node("Split", {"packed", "sizes"}, {"q", "k", "v"}, {attr("axis", int64_t(-1))}));
    } else {
      for (int p = 0; p < 3; ++p) {
        const std::string s = std::string(1, "qkv"[p]);
        weights["start_" + s] = Tensor::from_vector<int64_t>({1}, {8 * p});
        weights["end_" + s] = Tensor::from_vector<int64_t>({1}, {8 * p + 8});
        nodes.push_back(node("Slice", {"packed", "start_" + s, "end_" + s, "axes"}, {s}));
      }
    }
    if (read_elsewhere) outputs.push_back(tensor_info("packed", DType::Float, {"batch", "seq", 24}));
  }
  nodes.push_back(node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, {attr("num_heads", int64_t(2))}, "attention", "com.microsoft"));
  std::vector<Initializer> initializers;
  for (const auto& [name, value] : weights) initializers.push_back({name, value});
  return model(graph("projections", nodes, {tensor_info("x", DType::Float, {"batch", "seq", 8})}, outputs, initializers),
               {{"", 17}, {"com.microsoft", 1}});
}

std::string projection_refusals(const Model& m) { return testing::refusals(m, {"mha-projections"}); }

}  // namespace

TEST_CASE("--forms cpu: MultiHeadAttention reads three products, their biases in its bias input") {
  // ORT's CPU kernel takes no packed q/k/v and adds its bias while it reorders the heads: the
  // Slices or Split of a packed product (a copy) and the bias Adds (a pass each) go.
  for (const std::string cut : {"slice", "split", "separate"}) {
    CAPTURE(cut);
    const Model m = attention_on_projections(cut);
    const Model cpu = optimized(m, {"mha-projections"}, "", "cpu");
    CHECK(count_ops(cpu, "MatMul") == 3);
    CHECK(count_ops(cpu, "Add") == 0);
    CHECK(count_ops(cpu, "Slice") + count_ops(cpu, "Split") == 0);
    const Node& mha = cpu.graph.nodes.back();
    REQUIRE(mha.op_type == "MultiHeadAttention");
    REQUIRE(mha.inputs.size() > 3);
    const Initializer* bias = nullptr;
    for (const Initializer& i : cpu.graph.initializers) bias = i.name == mha.inputs[3] ? &i : bias;
    REQUIRE(bias);
    CHECK(bias->value.shape() == Shape{24});
    // --forms all leaves ORT's kernels to choose: the graph stays as it was
    CHECK(count_ops(optimized(m, {"mha-projections"}, "", "all"), "MatMul") == count_ops(m, "MatMul"));
  }
}

TEST_CASE("--forms cpu: a projection MultiHeadAttention does not read alone stays, and --explain says why") {
  // the packed product is also a graph output: cutting it would compute it twice
  const Model shared = attention_on_projections("slice", true);
  CHECK(count_ops(optimized(shared, {"mha-projections"}, "", "cpu"), "Slice") == 3);
  CHECK(projection_refusals(shared).find("'packed' is also read outside the attention's projections") != std::string::npos);

  // q is the input itself, not a product
  Model direct = attention_on_projections("separate");
  direct.graph.nodes.back().inputs[0] = "x";
  CHECK(projection_refusals(direct).find("'x' is not MatMul(x, W) [+ b] [sliced on the last axis]") != std::string::npos);

  // one value as both keys and values
  Model kv_once = attention_on_projections("separate");
  kv_once.graph.nodes.back().inputs[2] = "k";
  CHECK(projection_refusals(kv_once).find("q, k and v are not three values") != std::string::npos);

  // a past: a bias would apply to the new keys only
  Model past = attention_on_projections("separate");
  past.graph.inputs.push_back(tensor_info("past_key", DType::Float, {"batch", 2, "past", 4}));
  past.graph.inputs.push_back(tensor_info("past_value", DType::Float, {"batch", 2, "past", 4}));
  Node& mha = past.graph.nodes.back();
  mha.inputs = {"q", "k", "v", "", "", "", "past_key", "past_value"};
  mha.outputs = {"y", "present_key", "present_value"};
  past.graph.outputs.push_back(tensor_info("present_key", DType::Float, {"batch", 2, "total", 4}));
  past.graph.outputs.push_back(tensor_info("present_value", DType::Float, {"batch", 2, "total", 4}));
  CHECK(projection_refusals(past).find("it has a past") != std::string::npos);
  CHECK(count_ops(optimized(past, {"mha-projections"}, "", "cpu"), "Add") == 3);
}
