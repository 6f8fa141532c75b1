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
    Tensor y(x.dtype(), pool_output_shape(g));
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const int64_t in_n = g.in_size(), out_n = g.out_size();
      for (int64_t p = 0; p < g.N * g.C; ++p) {
        const T* plane = px + p * in_n;
        T* out = py + p * out_n;
        for_each_window(g, [&](int64_t o, const std::vector<int64_t>& taps, int64_t padded) {
          double sum = 0;
          for (int64_t t : taps) sum += double(plane[t]);
          const int64_t count = count_include_pad_ ? padded : int64_t(taps.size());
          out[o] = from_compute<T>(compute_t<T>(count > 0 ? sum / double(count) : 0.0));
        });
      }
    });
    return {y};
  }

 private:
  PoolAttrs attrs_;
  bool count_include_pad_;
};

}  // namespace

void register_average_pool(Registry& reg) { reg.add("", "AveragePool", {1, 7, 10, 11, 19, 22}, make<AveragePool>); }

}  // namespace refeval::ops
