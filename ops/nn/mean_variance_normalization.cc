// MeanVarianceNormalization (9, 13): Y = (X - mean) / (sqrt(var) + 1e-9), mean and (biased)
// variance over `axes` (default [0, 2, 3]), as the spec's function body computes it.
#include <cmath>

#include "../reduce/reduce_common.h"
#include "nn_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class MeanVarianceNormalization : public OpRun {
 public:
  using Types = Floats;
  explicit MeanVarianceNormalization(const NodeContext& ctx) : axes_(ctx.attr<std::vector<int64_t>>("axes", {0, 2, 3})) {}
  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    visit<Types>(x.dtype(), [&]<class T>() {});
    std::vector<bool> reduced(x.rank(), false);
    for (int64_t a : axes_) {
      const size_t d = normalize_axis(a, x.rank());
      if (reduced[d]) ctx.fail(fmt::format("axis {} is repeated", a));
      reduced[d] = true;
    }
    const ReducePlan p = plan_reduce(x.shape(), reduced, true);
    const std::vector<double> xv = to_doubles(x);
    std::vector<double> mean(size_t(p.out_size), 0.0), var(size_t(p.out_size), 0.0);
    accumulate<double, double>(p, xv.data(), mean, [](double a, double v, int64_t) { return a + v; });
    for (double& m : mean) m /= double(p.group);
    accumulate<double, double>(p, xv.data(), var, [&](double a, double v, int64_t o) {
      const double d = v - mean[size_t(o)];
      return a + d * d;
    });
    std::vector<double> y(xv.size());
    for_each_run(p, [&](int64_t i0, int64_t o, int64_t n, int64_t s) {
      for (int64_t k = 0; k < n; ++k) {
        const size_t oi = size_t(o + k * s);
        y[size_t(i0 + k)] = (xv[size_t(i0 + k)] - mean[oi]) / (std::sqrt(var[oi] / double(p.group)) + 1e-9);
      }
    });
    return {from_doubles(x.dtype(), x.shape(), y)};
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

void register_mean_variance_normalization(Registry& reg) {
  reg.add("", "MeanVarianceNormalization", {9, 13}, make<MeanVarianceNormalization>);
}

}  // namespace refeval::ops
