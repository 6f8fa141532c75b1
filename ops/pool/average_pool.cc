// AveragePool (1, 7, 10, 11, 19, 22): the mean of each window (pool_common.h geometry). Padded taps
// count in the divisor only with count_include_pad=1 (from 7; a window is clipped to the padded
// input, so taps beyond it under ceil_mode never count); ceil_mode from 10, dilations from 19.
#include "pool_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class AveragePool : public OpRun {
 public:
  using Types = Floats;
  explicit AveragePool(const NodeContext& ctx)
      : attrs_(ctx, ctx.since_version() >= 10, ctx.since_version() >= 19),
        count_include_pad_(ctx.since_version() >= 7 && ctx.attr<int64_t>("count_include_pad", 0) != 0) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const ConvGeometry g = pool_geometry(attrs_, x.shape());
    return {sum_pool(x, g, [](double v) { return v; }, [&](double sum, int64_t inside, int64_t padded) {
      const int64_t count = count_include_pad_ ? padded : inside;
      return count > 0 ? sum / double(count) : 0.0;
    })};
  }

 private:
  PoolAttrs attrs_;
  bool count_include_pad_;
};

}  // namespace

void register_average_pool(Registry& reg) { reg.add("", "AveragePool", {1, 7, 10, 11, 19, 22}, make<AveragePool>); }

}  // namespace refeval::ops
