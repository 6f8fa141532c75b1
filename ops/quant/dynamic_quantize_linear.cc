// DynamicQuantizeLinear (11): uint8 quantization of a float tensor with a scale and zero point
// computed from its range extended to include 0:
//   y_scale = (max(0, max(x)) - min(0, min(x))) / 255
//   y_zero_point = saturate(round(0 - min(0, min(x)) / y_scale)) to [0, 255]
//   y = saturate(round(x / y_scale) + y_zero_point)
// (round half to even). An all-zero x gives scale 0, zero point 0 and y 0.
#include <algorithm>
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
    // The range in 8 lanes of independent comparisons, in vector registers (min and max do not
    // depend on the order, and NaN never wins, as in one chain). Written on arrays of 8 floats,
    // GCC kept the lanes in 16 scalar registers: 60% of the op's time.
    typedef float Float8 __attribute__((vector_size(32)));
    const int64_t n = x.size();
    Float8 lo8 = {}, hi8 = {}, v;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      __builtin_memcpy(&v, px + i, sizeof v);
      lo8 = v < lo8 ? v : lo8;
      hi8 = v > hi8 ? v : hi8;
    }
    float lo = 0, hi = 0;
    for (int l = 0; l < 8; ++l) lo = std::min(lo, lo8[l]), hi = std::max(hi, hi8[l]);
    for (; i < n; ++i) lo = std::min(lo, px[i]), hi = std::max(hi, px[i]);
    const float scale = (hi - lo) / 255.0f;
    const float zpf = scale == 0 ? 0.0f : std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / scale)));
    const uint8_t zp = uint8_t(zpf);
    Tensor y(DType::UInt8, x.shape());
    uint8_t* py = y.data<uint8_t>();
    // round(x / scale) + zp in float: exact below 2^24, saturated above (as in double); NaN gives 0.
    if (scale == 0) {
      std::fill(py, py + n, zp);
    } else {
      for (int64_t k = 0; k < n; ++k) {
        float r = std::nearbyint(px[k] / scale) + zpf;
        r = r == r ? r : 0.0f;
        py[k] = uint8_t(std::min(255.0f, std::max(0.0f, r)));
      }
    }
    return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(zp)};
  }
};

}  // namespace

void register_dynamic_quantize_linear(Registry& reg) {
  reg.add("", "DynamicQuantizeLinear", {11}, make<DynamicQuantizeLinear>);
}

}  // namespace refeval::ops
