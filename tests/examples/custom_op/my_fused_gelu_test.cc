// The example custom operator, tested the way docs/custom-ops.md tells a user to test theirs:
// register it into a Registry layered over the built-ins, build a model with refeval's builder,
// run it with ReferenceEvaluator.
#include <cmath>

#include "my_fused_gelu.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::tensor;

namespace {

Registry example_registry() {
  Registry reg(&Registry::builtin(), "example");
  example::register_my_fused_gelu(reg);
  return reg;
}

// Y = MyFusedGelu(X, bias) with X [2, 3].
Model fused_gelu_model(std::vector<Attribute> attrs = {}) {
  return model(graph("g", {node("MyFusedGelu", {"X", "bias"}, {"Y"}, std::move(attrs), "fused_gelu", example::kDomain)},
                     {tensor_info("X", DType::Float, {2, 3}), tensor_info_unknown_rank("bias", DType::Float)},
                     {tensor_info("Y", DType::Float, {2, 3})}),
               {{"", 17}, {example::kDomain, 1}});
}

double gelu(double z) { return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0))); }

}  // namespace

TEST_CASE("MyFusedGelu adds the bias over the last axis, then applies the erf GELU") {
  const Registry reg = example_registry();
  ReferenceEvaluator ev(fused_gelu_model(), {&reg});
  const Tensor x = tensor<float>({2, 3}, {-2, -0.5f, 0, 0.5f, 1, 3});
  const Tensor bias = tensor<float>({3}, {0.25f, 0, -1});
  const Values y = ev.run({}, {{"X", x}, {"bias", bias}});
  std::vector<float> expected;
  for (int i = 0; i < 6; ++i) expected.push_back(float(gelu(double(x.data<float>()[i]) + double(bias.data<float>()[i % 3]))));
  refeval::testing::check_equal(y[0], tensor<float>({2, 3}, expected), {1e-6, 1e-7});
}

TEST_CASE("MyFusedGelu with approximate=tanh follows the tanh formula") {
  const Registry reg = example_registry();
  ReferenceEvaluator ev(fused_gelu_model({attr("approximate", "tanh")}), {&reg});
  const Values y = ev.run({}, {{"X", tensor<float>({2, 3}, {-3, -1, 0, 1, 2, 3})}, {"bias", tensor<float>({3}, {0, 0, 0})}});
  // tanh GELU(-3) = -0.00363739..., erf GELU(-3) = -0.00404951...
  CHECK(y[0].tensor().data<float>()[0] == doctest::Approx(-0.0036373920).epsilon(1e-5));
}

TEST_CASE("MyFusedGelu's errors name the node") {
  const Registry reg = example_registry();
  CHECK_THROWS_WITH_AS(ReferenceEvaluator(fused_gelu_model({attr("approximate", "fast")}), {&reg}),
                       doctest::Contains("node 'fused_gelu' (example.fused:MyFusedGelu): approximate must be 'none' or 'tanh', got 'fast'"), Error);
  CHECK_THROWS_WITH_AS(ReferenceEvaluator(fused_gelu_model({attr("alpha", 1.0f)}), {&reg}),
                       doctest::Contains("unknown attribute alpha"), Error);
  ReferenceEvaluator ev(fused_gelu_model(), {&reg});
  CHECK_THROWS_WITH_AS(ev.run({}, {{"X", tensor<float>({2, 3}, {0, 0, 0, 0, 0, 0})}, {"bias", tensor<float>({2}, {0, 0})}}),
                       doctest::Contains("bias must be 1-D with X's last dimension; X is (2, 3), bias (2,)"), Error);
}

TEST_CASE("without the plugin's registry MyFusedGelu is an unknown operator") {
  CHECK_THROWS_WITH_AS(static_cast<void>(ReferenceEvaluator(fused_gelu_model())), doctest::Contains("unknown operator"), Error);
}
