// MaxPool (1, 8, 10, 11, 12, 22): the maximum of each window's taps inside the input (padding
// never wins). From 8 the optional Indices output gives the flat index of the maximum in X
// (row-major, or with storage_order=1 column-major over the spatial dims); ceil_mode and
// dilations from 10; int8 and uint8 from 12. A NaN tap is the maximum (numpy semantics); ties
// keep the first tap.
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
  PoolAttrs attrs_;
  int64_t storage_order_;
  int version_;
};

}  // namespace

void register_max_pool(Registry& reg) { reg.add("", "MaxPool", {1, 8, 10, 11, 12, 22}, make<MaxPool>); }

}  // namespace refeval::ops
