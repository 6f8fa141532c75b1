// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: reductions, weights, ignore_index,
// int32 targets, double inputs and bad targets.
#include <cmath>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("NegativeLogLikelihoodLoss: a table of reductions") {
  // x is (N=2, C=3); targets pick -x[0,2] = 3 and -x[1,0] = 4
  const Tensor x = tensor<double>({2, 3}, {-1, -2, -3, -4, -5, -6});
  const Tensor t = tensor<int32_t>({2}, {2, 0});
  const Tensor w = tensor<double>({3}, {0.5, 1, 2});
  struct Case { const char* what; std::vector<Attribute> attrs; bool weighted; Tensor expected; };
  const Case cases[] = {
      {"none", {attr("reduction", "none")}, false, tensor<double>({2}, {3, 4})},
      {"sum", {attr("reduction", "sum")}, false, tensor<double>({}, {7})},
      {"mean", {}, false, tensor<double>({}, {3.5})},
      // weighted mean divides by the weights used: (3*2 + 4*0.5) / 2.5
      {"weighted mean", {}, true, tensor<double>({}, {3.2})},
      // an ignored target contributes nothing, not even its weight
      {"ignore", {attr("ignore_index", int64_t(0))}, true, tensor<double>({}, {3})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const Node n = node("NegativeLogLikelihoodLoss", {"x", "t", c.weighted ? "w" : ""}, {"y"}, c.attrs);
    check_equal(run_node(n, {x, t, c.weighted ? Value(w) : Value()})[0], c.expected);
  }
}

TEST_CASE("NegativeLogLikelihoodLoss: bad targets and attributes") {
  const Tensor x = tensor<float>({1, 2}, {-1, -2});
  CHECK_THROWS_AS(run_node(node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}), {x, tensor<int64_t>({1}, {2})}), Error);
  CHECK_THROWS_AS(run_node(node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}), {x, tensor<int64_t>({2}, {0, 1})}), Error);
  CHECK_THROWS_AS(run_node(node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, {attr("reduction", "max")}), {x, tensor<int64_t>({1}, {0})}), Error);
}

TEST_CASE("SoftmaxCrossEntropyLoss returns the loss and the log-probabilities") {
  // equal scores: log_prob = -log 2 everywhere
  const auto out = run_node(node("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss", "lp"}, {attr("reduction", "sum")}),
                            {tensor<float>({2, 2}, {1, 1, 5, 5}), tensor<int32_t>({2}, {0, 1})});
  const float l2 = float(std::log(2.0));
  check_equal(out[0], tensor<float>({}, {2 * l2}));
  check_equal(out[1], tensor<float>({2, 2}, {-l2, -l2, -l2, -l2}));
  // huge scores stay finite (the maximum is subtracted first)
  const auto big = run_node(node("SoftmaxCrossEntropyLoss", {"s", "l"}, {"loss"}), {tensor<double>({1, 2}, {1000, 0}), tensor<int64_t>({1}, {0})});
  check_equal(big[0], tensor<double>({}, {0}), Tolerance{0, 1e-12});
}
