// SVMClassifier, as libsvm and the ONNX reference evaluate it.
//   Linear mode (no vectors_per_class): score[k] = rho[0] + x . coefficients[k, :] per class.
//   SVC mode: kernels K(x, sv_j); for each class pair i < j,
//     s = rho[pair] + coefs[j-1, class i's vectors] . K[class i's vectors]
//                   + coefs[i, class j's vectors] . K[class j's vectors],
//     a vote for i if s > 0 else for j. With prob_a / prob_b the pairwise scores become Platt
//     probabilities coupled into class probabilities (libsvm's multiclass_probability).
// The label is the class with most votes (highest score in linear mode); with a single rho and
// two classes, libsvm's binary rules apply. Scores go through the post transform; a single score
// is widened to two columns as the reference does. Outputs: Y labels [N], Z scores float.
#include <algorithm>

#include "svm_common.h"

namespace refeval::ops {
namespace {

// libsvm's pairwise coupling (Wu, Lin and Weng, method 2) of r[i][j] = P(i | i or j).
std::vector<double> multiclass_probability(int64_t k, const std::vector<double>& r) {
  std::vector<double> q(static_cast<size_t>(k * k)), qp(static_cast<size_t>(k)), p(static_cast<size_t>(k));
  const int64_t max_iter = std::max<int64_t>(100, k);
  const double eps = 0.005 / double(k);
  for (int64_t t = 0; t < k; ++t) {
    p[t] = 1.0 / double(k);
    q[t * k + t] = 0;
    for (int64_t j = 0; j < t; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = q[j * k + t];
    }
    for (int64_t j = t + 1; j < k; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  for (int64_t iter = 0; iter < max_iter; ++iter) {
    double pqp = 0;
    for (int64_t t = 0; t < k; ++t) {
      qp[t] = 0;
      for (int64_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double max_error = 0;
    for (int64_t t = 0; t < k; ++t) max_error = std::max(max_error, std::fabs(qp[t] - pqp));
    if (max_error < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const double diff = (-qp[t] + pqp) / q[t * k + t];
      p[t] += diff;
      pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
  return p;
}

class SVMClassifier : public OpRun {
 public:
  using Types = MlNumeric;
  explicit SVMClassifier(const NodeContext& ctx)
      : kernel_(ctx),
        coef_(ctx.attr<std::vector<float>>("coefficients", {})),
        prob_a_(ctx.attr<std::vector<float>>("prob_a", {})),
        prob_b_(ctx.attr<std::vector<float>>("prob_b", {})),
        rho_(ctx.attr<std::vector<float>>("rho", {})),
        sv_(ctx.attr<std::vector<float>>("support_vectors", {})),
        per_class_(ctx.attr<std::vector<int64_t>>("vectors_per_class", {})),
        post_(post_transform_attr(ctx)) {
    labels_.read(ctx, "classlabels_ints", "classlabels_strings");
    classes_ = std::max<int64_t>(int64_t(labels_.size()), 1);
    for (int64_t c : per_class_) {
      if (c < 0) ctx.fail("vectors_per_class must not be negative");
      start_.push_back(vectors_);
      vectors_ += c;
    }
    if (vectors_ > 0) {
      if (int64_t(per_class_.size()) != classes_) ctx.fail("vectors_per_class needs one entry per class");
      if (sv_.size() % size_t(vectors_) != 0) ctx.fail("support_vectors does not hold the vectors of vectors_per_class");
      if (int64_t(coef_.size()) != (classes_ - 1) * vectors_) ctx.fail("coefficients must be [classes - 1, vectors]");
      if (int64_t(rho_.size()) < classes_ * (classes_ - 1) / 2) ctx.fail("rho needs one value per class pair");
    } else if (coef_.size() % size_t(classes_) != 0) {
      ctx.fail("coefficients must be [classes, features]");
    }
    if (rho_.empty()) ctx.fail("rho is required");
    all_positive_ = coef_.empty() || *std::min_element(coef_.begin(), coef_.end()) >= 0;
  }

  Values run(const Values& in, RunContext&) override {
    const Rows r = read_rows<Types>(input_tensor(in, 0));
    std::vector<int64_t> index(size_t(r.n));
    std::vector<double> all;
    int64_t width = -1;
    for (int64_t n = 0; n < r.n; ++n) {
      std::vector<double> scores, votes;
      bool has_proba = false;
      if (vectors_ == 0) {
        const int64_t f = int64_t(coef_.size()) / classes_;
        if (f != r.c) fail_runtime(fmt::format("coefficients have {} features, input has {}", f, r.c));
        for (int64_t k = 0; k < classes_; ++k)
          scores.push_back(rho_[0] + kernel_(r.row(n), coef_.data() + k * f, f, SvmKernel::Type::Linear));
      } else {
        svc(r, n, scores, votes);
        if (!prob_a_.empty()) {
          scores = probabilities(scores);
          has_proba = true;
        }
      }
      int64_t best;
      double best_weight;
      if (!votes.empty()) best = int64_t(std::max_element(votes.begin(), votes.end()) - votes.begin()), best_weight = votes[best];
      else best = int64_t(std::max_element(scores.begin(), scores.end()) - scores.begin()), best_weight = scores[best];
      int extra = -1;  // how a single score is widened (the reference's add_second_class)
      int64_t label = best;
      if (rho_.size() == 1) {
        if (labels_.size() == 2) {
          extra = 2;
          if (!has_proba && all_positive_ && best_weight >= 0.5) label = 1;
        } else label = best_weight > 0 ? 1 : 0;
      }
      index[n] = label;
      write_scores(scores, extra);
      if (width >= 0 && int64_t(scores.size()) != width) fail_runtime("inconsistent score widths");
      width = int64_t(scores.size());
      all.insert(all.end(), scores.begin(), scores.end());
    }
    if (width < 0) width = classes_;
    Tensor labels;
    if (labels_.use_strings) labels = labels_.labels(index);
    else if (rho_.size() == 1 && labels_.size() != 2) labels = Tensor::from_vector(Shape{r.n}, index);
    else labels = labels_.labels(index);
    return {labels, float_tensor({r.n, width}, all)};
  }

 private:
  void svc(const Rows& r, int64_t n, std::vector<double>& scores, std::vector<double>& votes) const {
    const int64_t f = int64_t(sv_.size()) / vectors_;
    if (f != r.c) fail_runtime(fmt::format("support vectors have {} features, input has {}", f, r.c));
    std::vector<double> k(static_cast<size_t>(vectors_));
    for (int64_t j = 0; j < vectors_; ++j) k[j] = kernel_(r.row(n), sv_.data() + j * f, f, kernel_.type);
    votes.assign(size_t(classes_), 0.0);
    int64_t pair = 0;
    for (int64_t i = 0; i < classes_; ++i)
      for (int64_t j = i + 1; j < classes_; ++j, ++pair) {
        double s = rho_[pair];
        for (int64_t v = 0; v < per_class_[i]; ++v) s += coef_[(j - 1) * vectors_ + start_[i] + v] * k[start_[i] + v];
        for (int64_t v = 0; v < per_class_[j]; ++v) s += coef_[i * vectors_ + start_[j] + v] * k[start_[j] + v];
        scores.push_back(s);
        votes[s > 0 ? i : j] += 1;
      }
  }

  std::vector<double> probabilities(const std::vector<double>& pairwise) const {
    std::vector<double> m(size_t(classes_ * classes_), 0.0);
    int64_t pair = 0;
    for (int64_t i = 0; i < classes_; ++i)
      for (int64_t j = i + 1; j < classes_; ++j, ++pair) {
        if (size_t(pair) >= prob_a_.size() || size_t(pair) >= prob_b_.size()) fail_runtime("prob_a / prob_b too short");
        const double p = 1.0 - logistic(pairwise[pair] * prob_a_[pair] + prob_b_[pair]);
        const double v = std::min(std::max(p, 1e-7), 1 - 1e-7);
        m[i * classes_ + j] = v;
        m[j * classes_ + i] = 1 - v;
      }
    return multiclass_probability(classes_, m);
  }

  void write_scores(std::vector<double>& s, int extra) const {
    if (s.size() >= 2) {
      apply_post_transform(s.data(), int64_t(s.size()), post_);
    } else if (s.size() == 1) {
      if (post_ == PostTransform::Probit) s[0] = probit(s[0]);
      else if (extra == 2) {
        s = {-s[0], s[0]};
        apply_post_transform(s.data(), 2, post_);
      }
    }
  }

  SvmKernel kernel_;
  std::vector<float> coef_, prob_a_, prob_b_, rho_, sv_;
  std::vector<int64_t> per_class_, start_;
  int64_t vectors_ = 0, classes_ = 1;
  bool all_positive_ = true;
  PostTransform post_;
  ClassLabels labels_;
};

}  // namespace

void register_svm_classifier(Registry& reg) { reg.add(kMl, "SVMClassifier", {1}, make<SVMClassifier>); }

}  // namespace refeval::ops
