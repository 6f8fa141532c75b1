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
    const std::vector<int64_t> si = scale_indices(x.shape(), scale.shape(), axis_, block_size_);
    Tensor y(out, x.shape());
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
  int version_;
  int64_t axis_ = 1, block_size_ = 0;
  DType output_dtype_ = DType::Undefined;
};

}  // namespace

void register_dequantize_linear(Registry& reg) {
  reg.add("", "DequantizeLinear", {10, 13, 19, 21, 23, 24, 25}, make<DequantizeLinear>);
}

}  // namespace refeval::ops
