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
    // The range in 8 lanes of independent comparisons (they vectorise; min and max do not depend
    // on the order, and NaN never wins, as in one chain).
    const int64_t n = x.size();
    float lo8[8] = {}, hi8[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) lo8[l] = std::min(lo8[l], px[i + l]), hi8[l] = std::max(hi8[l], px[i + l]);
    for (; i < n; ++i) lo8[0] = std::min(lo8[0], px[i]), hi8[0] = std::max(hi8[0], px[i]);
    float lo = 0, hi = 0;
    for (int l = 0; l < 8; ++l) lo = std::min(lo, lo8[l]), hi = std::max(hi, hi8[l]);
    const float scale = (hi - lo) / 255.0f;
    const float zpf = scale == 0 ? 0.0f : std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / scale)));
    const uint8_t zp = uint8_t(zpf);
    Tensor y(DType::UInt8, x.shape());
    uint8_t* py = y.data<uint8_t>();
    // round(x / scale) + zp in float: exact below 2^24, saturated above (as in double); NaN gives 0.
    for (int64_t k = 0; k < n; ++k) {
      const float r = std::nearbyint(px[k] / scale) + zpf;
      py[k] = scale == 0 ? zp : r != r ? uint8_t(0) : uint8_t(std::min(255.0f, std::max(0.0f, r)));
    }
    return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(zp)};
  }
};

}  // namespace

void register_dynamic_quantize_linear(Registry& reg) {
  reg.add("", "DynamicQuantizeLinear", {11}, make<DynamicQuantizeLinear>);
}

}  // namespace refeval::ops
