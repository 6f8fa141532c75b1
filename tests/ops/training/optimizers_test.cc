// Adagrad, Adam, Momentum (ai.onnx.preview.training 1): one step on hand-computed values, several
// tensors per node, every Momentum mode, and input errors.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
constexpr const char* kTraining = "ai.onnx.preview.training";
Node optimizer(const char* op, std::vector<std::string> in, std::vector<std::string> out, std::vector<Attribute> attrs) {
  return node(op, std::move(in), std::move(out), std::move(attrs), "", kTraining);
}
}  // namespace

TEST_CASE("Adagrad updates X and the accumulated squared gradient") {
  // r = 0.1 / (1 + 2 * 0.5) = 0.05; G' = 0.1 * X + G; H' = H + G'^2; X' = X - r * G' / (sqrt(H') + 1e-6)
  const double x = 1.0, g = 2.0, h = 3.0, gr = 0.1 * x + g, hn = h + gr * gr, xn = x - 0.05 * gr / (std::sqrt(hn) + 1e-6);
  auto out = run_node(optimizer("Adagrad", {"r", "t", "x", "g", "h"}, {"xn", "hn"},
                                {attr("decay_factor", 0.5f), attr("norm_coefficient", 0.1f)}),
                      {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(2), tensor<float>({1}, {1}),
                       tensor<float>({1}, {2}), tensor<float>({1}, {3})},
                      1);
  check_equal(out[0], tensor<float>({1}, {float(xn)}));
  check_equal(out[1], tensor<float>({1}, {float(hn)}));
}

TEST_CASE("Adam with two tensors, bias correction and post-norm") {
  // T = 1: R' = R * sqrt(1 - beta) / (1 - alpha)
  const double a = 0.9, b = 0.999, r = 0.01 * std::sqrt(1 - b) / (1 - a);
  auto step = [&](double x, double g) {
    const double v = (1 - a) * g, h = (1 - b) * g * g;
    return std::vector<double>{(1 - 0.5) * (x - r * v / (std::sqrt(h) + 1e-6)), v, h};
  };
  auto out = run_node(optimizer("Adam", {"r", "t", "x1", "x2", "g1", "g2", "v1", "v2", "h1", "h2"},
                                {"x1n", "x2n", "v1n", "v2n", "h1n", "h2n"}, {attr("norm_coefficient_post", 0.5f)}),
                      {Tensor::scalar<double>(0.01), Tensor::scalar<int64_t>(1), tensor<double>({1}, {1.0}),
                       tensor<double>({2}, {2.0, 3.0}), tensor<double>({1}, {-1.0}), tensor<double>({2}, {0.5, 0.25}),
                       tensor<double>({1}, {0}), tensor<double>({2}, {0, 0}), tensor<double>({1}, {0}),
                       tensor<double>({2}, {0, 0})},
                      1);
  REQUIRE(out.size() == 6);
  const auto s1 = step(1.0, -1.0), s2a = step(2.0, 0.5), s2b = step(3.0, 0.25);
  check_equal(out[0], tensor<double>({1}, {s1[0]}));
  check_equal(out[1], tensor<double>({2}, {s2a[0], s2b[0]}));
  check_equal(out[3], tensor<double>({2}, {s2a[1], s2b[1]}));
  check_equal(out[5], tensor<double>({2}, {s2a[2], s2b[2]}));
}

TEST_CASE("Momentum standard and nesterov, first step and later steps") {
  struct Case { const char* what; const char* mode; int64_t t; float x_new, v_new; };
  // X = 1, G = 2, V = 1, R = 0.1, alpha = 0.5, beta = 0.25, norm = 0: G' = 2
  const Case cases[] = {
      {"standard, T = 0 uses beta = 1", "standard", 0, 1 - 0.1f * 2.5f, 0.5f + 2.0f},
      {"standard, T > 0", "standard", 3, 1 - 0.1f * 1.0f, 0.5f + 0.5f},
      {"nesterov, T > 0", "nesterov", 3, 1 - 0.1f * (2 + 0.5f * 1.0f), 1.0f},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(optimizer("Momentum", {"r", "t", "x", "g", "v"}, {"xn", "vn"},
                                  {attr("alpha", 0.5f), attr("beta", 0.25f), attr("norm_coefficient", 0.0f),
                                   attr("mode", c.mode)}),
                        {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(c.t), tensor<float>({1}, {1}),
                         tensor<float>({1}, {2}), tensor<float>({1}, {1})},
                        1);
    check_equal(out[0], tensor<float>({1}, {c.x_new}));
    check_equal(out[1], tensor<float>({1}, {c.v_new}));
  }
}

TEST_CASE("optimizer errors") {
  // an unknown Momentum mode is a model error
  CHECK_THROWS_WITH_AS(run_node(optimizer("Momentum", {"r", "t", "x", "g", "v"}, {"xn", "vn"},
                                          {attr("alpha", 0.5f), attr("beta", 0.25f), attr("norm_coefficient", 0.0f),
                                           attr("mode", "heavy")}),
                                {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(0), tensor<float>({1}, {1}),
                                 tensor<float>({1}, {2}), tensor<float>({1}, {1})},
                                1),
                       doctest::Contains("mode must be"), Error);
  // a gradient whose shape differs from X
  CHECK_THROWS_WITH_AS(run_node(optimizer("Adagrad", {"r", "t", "x", "g", "h"}, {"xn", "hn"}, {}),
                                {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(0), tensor<float>({1}, {1}),
                                 tensor<float>({2}, {2, 2}), tensor<float>({1}, {1})},
                                1),
                       doctest::Contains("must have the shape and type of X0"), Error);
}
