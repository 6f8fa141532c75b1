// Writes the example's two models (run from the repository root after a build):
//   build/examples/custom_op/refeval_example_models examples/custom_op
// fused.onnx:   Y = MyFusedGelu(MatMul(X, W), b), with a model-local function MyFusedGelu that
//               says what the operator means, so refeval runs the model even without the plugin;
// unfused.onnx: Y = the exported form, MatMul, Add, Div, Erf, Add, Mul, Mul.
// Both name the MatMul output "h" and the result "Y", so check-fusion compares both values.
#include <cmath>
#include <numbers>
#include <random>
#include <string>

#include <fmt/format.h>

#include "my_fused_gelu.h"
#include "refeval/builder.h"
#include "refeval/model_io.h"

using namespace refeval;
using namespace refeval::build;

namespace {

constexpr int64_t kBatch = 64, kIn = 64, kOut = 512;

// Seeded weights in [-0.1, 0.1), so the GELU sees both signs.
Tensor weights(Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(size_t(shape_size(shape)));
  for (float& x : v) x = float((double(rng() >> 11) * 0x1.0p-53 * 2 - 1) * 0.1);
  return Tensor::from_vector<float>(std::move(shape), v);
}

// The unfused nodes from z = a + b to `y`; `prefix` keeps value names unique.
std::vector<Node> gelu_nodes(const std::string& a, const std::string& b, const std::string& y) {
  return {node("Add", {a, b}, {"z"}, {}, "bias_add"),
          node("Div", {"z", "sqrt2"}, {"z_scaled"}, {}, "div"),
          node("Erf", {"z_scaled"}, {"erf"}, {}, "erf"),
          node("Add", {"erf", "one"}, {"erf_plus_1"}, {}, "add_one"),
          node("Mul", {"z", "erf_plus_1"}, {"z_times"}, {}, "mul"),
          node("Mul", {"z_times", "half"}, {y}, {}, "mul_half")};
}

std::vector<Initializer> gelu_constants() {
  return {{"sqrt2", Tensor::scalar<float>(float(std::numbers::sqrt2))},
          {"one", Tensor::scalar<float>(1.0f)},
          {"half", Tensor::scalar<float>(0.5f)}};
}

Model fused_model() {
  Function f;
  f.domain = example::kDomain;
  f.name = "MyFusedGelu";
  f.inputs = {"a", "b"};
  f.outputs = {"y"};
  f.opsets = {{"", 17}};
  for (const Initializer& c : gelu_constants()) f.nodes.push_back(node("Constant", {}, {c.name}, {attr("value", c.value)}));
  for (const Node& n : gelu_nodes("a", "b", "y")) f.nodes.push_back(n);
  Graph g = graph("fused",
                  {node("MatMul", {"X", "W"}, {"h"}, {}, "matmul"),
                   node("MyFusedGelu", {"h", "B"}, {"Y"}, {}, "gelu", example::kDomain)},
                  {tensor_info("X", DType::Float, {kBatch, kIn})}, {tensor_info("Y", DType::Float, {kBatch, kOut})},
                  {{"W", weights({kIn, kOut}, 1)}, {"B", weights({kOut}, 2)}});
  return model(g, {{"", 17}, {example::kDomain, 1}}, 8, {f});
}

Model unfused_model() {
  std::vector<Node> nodes{node("MatMul", {"X", "W"}, {"h"}, {}, "matmul")};
  for (const Node& n : gelu_nodes("h", "B", "Y")) nodes.push_back(n);
  std::vector<Initializer> init{{"W", weights({kIn, kOut}, 1)}, {"B", weights({kOut}, 2)}};
  for (const Initializer& c : gelu_constants()) init.push_back(c);
  Graph g = graph("unfused", nodes, {tensor_info("X", DType::Float, {kBatch, kIn})},
                  {tensor_info("Y", DType::Float, {kBatch, kOut})}, init);
  return model(g, {{"", 17}});
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  save_model(fused_model(), dir + "/fused.onnx");
  save_model(unfused_model(), dir + "/unfused.onnx");
  fmt::print("wrote {0}/fused.onnx and {0}/unfused.onnx\n", dir);
  return 0;
}
