// MaxPool (1, 8, 10, 11, 12, 22): the maximum of each window's taps inside the input (padding
// never wins). From 8 the optional Indices output gives the flat index of the maximum in X
// (row-major, or with storage_order=1 column-major over the spatial dims); ceil_mode and
// dilations from 10; int8 and uint8 from 12. A NaN tap is the maximum (numpy semantics); ties
// keep the first tap.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../conv/phase_planes.h"
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
    if (ctx.node().outputs.size() < 2 && g.in.size() == 2 && x.dtype() == DType::Float)
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
  // The common case (float, 2-D, no Indices: every CNN's MaxPool) as one vector loop per tap over
  // each channel's outputs (phase_planes.h; the window walker took 13.9 ms on ResNet-18's pool,
  // rows of clipped windows 1.9 ms, ONNX Runtime 0.3). Padding reads -inf, so it never wins; a NaN
  // tap wins and stays.
  static Tensor plane_max_2d(const Tensor& x, const ConvGeometry& g) {
    for (size_t d = 0; d < 2; ++d)
      for (int64_t o = 0; o < g.out[d]; ++o) {
        bool inside = false;
        for (int64_t k = 0; k < g.kernel[d] && !inside; ++k) {
          const int64_t i = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
          inside = i >= 0 && i < g.in[d];
        }
        if (!inside) fail_runtime("a pooling window lies entirely in the padding");
      }
    Tensor y(DType::Float, pool_output_shape(g));
    const int64_t in_n = g.in_size(), out_n = g.out_size();
    PhasePlanes<float> planes;
    std::vector<float> best;
    for (int64_t p = 0; p < g.N * g.C; ++p) {
      planes.build(g, x.data<float>() + p * in_n, -std::numeric_limits<float>::infinity());
      const float* first = planes.tap(0, 0);
      best.assign(first, first + planes.length());
      for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
        for (int64_t kw = kh == 0 ? 1 : 0; kw < g.kernel[1]; ++kw) take_max(best.data(), planes.tap(kh, kw), planes.length());
      planes.extract(g, best.data(), y.data<float>() + p * out_n);
    }
    return y;
  }
  // best = max(best, in), a NaN winning and staying; out of line so that it stays one vector loop.
  __attribute__((noinline)) static void take_max(float* __restrict best, const float* __restrict in, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const float m = best[i], v = in[i];
      best[i] = m == m && (v > m || v != v) ? v : m;
    }
  }

  PoolAttrs attrs_;
  int64_t storage_order_;
  int version_;
};

}  // namespace

void register_max_pool(Registry& reg) { reg.add("", "MaxPool", {1, 8, 10, 11, 12, 22}, make<MaxPool>); }

}  // namespace refeval::ops
