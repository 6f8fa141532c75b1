// RoiAlign (10, 16, 22): each region of interest [x1, y1, x2, y2] (scaled by spatial_scale) is
// cut into output_height x output_width bins; each bin pools (avg or max) bilinear samples on a
// sampling_ratio x sampling_ratio grid (adaptive, ceil(roi size / bins), when 0). Version 10 has
// no half-pixel shift and stretches regions to at least 1x1 (output_half_pixel).
#include <algorithm>
#include <cmath>

#include "vision_common.h"

namespace refeval::ops {
namespace {

constexpr double kMaxSamplesPerBin = 1 << 24;

class RoiAlign : public OpRun {
 public:
  using Types = Floats;
  explicit RoiAlign(const NodeContext& ctx)
      : mode_(ctx.attr<std::string>("mode", "avg")),
        out_h_(ctx.attr<int64_t>("output_height", 1)),
        out_w_(ctx.attr<int64_t>("output_width", 1)),
        sampling_ratio_(ctx.attr<int64_t>("sampling_ratio", 0)),
        spatial_scale_(ctx.attr<float>("spatial_scale", 1.0f)) {
    if (ctx.since_version() >= 16) {
      const std::string m = ctx.attr<std::string>("coordinate_transformation_mode", "half_pixel");
      if (m != "half_pixel" && m != "output_half_pixel") ctx.fail("unsupported coordinate_transformation_mode " + m);
      half_pixel_ = m == "half_pixel";
    }
    if (mode_ != "avg" && mode_ != "max") ctx.fail("mode must be avg or max, got " + mode_);
    if (out_h_ < 1 || out_w_ < 1) ctx.fail("output_height and output_width must be positive");
    if (sampling_ratio_ < 0) ctx.fail("sampling_ratio must not be negative");
    if (double(sampling_ratio_) * double(sampling_ratio_) > kMaxSamplesPerBin)
      ctx.fail(fmt::format("sampling_ratio {} means more than {} samples per bin", sampling_ratio_, kMaxSamplesPerBin));
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& rois_t = input_tensor(in, 1);
    const Tensor& batch_t = input_tensor(in, 2);
    if (x.rank() != 4) fail_runtime("X must be (N, C, H, W)");
    if (rois_t.rank() != 2 || rois_t.dim(1) != 4) fail_runtime("rois must be (num_rois, 4)");
    if (rois_t.dtype() != x.dtype()) fail_runtime("rois must have the element type of X");
    const std::vector<int64_t> batch = ints_of(batch_t);
    const int64_t num = rois_t.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    if ((height == 0 || width == 0) && num * channels > 0) fail_runtime("cannot pool from an empty image");
    if (int64_t(batch.size()) != num) fail_runtime("batch_indices must have one entry per roi");
    const std::vector<double> xs = to_doubles(x), rois = to_doubles(rois_t);
    std::vector<double> ys(size_t(num * channels * out_h_ * out_w_));
    const double offset = half_pixel_ ? 0.5 : 0.0;
    for (int64_t r = 0; r < num; ++r) {
      if (batch[size_t(r)] < 0 || batch[size_t(r)] >= x.dim(0))
        fail_runtime(fmt::format("batch index {} is out of range", batch[size_t(r)]));
      const double* roi = &rois[size_t(r * 4)];
      const double x0 = roi[0] * spatial_scale_ - offset, y0 = roi[1] * spatial_scale_ - offset;
      double roi_w = roi[2] * spatial_scale_ - offset - x0, roi_h = roi[3] * spatial_scale_ - offset - y0;
      if (!half_pixel_) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
      const double bin_h = roi_h / double(out_h_), bin_w = roi_w / double(out_w_);
      const double adaptive_h = std::ceil(roi_h / double(out_h_)), adaptive_w = std::ceil(roi_w / double(out_w_));
      // An adaptive grid follows the box's size: a huge or non-finite box would mean an unbounded
      // number of samples (a hang) or an undefined conversion, so it is refused instead.
      if (sampling_ratio_ <= 0 && !(adaptive_h * adaptive_w <= kMaxSamplesPerBin))
        fail_runtime(fmt::format("roi {} of size {} x {} needs more than {} samples per bin; give sampling_ratio", r,
                                 roi_h, roi_w, kMaxSamplesPerBin));
      const int64_t grid_h = sampling_ratio_ > 0 ? sampling_ratio_ : int64_t(adaptive_h);
      const int64_t grid_w = sampling_ratio_ > 0 ? sampling_ratio_ : int64_t(adaptive_w);
      const double count = double(std::max<int64_t>(grid_h * grid_w, 1));
      for (int64_t c = 0; c < channels; ++c) {
        const double* plane = &xs[size_t((batch[size_t(r)] * channels + c) * height * width)];
        for (int64_t ph = 0; ph < out_h_; ++ph)
          for (int64_t pw = 0; pw < out_w_; ++pw) {
            double acc = 0;
            bool first = true;
            for (int64_t iy = 0; iy < grid_h; ++iy)
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                const double y = y0 + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(grid_h);
                const double xx = x0 + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(grid_w);
                double terms[4] = {0, 0, 0, 0};
                bilinear_terms(plane, height, width, y, xx, terms);
                if (mode_ == "avg") {
                  acc += terms[0] + terms[1] + terms[2] + terms[3];
                } else {
                  const double m = std::max({terms[0], terms[1], terms[2], terms[3]});
                  acc = first ? m : std::max(acc, m);
                  first = false;
                }
              }
            ys[size_t(((r * channels + c) * out_h_ + ph) * out_w_ + pw)] = mode_ == "avg" ? acc / count : acc;
          }
      }
    }
    return {from_doubles(x.dtype(), {num, channels, out_h_, out_w_}, ys)};
  }

 private:
  // The four weighted corner values of a bilinear sample; all zero outside [-1, size].
  static void bilinear_terms(const double* plane, int64_t height, int64_t width, double y, double x, double t[4]) {
    if (y < -1.0 || y > double(height) || x < -1.0 || x > double(width)) return;
    y = std::max(y, 0.0), x = std::max(x, 0.0);
    int64_t y_lo = int64_t(y), x_lo = int64_t(x), y_hi, x_hi;
    if (y_lo >= height - 1) y_hi = y_lo = height - 1, y = double(y_lo);
    else y_hi = y_lo + 1;
    if (x_lo >= width - 1) x_hi = x_lo = width - 1, x = double(x_lo);
    else x_hi = x_lo + 1;
    const double ly = y - double(y_lo), lx = x - double(x_lo), hy = 1 - ly, hx = 1 - lx;
    t[0] = hy * hx * plane[y_lo * width + x_lo];
    t[1] = hy * lx * plane[y_lo * width + x_hi];
    t[2] = ly * hx * plane[y_hi * width + x_lo];
    t[3] = ly * lx * plane[y_hi * width + x_hi];
  }

  std::string mode_;
  int64_t out_h_, out_w_, sampling_ratio_;
  double spatial_scale_;
  bool half_pixel_ = false;
};

}  // namespace

void register_roi_align(Registry& reg) { reg.add("", "RoiAlign", {10, 16, 22}, make<RoiAlign>); }

}  // namespace refeval::ops
