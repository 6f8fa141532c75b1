// MaxPool (1, 8, 10, 11, 12, 22): the maximum of each window's taps inside the input (padding
// never wins). From 8 the optional Indices output gives the flat index of the maximum in X
// (row-major, or with storage_order=1 column-major over the spatial dims); ceil_mode and
// dilations from 10; int8 and uint8 from 12. A NaN tap is the maximum (numpy semantics); ties
// keep the first tap.
#include <algorithm>
#include <cmath>

#include "pool_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class MaxPool : public OpRun {
 public:
  using Types = Concat<Floats, TypeList<int8_t, uint8_t>>;
  explicit MaxPool(const NodeContext& ctx)
      : attrs_(ctx, ctx.since_version() >= 10, ctx.since_version() >= 10),
        storage_order_(ctx.since_version() >= 8 ? ctx.attr<int64_t>("storage_order", 0) : 0),
        version_(ctx.since_version()) {
    if (storage_order_ != 0 && storage_order_ != 1) ctx.fail("storage_order must be 0 or 1");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    if (version_ < 12 && (x.dtype() == DType::Int8 || x.dtype() == DType::UInt8))
      ctx.fail("int8 and uint8 inputs need MaxPool 12 or later");
    const ConvGeometry g = pool_geometry(attrs_, x.shape());
    if (ctx.node().outputs.size() < 2 && g.in.size() == 2 && g.dilations == std::vector<int64_t>{1, 1} && x.dtype() == DType::Float)
      return {plane_max_2d(x, g)};
    Tensor y(x.dtype(), pool_output_shape(g));
    Tensor idx(DType::Int64, y.shape());
    const size_t D = g.in.size();
    // Column-major index of a row-major spatial offset.
    auto col_major = [&](int64_t off) {
      int64_t r = 0, mul = 1;
      std::vector<int64_t> coord(D);
      for (size_t d = D; d-- > 0;) { coord[d] = off % g.in[d]; off /= g.in[d]; }
      for (size_t d = 0; d < D; ++d) { r += coord[d] * mul; mul *= g.in[d]; }
      return r;
    };
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      int64_t* pi = idx.data<int64_t>();
      const int64_t in_n = g.in_size(), out_n = g.out_size();
      for (int64_t p = 0; p < g.N * g.C; ++p) {
        const T* plane = px + p * in_n;
        for_each_window(g, [&](int64_t o, const std::vector<int64_t>& taps, int64_t) {
          if (taps.empty()) fail_runtime("a pooling window lies entirely in the padding");
          int64_t best = taps[0];
          C bv = C(plane[best]);
          for (int64_t t : taps) {
            const C v = C(plane[t]);
            if constexpr (std::is_floating_point_v<C>) {
              if (std::isnan(bv)) break;
              if (std::isnan(v) || v > bv) bv = v, best = t;
            } else if (v > bv) {
              bv = v, best = t;
            }
          }
          py[p * out_n + o] = plane[best];
          pi[p * out_n + o] = p * in_n + (storage_order_ ? col_major(best) : best);
        });
      }
    });
    if (ctx.node().outputs.size() > 1) return {y, idx};
    return {y};
  }

 private:
  // The common case (float, 2-D, no dilation, no Indices: every CNN's MaxPool) without the
  // generic window walker: each output's window clipped to the input, the same maximum (a NaN
  // wins; ties keep the first tap, which only matters for Indices).
  static Tensor plane_max_2d(const Tensor& x, const ConvGeometry& g) {
    Tensor y(DType::Float, pool_output_shape(g));
    const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
    const float* px = x.data<float>();
    float* py = y.data<float>();
    for (int64_t p = 0; p < g.N * g.C; ++p) {
      const float* plane = px + p * H * W;
      float* out = py + p * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = oh * g.strides[0] - g.pad_begin[0];
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min<int64_t>(h0 + g.kernel[0], H);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = ow * g.strides[1] - g.pad_begin[1];
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min<int64_t>(w0 + g.kernel[1], W);
          if (hs >= he || ws >= we) fail_runtime("a pooling window lies entirely in the padding");
          float best = plane[hs * W + ws];
          for (int64_t h = hs; h < he && !std::isnan(best); ++h)
            for (int64_t w = ws; w < we; ++w) {
              const float v = plane[h * W + w];
              if (std::isnan(v)) { best = v; break; }
              if (v > best) best = v;
            }
          out[oh * OW + ow] = best;
        }
      }
    }
    return y;
  }

  PoolAttrs attrs_;
  int64_t storage_order_;
  int version_;
};

}  // namespace

void register_max_pool(Registry& reg) { reg.add("", "MaxPool", {1, 8, 10, 11, 12, 22}, make<MaxPool>); }

}  // namespace refeval::ops
