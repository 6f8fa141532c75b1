// MaxRoiPool (1, 22): for each region of interest r = (batch, x1, y1, x2, y2) (input coordinates,
// scaled by spatial_scale and rounded), Y[r, c] is pooled_shape bins of the region, each the
// maximum of X[batch, c] over the bin (0 for an empty bin). Bin i of a region of size L covers
// [floor(i * L / P), ceil((i + 1) * L / P)) from its start, clipped to the input.
#include <cmath>

#include <fmt/format.h>

#include "pool_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class MaxRoiPool : public OpRun {
 public:
  using Types = Floats;
  explicit MaxRoiPool(const NodeContext& ctx)
      : pooled_(ctx.required<std::vector<int64_t>>("pooled_shape")), scale_(ctx.attr<float>("spatial_scale", 1.0f)) {
    if (pooled_.size() != 2 || pooled_[0] < 1 || pooled_[1] < 1) ctx.fail("pooled_shape must be two positive values");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& rois = input_tensor(in, 1);
    if (x.rank() != 4) ctx.fail("X must be [N, C, H, W]");
    if (rois.dtype() != x.dtype() || rois.rank() != 2 || rois.dim(1) != 5) ctx.fail("rois must be [num_rois, 5] of X's type");
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), R = rois.dim(0), PH = pooled_[0], PW = pooled_[1];
    Tensor y(x.dtype(), {R, C, PH, PW});
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      const T* pr = rois.data<T>();
      T* py = y.data<T>();
      for (int64_t r = 0; r < R; ++r) {
        const int64_t b = int64_t(double(pr[r * 5]));
        if (b < 0 || b >= N) fail_runtime(fmt::format("roi {} names batch {} of {}", r, b, N));
        auto at = [&](int k) { return int64_t(std::round(double(pr[r * 5 + k]) * double(scale_))); };
        const int64_t x1 = at(1), y1 = at(2), x2 = at(3), y2 = at(4);
        const int64_t rh = std::max<int64_t>(y2 - y1 + 1, 1), rw = std::max<int64_t>(x2 - x1 + 1, 1);
        const double bh = double(rh) / double(PH), bw = double(rw) / double(PW);
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = px + (b * C + c) * H * W;
          for (int64_t i = 0; i < PH; ++i)
            for (int64_t j = 0; j < PW; ++j) {
              const int64_t hs = std::clamp<int64_t>(int64_t(std::floor(double(i) * bh)) + y1, 0, H);
              const int64_t he = std::clamp<int64_t>(int64_t(std::ceil(double(i + 1) * bh)) + y1, 0, H);
              const int64_t ws = std::clamp<int64_t>(int64_t(std::floor(double(j) * bw)) + x1, 0, W);
              const int64_t we = std::clamp<int64_t>(int64_t(std::ceil(double(j + 1) * bw)) + x1, 0, W);
              double m = 0;
              bool any = false;
              for (int64_t h = hs; h < he; ++h)
                for (int64_t w = ws; w < we; ++w) {
                  const double v = double(plane[h * W + w]);
                  if (!any || v > m) m = v, any = true;
                }
              py[((r * C + c) * PH + i) * PW + j] = from_compute<T>(compute_t<T>(any ? m : 0.0));
            }
        }
      }
    });
    return {y};
  }

 private:
  std::vector<int64_t> pooled_;
  float scale_;
};

}  // namespace

void register_max_roi_pool(Registry& reg) { reg.add("", "MaxRoiPool", {1, 22}, make<MaxRoiPool>); }

}  // namespace refeval::ops
