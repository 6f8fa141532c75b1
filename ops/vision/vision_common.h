// Helpers of the vision family: integer inputs read as int64, float inputs read as doubles (from
// the nn family), and the interface of the resampling kernel shared by Resize and Upsample.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../nn/nn_common.h"
#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/registry.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// The values of an integer tensor as int64.
inline std::vector<int64_t> ints_of(const Tensor& t) {
  return visit<TypeList<int32_t, int64_t>>(t.dtype(), [&]<class I>() {
    const I* p = t.data<I>();
    return std::vector<int64_t>(p, p + t.size());
  });
}

// A computed double stored as T: floats round, integers truncate toward zero (as numpy's astype)
// and saturate, NaN gives 0.
template <class T>
T store_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    v = std::trunc(v);
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  } else {
    return from_compute<T>(v);
  }
}

// How one axis is resampled: input and output lengths, the scale of the coordinate transform
// (not always out_len / in_len) and the region of interest (tf_crop_and_resize only).
struct ResizeAxis {
  int64_t in_len = 1, out_len = 1;
  double scale = 1;
  double out_width = 0;  // the fractional output length (scale * in_len) some transforms use; 0: out_len
  double roi_start = 0, roi_end = 1;
};

struct ResizeParams {
  std::string mode = "nearest";                    // nearest, linear, cubic
  std::string coordinate_mode = "half_pixel";      // see resize_impl.cc
  std::string nearest_mode = "round_prefer_floor";  // round_prefer_floor, round_prefer_ceil, floor, ceil
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation_value = 0;
};

// Resamples x (one ResizeAxis per dimension). Nearest works for every element type; linear and
// cubic for numeric types, computed in double.
Tensor resize_tensor(const Tensor& x, const std::vector<ResizeAxis>& axes, const ResizeParams& p);

}  // namespace refeval::ops
