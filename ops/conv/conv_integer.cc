// ConvInteger (10) and QLinearConv (10, 21): Conv over (x - x_zero_point) and (w - w_zero_point)
// in int32 (padding is 0 after the shift), x and w int8 or uint8; w's zero point is per tensor or
// per output channel. ConvInteger returns the int32 sums (wrapping). QLinearConv adds the int32
// bias B and requantizes: y = saturate(round(sum * (x_scale * w_scale[m] / y_scale)) + y_zero_point),
// the scale ratio computed in float.
#include <cmath>

#include <fmt/format.h>

#include "../linalg/linalg_common.h"
#include "../quant/quant_common.h"
#include "conv_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// `t` - zero point as int32; the zero point is a scalar or one value per slice of axis 0.
std::vector<int32_t> shifted(const Tensor& t, const Tensor* zp, const char* what) {
  std::vector<int32_t> v(size_t(t.size()));
  const int64_t slices = t.rank() > 0 ? t.dim(0) : 1, per = slices ? t.size() / slices : 0;
  if (zp && zp->size() != 1 && zp->size() != slices)
    fail_runtime(fmt::format("{} zero point must hold 1 or {} values, got {}", what, slices, zp->size()));
  if (zp && zp->dtype() != t.dtype()) fail_runtime(fmt::format("{} zero point must have its tensor's type", what));
  visit<Int8Types>(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    const T* z = zp ? zp->data<T>() : nullptr;
    for (int64_t i = 0; i < t.size(); ++i) v[size_t(i)] = int32_t(p[i]) - (z ? int32_t(z[zp->size() == 1 ? 0 : i / per]) : 0);
  });
  return v;
}

// The int32 convolution of shifted x and w.
std::vector<int32_t> int_conv(const ConvGeometry& g, const Tensor& x, const Tensor* xz, const Tensor& w, const Tensor* wz) {
  if (xz && xz->size() != 1) fail_runtime("the x zero point must be a scalar");
  const std::vector<int32_t> xv = shifted(x, xz, "x"), wv = shifted(w, wz, "w");
  std::vector<int32_t> y(size_t(g.N * g.M * g.out_size()));
  conv_by_gemm(g, xv.data(), wv.data(), y.data(),
               [](int64_t M, int64_t N, int64_t K, const int32_t* a, const int32_t* b, int32_t* c) {
                 gemm_loop(false, false, M, N, K, a, b, c, false);
               });
  return y;
}

Shape out_shape(const ConvGeometry& g) {
  Shape s{g.N, g.M};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

class ConvInteger : public OpRun {
 public:
  using Types = Int8Types;
  explicit ConvInteger(const NodeContext& ctx) : attrs_(ctx) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor &x = input_tensor(in, 0), &w = input_tensor(in, 1);
    const ConvGeometry g = conv_geometry(attrs_, x.shape(), w.shape());
    const auto y = int_conv(g, x, has_value(in, 2) ? &input_tensor(in, 2) : nullptr, w,
                            has_value(in, 3) ? &input_tensor(in, 3) : nullptr);
    return {Tensor::from_vector<int32_t>(out_shape(g), y)};
  }

 private:
  ConvAttrs attrs_;
};

class QLinearConv : public OpRun {
 public:
  using Types = Int8Types;
  explicit QLinearConv(const NodeContext& ctx) : attrs_(ctx) {}
  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &x = input_tensor(in, 0), &xs = input_tensor(in, 1), &xz = input_tensor(in, 2);
    const Tensor &w = input_tensor(in, 3), &ws = input_tensor(in, 4), &wz = input_tensor(in, 5);
    const Tensor &ys = input_tensor(in, 6), &yz = input_tensor(in, 7);
    const ConvGeometry g = conv_geometry(attrs_, x.shape(), w.shape());
    std::vector<int32_t> acc = int_conv(g, x, &xz, w, &wz);
    if (xs.size() != 1 || ys.size() != 1 || yz.size() != 1) ctx.fail("x_scale, y_scale and y_zero_point must be scalars");
    if (ws.size() != 1 && ws.size() != g.M) ctx.fail(fmt::format("w_scale must hold 1 or {} values", g.M));
    const int64_t out_n = g.out_size();
    if (has_value(in, 8)) {
      const Tensor& b = input_tensor(in, 8);
      if (b.dtype() != DType::Int32 || b.size() != g.M) ctx.fail(fmt::format("B must be {} int32 values", g.M));
      for (size_t i = 0; i < acc.size(); ++i)
        acc[i] = int32_t(uint32_t(acc[i]) + uint32_t(b.data<int32_t>()[(int64_t(i) / out_n) % g.M]));
    }
    Tensor y(yz.dtype(), out_shape(g));
    const double yzv = element_as_double(yz, 0);
    visit<Types>(yz.dtype(), [&]<class Q>() {
      Q* py = y.data<Q>();
      for (size_t i = 0; i < acc.size(); ++i) {
        const int64_t m = (int64_t(i) / out_n) % g.M;
        const float f = float(float(element_as_double(xs, 0)) * float(element_as_double(ws, ws.size() == 1 ? 0 : m))) /
                        float(element_as_double(ys, 0));
        py[i] = quant_from_double<Q>(std::nearbyint(double(acc[i]) * double(f)) + yzv);
      }
    });
    return {y};
  }

 private:
  ConvAttrs attrs_;
};

}  // namespace

void register_conv_integer(Registry& reg) {
  reg.add("", "ConvInteger", {10}, make<ConvInteger>);
  reg.add("", "QLinearConv", {10, 21}, make<QLinearConv>);
}

}  // namespace refeval::ops
