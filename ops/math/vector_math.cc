#include "vector_math.h"

#include <cmath>
#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
extern "C" __m256 _ZGVdN8v_tanhf(__m256);  // glibc >= 2.35
extern "C" __m256 _ZGVdN8v_expf(__m256);   // glibc >= 2.22
extern "C" __m256d _ZGVdN4v_tanh(__m256d); // glibc >= 2.35
#endif

namespace refeval::ops {
namespace {

#if defined(__AVX2__)
template <class V>
void vectorised(V f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float in[8] = {}, out[8];
    std::memcpy(in, x + i, size_t(n - i) * sizeof(float));
    _mm256_storeu_ps(out, f(_mm256_loadu_ps(in)));
    std::memcpy(y + i, out, size_t(n - i) * sizeof(float));
  }
}
#endif

}  // namespace

void tanh_doubles(const double* x, double* y, int64_t n) {
#if defined(__AVX2__)
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(y + i, _ZGVdN4v_tanh(_mm256_loadu_pd(x + i)));
  if (i < n) {
    double in[4] = {}, out[4];
    std::memcpy(in, x + i, size_t(n - i) * sizeof(double));
    _mm256_storeu_pd(out, _ZGVdN4v_tanh(_mm256_loadu_pd(in)));
    std::memcpy(y + i, out, size_t(n - i) * sizeof(double));
  }
#else
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
#endif
}

void tanh_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  vectorised(_ZGVdN8v_tanhf, x, y, n);
#else
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
#endif
}

void exp_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  vectorised(_ZGVdN8v_expf, x, y, n);
#else
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
#endif
}

}  // namespace refeval::ops
