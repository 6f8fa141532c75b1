// MaxPool (1, 8, 10, 11, 12, 22): the maximum of each window's taps inside the input (padding
// never wins). From 8 the optional Indices output gives the flat index of the maximum in X
// (row-major, or with storage_order=1 column-major over the spatial dims); ceil_mode and
// dilations from 10; int8 and uint8 from 12. A NaN tap is the maximum (numpy semantics); ties
// keep the first tap.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "pool_common.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"
#include "refeval/threads.h"

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
  // The common case (float, 2-D, no Indices: every CNN's MaxPool) as a few vector loops per
  // channel. (The window walker took 13.9 ms on ResNet-18's pool, ONNX Runtime 0.3.) Padding reads
  // -inf. Horizontally: the channel's padded columns are split by phase (column j in phase plane
  // j % stride_w at j / stride_w), each plane's rows laid end to end, so that tap kw is one shift of
  // one plane: hm = max over kw (one take_max per kw), computed only at the kept columns (before,
  // at every column and then gathered: ResNet-18's 3 x 3 / 2 pool 0.51 ms, ORT 0.18). hm's rows
  // go to stride_h phase planes (kept row r in plane r % stride_h at r / stride_h), so that
  // vertically tap kh is again one shift: out = max over kh of those planes. take_max keeps the first
  // of equal values and the first NaN, a choice that is associative: combining kw within each kh,
  // kh in order, picks the tap that scanning the taps (kh, kw) in order picks, bit for bit.
  // Channels split across threads.
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
    const int64_t H = g.in[0], W = g.in[1], OH = g.out[0], OW = g.out[1];
    const int64_t sh = g.strides[0], sw = g.strides[1], dh = g.dilations[0], dw = g.dilations[1];
    const int64_t KH = g.kernel[0], KW = g.kernel[1], top = g.pad_begin[0], left = g.pad_begin[1];
    // A padded row holds every column an output reads (pq of them per phase); kept rows cover
    // every row an output reads.
    const int64_t pw = std::max(left + W, (OW - 1) * sw + (KW - 1) * dw + 1), pq = (pw + sw - 1) / sw;
    const int64_t rows = std::max(top + H, (OH - 1) * sh + (KH - 1) * dh + 1), vh = (rows + sh - 1) / sh;
    const int64_t hm_n = H * pq - (KW - 1) * dw / sw, out_n = OH * OW;
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const float lowest = -std::numeric_limits<float>::infinity();
    parallel_for(g.N * g.C, std::max<int64_t>(1, kParallelElements / (H * W)), [&](int64_t begin, int64_t end) {
      // Padding cells are written once here; each channel overwrites only the inside cells.
      std::vector<float> phases(static_cast<size_t>(sw * H * pq), lowest), hm(static_cast<size_t>(hm_n));
      std::vector<float> kept(static_cast<size_t>(sh * vh * OW), lowest);
      auto phase = [&](int64_t j) { return phases.data() + j % sw * H * pq + j / sw; };  // padded column j of row 0
      for (int64_t p = begin; p < end; ++p) {
        const float* plane = px + p * H * W;
        for (int64_t w0 = 0; w0 < std::min(sw, W); ++w0)  // columns w0, w0 + sw, ... share a phase
          for (int64_t h = 0; h < H; ++h) {
            float* dst = phase(left + w0) + h * pq;
            const float* src = plane + h * W + w0;
            every_sth(src, dst, (W - w0 + sw - 1) / sw, sw);
          }
        std::copy(phases.begin(), phases.begin() + hm_n, hm.begin());  // kw = 0: phase 0, no shift
        for (int64_t kw = 1; kw < KW; ++kw) take_max(hm.data(), phase(kw * dw), hm_n);
        for (int64_t h = 0; h < H; ++h) {
          const int64_t r = h + top;
          std::copy_n(hm.data() + h * pq, OW, kept.data() + ((r % sh) * vh + r / sh) * OW);
        }
        float* out = py + p * out_n;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t r = kh * dh;
          const float* k = kept.data() + ((r % sh) * vh + r / sh) * OW;
          if (kh == 0) std::copy(k, k + out_n, out);
          else take_max(out, k, out_n);
        }
      }
    });
    return y;
  }
  // dst[i] = src[i * stride], i < n; stride 2 (nearly every strided pool) as a vector loop.
  static void every_sth(const float* __restrict src, float* __restrict dst, int64_t n, int64_t stride) {
    if (stride == 2)
      for (int64_t i = 0; i < n; ++i) dst[i] = src[2 * i];
    else
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i * stride];
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
