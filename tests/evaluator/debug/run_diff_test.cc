// Comparing two runs value by value finds where they start to disagree: on a small multi-layer
// model with one weight of layer 1 perturbed, the first differing value is the output of layer
// 1's first consumer of that weight; the weight itself is reported among the initializers.
#include "refeval/evaluator.h"
#include "refeval/run_diff.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {

// A GPT-2-like stack of residual blocks: x + W_out(tanh(LayerNorm(x) W_in)), then a head.
Model layered(int layers, float perturb_layer1_out = 0) {
  const int64_t d = 4;
  std::vector<Node> nodes;
  std::vector<Initializer> inits;
  std::string x = "X";
  auto weight = [&](const std::string& name, float scale, float delta) {
    std::vector<float> w(d * d);
    for (size_t i = 0; i < w.size(); ++i) w[i] = scale * float(int(i % 7) - 3);
    w[5] += delta;
    inits.push_back({name, tensor<float>({d, d}, w)});
  };
  inits.push_back({"gamma", tensor<float>({d}, {1, 1, 1, 1})});
  inits.push_back({"beta", tensor<float>({d}, {0, 0, 0, 0})});
  for (int l = 0; l < layers; ++l) {
    const std::string p = "/h." + std::to_string(l) + "/";
    weight(p + "w_in", 0.1f, 0);
    weight(p + "w_out", 0.2f, l == 1 ? perturb_layer1_out : 0);
    nodes.push_back(node("LayerNormalization", {x, "gamma", "beta"}, {p + "ln"}, {}, p + "ln"));
    nodes.push_back(node("MatMul", {p + "ln", p + "w_in"}, {p + "in"}, {}, p + "MatMul_in"));
    nodes.push_back(node("Tanh", {p + "in"}, {p + "act"}, {}, p + "Tanh"));
    nodes.push_back(node("MatMul", {p + "act", p + "w_out"}, {p + "out"}, {}, p + "MatMul_out"));
    nodes.push_back(node("Add", {x, p + "out"}, {p + "res"}, {}, p + "Add"));
    x = p + "res";
  }
  nodes.push_back(node("ReduceSum", {x}, {"Y"}, {attr("keepdims", int64_t(0))}, "head"));
  Graph g = graph("stack", nodes, {tensor_info("X", DType::Float, {2, d})}, {tensor_info("Y", DType::Float, {})}, inits);
  return model(g);
}

std::vector<ValueRecord> record(Model m, const Tensor& x) {
  ReferenceEvaluator ev(std::move(m));
  RecordObserver rec;
  ev.add_observer(&rec);
  ev.run({}, {{"X", x}});
  return rec.records();
}

const Tensor kInput = tensor<float>({2, 4}, {0.1f, 0.5f, -0.3f, 0.9f, 1.0f, -1.0f, 0.2f, 0.0f});

}  // namespace

TEST_CASE("a perturbed weight in layer 1 is first seen at layer 1's consumer of it") {
  const auto a = record(layered(3), kInput);
  const auto b = record(layered(3, 0.05f), kInput);
  const RunDiff diff = diff_runs(a, b, {});
  CHECK(diff.only_in_a == 0);
  CHECK(diff.only_in_b == 0);
  REQUIRE(diff.initializers.size() == 8);  // gamma, beta and two weights per layer
  std::vector<std::string> changed;
  for (const auto& d : diff.initializers)
    if (!d.c.equal) changed.push_back(d.a->name);
  CHECK(changed == std::vector<std::string>{"/h.1/w_out"});
  const ValueDiff* first = diff.first_difference();
  REQUIRE(first);
  CHECK(first->a->node == "/h.1/MatMul_out");  // not its layer's earlier nodes, not layer 0
  CHECK(first->a->op_type == "MatMul");
  CHECK(first->c.max_abs > 0);
  // Everything before it in execution order agrees exactly.
  for (const auto& d : diff.values) {
    if (&d == first) break;
    CHECK(d.c.max_abs == 0);
  }
}

TEST_CASE("identical runs have no first difference; mismatched shapes are differences") {
  const auto a = record(layered(2), kInput);
  CHECK(diff_runs(a, a, {}).first_difference() == nullptr);
  auto b = a;
  b.back().value = tensor<float>({1}, {0});  // the head's output, as another runtime might shape it
  const RunDiff diff = diff_runs(a, b, {});
  REQUIRE(diff.first_difference());
  CHECK(diff.first_difference()->a->name == "Y");
  CHECK(diff.first_difference()->c.reason == "shape () vs expected (1,)");
}
