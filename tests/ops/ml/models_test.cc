// ai.onnx.ml models: LinearClassifier, LinearRegressor, SVMClassifier, SVMRegressor,
// TreeEnsembleClassifier, TreeEnsembleRegressor (1 and 3) and TreeEnsemble (5), with scores
// worked out by hand from the spec.
#include <cfloat>
#include <cmath>

#include "ml_test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;

namespace {
using I64s = std::vector<int64_t>;
using F32s = std::vector<float>;
using Strs = std::vector<std::string>;
float sigmoid(float x) { return 1 / (1 + std::exp(-x)); }

struct Case {
  const char* what;
  Node n;
  Tensor x;
  Values expected;
  int64_t opset = 1;
};

void run_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const Values out = run_node(c.n, {c.x}, c.opset);
    REQUIRE(out.size() >= c.expected.size());
    for (size_t i = 0; i < c.expected.size(); ++i) check_equal(out[i], c.expected[i]);
  }
}
}  // namespace

TEST_CASE("linear models") {
  const Tensor x = tensor<float>({2, 2}, {1, 2, -1, 0});
  // scores: class 0 = x0 + 0.5, class 1 = x1 - 1  -> row 0: [1.5, 1], row 1: [-0.5, -1]
  const std::vector<Attribute> two = {attr("coefficients", F32s{1, 0, 0, 1}), attr("intercepts", F32s{0.5f, -1})};
  run_cases({
      {"multiclass, string labels", ml_node("LinearClassifier", {"x"}, {"y", "z"}, {two[0], two[1], attr("classlabels_strings", Strs{"a", "b"})}),
       x, {tensor<std::string>({2}, {"a", "a"}), tensor<float>({2, 2}, {1.5f, 1, -0.5f, -1})}},
      {"multiclass with LOGISTIC", ml_node("LinearClassifier", {"x"}, {"y", "z"}, {two[0], two[1], attr("classlabels_ints", I64s{7, 8}), attr("post_transform", "LOGISTIC")}),
       x, {tensor<int64_t>({2}, {7, 7}), tensor<float>({2, 2}, {sigmoid(1.5f), sigmoid(1), sigmoid(-0.5f), sigmoid(-1)})}},
      {"binary: one coefficient row, two labels gives [-s, s]",
       ml_node("LinearClassifier", {"x"}, {"y", "z"}, {attr("coefficients", F32s{1, 1}), attr("classlabels_ints", I64s{0, 1})}),
       x, {tensor<int64_t>({2}, {1, 0}), tensor<float>({2, 2}, {-3, 3, 1, -1})}},
      {"regressor with two targets", ml_node("LinearRegressor", {"x"}, {"y"}, {two[0], two[1], attr("targets", int64_t(2))}),
       x, {tensor<float>({2, 2}, {1.5f, 1, -0.5f, -1})}},
      {"regressor with SOFTMAX", ml_node("LinearRegressor", {"x"}, {"y"}, {two[0], two[1], attr("targets", int64_t(2)), attr("post_transform", "SOFTMAX")}),
       tensor<double>({1, 2}, {1, 2}), {tensor<float>({1, 2}, {sigmoid(0.5f), sigmoid(-0.5f)})}},
  });
}

TEST_CASE("SVM models") {
  run_cases({
      {"SVMRegressor linear", ml_node("SVMRegressor", {"x"}, {"y"}, {attr("coefficients", F32s{2, -1}), attr("rho", F32s{0.5f})}),
       tensor<float>({2, 2}, {1, 1, 0, 3}), {tensor<float>({2, 1}, {1.5f, -2.5f})}},
      {"SVMRegressor RBF with support vectors",
       ml_node("SVMRegressor", {"x"}, {"y"}, {attr("coefficients", F32s{1, -1}), attr("support_vectors", F32s{0, 0, 1, 1}), attr("n_supports", int64_t(2)),
                                              attr("kernel_type", "RBF"), attr("kernel_params", F32s{0.5f, 0, 0}), attr("rho", F32s{0})}),
       tensor<float>({1, 2}, {0, 0}), {tensor<float>({1, 1}, {1 - std::exp(-1.0f)})}},
      {"SVMRegressor one-class", ml_node("SVMRegressor", {"x"}, {"y"}, {attr("coefficients", F32s{1}), attr("rho", F32s{-1}), attr("one_class", int64_t(1))}),
       tensor<float>({2, 1}, {3, 0}), {tensor<float>({2, 1}, {1, -1})}},
      {"SVMClassifier linear, three classes", ml_node("SVMClassifier", {"x"}, {"y", "z"}, {attr("coefficients", F32s{1, 0, 0, 1, -1, -1}), attr("rho", F32s{0, 0, 0}),
                                                                                          attr("classlabels_ints", I64s{1, 2, 3})}),
       tensor<float>({1, 2}, {2, 3}), {tensor<int64_t>({1}, {2}), tensor<float>({1, 3}, {2, 3, -5})}},
      // two classes, one support vector each, linear kernel: s = rho + c0 * <x, sv0> + c1 * <x, sv1>
      {"SVMClassifier SVC, two classes", ml_node("SVMClassifier", {"x"}, {"y", "z"}, {attr("coefficients", F32s{1, -1}), attr("support_vectors", F32s{1, 0, 0, 1}),
                                                                                      attr("vectors_per_class", I64s{1, 1}), attr("rho", F32s{0}),
                                                                                      attr("classlabels_strings", Strs{"neg", "pos"})}),
       tensor<float>({2, 2}, {2, 1, 0, 3}), {tensor<std::string>({2}, {"neg", "pos"}), tensor<float>({2, 2}, {-1, 1, 3, -3})}},
  });
}

TEST_CASE("legacy tree ensembles") {
  // one tree: node 0 tests x[0] <= 1 (true -> leaf 1, false -> leaf 2)
  const std::vector<Attribute> tree = {
      attr("nodes_treeids", I64s{0, 0, 0}), attr("nodes_nodeids", I64s{0, 1, 2}), attr("nodes_featureids", I64s{0, 0, 0}),
      attr("nodes_modes", Strs{"BRANCH_LEQ", "LEAF", "LEAF"}), attr("nodes_values", F32s{1, 0, 0}),
      attr("nodes_truenodeids", I64s{1, 0, 0}), attr("nodes_falsenodeids", I64s{2, 0, 0}),
      attr("nodes_missing_value_tracks_true", I64s{1, 0, 0})};
  auto with = [&](std::vector<Attribute> extra) {
    std::vector<Attribute> a = tree;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const Tensor x = tensor<float>({3, 1}, {0.5f, 2, NAN});
  run_cases({
      {"regressor, base value, NaN tracks true",
       ml_node("TreeEnsembleRegressor", {"x"}, {"y"}, with({attr("target_treeids", I64s{0, 0}), attr("target_nodeids", I64s{1, 2}), attr("target_ids", I64s{0, 0}),
                                                             attr("target_weights", F32s{10, 20}), attr("base_values", F32s{1})})),
       x, {tensor<float>({3, 1}, {11, 21, 11})}},
      {"regressor v3 with weights as a tensor, two targets",
       ml_node("TreeEnsembleRegressor", {"x"}, {"y"}, with({attr("target_treeids", I64s{0, 0}), attr("target_nodeids", I64s{1, 2}), attr("target_ids", I64s{0, 1}),
                                                             attr("target_weights_as_tensor", tensor<double>({2}, {1.5, 2.5})), attr("n_targets", int64_t(2))})),
       x, {tensor<float>({3, 2}, {1.5f, 0, 0, 2.5f, 1.5f, 0})}, 3},
      {"classifier, two classes",
       ml_node("TreeEnsembleClassifier", {"x"}, {"y", "z"}, with({attr("class_treeids", I64s{0, 0, 0, 0}), attr("class_nodeids", I64s{1, 1, 2, 2}),
                                                                   attr("class_ids", I64s{0, 1, 0, 1}), attr("class_weights", F32s{0.8f, 0.2f, 0.1f, 0.9f}),
                                                                   attr("classlabels_strings", Strs{"no", "yes"})})),
       x, {tensor<std::string>({3}, {"no", "yes", "no"}), tensor<float>({3, 2}, {0.8f, 0.2f, 0.1f, 0.9f, 0.8f, 0.2f})}},
      {"classifier, binary from one class id",
       ml_node("TreeEnsembleClassifier", {"x"}, {"y", "z"}, with({attr("class_treeids", I64s{0, 0}), attr("class_nodeids", I64s{1, 2}), attr("class_ids", I64s{0, 0}),
                                                                   attr("class_weights", F32s{0.25f, 0.75f}), attr("classlabels_int64s", I64s{0, 1})})),
       x, {tensor<int64_t>({3}, {0, 1, 0}), tensor<float>({3, 2}, {0.75f, 0.25f, 0.25f, 0.75f, 0.75f, 0.25f})}},
  });
}

TEST_CASE("TreeEnsemble (opset 5) with set membership and aggregation") {
  // tree 0: node 0 tests x[0] in {1, 3} (true -> leaf 0, false -> leaf 1);
  // tree 1: node 1 tests x[1] < 0.5 (true -> leaf 2, false -> leaf 3).
  auto ensemble = [](int64_t aggregate) {
    return ml_node("TreeEnsemble", {"x"}, {"y"},
                   {attr("nodes_featureids", I64s{0, 1}), attr("nodes_modes", tensor<uint8_t>({2}, {6, 1})),
                    attr("nodes_splits", tensor<float>({2}, {0, 0.5f})), attr("membership_values", tensor<float>({3}, {1, 3, NAN})),
                    attr("nodes_truenodeids", I64s{0, 2}), attr("nodes_falsenodeids", I64s{1, 3}), attr("nodes_trueleafs", I64s{1, 1}),
                    attr("nodes_falseleafs", I64s{1, 1}), attr("leaf_targetids", I64s{0, 0, 0, 1}),
                    attr("leaf_weights", tensor<float>({4}, {1, 2, 4, 8})), attr("tree_roots", I64s{0, 1}), attr("n_targets", int64_t(2)),
                    attr("aggregate_function", aggregate)});
  };
  const Tensor x = tensor<float>({3, 2}, {3, 0, 2, 1, 1, 0.25f});
  run_cases({
      {"SUM", ensemble(1), x, {tensor<float>({3, 2}, {5, 0, 2, 8, 5, 0})}, 5},
      {"AVERAGE", ensemble(0), x, {tensor<float>({3, 2}, {2.5f, 0, 1, 4, 2.5f, 0})}, 5},
      {"MAX", ensemble(3), x, {tensor<float>({3, 2}, {4, -FLT_MAX, 2, 8, 4, -FLT_MAX})}, 5},
  });
  CHECK_THROWS_AS(run_node(ensemble(7), {x}, 5), Error);
}
