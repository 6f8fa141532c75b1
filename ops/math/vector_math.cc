#include "vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "refeval/elementwise.h"
#include "refeval/isa.h"
#include "refeval/threads.h"

#if defined(__AVX2__)
#include <immintrin.h>
extern "C" __m256 _ZGVdN8v_tanhf(__m256);  // glibc >= 2.35
extern "C" __m256 _ZGVdN8v_expf(__m256);   // glibc >= 2.22
extern "C" __m256d _ZGVdN4v_tanh(__m256d); // glibc >= 2.35
extern "C" __m256 _ZGVdN8v_expm1f(__m256);  // glibc >= 2.35
extern "C" __m256 _ZGVdN8v_log1pf(__m256);  // glibc >= 2.35
extern "C" __m256 _ZGVdN8v_logf(__m256);    // glibc >= 2.22
extern "C" __m256 _ZGVdN8v_sinf(__m256);    // glibc >= 2.22
extern "C" __m256 _ZGVdN8v_cosf(__m256);    // glibc >= 2.22
extern "C" __m256 _ZGVdN8v_erfcf(__m256);   // glibc >= 2.35
extern "C" __m256d _ZGVdN4v_erf(__m256d);   // glibc >= 2.35
#if defined(__AVX512F__)
extern "C" __m512d _ZGVeN8v_erf(__m512d);   // glibc >= 2.35
extern "C" __m512 _ZGVeN16v_expf(__m512);   // glibc >= 2.22
#endif
extern "C" __m256d _ZGVdN4v_exp(__m256d);   // glibc >= 2.22
#endif

namespace refeval::ops {
namespace {

#if defined(__AVX2__)
struct Float8 {
  using T = float;
  static constexpr int kLanes = 8;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
};
#if defined(__AVX512F__)
struct Float16 {
  using T = float;
  static constexpr int kLanes = 16;
  static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
};
#endif
struct Double4 {
  using T = double;
  static constexpr int kLanes = 4;
  static __m256d load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
};

template <class L, class F>
void vectorised_chunk(F f, const typename L::T* x, typename L::T* y, int64_t n) {
  using T = typename L::T;
  int64_t i = 0;
  for (; i + L::kLanes <= n; i += L::kLanes) L::store(y + i, f(L::load(x + i)));
  if (i < n) {
    T in[L::kLanes] = {}, out[L::kLanes];
    std::memcpy(in, x + i, size_t(n - i) * sizeof(T));
    L::store(out, f(L::load(in)));
    std::memcpy(y + i, out, size_t(n - i) * sizeof(T));
  }
}

// f over x in vectors of L::kLanes, the tail padded into one more vector; large inputs in one
// chunk per thread (the functions are lane by lane, so the split changes no bit).
template <class L, class F>
void vectorised(F f, const typename L::T* x, typename L::T* y, int64_t n) {
  parallel_for(n, kParallelElements, [&](int64_t begin, int64_t end) { vectorised_chunk<L>(f, x + begin, y + begin, end - begin); });
}
#endif

}  // namespace

void tanh_doubles(const double* x, double* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Double4>(_ZGVdN4v_tanh, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

void tanh_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(_ZGVdN8v_tanhf, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

#if defined(__AVX2__)
// glibc's vector expf with the lanes below -104 answered 0 (their value: e^-104 is under half the
// smallest denormal), the others its own. A lane below about -87.3 sends the whole vector down its
// scalar fallback, 20x slower: the masked half of a causal attention's scores (-inf, or float's
// lowest as torch exports write it) made GPT-2's Softmax 6x ORT's time. Checked on every float
// below -80: the vector code gives 0 for each one below -104.
__m256 exp_with_zero_floor(__m256 x) {
  const __m256 zero = _mm256_cmp_ps(x, _mm256_set1_ps(-104.f), _CMP_LT_OQ);  // (NaN: not zero)
  return _mm256_andnot_ps(zero, _ZGVdN8v_expf(_mm256_andnot_ps(zero, x)));
}
#if defined(__AVX512F__)
// The same with glibc's 16-lane expf, 20% faster, which gives the 8-lane one's bits for every
// one of the 2^32 floats (NaN payloads included; checked exhaustively).
__m512 exp_with_zero_floor16(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.f), _CMP_NLT_UQ);  // x >= -104 or NaN
  return _mm512_maskz_mov_ps(keep, _ZGVeN16v_expf(_mm512_maskz_mov_ps(keep, x)));
}
#endif
#endif

void exp_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX512F__)
  if (active_isa() == Isa::Avx512) return vectorised<Float16>(exp_with_zero_floor16, x, y, n);
#endif
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(exp_with_zero_floor, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void expm1_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(_ZGVdN8v_expm1f, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::expm1(x[i]);
}

void log1p_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(_ZGVdN8v_log1pf, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::log1p(x[i]);
}

void log_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(_ZGVdN8v_logf, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
}

void sin_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(_ZGVdN8v_sinf, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]);
}

void cos_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(_ZGVdN8v_cosf, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]);
}

void exp_doubles(const double* x, double* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Double4>(_ZGVdN4v_exp, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void erfc_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>(_ZGVdN8v_erfcf, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::erfc(x[i]);
}

void sqrt_floats(const float* x, float* y, int64_t n) {
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic) return vectorised<Float8>([](__m256 v) { return _mm256_sqrt_ps(v); }, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
}

void erf_floats(const float* x, float* y, int64_t n) {
  // In double, rounded once to float: glibc's float erff, scalar or vector, is less exact.
#if defined(__AVX512F__)
  // 8 lanes at once: 128 x 768 in 0.100 ms against 0.126 for two 4-lane calls (ORT: 0.039).
  if (active_isa() == Isa::Avx512)
    return vectorised<Float8>([](__m256 v) { return _mm512_cvtpd_ps(_ZGVeN8v_erf(_mm512_cvtps_pd(v))); }, x, y, n);
#endif
#if defined(__AVX2__)
  if (active_isa() != Isa::Generic)
    return vectorised<Float8>([](__m256 v) {
      const __m128 lo = _mm256_cvtpd_ps(_ZGVdN4v_erf(_mm256_cvtps_pd(_mm256_castps256_ps128(v))));
      const __m128 hi = _mm256_cvtpd_ps(_ZGVdN4v_erf(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
      return _mm256_set_m128(hi, lo);
    }, x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = float(std::erf(double(x[i])));
}

void gelu_erf_floats(const float* x, float* y, int64_t n) {
  constexpr int64_t kBlock = 1024;  // erfc's argument in a block on the stack (x may be y)
  const float sqrt2 = float(std::numbers::sqrt2);
  float t[kBlock];
  for (int64_t at = 0; at < n; at += kBlock) {
    const int64_t m = std::min(kBlock, n - at);
    for (int64_t i = 0; i < m; ++i) t[i] = -x[at + i] / sqrt2;
    erfc_floats(t, t, m);
    for (int64_t i = 0; i < m; ++i) y[at + i] = 0.5f * x[at + i] * t[i];
  }
}

template <bool IsMax>
void extreme_pairs(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  const int64_t vector_end = active_isa() != Isa::Generic ? n : 0;
  for (; i + 8 <= vector_end; i += 8) {
    const __m256 va = _mm256_loadu_ps(a + i), vb = _mm256_loadu_ps(b + i);
    const __m256 pick_b = IsMax ? _mm256_cmp_ps(va, vb, _CMP_LT_OQ) : _mm256_cmp_ps(vb, va, _CMP_LT_OQ);
    const __m256 m = _mm256_blendv_ps(va, vb, pick_b);
    _mm256_storeu_ps(y + i, _mm256_blendv_ps(m, _mm256_add_ps(va, vb), _mm256_cmp_ps(va, vb, _CMP_UNORD_Q)));
  }
#endif
  for (; i < n; ++i) {
    const float u = a[i], v = b[i];
    y[i] = u != u || v != v ? u + v : (IsMax ? u < v : v < u) ? v : u;
  }
}

void max_floats(const float* a, const float* b, float* y, int64_t n) {
  parallel_for(n, kParallelElements, [&](int64_t begin, int64_t end) { extreme_pairs<true>(a + begin, b + begin, y + begin, end - begin); });
}
void min_floats(const float* a, const float* b, float* y, int64_t n) {
  parallel_for(n, kParallelElements, [&](int64_t begin, int64_t end) { extreme_pairs<false>(a + begin, b + begin, y + begin, end - begin); });
}

void scale_negatives(const float* x, const float* t, float alpha, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256 a = _mm256_set1_ps(alpha), zero = _mm256_setzero_ps();
  const int64_t vector_end = active_isa() != Isa::Generic ? n : 0;
  for (; i + 8 <= vector_end; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i), scaled = _mm256_mul_ps(a, _mm256_loadu_ps(t + i));
    _mm256_storeu_ps(y + i, _mm256_blendv_ps(v, scaled, _mm256_cmp_ps(v, zero, _CMP_LT_OQ)));
  }
#endif
  for (; i < n; ++i) y[i] = x[i] < 0 ? alpha * t[i] : x[i];
}

}  // namespace refeval::ops
