// LpPool (1, 2, 11, 18, 22): (sum over the window of |x|^p)^(1/p), padding adding nothing. p is a
// float attribute (default 2.0) in version 1 and an int (default 2) from 2; ceil_mode and
// dilations from 18.
#include <cmath>

#include "pool_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class LpPool : public OpRun {
 public:
  using Types = Floats;
  explicit LpPool(const NodeContext& ctx)
      : attrs_(ctx, ctx.since_version() >= 18, ctx.since_version() >= 18),
        p_(ctx.since_version() == 1 ? double(ctx.attr<float>("p", 2.0f)) : double(ctx.attr<int64_t>("p", 2))) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const ConvGeometry g = pool_geometry(attrs_, x.shape());
    Tensor y(x.dtype(), pool_output_shape(g));
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const int64_t in_n = g.in_size(), out_n = g.out_size();
      for (int64_t p = 0; p < g.N * g.C; ++p) {
        const T* plane = px + p * in_n;
        for_each_window(g, [&](int64_t o, const std::vector<int64_t>& taps, int64_t) {
          double sum = 0;
          for (int64_t t : taps) sum += std::pow(std::fabs(double(plane[t])), p_);
          py[p * out_n + o] = from_compute<T>(compute_t<T>(std::pow(sum, 1.0 / p_)));
        });
      }
    });
    return {y};
  }

 private:
  PoolAttrs attrs_;
  double p_;
};

}  // namespace

void register_lp_pool(Registry& reg) { reg.add("", "LpPool", {1, 2, 11, 18, 22}, make<LpPool>); }

}  // namespace refeval::ops
