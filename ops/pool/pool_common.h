// Helpers of the pool family: the attributes of the windowed pools (AveragePool, MaxPool, LpPool),
// their output geometry, a window walker and the summing pool AveragePool and LpPool share.
//
// Output size per spatial axis, ek = (kernel - 1) * dilation + 1 the dilated kernel extent:
//   NOTSET: floor or, with ceil_mode, ceil((in + pad_begin + pad_end - ek) / stride) + 1, where a
//           last window that would start in the end padding is dropped (ceil_mode only);
//   VALID:  floor((in - ek) / stride) + 1, no padding;
//   SAME_UPPER / SAME_LOWER: ceil(in / stride), the needed padding split as for Conv.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../conv/conv_common.h"
#include "../conv/phase_planes.h"
#include "refeval/dispatch.h"
#include "refeval/op_run.h"

namespace refeval::ops {

struct PoolAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel_shape, pads, strides, dilations;
  bool ceil_mode = false;
  // Reads the attributes every windowed pool has; ceil_mode and dilations only when the op's
  // version defines them (the caller says).
  PoolAttrs(const NodeContext& ctx, bool has_ceil_mode, bool has_dilations);
};

// The geometry (ConvGeometry with M = C, group = C and kernel = kernel_shape) of pooling x.
ConvGeometry pool_geometry(const PoolAttrs& a, const Shape& x);

// Output shape [N, C, out...].
Shape pool_output_shape(const ConvGeometry& g);

// Calls f(out_index, taps, padded_count) for every output position of one (n, c) plane, in
// row-major order: taps lists the input offsets (within the plane) of the window's taps that
// fall inside the input, padded_count counts the taps inside the padded input
// [-pad_begin, in + pad_end) on every axis (the count_include_pad divisor).
template <class F>
void for_each_window(const ConvGeometry& g, F&& f) {
  const size_t D = g.in.size();
  const int64_t out_n = g.out_size(), K = g.kernel_size();
  std::vector<int64_t> o(D, 0), k(D, 0), taps;
  taps.reserve(size_t(K));
  for (int64_t oi = 0; oi < out_n; ++oi) {
    taps.clear();
    int64_t padded = 0;
    std::fill(k.begin(), k.end(), 0);
    for (int64_t t = 0; t < K; ++t) {
      bool inside = true, in_padded = true;
      int64_t off = 0;
      for (size_t d = 0; d < D; ++d) {
        const int64_t i = o[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
        if (i < 0 || i >= g.in[d]) inside = false;
        if (i < -g.pad_begin[d] || i >= g.in[d] + g.pad_end[d]) in_padded = false;
        off = off * g.in[d] + i;
      }
      if (inside) taps.push_back(off);
      if (in_padded) ++padded;
      for (size_t d = D; d-- > 0;) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
    f(oi, taps, padded);
    for (size_t d = D; d-- > 0;) {
      if (++o[d] < g.out[d]) break;
      o[d] = 0;
    }
  }
}

// Per output position along one spatial axis d: how many of its window's taps fall inside the
// input [0, in) and inside the padded input [-pad_begin, in + pad_end).
inline void axis_tap_counts(const ConvGeometry& g, size_t d, std::vector<int64_t>& inside, std::vector<int64_t>& padded) {
  inside.assign(size_t(g.out[d]), 0);
  padded.assign(size_t(g.out[d]), 0);
  for (int64_t o = 0; o < g.out[d]; ++o)
    for (int64_t k = 0; k < g.kernel[d]; ++k) {
      const int64_t i = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
      inside[size_t(o)] += i >= 0 && i < g.in[d];
      padded[size_t(o)] += i >= -g.pad_begin[d] && i < g.in[d] + g.pad_end[d];
    }
}

// A floating pool that sums term(x) over the taps of each window inside the input, in double,
// and writes finish(sum, taps_inside, taps_in_padded_input) rounded once to x's type:
// AveragePool is term x, finish sum / count; LpPool is term |x|^p, finish sum^(1/p).
// 2-D pools add one tap at a time over all outputs of a channel (phase_planes.h; the window
// walker took 30 ms for a 3 x 3 pool of 256 x 28 x 28, ONNX Runtime 7): padding reads -0.0, which
// leaves every sum as the walker's sum of the inside taps (from +0.0, in the same order), bit for bit.
template <class Term, class Finish>
Tensor sum_pool(const Tensor& x, const ConvGeometry& g, Term term, Finish finish) {
  Tensor y(x.dtype(), pool_output_shape(g));
  visit<Floats>(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t in_n = g.in_size(), out_n = g.out_size();
    if (g.in.size() == 2) {
      std::vector<int64_t> in_h, pad_h, in_w, pad_w;
      axis_tap_counts(g, 0, in_h, pad_h);
      axis_tap_counts(g, 1, in_w, pad_w);
      PhasePlanes<double> planes;
      std::vector<double> terms(static_cast<size_t>(in_n)), sum;
      for (int64_t p = 0; p < g.N * g.C; ++p) {
        for (int64_t i = 0; i < in_n; ++i) terms[size_t(i)] = term(double(px[p * in_n + i]));
        planes.build(g, terms.data(), -0.0);
        sum.assign(size_t(planes.length()), 0.0);
        for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
            const double* tap = planes.tap(kh, kw);
            for (int64_t i = 0; i < planes.length(); ++i) sum[size_t(i)] += tap[i];
          }
        T* out = py + p * out_n;
        for (int64_t oh = 0; oh < g.out[0]; ++oh)
          for (int64_t ow = 0; ow < g.out[1]; ++ow)
            out[oh * g.out[1] + ow] = from_compute<T>(compute_t<T>(finish(
                sum[size_t(oh * planes.width() + ow)], in_h[size_t(oh)] * in_w[size_t(ow)], pad_h[size_t(oh)] * pad_w[size_t(ow)])));
      }
      return;
    }
    for (int64_t p = 0; p < g.N * g.C; ++p) {
      const T* plane = px + p * in_n;
      for_each_window(g, [&](int64_t o, const std::vector<int64_t>& taps, int64_t padded) {
        double sum = 0;
        for (int64_t t : taps) sum += term(double(plane[t]));
        py[p * out_n + o] = from_compute<T>(compute_t<T>(finish(sum, int64_t(taps.size()), padded)));
      });
    }
  });
  return y;
}

}  // namespace refeval::ops
