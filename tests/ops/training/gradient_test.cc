// Gradient differentiates the nodes of its graph that lead from `xs` to `y` (the sum of y's
// elements when y is not a scalar); `zs` are inputs held constant.
#include "refeval/error.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::testing;

namespace {

const char* kTraining = "ai.onnx.preview.training";

// Runs a graph made of `forward` nodes plus a Gradient node, returning the Gradient's outputs.
Values gradients(std::vector<Node> forward, const std::vector<ValueInfo>& inputs, const std::vector<std::string>& xs,
                 const std::string& y, const std::map<std::string, Value>& feeds,
                 const std::vector<std::string>& zs = {}, std::vector<Initializer> inits = {}) {
  std::vector<std::string> grad_in = xs, grad_out;
  grad_in.insert(grad_in.end(), zs.begin(), zs.end());
  std::vector<ValueInfo> outputs;
  for (const auto& x : xs) {
    grad_out.push_back("d_" + x);
    outputs.push_back(untyped_info("d_" + x));
  }
  std::vector<Attribute> attrs{attr("xs", xs), attr("y", y)};
  if (!zs.empty()) attrs.push_back(attr("zs", zs));
  forward.push_back(node("Gradient", grad_in, grad_out, attrs, "grad", kTraining));
  ReferenceEvaluator ev(model(graph("g", forward, inputs, outputs, std::move(inits)), {{"", 17}, {kTraining, 1}}));
  return ev.run({}, feeds);
}

}  // namespace

TEST_CASE("Gradient: d/da and d/db of (a + b) * a, the backend test's graph") {
  auto g = gradients({node("Add", {"a", "b"}, {"c"}), node("Mul", {"c", "a"}, {"d"})},
                     {tensor_info("a", DType::Float, {}), tensor_info("b", DType::Float, {})}, {"a", "b"}, "d",
                     {{"a", tensor<float>({}, {1})}, {"b", tensor<float>({}, {2})}});
  check_equal(g[0], tensor<float>({}, {4}));  // 2a + b
  check_equal(g[1], tensor<float>({}, {1}));  // a
}

TEST_CASE("Gradient: a broadcast input receives the sum over the broadcast axes") {
  // y = x * w with x (2, 3) and w (3,): dy/dw_j = sum_i x_ij, dy/dx_ij = w_j.
  auto g = gradients({node("Mul", {"x", "w"}, {"y"})},
                     {tensor_info("x", DType::Float, {2, 3}), tensor_info("w", DType::Float, {3})}, {"x", "w"}, "y",
                     {{"x", tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})}, {"w", tensor<float>({3}, {10, 20, 30})}});
  check_equal(g[0], tensor<float>({2, 3}, {10, 20, 30, 10, 20, 30}));
  check_equal(g[1], tensor<float>({3}, {5, 7, 9}));
}

TEST_CASE("Gradient: MatMul, Relu and Div chained, with an initializer and a constant z") {
  // y = Relu(x @ W) / z; W is an initializer, z is held constant (zs).
  const Tensor w = tensor<double>({2, 2}, {1, -1, 2, 1});
  auto g = gradients({node("MatMul", {"x", "W"}, {"h"}), node("Relu", {"h"}, {"r"}), node("Div", {"r", "z"}, {"y"})},
                     {tensor_info("x", DType::Double, {1, 2}), tensor_info("z", DType::Double, {})}, {"x"}, "y",
                     {{"x", tensor<double>({1, 2}, {1, 1})}, {"z", tensor<double>({}, {2})}}, {"z"}, {{"W", w}});
  // h = [3, 0]: Relu passes the first column only; dy/dx = W[:, 0] / z = [0.5, 1].
  check_equal(g[0], tensor<double>({1, 2}, {0.5, 1}));
}

TEST_CASE("Gradient: an x that y does not depend on gets zeros") {
  auto g = gradients({node("Neg", {"a"}, {"y"})}, {tensor_info("a", DType::Float, {2}), tensor_info("b", DType::Float, {2})},
                     {"a", "b"}, "y", {{"a", tensor<float>({2}, {1, 2})}, {"b", tensor<float>({2}, {3, 4})}});
  check_equal(g[0], tensor<float>({2}, {-1, -1}));
  check_equal(g[1], tensor<float>({2}, {0, 0}));
}

TEST_CASE("Gradient: an operator without a derivative rule is a model error naming it") {
  CHECK_THROWS_WITH_AS(gradients({node("Floor", {"a"}, {"y"}, {}, "floor")}, {tensor_info("a", DType::Float, {1})}, {"a"},
                                 "y", {{"a", tensor<float>({1}, {1})}}),
                       doctest::Contains("no derivative rule for node 'floor' (Floor)"), Error);
  // b feeds y but is listed neither in xs nor in zs.
  CHECK_THROWS_WITH_AS(gradients({node("Add", {"a", "b"}, {"y"})},
                                 {tensor_info("a", DType::Float, {1}), tensor_info("b", DType::Float, {1})}, {"a"}, "y",
                                 {{"a", tensor<float>({1}, {1})}, {"b", tensor<float>({1}, {1})}}),
                       doctest::Contains("'b' on the path to y"), Error);
}
