// LinearClassifier and LinearRegressor: scores[n, e] = sum_c x[n, c] * coefficients[e * C + c]
// + intercepts[e], then the post transform per row.
//   LinearClassifier: with one row of coefficients and two class labels the scores become
//   [-s, s] (binary). Labels: argmax of each row (the first maximum); with a single score column,
//   classlabels[0] if the score >= 0 (NONE) or 0.5 (other transforms), else 0 / "".
//   Outputs: Y labels [N] (int64 or string), Z scores [N, E] float.
//   LinearRegressor: `targets` columns; output Y [N, targets] float.
#include <algorithm>

#include "ml_common.h"

namespace refeval::ops {
namespace {

// scores [N, E] from rows of X; checks the coefficient count.
std::vector<double> linear_scores(const Rows& r, const std::vector<float>& coef, const std::vector<float>& icpt,
                                  int64_t& e) {
  if (r.c == 0 || coef.size() % size_t(r.c) != 0)
    fail_runtime(fmt::format("{} coefficients do not divide into rows of {} features", coef.size(), r.c));
  e = int64_t(coef.size()) / r.c;
  if (!icpt.empty() && int64_t(icpt.size()) != e)
    fail_runtime(fmt::format("need {} intercepts, got {}", e, icpt.size()));
  std::vector<double> s(size_t(r.n * e));
  for (int64_t n = 0; n < r.n; ++n)
    for (int64_t k = 0; k < e; ++k) {
      double acc = icpt.empty() ? 0.0 : icpt[k];
      for (int64_t c = 0; c < r.c; ++c) acc += r.row(n)[c] * coef[k * r.c + c];
      s[n * e + k] = acc;
    }
  return s;
}

class LinearClassifier : public OpRun {
 public:
  using Types = MlNumeric;
  explicit LinearClassifier(const NodeContext& ctx)
      : coef_(ctx.required<std::vector<float>>("coefficients")),
        icpt_(ctx.attr<std::vector<float>>("intercepts", {})),
        post_(post_transform_attr(ctx)) {
    labels_.read(ctx, "classlabels_ints", "classlabels_strings");
    if (labels_.size() == 0) ctx.fail("classlabels_ints or classlabels_strings is required");
    ctx.attr<int64_t>("multi_class", 0);  // no effect on the result
  }
  Values run(const Values& in, RunContext&) override {
    const Rows r = read_rows<Types>(input_tensor(in, 0));
    int64_t e = 0;
    std::vector<double> s = linear_scores(r, coef_, icpt_, e);
    if (e == 1 && labels_.size() == 2) {
      std::vector<double> two(size_t(2 * r.n));
      for (int64_t n = 0; n < r.n; ++n) two[2 * n] = -s[n], two[2 * n + 1] = s[n];
      s = std::move(two);
      e = 2;
    }
    std::vector<int64_t> index(size_t(r.n));
    for (int64_t n = 0; n < r.n; ++n) {
      double* row = s.data() + n * e;
      apply_post_transform(row, e, post_);
      if (e > 1) {
        index[n] = int64_t(std::max_element(row, row + e) - row);
        if (size_t(index[n]) >= labels_.size()) fail_runtime("more score columns than class labels");
      }
    }
    Tensor labels;
    if (e > 1) labels = labels_.labels(index);
    else {
      const double th = post_ == PostTransform::None ? 0.0 : 0.5;
      labels = Tensor(labels_.use_strings ? DType::String : DType::Int64, {r.n});
      for (int64_t n = 0; n < r.n; ++n) {
        const bool pos = e == 1 && s[n] >= th;
        if (labels_.use_strings) labels.data<std::string>()[n] = pos ? labels_.strings[0] : "";
        else labels.data<int64_t>()[n] = pos ? labels_.ints[0] : 0;
      }
    }
    return {labels, float_tensor({r.n, e}, s)};
  }

 private:
  std::vector<float> coef_, icpt_;
  PostTransform post_;
  ClassLabels labels_;
};

class LinearRegressor : public OpRun {
 public:
  using Types = MlNumeric;
  explicit LinearRegressor(const NodeContext& ctx)
      : coef_(ctx.attr<std::vector<float>>("coefficients", {})),
        icpt_(ctx.attr<std::vector<float>>("intercepts", {})),
        targets_(ctx.attr<int64_t>("targets", 1)),
        post_(post_transform_attr(ctx)) {
    if (targets_ < 1) ctx.fail("targets must be positive");
  }
  Values run(const Values& in, RunContext&) override {
    const Rows r = read_rows<Types>(input_tensor(in, 0));
    int64_t e = 0;
    std::vector<double> s = linear_scores(r, coef_, icpt_, e);
    if (e != targets_) fail_runtime(fmt::format("coefficients give {} targets, expected {}", e, targets_));
    for (int64_t n = 0; n < r.n; ++n) apply_post_transform(s.data() + n * e, e, post_);
    return {float_tensor({r.n, e}, s)};
  }

 private:
  std::vector<float> coef_, icpt_;
  int64_t targets_;
  PostTransform post_;
};

}  // namespace

void register_linear_models(Registry& reg) {
  reg.add(kMl, "LinearClassifier", {1}, make<LinearClassifier>);
  reg.add(kMl, "LinearRegressor", {1}, make<LinearRegressor>);
}

}  // namespace refeval::ops
