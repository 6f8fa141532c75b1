// SVMRegressor: with n_supports > 0, s = sum_j coefficients[j] * K(x, support_vectors[j]) + rho[0];
// otherwise (linear) s = x . coefficients + rho[0]. one_class = 1 gives 1 if s > 0 else -1.
// Then the post transform. Output Y float [N, 1].
#include "svm_common.h"

namespace refeval::ops {
namespace {

class SVMRegressor : public OpRun {
 public:
  using Types = MlNumeric;
  explicit SVMRegressor(const NodeContext& ctx)
      : kernel_(ctx),
        coef_(ctx.attr<std::vector<float>>("coefficients", {})),
        sv_(ctx.attr<std::vector<float>>("support_vectors", {})),
        rho_(ctx.attr<std::vector<float>>("rho", {})),
        n_supports_(ctx.attr<int64_t>("n_supports", 0)),
        one_class_(ctx.attr<int64_t>("one_class", 0) != 0),
        post_(post_transform_attr(ctx)) {
    if (n_supports_ < 0) ctx.fail("n_supports must not be negative");
    if (n_supports_ > 0 && int64_t(coef_.size()) != n_supports_) ctx.fail("need one coefficient per support vector");
    if (n_supports_ > 0 && sv_.size() % size_t(n_supports_) != 0) ctx.fail("support_vectors does not hold n_supports vectors");
  }
  Values run(const Values& in, RunContext&) override {
    const Rows r = read_rows<Types>(input_tensor(in, 0));
    const double rho = rho_.empty() ? 0.0 : rho_[0];
    std::vector<double> y(size_t(r.n));
    for (int64_t n = 0; n < r.n; ++n) {
      double s = 0;
      if (n_supports_ > 0) {
        const int64_t f = int64_t(sv_.size()) / n_supports_;
        if (f != r.c) fail_runtime(fmt::format("support vectors have {} features, input has {}", f, r.c));
        for (int64_t j = 0; j < n_supports_; ++j) s += coef_[j] * kernel_(r.row(n), sv_.data() + j * f, f, kernel_.type);
      } else {
        if (int64_t(coef_.size()) != r.c) fail_runtime(fmt::format("{} coefficients for {} features", coef_.size(), r.c));
        s = kernel_(r.row(n), coef_.data(), r.c, SvmKernel::Type::Linear);
      }
      s += rho;
      y[n] = one_class_ ? (s > 0 ? 1.0 : -1.0) : s;
      apply_post_transform(&y[n], 1, post_);
    }
    return {float_tensor({r.n, 1}, y)};
  }

 private:
  SvmKernel kernel_;
  std::vector<float> coef_, sv_, rho_;
  int64_t n_supports_;
  bool one_class_;
  PostTransform post_;
};

}  // namespace

void register_svm_regressor(Registry& reg) { reg.add(kMl, "SVMRegressor", {1}, make<SVMRegressor>); }

}  // namespace refeval::ops
