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
    return {sum_pool(
        x, g, [&](double v) { return std::pow(std::fabs(v), p_); },
        [&](double sum, int64_t, int64_t) { return std::pow(sum, 1.0 / p_); })};
  }

 private:
  PoolAttrs attrs_;
  double p_;
};

}  // namespace

void register_lp_pool(Registry& reg) { reg.add("", "LpPool", {1, 2, 11, 18, 22}, make<LpPool>); }

}  // namespace refeval::ops
