// SVMClassifier where ONNX Runtime and the ONNX reference evaluator part, with the reference's
// values (onnx/reference/ops/aionnxml/op_svm_classifier.py, worked by hand or with its formulas
// in numpy); the kernels, votes, Platt probabilities and the other post transforms are checked
// against ORT by the ort-ml_classifiers fixtures (tests/data/ort/make_ml_classifiers.py). Also
// every attribute the node refuses, with the reason.
#include "ml_test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;

namespace {
using I64s = std::vector<int64_t>;
using F32s = std::vector<float>;

Node svm(std::vector<Attribute> attrs) { return ml_node("SVMClassifier", {"x"}, {"y", "z"}, std::move(attrs)); }

void check_outputs(const Node& n, const Tensor& x, const Tensor& labels, const Tensor& scores, Tolerance tol = {}) {
  const Values out = run_node(n, {x}, 1);
  REQUIRE(out.size() == 2);
  check_equal(out[0], labels);
  check_equal(out[1], scores, tol);
}

// Exact up to float rounding: these pin the reference's formulas, not an approximation of them.
const Tolerance kTight{1e-6, 1e-7};
}  // namespace

TEST_CASE("SVMClassifier PROBIT is the reference's inverse-erf approximation of each score") {
  // scores 0.5 + x . coefficients[k] for x = [1, 1]: 0.6, 0.7, 0.3; the reference's probit
  // (Winitzki, a = 0.147) gives 0.253353, 0.524446, -0.524446 (the exact probit: 0.253347, 0.524401).
  const Node n = svm({attr("coefficients", F32s{0.1f, 0, 0, 0.2f, -0.1f, -0.1f}), attr("rho", F32s{0.5f, 0.5f, 0.5f}),
                      attr("classlabels_ints", I64s{1, 2, 3}), attr("post_transform", "PROBIT")});
  check_outputs(n, tensor<float>({1, 2}, {1, 1}), tensor<int64_t>({1}, {2}), tensor<float>({1, 3}, {0.25335297f, 0.52444565f, -0.52444565f}), kTight);
}

TEST_CASE("SVMClassifier with two classes and PROBIT keeps its single pairwise score, as its probit") {
  // s = rho + 1 * <x, [1, 0]> - 1 * <x, [0, 1]> = 0.7 - 0.4 = 0.3 > 0: a vote for the first class.
  const Node n = svm({attr("coefficients", F32s{1, -1}), attr("support_vectors", F32s{1, 0, 0, 1}), attr("vectors_per_class", I64s{1, 1}),
                      attr("rho", F32s{0}), attr("classlabels_ints", I64s{4, 9}), attr("post_transform", "PROBIT")});
  check_outputs(n, tensor<float>({1, 2}, {0.7f, 0.4f}), tensor<int64_t>({1}, {4}), tensor<float>({1, 1}, {-0.5244457f}), kTight);
}

TEST_CASE("SVMClassifier SOFTMAX_ZERO over scores that are all zero writes 0.5") {
  const Node n = svm({attr("coefficients", F32s{1, 0, 0, 1, 1, 1}), attr("rho", F32s{0, 0, 0}), attr("classlabels_ints", I64s{1, 2, 3}),
                      attr("post_transform", "SOFTMAX_ZERO")});
  check_outputs(n, tensor<float>({1, 2}, {0, 0}), tensor<int64_t>({1}, {1}), tensor<float>({1, 3}, {0.5f, 0.5f, 0.5f}));
}

TEST_CASE("SVMClassifier linear with a single rho and three classes labels 1 or 0 by the best score's sign") {
  // libsvm's binary rule as the reference applies it, whatever the class labels: 1 when the best
  // score is positive, else 0. Scores -4 + [x0, x1, -x0 - x1].
  const Node n = svm({attr("coefficients", F32s{1, 0, 0, 1, -1, -1}), attr("rho", F32s{-4}), attr("classlabels_ints", I64s{5, 6, 7})});
  // x = [2, 3]: scores [-2, -1, -9] -> 0; x = [6, 1]: [2, -3, -11] -> 1.
  check_outputs(n, tensor<float>({2, 2}, {2, 3, 6, 1}), tensor<int64_t>({2}, {0, 1}), tensor<float>({2, 3}, {-2, -1, -9, 2, -3, -11}));
}

TEST_CASE("SVMClassifier binary linear with non-negative coefficients takes the second class from a best weight of 0.5") {
  // scores [x0, 0.5 x1]: [2, 0.5] -> the first class scores higher, but its weight 2 >= 0.5 gives
  // the second label; [0.2, 0.1] -> the best weight is under 0.5: the first label.
  const Node n = svm({attr("coefficients", F32s{1, 0, 0, 0.5f}), attr("rho", F32s{0}), attr("classlabels_ints", I64s{10, 20})});
  check_outputs(n, tensor<float>({2, 2}, {2, 1, 0.2f, 0.2f}), tensor<int64_t>({2}, {20, 10}), tensor<float>({2, 2}, {2, 0.5f, 0.2f, 0.1f}));
}

TEST_CASE("SVMClassifier over no rows gives no labels and a score per class") {
  const Node n = svm({attr("coefficients", F32s{1, 0, 0, 1, -1, -1}), attr("rho", F32s{0, 0, 0}), attr("classlabels_ints", I64s{1, 2, 3})});
  check_outputs(n, tensor<float>({0, 2}, {}), tensor<int64_t>({0}, {}), tensor<float>({0, 3}, {}));
}

TEST_CASE("SVMClassifier refuses inconsistent attributes and inputs, saying which") {
  const F32s sv{1, 0, 0, 1};
  const std::vector<std::pair<std::vector<Attribute>, const char*>> bad = {
      {{attr("coefficients", F32s{1, 0}), attr("rho", F32s{0}), attr("post_transform", "SQUASH")}, "post_transform must be"},
      {{attr("coefficients", F32s{1, 0}), attr("rho", F32s{0}), attr("kernel_type", "CUBIC")}, "kernel_type must be"},
      {{attr("coefficients", F32s{1, 0}), attr("rho", F32s{0}), attr("kernel_params", F32s{1, 0})}, "kernel_params must be"},
      {{attr("coefficients", F32s{1, 0}), attr("rho", F32s{0}), attr("classlabels_ints", I64s{1, 2}),
        attr("classlabels_strings", std::vector<std::string>{"a", "b"})},
       "only one of classlabels_ints and classlabels_strings"},
      {{attr("coefficients", F32s{1, 0}), attr("classlabels_ints", I64s{1, 2})}, "rho is required"},
      {{attr("coefficients", F32s{1, 0, 2}), attr("rho", F32s{0}), attr("classlabels_ints", I64s{1, 2})}, "coefficients must be [classes, features]"},
      {{attr("coefficients", F32s{1, -1}), attr("support_vectors", sv), attr("vectors_per_class", I64s{2, -1}), attr("rho", F32s{0}),
        attr("classlabels_ints", I64s{1, 2})},
       "vectors_per_class must not be negative"},
      {{attr("coefficients", F32s{1, -1}), attr("support_vectors", sv), attr("vectors_per_class", I64s{1, 1}), attr("rho", F32s{0}),
        attr("classlabels_ints", I64s{1, 2, 3})},
       "vectors_per_class needs one entry per class"},
      {{attr("coefficients", F32s{1, -1}), attr("support_vectors", F32s{1, 0, 0}), attr("vectors_per_class", I64s{1, 1}), attr("rho", F32s{0}),
        attr("classlabels_ints", I64s{1, 2})},
       "support_vectors does not hold the vectors"},
      {{attr("coefficients", F32s{1, -1, 1}), attr("support_vectors", sv), attr("vectors_per_class", I64s{1, 1}), attr("rho", F32s{0}),
        attr("classlabels_ints", I64s{1, 2})},
       "coefficients must be [classes - 1, vectors]"},
      {{attr("coefficients", F32s{1, -1, 1, 1, -1, 1}), attr("support_vectors", F32s{1, 0, 0, 1, 1, 1}), attr("vectors_per_class", I64s{1, 1, 1}),
        attr("rho", F32s{0, 0}), attr("classlabels_ints", I64s{1, 2, 3})},
       "rho needs one value per class pair"},
  };
  for (const auto& [attrs, reason] : bad) {
    const std::string why = reason;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(why);
    CHECK_THROWS_WITH_AS(run_node(svm(attrs), {tensor<float>({1, 2}, {1, 1})}, 1), doctest::Contains(reason), Error);
  }
  const Node linear = svm({attr("coefficients", F32s{1, 0, 0, 1}), attr("rho", F32s{0}), attr("classlabels_ints", I64s{1, 2})});
  CHECK_THROWS_WITH_AS(run_node(linear, {tensor<float>({1, 3}, {1, 1, 1})}, 1), doctest::Contains("coefficients have 2 features, input has 3"), Error);
  CHECK_THROWS_WITH_AS(run_node(linear, {tensor<float>({1, 1, 2}, {1, 1})}, 1), doctest::Contains("input must be [N, C] or [C], got (1, 1, 2)"), Error);
  const Node svc = svm({attr("coefficients", F32s{1, -1}), attr("support_vectors", sv), attr("vectors_per_class", I64s{1, 1}), attr("rho", F32s{0}),
                        attr("classlabels_ints", I64s{1, 2})});
  CHECK_THROWS_WITH_AS(run_node(svc, {tensor<float>({1, 3}, {1, 1, 1})}, 1), doctest::Contains("support vectors have 2 features, input has 3"), Error);
  // Platt probabilities need prob_a and prob_b for every class pair (three here).
  const Node short_proba = svm({attr("coefficients", F32s{1, -1, 1, 1, -1, 1}), attr("support_vectors", F32s{1, 0, 0, 1, 1, 1}),
                                attr("vectors_per_class", I64s{1, 1, 1}), attr("rho", F32s{0, 0, 0}), attr("classlabels_ints", I64s{1, 2, 3}),
                                attr("prob_a", F32s{1}), attr("prob_b", F32s{0})});
  CHECK_THROWS_WITH_AS(run_node(short_proba, {tensor<float>({1, 2}, {1, 1})}, 1), doctest::Contains("prob_a / prob_b too short"), Error);
}
