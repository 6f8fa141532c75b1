// Activations: attribute defaults, stability at extreme inputs, integer Relu, PRelu broadcasting.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("activations with their attributes") {
  struct Case { const char* op; std::vector<Attribute> attrs; Tensor x, expected; };
  const Case cases[] = {
      // integer Relu (opset 14)
      {"Relu", {}, tensor<int8_t>({3}, {-128, 0, 127}), tensor<int8_t>({3}, {0, 0, 127})},
      // float Relu is numpy's maximum(x, 0), as in the Python reference: NaN stays NaN
      {"Relu", {}, tensor<float>({4}, {NAN, -0.f, -1.f, 2.f}), tensor<float>({4}, {NAN, 0.f, 0.f, 2.f})},
      {"LeakyRelu", {}, tensor<float>({2}, {-100.f, 2.f}), tensor<float>({2}, {-1.f, 2.f})},
      {"ThresholdedRelu", {attr("alpha", 2.f)}, tensor<float>({3}, {1.f, 2.f, 3.f}), tensor<float>({3}, {0.f, 0.f, 3.f})},
      // Sigmoid and Softplus stay finite and exact far from 0
      {"Sigmoid", {}, tensor<float>({3}, {-1000.f, 0.f, 1000.f}), tensor<float>({3}, {0.f, 0.5f, 1.f})},
      {"Softplus", {}, tensor<float>({2}, {1000.f, -1000.f}), tensor<float>({2}, {1000.f, 0.f})},
      {"HardSwish", {}, tensor<float>({3}, {-4.f, 0.f, 4.f}), tensor<float>({3}, {0.f, 0.f, 4.f})},
      {"HardSigmoid", {attr("alpha", 0.5f), attr("beta", 0.f)}, tensor<float>({3}, {-1.f, 1.f, 3.f}), tensor<float>({3}, {0.f, 0.5f, 1.f})},
      {"Shrink", {attr("lambd", 1.5f), attr("bias", 1.f)}, tensor<int32_t>({3}, {-3, 1, 3}), tensor<int32_t>({3}, {-2, 0, 2})},
      {"Gelu", {attr("approximate", "tanh")}, tensor<double>({1}, {0.0}), tensor<double>({1}, {0.0})},
      {"Celu", {attr("alpha", 2.f)}, tensor<float>({2}, {-2.f, 3.f}), tensor<float>({2}, {2.f * std::expm1(-1.f), 3.f})},
      {"Swish", {attr("alpha", 1.f)}, tensor<float>({1}, {-1000.f}), tensor<float>({1}, {-0.f})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    check_equal(run_node(node(c.op, {"x"}, {"y"}, c.attrs), {c.x})[0], c.expected);
  }
}

TEST_CASE("PRelu broadcasts the slope to X, never the other way") {
  auto out = run_node(node("PRelu", {"x", "s"}, {"y"}), {tensor<float>({2, 2}, {-1, 2, -3, 4}), tensor<float>({2}, {0.5f, 2.f})});
  check_equal(out[0], tensor<float>({2, 2}, {-0.5f, 2.f, -1.5f, 4.f}));
  CHECK_THROWS_AS(run_node(node("PRelu", {"x", "s"}, {"y"}), {tensor<float>({2}, {-1, 2}), tensor<float>({2, 2}, {1, 1, 1, 1})}), Error);
}

TEST_CASE("SwiGLU requires equal shapes") {
  auto out = run_node(node("SwiGLU", {"a", "b"}, {"y"}), {tensor<float>({2}, {0.f, 1000.f}), tensor<float>({2}, {3.f, 2.f})});
  check_equal(out[0], tensor<float>({2}, {0.f, 2000.f}));
  CHECK_THROWS_AS(run_node(node("SwiGLU", {"a", "b"}, {"y"}), {tensor<float>({2}, {0, 1}), tensor<float>({1}, {1})}), Error);
}

TEST_CASE("invalid activation attributes are model errors") {
  CHECK_THROWS_AS(run_node(node("Gelu", {"x"}, {"y"}, {attr("approximate", "fast")}), {tensor<float>({1}, {1})}), Error);
  CHECK_THROWS_AS(run_node(node("Celu", {"x"}, {"y"}, {attr("alpha", 0.f)}), {tensor<float>({1}, {1})}), Error);
}
