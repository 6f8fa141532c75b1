// DynamicQuantizeLinear (11): uint8 quantization of a float tensor with a scale and zero point
// computed from its range extended to include 0:
//   y_scale = (max(0, max(x)) - min(0, min(x))) / 255
//   y_zero_point = saturate(round(0 - min(0, min(x)) / y_scale)) to [0, 255]
//   y = saturate(round(x / y_scale) + y_zero_point)
// (round half to even). An all-zero x gives scale 0, zero point 0 and y 0.
#include <cmath>

#include "quant_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class DynamicQuantizeLinear : public OpRun {
 public:
  using Types = TypeList<float>;
  explicit DynamicQuantizeLinear(const NodeContext&) {}

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const float* px = visit<Types>(x.dtype(), [&]<class T>() { return x.data<T>(); });
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < x.size(); ++i) lo = std::min(lo, px[i]), hi = std::max(hi, px[i]);
    const float scale = (hi - lo) / 255.0f;
    const float zpf = scale == 0 ? 0.0f : std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / scale)));
    const uint8_t zp = uint8_t(zpf);
    Tensor y(DType::UInt8, x.shape());
    uint8_t* py = y.data<uint8_t>();
    for (int64_t i = 0; i < x.size(); ++i)
      py[i] = scale == 0 ? zp : quant_from_double<uint8_t>(double(std::nearbyint(px[i] / scale)) + double(zp));
    return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(zp)};
  }
};

}  // namespace

void register_dynamic_quantize_linear(Registry& reg) {
  reg.add("", "DynamicQuantizeLinear", {11}, make<DynamicQuantizeLinear>);
}

}  // namespace refeval::ops
