// Dropout across versions: inference is the identity with an all-true mask (all ones of the input
// type before opset 10); training keeps about 1 - ratio of the elements, scaled by 1 / (1 - ratio).
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("Dropout in inference is the identity with a full mask") {
  struct Case { const char* what; int64_t opset; Node n; Values inputs; Value mask; };
  const Tensor x = tensor<float>({3}, {1, 2, 3});
  const Case cases[] = {
      {"opset 7: mask of the input type", 7, node("Dropout", {"x"}, {"y", "m"}, {attr("ratio", 0.3f)}), {x}, tensor<float>({3}, {1, 1, 1})},
      {"opset 6 with is_test", 6, node("Dropout", {"x"}, {"y", "m"}, {attr("is_test", int64_t(1))}), {x}, tensor<float>({3}, {1, 1, 1})},
      {"opset 10: bool mask", 10, node("Dropout", {"x"}, {"y", "m"}), {x}, tensor<bool>({3}, {true, true, true})},
      {"opset 13, training_mode false", 13, node("Dropout", {"x", "r", "t"}, {"y", "m"}),
       {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(false)}, tensor<bool>({3}, {true, true, true})},
      {"opset 22, training with ratio 0", 22, node("Dropout", {"x", "r", "t"}, {"y", "m"}),
       {x, Tensor::scalar<float>(0.0f), Tensor::scalar<bool>(true)}, tensor<bool>({3}, {true, true, true})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(c.n, c.inputs, c.opset);
    check_equal(out[0], x);
    check_equal(out[1], c.mask);
  }
}

TEST_CASE("Dropout in training drops about ratio of the elements and rescales the rest") {
  const Tensor x = tensor<double>({20000}, std::vector<double>(20000, 2.0));
  auto out = run_node(node("Dropout", {"x", "r", "t"}, {"y", "m"}, {attr("seed", 0.0f)}),
                      {x, Tensor::scalar<double>(0.25), Tensor::scalar<bool>(true)}, 13);
  const auto y = out[0].tensor().to_vector<double>();
  const Tensor& m = out[1].tensor();
  int64_t kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const bool keep = m.data<bool>()[i];
    kept += keep;
    REQUIRE(y[i] == doctest::Approx(keep ? 2.0 / 0.75 : 0.0));
  }
  CHECK(double(kept) / 20000 == doctest::Approx(0.75).epsilon(0.03));
  // the same seed gives the same mask on the next run
  check_equal(run_node(node("Dropout", {"x", "r", "t"}, {"y", "m"}, {attr("seed", 0.0f)}),
                       {x, Tensor::scalar<double>(0.25), Tensor::scalar<bool>(true)}, 13)[1], m);
}
