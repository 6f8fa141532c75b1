// RMSNormalization (23): Y = X / sqrt(mean(X^2 over axes axis..rank-1) + epsilon) * scale.
// Attributes axis (-1), epsilon (1e-5), stash_type (1). scale broadcasts unidirectionally to X
// (usually it has the normalised shape X.shape[axis:]; the function body's Mul also allows a
// scale that varies over the leading axes). Y has scale's type. Computed in double, which is at
// least the stash_type precision; stash_type is checked to be a float type. float X with a float
// scale of the normalised shape (the usual case) is read and written in place, no double copies
// of the tensors: each row's sum of squares in four interleaved double partial sums, each value
// scaled in double and rounded once.
#include <cmath>

#include "nn_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class RMSNormalization : public OpRun {
 public:
  using Types = Floats;
  explicit RMSNormalization(const NodeContext& ctx)
      : axis_(ctx.attr<int64_t>("axis", -1)), epsilon_(ctx.attr<float>("epsilon", 1e-5f)) {
    const DType stash = DType(ctx.attr<int64_t>("stash_type", 1));
    if (!Floats::contains(stash)) ctx.fail(fmt::format("stash_type {} is not a floating type", int(stash)));
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& scale = input_tensor(in, 1);
    visit<Types>(x.dtype(), [&]<class T>() {});  // checks X's type
    const size_t axis = normalize_axis(axis_, x.rank());
    const Shape norm_shape(x.shape().begin() + long(axis), x.shape().end());
    const int64_t n = shape_size(norm_shape), outer = n == 0 ? 0 : x.size() / n;
    // A scale no longer than the normalised shape repeats every row; a longer one is expanded to X.
    const bool per_row = scale.rank() <= norm_shape.size();
    if (x.dtype() == DType::Float && scale.dtype() == DType::Float && scale.shape() == norm_shape) {
      Tensor y(DType::Float, x.shape());
      const float *px = x.data<float>(), *ps = scale.data<float>();
      float* py = y.data<float>();
      for (int64_t o = 0; o < outer; ++o) {
        const float* row = px + o * n;
        const double sq = sum_of(n, [&](int64_t j) { return double(row[j]) * double(row[j]); });
        const double inv = 1.0 / std::sqrt(sq / double(n) + double(epsilon_));
        for (int64_t j = 0; j < n; ++j) py[o * n + j] = float(double(row[j]) * inv * double(ps[j]));
      }
      return {y};
    }
    const std::vector<double> s = expand_to(scale, per_row ? norm_shape : x.shape(), "scale"), xv = to_doubles(x);
    std::vector<double> y(xv.size());
    for (int64_t o = 0; o < outer; ++o) {
      double sq = 0;
      for (int64_t j = 0; j < n; ++j) sq += xv[size_t(o * n + j)] * xv[size_t(o * n + j)];
      const double inv = 1.0 / std::sqrt(sq / double(n) + double(epsilon_));
      for (int64_t j = 0; j < n; ++j) y[size_t(o * n + j)] = xv[size_t(o * n + j)] * inv * s[size_t(per_row ? j : o * n + j)];
    }
    return {from_doubles(scale.dtype(), x.shape(), y)};
  }

 private:
  int64_t axis_;
  float epsilon_;
};

}  // namespace

void register_rms_normalization(Registry& reg) { reg.add("", "RMSNormalization", {23}, make<RMSNormalization>); }

}  // namespace refeval::ops
