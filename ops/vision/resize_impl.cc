// The resampling kernel of Resize and Upsample. Each axis is mapped on its own:
//   1. an output index o maps to a fractional input coordinate x (the coordinate transform),
//   2. x picks one input index (nearest) or n weighted neighbours (linear, cubic; more when
//      antialiasing stretches the filter on downsampling),
// and N-D resampling applies the 1-D maps axis after axis, innermost first (it is separable).
// Neighbours outside the input take the edge value, unless exclude_outside drops them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "refeval/elementwise.h"
#include "refeval/limits.h"
#include "refeval/threads.h"
#include "vision_common.h"

namespace refeval::ops {
namespace {

// The input coordinate of output index o.
double original_coordinate(int64_t o, const ResizeAxis& a, double out_width, const ResizeParams& p) {
  const std::string& m = p.coordinate_mode;
  const double x = double(o), in = double(a.in_len);
  if (m == "half_pixel") return (x + 0.5) / a.scale - 0.5;
  if (m == "half_pixel_symmetric") {
    const double adjustment = double(a.out_len) / out_width;
    const double offset = in / 2 * (1 - adjustment);
    return offset + (x + 0.5) / a.scale - 0.5;
  }
  if (m == "pytorch_half_pixel") return a.out_len > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
  if (m == "align_corners") return a.out_len == 1 ? 0.0 : x * (in - 1) / (out_width - 1);
  if (m == "asymmetric") return x / a.scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / a.scale;
  if (m == "tf_crop_and_resize") {
    if (a.out_len == 1) return 0.5 * (a.roi_start + a.roi_end) * (in - 1);
    return a.roi_start * (in - 1) + x * (a.roi_end - a.roi_start) * (in - 1) / (out_width - 1);
  }
  fail_runtime(fmt::format("unknown coordinate_transformation_mode '{}'", m));
}

double cubic_kernel(double t, double A) {
  t = std::abs(t);
  if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0;
}

// The taps of one axis: for output index o, n (index, weight) pairs; extrapolate[o] marks
// coordinates outside the crop box of tf_crop_and_resize.
struct AxisTaps {
  int64_t n = 1;
  std::vector<int64_t> index;  // out_len * n, clamped into [0, in_len)
  std::vector<double> weight;  // out_len * n
  std::vector<bool> extrapolate;
  bool identity = true;
};

AxisTaps make_taps(const ResizeAxis& a, const ResizeParams& p) {
  if (!(a.scale > 0) || !std::isfinite(a.scale)) fail_runtime(fmt::format("resize scale {} must be positive", a.scale));
  AxisTaps t;
  const bool nearest = p.mode == "nearest", cubic = p.mode == "cubic";
  const double s = p.antialias && !nearest ? std::min(a.scale, 1.0) : 1.0;
  const int64_t start = nearest ? 0 : int64_t(std::floor((cubic ? -2.0 : -1.0) / s)) + 1;
  const int64_t n = nearest ? 1 : 2 - 2 * start, pad = n / 2;
  const double out_width = a.out_width > 0 ? a.out_width : double(a.out_len);
  t.n = n;
  t.index.resize(size_t(a.out_len * n));
  t.weight.resize(size_t(a.out_len * n));
  t.extrapolate.assign(size_t(a.out_len), false);
  auto clamp_index = [&](int64_t i) { return std::clamp<int64_t>(i, 0, a.in_len - 1); };
  for (int64_t o = 0; o < a.out_len; ++o) {
    const double x = original_coordinate(o, a, out_width, p);
    if (!std::isfinite(x)) fail_runtime("resize coordinate is not finite");
    int64_t* idx = &t.index[size_t(o * n)];
    double* w = &t.weight[size_t(o * n)];
    if (p.coordinate_mode == "tf_crop_and_resize" && (x < 0 || x > double(a.in_len - 1))) {
      t.extrapolate[size_t(o)] = true;
      t.identity = false;
      std::fill(idx, idx + n, 0);
      std::fill(w, w + n, 0.0);
      continue;
    }
    int64_t xi = int64_t(std::floor(x));
    double r = x - double(xi);
    if (nearest) {
      bool up = false;
      if (r != 0) {
        const std::string& nm = p.nearest_mode;
        if (nm == "round_prefer_floor") up = r > 0.5;
        else if (nm == "round_prefer_ceil") up = r >= 0.5;
        else if (nm == "floor") up = false;
        else if (nm == "ceil") up = true;
        else fail_runtime(fmt::format("unknown nearest_mode '{}'", nm));
      }
      idx[0] = clamp_index(xi + (up ? 1 : 0));
      w[0] = 1;
      if (idx[0] != o || a.in_len != a.out_len) t.identity = false;
      continue;
    }
    if (r == 0) { r = 1; xi -= 1; }  // an exact coordinate sits at the right of its window
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double arg = (double(start + k) - r) * s;
      w[k] = cubic ? cubic_kernel(arg, p.cubic_coeff_a) : std::clamp(1 - std::abs(arg), 0.0, 1.0);
      sum += w[k];
    }
    if (p.antialias) for (int64_t k = 0; k < n; ++k) w[k] /= sum;
    // The window of n neighbours stays within the edge-padded input (pad n/2 each side).
    const int64_t first = std::clamp<int64_t>(xi + start, -pad, a.in_len + pad - n);
    if (p.exclude_outside) {
      double kept = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = first + k;
        if (i < 0 || i >= a.in_len) w[k] = 0;
        kept += w[k];
      }
      if (kept != 0) for (int64_t k = 0; k < n; ++k) w[k] /= kept;
    }
    for (int64_t k = 0; k < n; ++k) {
      idx[k] = clamp_index(first + k);
      if (w[k] != 0 && (idx[k] != o || w[k] != 1)) t.identity = false;
    }
    if (a.in_len != a.out_len) t.identity = false;
  }
  return t;
}

// Nearest: a gather through one index map per axis; works for every element type.
template <class T>
Tensor resize_nearest(const Tensor& x, const std::vector<AxisTaps>& taps, const Shape& out_shape, double extrapolation) {
  Tensor y(x.dtype(), out_shape);
  const size_t r = out_shape.size();
  T fill{};
  if constexpr (std::is_same_v<T, bool>) fill = extrapolation != 0;
  else if constexpr (std::is_arithmetic_v<T> || is_narrow_float_v<T>) fill = from_compute<T>(extrapolation);
  else if constexpr (!std::is_same_v<T, std::string>) fill = T(typename T::value_type(extrapolation));
  std::vector<int64_t> in_strides(r, 1);
  for (size_t d = r; d-- > 1;) in_strides[d - 1] = in_strides[d] * x.dim(d);
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  if (r == 0) {
    dst[0] = src[0];
    return y;
  }
  // Row by row along the last axis: a row's offset and extrapolation are the outer axes' once.
  const size_t last = r - 1;
  const int64_t cols = out_shape[last];
  const std::vector<int64_t>& col_index = taps[last].index;
  std::vector<char> col_extra(taps[last].extrapolate.begin(), taps[last].extrapolate.end());
  std::vector<int64_t> pos(last, 0);
  for (int64_t i = 0; i < y.size(); i += cols) {
    int64_t base = 0;
    bool extra = false;
    for (size_t d = 0; d < last; ++d) {
      extra = extra || taps[d].extrapolate[size_t(pos[d])];
      base += taps[d].index[size_t(pos[d])] * in_strides[d];
    }
    for (int64_t j = 0; j < cols; ++j) dst[i + j] = extra || col_extra[size_t(j)] ? fill : src[base + col_index[size_t(j)]];
    for (size_t d = last; d-- > 0;) {
      if (++pos[d] < out_shape[d]) break;
      pos[d] = 0;
    }
  }
  return y;
}

// One weighted pass along axis d of a dense buffer, computed in double: out = sum over taps k, in
// order, of w_k * in[index_k], starting from 0.0 (so that -0.0 terms give +0.0, whatever the tap
// count). In and Out are double between passes; the first pass reads the input tensor's elements
// and the last writes the output's (store_double), so no pass copies a whole buffer just to
// convert it. Rows of output (one outer index and one output index) are independent: large passes
// split them across threads without changing a bit.
template <class In, class Out>
void resample_axis(const In* in, const Shape& shape, size_t d, const AxisTaps& t, int64_t out_len, double extrapolation,
                   Out* out) {
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < d; ++k) outer *= shape[k];
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  const int64_t in_len = shape[d];
  auto load = [](In v) { return double(compute_t<In>(v)); };
  const int64_t rows = outer * out_len, grain = std::max<int64_t>(1, kParallelElements / (inner * t.n));
  // The innermost axis with two taps of nonzero weight everywhere (linear upsampling): whole input
  // rows at a time, without the per-tap test, so that the loop over outputs runs in vectors
  // (gathers); the same two products in the same order, so the same bits.
  const bool dense = inner == 1 && t.n == 2 &&
                     std::none_of(t.weight.begin(), t.weight.end(), [](double w) { return w == 0; }) &&
                     std::none_of(t.extrapolate.begin(), t.extrapolate.end(), [](bool e) { return e; });
  if (dense) {
    parallel_for(outer, std::max<int64_t>(1, kParallelElements / (2 * out_len)), [&](int64_t begin, int64_t end) {
      const double* w = t.weight.data();
      const int64_t* idx = t.index.data();
      for (int64_t a = begin; a < end; ++a) {
        const In* base = in + a * in_len;
        Out* dst = out + a * out_len;
        for (int64_t o = 0; o < out_len; ++o) {
          double sum = 0.0;
          sum += w[2 * o] * load(base[idx[2 * o]]);
          sum += w[2 * o + 1] * load(base[idx[2 * o + 1]]);
          dst[o] = store_double<Out>(sum);
        }
      }
    });
    return;
  }
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<double> acc(static_cast<size_t>(inner));
    for (int64_t row = begin, a = begin / out_len, o = begin % out_len; row < end; ++row, o = o + 1 == out_len ? (++a, 0) : o + 1) {
      Out* dst = out + row * inner;
      if (t.extrapolate[size_t(o)]) {
        std::fill(dst, dst + inner, store_double<Out>(extrapolation));
        continue;
      }
      const double* w = &t.weight[size_t(o * t.n)];
      const int64_t* idx = &t.index[size_t(o * t.n)];
      const In* base = in + a * in_len * inner;
      if (inner == 1) {
        double sum = 0.0;
        for (int64_t k = 0; k < t.n; ++k)
          if (w[k] != 0) sum += w[k] * load(base[idx[k]]);
        *dst = store_double<Out>(sum);
        continue;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < t.n; ++k) {
        if (w[k] == 0) continue;
        const double wk = w[k];
        const In* src = base + idx[k] * inner;
        for (int64_t j = 0; j < inner; ++j) acc[size_t(j)] += wk * load(src[j]);
      }
      for (int64_t j = 0; j < inner; ++j) dst[j] = store_double<Out>(acc[size_t(j)]);
    }
  });
}

}  // namespace

Tensor resize_tensor(const Tensor& x, const std::vector<ResizeAxis>& axes, const ResizeParams& p) {
  if (axes.size() != x.rank()) fail_runtime("resize: one axis description per dimension is needed");
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    fail_runtime(fmt::format("unknown resize mode '{}'", p.mode));
  Shape out_shape(x.rank()), largest(x.rank());
  for (size_t d = 0; d < axes.size(); ++d) {
    if (axes[d].out_len < 0) fail_runtime("resize: negative output size");
    if (axes[d].in_len == 0 && axes[d].out_len > 0) fail_runtime("resize: cannot resample an empty dimension to a non-empty one");
    out_shape[d] = axes[d].out_len;
    largest[d] = std::max(axes[d].in_len, axes[d].out_len);
  }
  // The result and the axis-by-axis intermediates meet the memory cap before any per-axis tap
  // table of output length is built (an empty result needs none).
  if (shape_size(out_shape) == 0) return Tensor(x.dtype(), out_shape);
  check_scratch(shape_size(largest), sizeof(double), "resize");
  std::vector<AxisTaps> taps;
  for (size_t d = 0; d < axes.size(); ++d) taps.push_back(make_taps(axes[d], p));
  if (p.mode == "nearest") {
    using Types = Concat<Numeric, TypeList<bool, std::string>, Complex>;
    return visit<Types>(x.dtype(), [&]<class T>() { return resize_nearest<T>(x, taps, out_shape, p.extrapolation_value); });
  }
  return visit<Numeric>(x.dtype(), [&]<class T>() {
    std::vector<size_t> passes;  // the axes that resample, innermost first
    for (size_t d = x.rank(); d-- > 0;)
      if (!taps[d].identity) passes.push_back(d);
    Tensor y = Tensor::uninitialized(x.dtype(), out_shape);  // the copy or the last pass writes it all
    if (passes.empty()) {
      std::copy(x.data<T>(), x.data<T>() + x.size(), y.data<T>());
      return y;
    }
    // Doubles between passes; the first reads x, the last writes y.
    Shape shape = x.shape();
    std::unique_ptr<double[]> buf;
    for (size_t i = 0; i < passes.size(); ++i) {
      const size_t d = passes[i];
      const bool first = i == 0, last = i + 1 == passes.size();
      Shape next = shape;
      next[d] = out_shape[d];
      std::unique_ptr<double[]> out;
      if (!last) out = std::make_unique_for_overwrite<double[]>(size_t(shape_size(next)));
      const double e = p.extrapolation_value;
      if (first && last) resample_axis(x.data<T>(), shape, d, taps[d], out_shape[d], e, y.data<T>());
      else if (first) resample_axis(x.data<T>(), shape, d, taps[d], out_shape[d], e, out.get());
      else if (last) resample_axis(buf.get(), shape, d, taps[d], out_shape[d], e, y.data<T>());
      else resample_axis(buf.get(), shape, d, taps[d], out_shape[d], e, out.get());
      buf = std::move(out);
      shape = next;
    }
    return y;
  });
}

}  // namespace refeval::ops
