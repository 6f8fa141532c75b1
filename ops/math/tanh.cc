// Tanh (1, 6, 13). float32 goes through glibc's vector tanhf (libmvec, 8 lanes with AVX2): about
// ten times the scalar speed, within the backend tests' tolerance; every element, the tail too,
// takes the same vector path, so a value's result never depends on where it sits in the tensor.
// Other types (and builds without AVX2) use std::tanh.
#include <cmath>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
extern "C" __m256 _ZGVdN8v_tanhf(__m256);  // glibc >= 2.35, libmvec
#endif

#include "math_common.h"

namespace refeval::ops {
namespace {

void tanh_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _ZGVdN8v_tanhf(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float in[8] = {}, out[8];
    std::memcpy(in, x + i, size_t(n - i) * sizeof(float));
    _mm256_storeu_ps(out, _ZGVdN8v_tanhf(_mm256_loadu_ps(in)));
    std::memcpy(y + i, out, size_t(n - i) * sizeof(float));
  }
#else
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
#endif
}

class Tanh : public OpRun {
 public:
  using Types = Floats;
  explicit Tanh(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.dtype() == DType::Float) {
      Tensor y(DType::Float, x.shape());
      tanh_floats(x.data<float>(), y.data<float>(), x.size());
      return {y};
    }
    return {visit<Types>(x.dtype(), [&]<class T>() { return map_unary<T>(x, [](auto v) { return std::tanh(v); }); })};
  }
};

}  // namespace

void register_tanh(Registry& reg) { reg.add("", "Tanh", {1, 6, 13}, make<Tanh>); }

}  // namespace refeval::ops
