// Strided 2-D stencils (depthwise convolution, max pooling) as contiguous vector loops.
//
// The padded plane is split into stride_h x stride_w phase planes, plane (a, b) holding the padded
// pixels (i, j) with i % stride_h = a and j % stride_w = b. Output (oh, ow) reads tap (kh, kw) at
// padded (oh * stride_h + r, ow * stride_w + c), r = kh * dilation_h, c = kw * dilation_w: that is
// plane (r % stride_h, c % stride_w) at (oh + r / stride_h, ow + c / stride_w). In the planes' flat
// index every tap is one fixed shift, so a tap is one loop over all outputs at once: output
// (oh, ow) sits at oh * width() + ow, and positions past a row's end are computed and dropped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "conv_common.h"

namespace refeval::ops {

template <class T>
class PhasePlanes {
 public:
  // One channel x (g.in[0] x g.in[1]); padding, and windows past it (MaxPool's ceil_mode), read `fill`.
  void build(const ConvGeometry& g, const T* x, T fill) {
    const int64_t H = g.in[0], W = g.in[1], top = g.pad_begin[0], left = g.pad_begin[1];
    sh_ = g.strides[0], sw_ = g.strides[1], dh_ = g.dilations[0], dw_ = g.dilations[1];
    const int64_t rows = std::max(top + H + g.pad_end[0], (g.out[0] - 1) * sh_ + (g.kernel[0] - 1) * dh_ + 1);
    const int64_t cols = std::max(left + W + g.pad_end[1], (g.out[1] - 1) * sw_ + (g.kernel[1] - 1) * dw_ + 1);
    ph_ = (rows + sh_ - 1) / sh_, pw_ = (cols + sw_ - 1) / sw_;
    length_ = (g.out[0] - 1) * pw_ + g.out[1];
    data_.assign(size_t(sh_ * sw_ * ph_ * pw_), fill);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t i = h + top;
      const T* row = x + h * W;
      T* dst = data_.data() + ((i % sh_) * sw_ * ph_ + i / sh_) * pw_;
      if (sw_ == 1) {
        for (int64_t v = 0; v < W; ++v) dst[left + v] = row[v];
        continue;
      }
      for (int64_t b = 0; b < sw_; ++b, dst += ph_ * pw_) {  // padded columns j = b, b + sw, ... of the row
        const int64_t first = left + ((b - left) % sw_ + sw_) % sw_;  // the first such j inside the input
        for (int64_t j = first, q = first / sw_; j < left + W; j += sw_, ++q) dst[q] = row[j - left];
      }
    }
  }
  // tap(kh, kw)[oh * width() + ow] is the value output (oh, ow) reads at tap (kh, kw).
  const T* tap(int64_t kh, int64_t kw) const {
    const int64_t r = kh * dh_, c = kw * dw_;
    return data_.data() + (((r % sh_) * sw_ + c % sw_) * ph_ + r / sh_) * pw_ + c / sw_;
  }
  int64_t width() const { return pw_; }
  int64_t length() const { return length_; }  // flat positions from output (0, 0) to the last output
  // y[oh * OW + ow] = flat[oh * width() + ow].
  void extract(const ConvGeometry& g, const T* flat, T* y) const {
    const int64_t OH = g.out[0], OW = g.out[1];
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) y[oh * OW + ow] = flat[oh * pw_ + ow];
  }

 private:
  std::vector<T> data_;
  int64_t sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, ph_ = 0, pw_ = 0, length_ = 0;
};

}  // namespace refeval::ops
