// DeformConv (19, 22): a 2-D Conv whose kernel taps are displaced by learned offsets and weighted
// by an optional mask:
//   Y[n, m, oh, ow] = B[m] + sum over c in m's group, taps (i, j) of
//     W[m, c', i, j] * mask[n, g*K + t, oh, ow] * X~[n, c](oh*s0 - p0 + i*d0 + dh, ow*s1 - p1 + j*d1 + dw)
// with (dh, dw) = offset[n, g*2K + 2t + (0, 1), oh, ow], t = i*kW + j, g = c / (C / offset_group),
// and X~ the bilinear interpolation of X, zero outside it. Output size as Conv with explicit pads.
#include <cmath>

#include <fmt/format.h>

#include "conv_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// Bilinear interpolation of a H x W plane at (h, w); taps outside the plane read 0.
double bilinear(const std::vector<double>& x, int64_t base, int64_t H, int64_t W, double h, double w) {
  if (h <= -1 || h >= double(H) || w <= -1 || w >= double(W)) return 0;
  const int64_t h0 = int64_t(std::floor(h)), w0 = int64_t(std::floor(w));
  const double lh = h - double(h0), lw = w - double(w0);
  auto at = [&](int64_t i, int64_t j) { return i >= 0 && i < H && j >= 0 && j < W ? x[size_t(base + i * W + j)] : 0.0; };
  return (1 - lh) * (1 - lw) * at(h0, w0) + (1 - lh) * lw * at(h0, w0 + 1) + lh * (1 - lw) * at(h0 + 1, w0) +
         lh * lw * at(h0 + 1, w0 + 1);
}

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v(size_t(t.size()));
  visit<Floats>(t.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < t.size(); ++i) v[size_t(i)] = double(t.data<T>()[i]);
  });
  return v;
}

class DeformConv : public OpRun {
 public:
  using Types = Floats;
  explicit DeformConv(const NodeContext& ctx) : attrs_(ctx, false), offset_group_(ctx.attr<int64_t>("offset_group", 1)) {
    if (offset_group_ < 1) ctx.fail("offset_group must be >= 1");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &x = input_tensor(in, 0), &w = input_tensor(in, 1), &off = input_tensor(in, 2);
    if (x.rank() != 4) ctx.fail("DeformConv supports 2-D images: X must be [N, C, H, W]");
    visit<Types>(x.dtype(), [&]<class T>() {});
    const ConvGeometry g = conv_geometry(attrs_, x.shape(), w.shape());
    const int64_t N = g.N, C = g.C, M = g.M, H = g.in[0], W = g.in[1], kH = g.kernel[0], kW = g.kernel[1];
    const int64_t oH = g.out[0], oW = g.out[1], K = kH * kW, G = offset_group_;
    if (C % G != 0) ctx.fail("offset_group must divide the channels");
    if (off.shape() != Shape{N, G * 2 * K, oH, oW})
      ctx.fail(fmt::format("offset must be {}, got {}", shape_to_string({N, G * 2 * K, oH, oW}), shape_to_string(off.shape())));
    const bool has_b = has_value(in, 3), has_mask = has_value(in, 4);
    if (has_b && input_tensor(in, 3).size() != M) ctx.fail(fmt::format("B must hold {} values", M));
    if (has_mask && input_tensor(in, 4).shape() != Shape{N, G * K, oH, oW}) ctx.fail("mask must be [N, offset_group*kH*kW, oH, oW]");
    const std::vector<double> xv = doubles(x), wv = doubles(w), ov = doubles(off);
    const std::vector<double> bv = has_b ? doubles(input_tensor(in, 3)) : std::vector<double>(size_t(M), 0.0);
    const std::vector<double> mv = has_mask ? doubles(input_tensor(in, 4)) : std::vector<double>();
    const int64_t Cg = C / g.group, Mg = M / g.group;
    std::vector<double> y(size_t(N * M * oH * oW));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t oh = 0; oh < oH; ++oh)
          for (int64_t ow = 0; ow < oW; ++ow) {
            double sum = bv[size_t(m)];
            for (int64_t cc = 0; cc < Cg; ++cc) {
              const int64_t c = (m / Mg) * Cg + cc, og = c / (C / G);
              for (int64_t i = 0; i < kH; ++i)
                for (int64_t j = 0; j < kW; ++j) {
                  const int64_t t = i * kW + j;
                  auto at4 = [&](int64_t ch, int64_t chans) { return size_t(((n * chans + ch) * oH + oh) * oW + ow); };
                  const double dh = ov[at4(og * 2 * K + 2 * t, G * 2 * K)], dw = ov[at4(og * 2 * K + 2 * t + 1, G * 2 * K)];
                  const double mk = has_mask ? mv[at4(og * K + t, G * K)] : 1.0;
                  const double h = double(oh * g.strides[0] - g.pad_begin[0] + i * g.dilations[0]) + dh;
                  const double ww = double(ow * g.strides[1] - g.pad_begin[1] + j * g.dilations[1]) + dw;
                  sum += wv[size_t(((m * Cg + cc) * kH + i) * kW + j)] * mk * bilinear(xv, (n * C + c) * H * W, H, W, h, ww);
                }
            }
            y[size_t(((n * M + m) * oH + oh) * oW + ow)] = sum;
          }
    Tensor out(x.dtype(), {N, M, oH, oW});
    visit<Types>(x.dtype(), [&]<class T>() {
      for (size_t i = 0; i < y.size(); ++i) out.data<T>()[i] = from_compute<T>(compute_t<T>(y[i]));
    });
    return {out};
  }

 private:
  ConvAttrs attrs_;
  int64_t offset_group_;
};

}  // namespace

void register_deform_conv(Registry& reg) { reg.add("", "DeformConv", {19, 22}, make<DeformConv>); }

}  // namespace refeval::ops
