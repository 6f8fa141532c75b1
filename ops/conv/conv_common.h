// Helpers of the conv family: the attributes shared by Conv, ConvInteger, QLinearConv and
// DeformConv (auto_pad, pads, strides, dilations, group, kernel_shape), the output geometry they
// imply, and the im2col / col2im kernels the fast paths are built on.
//
// Geometry of a convolution over D spatial dims: output position o and kernel tap k read the
// input at  i = o * stride - pad_begin + k * dilation  (outside [0, in) is padding).
#pragma once

#include <algorithm>

#include <cstdint>
#include <string>
#include <vector>

#include "refeval/op_run.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// Attributes of the convolution ops, read once in the op's constructor.
struct ConvAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> pads, strides, dilations, kernel_shape;  // empty: defaults
  int64_t group = 1;
  explicit ConvAttrs(const NodeContext& ctx, bool has_auto_pad = true);  // DeformConv has no auto_pad
};

struct ConvGeometry {
  int64_t N = 0, C = 0, M = 0, group = 1;  // batch, input channels, output channels
  Shape in, kernel, out;                   // spatial sizes
  std::vector<int64_t> strides, dilations, pad_begin, pad_end;
  int64_t in_size() const;      // product of `in`
  int64_t kernel_size() const;  // product of `kernel`
  int64_t out_size() const;     // product of `out`
};

// The geometry of Conv: x is [N, C, in...], w is [M, C/group, kernel...]. Checks shapes and
// attributes (fail_runtime on mismatch).
ConvGeometry conv_geometry(const ConvAttrs& a, const Shape& x, const Shape& w);

// Output size and pads of one spatial dim for the auto_pad modes (shared with pooling):
// SAME_* gives ceil(in / stride) with the total padding split (extra at the end for SAME_UPPER,
// at the beginning for SAME_LOWER); VALID gives no padding; NOTSET keeps the given pads.
void resolve_auto_pad(const std::string& auto_pad, int64_t in, int64_t stride, int64_t effective_kernel,
                      int64_t& pad_begin, int64_t& pad_end);

// im2col over one image's `channels` channels: col is [channels * kernel_size, out_size],
// row (c, k...) holding the input value each output position reads (`pad` outside the input).
template <class T>
void im2col(const ConvGeometry& g, int64_t channels, const T* x, T* col, T pad);
// Depthwise 2-D convolution (group = C = M) straight from x into y, which must be zeroed
// (conv_depthwise.cc); false, doing nothing, for any other convolution.
template <class T>
bool conv_depthwise_2d(const ConvGeometry& g, const T* x, const T* w, T* y);
// col2im: the adjoint, adding each column entry into the input position it came from
// (entries that fall into padding are dropped). x must be zero-initialised by the caller.
template <class T>
void col2im(const ConvGeometry& g, int64_t channels, const T* col, T* x);

// Walks the output positions of one kernel tap: for every run of the innermost output dim,
// f(col_offset, in_offset_or_-1_for_padding, count, in_stride) where the `count` outputs from
// col_offset read the input from in_offset with in_stride (or all padding when in_offset < 0).
// Positions in a run are split so each run is either all inside or all padding.
template <class F>
void for_each_tap_run(const ConvGeometry& g, const int64_t* k, F&& f) {
  const size_t D = g.in.size();
  if (D == 0) { f(int64_t(0), int64_t(0), int64_t(1), int64_t(0)); return; }
  const int64_t outer_count = [&] { int64_t p = 1; for (size_t d = 0; d + 1 < D; ++d) p *= g.out[d]; return p; }();
  const size_t L = D - 1;
  const int64_t on = g.out[L], in_n = g.in[L], s = g.strides[L];
  const int64_t base = k[L] * g.dilations[L] - g.pad_begin[L];  // input index at o = 0
  // o range with 0 <= o*s + base < in_n
  int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
  int64_t hi = base >= in_n ? 0 : (in_n - 1 - base) / s + 1;
  if (hi > on) hi = on;
  if (lo > hi) lo = hi;
  std::vector<int64_t> o(L, 0);
  for (int64_t r = 0; r < outer_count; ++r) {
    bool inside = true;
    int64_t in_off = 0;
    for (size_t d = 0; d < L; ++d) {
      const int64_t i = o[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
      if (i < 0 || i >= g.in[d]) inside = false;
      in_off = in_off * g.in[d] + i;
    }
    const int64_t col_off = r * on;
    if (!inside) {
      if (on > 0) f(col_off, int64_t(-1), on, int64_t(0));
    } else {
      in_off *= in_n;
      if (lo > 0) f(col_off, int64_t(-1), lo, int64_t(0));
      if (hi > lo) f(col_off + lo, in_off + lo * s + base, hi - lo, s);
      if (on > hi) f(col_off + hi, int64_t(-1), on - hi, int64_t(0));
    }
    for (size_t d = L; d-- > 0;) {
      if (++o[d] < g.out[d]) break;
      o[d] = 0;
    }
  }
}

// Calls f(k) for every kernel tap (multi-index k, row-major).
template <class F>
void for_each_tap(const ConvGeometry& g, F&& f) {
  const size_t D = g.kernel.size();
  std::vector<int64_t> k(D, 0);
  const int64_t n = g.kernel_size();
  for (int64_t t = 0; t < n; ++t) {
    f(k.data());
    for (size_t d = D; d-- > 0;) {
      if (++k[d] < g.kernel[d]) break;
      k[d] = 0;
    }
  }
}

// dst[i] = src[i * stride] for i < n: the strided rows of im2col_2d (float's overload gathers a
// stride of 2 sixteen at a time on AVX-512, conv_common.cc).
template <class T>
void copy_strided(const T* src, int64_t n, int64_t stride, T* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
}
void copy_strided(const float* src, int64_t n, int64_t stride, float* dst);

// im2col of a 2-D convolution, row by row of each tap's output plane with the bounds worked out
// once per tap: the general walk below allocated per tap and moved runs of a few elements through
// a callback (14.6% of ResNet-18's time on AVX-512, where the matrix is written out).
template <class T>
void im2col_2d(const ConvGeometry& g, int64_t channels, const T* x, T* col, T pad) {
  const int64_t ih_n = g.in[0], iw_n = g.in[1], oh_n = g.out[0], ow_n = g.out[1];
  const int64_t sh = g.strides[0], sw = g.strides[1];
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * ih_n * iw_n;
    for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
      for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
        const int64_t h0 = kh * g.dilations[0] - g.pad_begin[0], w0 = kw * g.dilations[1] - g.pad_begin[1];
        // Output columns [lo, hi) read inside the row: 0 <= ow * sw + w0 < iw_n.
        const int64_t lo = std::min(ow_n, w0 >= 0 ? int64_t(0) : (-w0 + sw - 1) / sw);
        const int64_t hi = std::max(lo, std::min(ow_n, w0 >= iw_n ? int64_t(0) : (iw_n - 1 - w0) / sw + 1));
        for (int64_t oh = 0; oh < oh_n; ++oh, col += ow_n) {
          const int64_t ih = oh * sh + h0;
          if (ih < 0 || ih >= ih_n) {
            std::fill(col, col + ow_n, pad);
            continue;
          }
          std::fill(col, col + lo, pad);
          const T* row = xc + ih * iw_n;
          if (sw == 1) std::copy(row + lo + w0, row + hi + w0, col + lo);
          else copy_strided(row + lo * sw + w0, hi - lo, sw, col + lo);
          std::fill(col + hi, col + ow_n, pad);
        }
      }
  }
}

template <class T>
void im2col(const ConvGeometry& g, int64_t channels, const T* x, T* col, T pad) {
  if (g.in.size() == 2) return im2col_2d(g, channels, x, col, pad);
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * in_size;
    for_each_tap(g, [&](const int64_t* k) {
      T* row = col;
      for_each_tap_run(g, k, [&](int64_t co, int64_t io, int64_t n, int64_t st) {
        T* dst = row + co;
        if (io < 0) {
          for (int64_t j = 0; j < n; ++j) dst[j] = pad;
        } else if (st == 1) {
          const T* src = xc + io;
          for (int64_t j = 0; j < n; ++j) dst[j] = src[j];
        } else {
          const T* src = xc + io;
          for (int64_t j = 0; j < n; ++j) dst[j] = src[j * st];
        }
      });
      col += out_size;
    });
  }
}

template <class T>
void col2im(const ConvGeometry& g, int64_t channels, const T* col, T* x) {
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  for (int64_t c = 0; c < channels; ++c) {
    T* xc = x + c * in_size;
    for_each_tap(g, [&](const int64_t* k) {
      const T* row = col;
      for_each_tap_run(g, k, [&](int64_t co, int64_t io, int64_t n, int64_t st) {
        if (io < 0) return;
        const T* src = row + co;
        T* dst = xc + io;
        for (int64_t j = 0; j < n; ++j) dst[j * st] += src[j];
      });
      col += out_size;
    });
  }
}

// The float convolution as conv_by_gemm's product, Y_g = W_g * col per image and group, on
// refeval's in-order AVX2 or AVX-512 kernel (gemm_panels) with the im2col matrix never written
// out: each 256 x 96 panel of it is gathered from X into the kernel's strips just before they are
// read (conv_panels.cc). Each output is one chain of fused multiply-adds over (channel, tap) in
// order from zero; without AVX-512 that is also conv_by_gemm's bits through gemm(). false, doing
// nothing, for small products (gemm() takes Eigen), CPUs without AVX2, 0-D convolutions and,
// without AVX-512, where gemm() reads X directly (1x1 kernels, unit strides, no padding). With b,
// Y gets b added, each output its sum plus b[m], by the thread that computed it.
bool conv_by_panels(const ConvGeometry& g, const float* x, const float* w, const float* b, float* y);

// Floor division (Python's //), for padding arithmetic that may be negative.
inline int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// The GEMM formulation of a convolution: per image and group, im2col then
// Y_g [M/group, out] = W_g [M/group, C/group * K] * col. `mm(M, N, K, a, b, c)` computes the
// row-major product c = a * b. Padding reads as 0. A 1x1 kernel with unit strides and no
// padding multiplies X directly.
template <class T, class MatMul>
void conv_by_gemm(const ConvGeometry& g, const T* x, const T* w, T* y, MatMul&& mm) {
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group, K = g.kernel_size(), in_n = g.in_size(), out_n = g.out_size();
  bool direct = true;
  for (size_t d = 0; d < g.in.size(); ++d)
    direct = direct && g.kernel[d] == 1 && g.strides[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  // im2col writes every entry: the matrix (7 MB in ResNet-18's first layers) is not zeroed first,
  // and as a tensor it reuses a freed buffer of its size instead of faulting in fresh pages.
  Tensor col = direct ? Tensor() : Tensor::uninitialized(dtype_of<T>, {Cg * K * out_n});
  T* pc = direct ? nullptr : col.data<T>();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const T* xg = x + (n * g.C + grp * Cg) * in_n;
      if (!direct) im2col(g, Cg, xg, pc, T(0));
      mm(Mg, out_n, Cg * K, w + grp * Mg * Cg * K, direct ? xg : pc, y + (n * g.M + grp * Mg) * out_n);
    }
}

}  // namespace refeval::ops
