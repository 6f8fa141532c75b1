#include "tools/fusion/fusion_models.h"

#include <cmath>
#include <numbers>

#include "refeval/builder.h"

namespace refeval::testing {

using namespace refeval::build;

namespace {

Initializer scalar(const std::string& name, float v) { return {name, Tensor::scalar<float>(v)}; }
Initializer ints(const std::string& name, std::vector<int64_t> v) {
  return {name, Tensor::from_vector<int64_t>({int64_t(v.size())}, v)};
}
Tensor ramp(Shape shape, float start, float step) {
  std::vector<float> v(size_t(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * float(i);
  return Tensor::from_vector<float>(std::move(shape), v);
}

// A ramp that repeats every 23 values, so larger weights stay small.
Tensor ramp2(Shape shape, float start, float step) {
  std::vector<float> v(size_t(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * float(i % 23);
  return Tensor::from_vector<float>(std::move(shape), v);
}

}  // namespace

Model gelu_model(const char* approximate) {
  return model(graph("gelu", {node("Gelu", {"X"}, {"Y"}, {attr("approximate", approximate)}, "gelu")},
                     {tensor_info("X", DType::Float, {2, 64})}, {tensor_info("Y", DType::Float, {2, 64})}),
               {{"", 20}});
}

Model gelu_erf_unfused() {
  return model(graph("gelu_unfused",
                     {node("Div", {"X", "sqrt2"}, {"d"}), node("Erf", {"d"}, {"e"}), node("Add", {"e", "one"}, {"e1"}),
                      node("Mul", {"X", "e1"}, {"m"}), node("Mul", {"m", "half"}, {"Y"})},
                     {tensor_info("X", DType::Float, {2, 64})}, {tensor_info("Y", DType::Float, {2, 64})},
                     {scalar("sqrt2", float(std::numbers::sqrt2)), scalar("one", 1), scalar("half", 0.5f)}),
               {{"", 20}});
}

Model layer_norm_model() {
  return model(graph("layer_norm", {node("LayerNormalization", {"X", "Scale", "B"}, {"Y"}, {attr("epsilon", 1e-5f)}, "ln")},
                     {tensor_info("X", DType::Float, {2, 3, 16})}, {tensor_info("Y", DType::Float, {2, 3, 16})},
                     {{"Scale", ramp({16}, 0.5f, 0.1f)}, {"B", ramp({16}, -0.4f, 0.05f)}}),
               {{"", 17}});
}

Model layer_norm_unfused(bool eps_outside_sqrt) {
  std::vector<Node> nodes{node("ReduceMean", {"X", "axes"}, {"mean"}), node("Sub", {"X", "mean"}, {"d"}),
                          node("Mul", {"d", "d"}, {"d2"}), node("ReduceMean", {"d2", "axes"}, {"var"})};
  if (eps_outside_sqrt) {
    nodes.push_back(node("Sqrt", {"var"}, {"std"}));
    nodes.push_back(node("Add", {"std", "eps"}, {"denom"}));
  } else {
    nodes.push_back(node("Add", {"var", "eps"}, {"var_eps"}));
    nodes.push_back(node("Sqrt", {"var_eps"}, {"denom"}));
  }
  nodes.push_back(node("Div", {"d", "denom"}, {"n"}));
  nodes.push_back(node("Mul", {"n", "Scale"}, {"scaled"}));
  nodes.push_back(node("Add", {"scaled", "B"}, {"Y"}));
  return model(graph("layer_norm_unfused", nodes, {tensor_info("X", DType::Float, {2, 3, 16})},
                     {tensor_info("Y", DType::Float, {2, 3, 16})},
                     {{"Scale", ramp({16}, 0.5f, 0.1f)}, {"B", ramp({16}, -0.4f, 0.05f)}, ints("axes", {-1}), scalar("eps", 1e-5f)}),
               {{"", 18}});
}

Model causal_attention_model() {
  const std::vector<ValueInfo> qkv{tensor_info("Q", DType::Float, {1, 2, 6, 8}), tensor_info("K", DType::Float, {1, 2, 6, 8}),
                                   tensor_info("V", DType::Float, {1, 2, 6, 8})};
  return model(graph("attention", {node("Attention", {"Q", "K", "V"}, {"Y"}, {attr("is_causal", int64_t(1))}, "attention")}, qkv,
                     {tensor_info("Y", DType::Float, {1, 2, 6, 8})}),
               {{"", 23}});
}

Model causal_attention_unfused(int shift) {
  std::vector<float> mask(36);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) mask[size_t(i * 6 + j)] = j <= i + shift ? 0.0f : -1e9f;
  const std::vector<ValueInfo> qkv{tensor_info("Q", DType::Float, {1, 2, 6, 8}), tensor_info("K", DType::Float, {1, 2, 6, 8}),
                                   tensor_info("V", DType::Float, {1, 2, 6, 8})};
  return model(graph("attention_unfused",
                     {node("Transpose", {"K"}, {"Kt"}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}),
                      node("MatMul", {"Q", "Kt"}, {"qk"}), node("Mul", {"qk", "scale"}, {"scores"}),
                      node("Add", {"scores", "mask"}, {"masked"}), node("Softmax", {"masked"}, {"probs"}, {attr("axis", int64_t(-1))}),
                      node("MatMul", {"probs", "V"}, {"Y"})},
                     qkv, {tensor_info("Y", DType::Float, {1, 2, 6, 8})},
                     {scalar("scale", float(1 / std::sqrt(8.0))), {"mask", Tensor::from_vector<float>({6, 6}, mask)}}),
               {{"", 23}});
}

// GPT-2's tanh GELU as torch exports it, with a chosen cubic coefficient.
Model fast_gelu_unfused(float cubic, bool expose_tanh) {
  std::vector<ValueInfo> outputs = {tensor_info("y", DType::Float, {2, 8})};
  if (expose_tanh) outputs.push_back(tensor_info("t", DType::Float, {2, 8}));
  return model(graph("fast_gelu",
                     {node("Mul", {"x", "half"}, {"h"}), node("Pow", {"x", "three"}, {"p"}), node("Mul", {"p", "cubic"}, {"pc"}),
                      node("Add", {"x", "pc"}, {"inner"}), node("Mul", {"inner", "k"}, {"arg"}), node("Tanh", {"arg"}, {"t"}),
                      node("Add", {"t", "one"}, {"s"}), node("Mul", {"h", "s"}, {"y"})},
                     {tensor_info("x", DType::Float, {2, 8})}, outputs,
                     {scalar("half", 0.5f), scalar("three", 3.0f), scalar("cubic", cubic), scalar("k", 0.7978845834732056f),
                      scalar("one", 1.0f)}));
}

// One GPT-2 attention block without past, as torch exports it (symbolic batch and sequence).
Model gpt2_attention_unfused(int mask_shift) {
  std::vector<bool> causal(16 * 16);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) causal[size_t(i * 16 + j)] = j <= i + mask_shift;
  auto perm = [](std::vector<int64_t> p) { return attr("perm", p); };
  std::vector<Node> nodes = {
      node("MatMul", {"x", "W"}, {"mm"}), node("Add", {"bias", "mm"}, {"qkv"}),
      node("Split", {"qkv", "sizes"}, {"q", "k", "v"}, {attr("axis", int64_t(2))}),
      node("Shape", {"x"}, {"shape"}), node("Gather", {"shape", "i0"}, {"b"}), node("Gather", {"shape", "i1"}, {"s"}),
      node("Unsqueeze", {"b", "axis0"}, {"ub"}), node("Unsqueeze", {"s", "axis0"}, {"us"}),
      node("Concat", {"ub", "us", "heads", "hsize"}, {"hshape"}, {attr("axis", int64_t(0))}),
      node("Reshape", {"q", "hshape"}, {"rq"}), node("Transpose", {"rq"}, {"tq"}, {perm({0, 2, 1, 3})}),
      node("Reshape", {"k", "hshape"}, {"rk"}), node("Transpose", {"rk"}, {"tk"}, {perm({0, 2, 3, 1})}),
      node("Reshape", {"v", "hshape"}, {"rv"}), node("Transpose", {"rv"}, {"tv"}, {perm({0, 2, 1, 3})}),
      node("MatMul", {"tq", "tk"}, {"qk"}), node("Div", {"qk", "root_h"}, {"scores"}),
      node("Slice", {"causal", "zero", "us", "axis2", "one"}, {"rows"}), node("Slice", {"rows", "zero", "us", "axis3", "one"}, {"block"}),
      node("Not", {"block"}, {"future"}), node("Cast", {"future"}, {"hide"}, {attr("to", int64_t(DType::Bool))}),
      node("Where", {"hide", "lowest", "scores"}, {"masked"}), node("Softmax", {"masked"}, {"probs"}, {attr("axis", int64_t(-1))}),
      node("MatMul", {"probs", "tv"}, {"o"}), node("Transpose", {"o"}, {"to"}, {perm({0, 2, 1, 3})}),
      node("Concat", {"ub", "us", "d"}, {"oshape"}, {attr("axis", int64_t(0))}), node("Reshape", {"to", "oshape"}, {"y"})};
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].name = "/attn/" + nodes[i].op_type + "_" + std::to_string(i);  // torch-like names
  return model(graph("attention", nodes, {tensor_info("x", DType::Float, {"batch", "seq", 8})},
                     {tensor_info("y", DType::Float, {"batch", "seq", 8})},
                     {{"W", ramp2({8, 24}, -0.3f, 0.03f)}, {"bias", ramp2({24}, -0.1f, 0.01f)}, ints("sizes", {8, 8, 8}),
                      {"i0", Tensor::scalar<int64_t>(0)}, {"i1", Tensor::scalar<int64_t>(1)}, ints("axis0", {0}),
                      ints("heads", {2}), ints("hsize", {4}), ints("d", {8}), scalar("root_h", 2.0f),
                      {"causal", Tensor::from_vector<bool>({1, 1, 16, 16}, causal)}, ints("zero", {0}), ints("one", {1}),
                      ints("axis2", {2}), ints("axis3", {3}), scalar("lowest", -3.4028234663852886e38f)}),
               {{"", 17}});
}

Model relu_model(int64_t opset) {
  return model(graph("relu", {node("Relu", {"X"}, {"Y"}, {}, "relu")}, {tensor_info("X", DType::Float, {1, 4})},
                     {tensor_info("Y", DType::Float, {1, 4})}),
               {{"", opset}});
}

}  // namespace refeval::testing
