// DequantizeLinear (10, 13, 19, 21, 23, 24, 25): y = (x - x_zero_point) * x_scale, with one scale
// per tensor, per slice along `axis` (13) or per block of block_size elements along `axis` (21).
// y has x_scale's type, or output_dtype (23). x may be a float8 type (19), a 16- or 4-bit
// integer (21), float4e2m1 (23) or a 2-bit integer (25).
#include <fmt/format.h>

#include "quant_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class DequantizeLinear : public OpRun {
 public:
  using Types = Concat<QuantTypes, TypeList<int32_t>>;
  explicit DequantizeLinear(const NodeContext& ctx) : version_(ctx.since_version()) {
    if (version_ >= 13) axis_ = ctx.attr<int64_t>("axis", 1);
    if (version_ >= 21) block_size_ = ctx.attr<int64_t>("block_size", 0);
    if (version_ >= 23) output_dtype_ = DType(ctx.attr<int64_t>("output_dtype", 0));
    if (block_size_ < 0) ctx.fail("block_size must be >= 0");
    if (output_dtype_ != DType::Undefined && !Floats::contains(output_dtype_))
      ctx.fail("output_dtype must be a float type");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& scale = input_tensor(in, 1);
    const Tensor* zp = has_value(in, 2) ? &input_tensor(in, 2) : nullptr;
    visit<Types>(x.dtype(), [&]<class T>() {});  // checks x's type
    if (zp && zp->dtype() != x.dtype()) ctx.fail("x_zero_point must have x's type");
    if (zp && zp->size() != scale.size()) ctx.fail("x_zero_point must have x_scale's shape");
    if (!Floats::contains(scale.dtype())) ctx.fail("x_scale must be a float tensor");
    const DType out = output_dtype_ != DType::Undefined ? output_dtype_ : scale.dtype();
    Tensor y(out, x.shape());
    if (out == DType::Float && scale.dtype() == DType::Float && dequantize_to_floats(x, scale, zp, y)) return {y};
    const std::vector<int64_t> si = scale_indices(x.shape(), scale.shape(), axis_, block_size_);
    visit<Floats>(out, [&]<class T>() {
      T* py = y.data<T>();
      for (int64_t i = 0; i < x.size(); ++i) {
        const int64_t s = si[size_t(i)];
        const double z = zp ? element_as_double(*zp, s) : 0.0;
        py[i] = T((element_as_double(x, i) - z) * element_as_double(scale, s));
      }
    });
    return {y};
  }

 private:
  // 8- and 16-bit integers into float with a per-tensor or per-axis float scale, one vector loop
  // per run of elements sharing a scale; false (y untouched) otherwise. The same values as the
  // element-by-element path: x - zero point is exact in float, and so the product rounds once.
  bool dequantize_to_floats(const Tensor& x, const Tensor& scale, const Tensor* zp, Tensor& y) const {
    const std::optional<AxisScale> layout = axis_scale(x.shape(), scale.shape(), axis_, block_size_);
    using Ints = TypeList<uint8_t, int8_t, uint16_t, int16_t>;
    if (!layout || !Ints::contains(x.dtype())) return false;
    visit<Ints>(x.dtype(), [&]<class Q>() {
      const Q* px = x.data<Q>();
      float* py = y.data<float>();
      const int64_t run = layout->inner;
      for (int64_t o = 0, i = 0; o < layout->outer; ++o)
        for (int64_t a = 0; a < layout->A; ++a, i += run) {
          const float s = scale.data<float>()[a], z = zp ? float(zp->data<Q>()[a]) : 0.0f;
          for (int64_t k = i; k < i + run; ++k) py[k] = (float(px[k]) - z) * s;
        }
    });
    return true;
  }

  int version_;
  int64_t axis_ = 1, block_size_ = 0;
  DType output_dtype_ = DType::Undefined;
};

}  // namespace

void register_dequantize_linear(Registry& reg) {
  reg.add("", "DequantizeLinear", {10, 13, 19, 21, 23, 24, 25}, make<DequantizeLinear>);
}

}  // namespace refeval::ops
