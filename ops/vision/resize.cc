// Resize (10, 11, 13, 18, 19) and the deprecated Upsample (7, 9): output sizes from scales or
// sizes (with axes and keep_aspect_ratio_policy); the resampling itself is in resize_impl.cc.
// Before Resize-11 the coordinate transform is asymmetric and nearest rounds down.
#include <algorithm>
#include <cmath>
#include <set>

#include "vision_common.h"

namespace refeval::ops {
namespace {

using ResizeTypes = Concat<Numeric, TypeList<bool, std::string>, Complex>;

std::vector<double> doubles_of(const Values& in, size_t i) {
  return has_value(in, i) ? to_doubles(input_tensor(in, i)) : std::vector<double>{};
}

// Output sizes, scales and crop box of every dimension of x.
std::vector<ResizeAxis> plan_axes(const Tensor& x, const std::vector<int64_t>& axes, const std::vector<double>& scales,
                                  const std::vector<int64_t>& sizes, const std::vector<double>& roi,
                                  const std::string& policy, bool crop) {
  const size_t k = axes.size();
  std::vector<ResizeAxis> a(x.rank());
  for (size_t d = 0; d < x.rank(); ++d) a[d].in_len = a[d].out_len = x.dim(d);
  if (!roi.empty()) {
    if (roi.size() != 2 * k) fail_runtime(fmt::format("roi has {} values, expected {}", roi.size(), 2 * k));
    for (size_t i = 0; i < k; ++i) a[size_t(axes[i])].roi_start = roi[i], a[size_t(axes[i])].roi_end = roi[k + i];
  }
  if (!scales.empty() && !sizes.empty()) fail_runtime("only one of scales and sizes may be given");
  if (!scales.empty()) {
    if (scales.size() != k) fail_runtime(fmt::format("scales has {} values, expected {}", scales.size(), k));
    for (size_t i = 0; i < k; ++i) {
      ResizeAxis& r = a[size_t(axes[i])];
      if (!(scales[i] > 0)) fail_runtime(fmt::format("scale {} must be positive", scales[i]));
      r.scale = scales[i];
      r.out_width = double(r.in_len) * r.scale * (crop ? r.roi_end - r.roi_start : 1.0);
      // Checked before the conversion, which is undefined for values beyond int64 (found by fuzzing).
      if (!(r.out_width >= 0 && r.out_width < 0x1p62))
        fail_runtime(fmt::format("scale {} gives an output size of {} along axis {}", scales[i], r.out_width, axes[i]));
      r.out_len = int64_t(std::floor(r.out_width));
    }
    return a;
  }
  if (sizes.empty()) fail_runtime("one of scales and sizes must be given");
  if (sizes.size() != k) fail_runtime(fmt::format("sizes has {} values, expected {}", sizes.size(), k));
  for (size_t i = 0; i < k; ++i) {
    if (sizes[i] < 0) fail_runtime("sizes must not be negative");
    if (a[size_t(axes[i])].in_len == 0) fail_runtime("cannot resize an empty dimension");
  }
  if (policy == "stretch") {
    for (size_t i = 0; i < k; ++i) {
      ResizeAxis& r = a[size_t(axes[i])];
      r.out_len = sizes[i];
      r.out_width = double(sizes[i]);
      r.scale = double(sizes[i]) / double(r.in_len);
    }
    return a;
  }
  double s = policy == "not_larger" ? INFINITY : 0.0;
  for (size_t i = 0; i < k; ++i) {
    const double si = double(sizes[i]) / double(a[size_t(axes[i])].in_len);
    s = policy == "not_larger" ? std::min(s, si) : std::max(s, si);
  }
  for (size_t i = 0; i < k; ++i) {
    ResizeAxis& r = a[size_t(axes[i])];
    r.scale = s;
    r.out_width = s * double(r.in_len);
    if (!(r.out_width >= 0 && r.out_width < 0x1p62))
      fail_runtime(fmt::format("sizes give an output size of {} along axis {}", r.out_width, axes[i]));
    r.out_len = int64_t(std::floor(r.out_width + 0.5));
  }
  return a;
}

std::vector<int64_t> all_axes(size_t rank) {
  std::vector<int64_t> v(rank);
  for (size_t i = 0; i < rank; ++i) v[i] = int64_t(i);
  return v;
}

class Resize : public OpRun {
 public:
  using Types = ResizeTypes;
  explicit Resize(const NodeContext& ctx) : since_(ctx.since_version()) {
    p_.mode = ctx.attr<std::string>("mode", "nearest");
    std::set<std::string> modes{"nearest", "linear"}, coords{"half_pixel", "pytorch_half_pixel", "align_corners",
                                                              "asymmetric", "tf_crop_and_resize"};
    if (since_ == 10) {
      p_.coordinate_mode = "asymmetric";
      p_.nearest_mode = "floor";
    } else {
      modes.insert("cubic");
      if (since_ == 11) coords.insert("tf_half_pixel_for_nn");
      if (since_ >= 19) coords.insert("half_pixel_symmetric");
      p_.coordinate_mode = ctx.attr<std::string>("coordinate_transformation_mode", "half_pixel");
      p_.cubic_coeff_a = ctx.attr<float>("cubic_coeff_a", -0.75f);
      p_.exclude_outside = ctx.attr<int64_t>("exclude_outside", 0) != 0;
      p_.extrapolation_value = ctx.attr<float>("extrapolation_value", 0.0f);
      p_.nearest_mode = ctx.attr<std::string>("nearest_mode", "round_prefer_floor");
      if (!coords.count(p_.coordinate_mode)) ctx.fail("unsupported coordinate_transformation_mode " + p_.coordinate_mode);
      static const std::set<std::string> nearest{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
      if (!nearest.count(p_.nearest_mode)) ctx.fail("unsupported nearest_mode " + p_.nearest_mode);
    }
    if (since_ >= 18) {
      p_.antialias = ctx.attr<int64_t>("antialias", 0) != 0;
      axes_ = ctx.optional_attr<std::vector<int64_t>>("axes");
      policy_ = ctx.attr<std::string>("keep_aspect_ratio_policy", "stretch");
      if (policy_ != "stretch" && policy_ != "not_larger" && policy_ != "not_smaller")
        ctx.fail("unsupported keep_aspect_ratio_policy " + policy_);
    }
    if (!modes.count(p_.mode)) ctx.fail("unsupported mode " + p_.mode);
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    std::vector<int64_t> axes = all_axes(x.rank());
    if (axes_) {
      axes.clear();
      for (int64_t a : *axes_) {
        if (a < -int64_t(x.rank()) || a >= int64_t(x.rank())) fail_runtime(fmt::format("axis {} is out of range", a));
        a = a < 0 ? a + int64_t(x.rank()) : a;
        if (std::find(axes.begin(), axes.end(), a) != axes.end()) fail_runtime("axes must not repeat");
        axes.push_back(a);
      }
    }
    const bool crop = p_.coordinate_mode == "tf_crop_and_resize";
    std::vector<ResizeAxis> plan;
    if (since_ == 10) {
      plan = plan_axes(x, axes, to_doubles(input_tensor(in, 1)), {}, {}, policy_, false);
    } else {
      const std::vector<int64_t> sizes = has_value(in, 3) ? ints_of(input_tensor(in, 3)) : std::vector<int64_t>{};
      plan = plan_axes(x, axes, doubles_of(in, 2), sizes, crop ? doubles_of(in, 1) : std::vector<double>{}, policy_, crop);
    }
    return {resize_tensor(x, plan, p_)};
  }

 private:
  int since_;
  ResizeParams p_;
  std::optional<std::vector<int64_t>> axes_;
  std::string policy_ = "stretch";
};

// Upsample: scales (an attribute in 7, an input from 9), each at least 1.
class Upsample : public OpRun {
 public:
  using Types = ResizeTypes;
  explicit Upsample(const NodeContext& ctx) {
    p_.mode = ctx.attr<std::string>("mode", "nearest");
    if (p_.mode != "nearest" && p_.mode != "linear") ctx.fail("unsupported mode " + p_.mode);
    p_.coordinate_mode = "asymmetric";
    p_.nearest_mode = "floor";
    if (ctx.since_version() == 7) {
      const std::vector<float> s = ctx.required<std::vector<float>>("scales");
      scales_ = std::vector<double>(s.begin(), s.end());
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const std::vector<double> scales = scales_ ? *scales_ : to_doubles(input_tensor(in, 1));
    for (double s : scales)
      if (!(s >= 1)) fail_runtime(fmt::format("Upsample scale {} must be at least 1", s));
    return {resize_tensor(x, plan_axes(x, all_axes(x.rank()), scales, {}, {}, "stretch", false), p_)};
  }

 private:
  ResizeParams p_;
  std::optional<std::vector<double>> scales_;
};

}  // namespace

void register_resize(Registry& reg) {
  reg.add("", "Resize", {10, 11, 13, 18, 19}, make<Resize>);
  reg.add("", "Upsample", {7, 9}, make<Upsample>);
}

}  // namespace refeval::ops
