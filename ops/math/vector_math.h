// Elementwise transcendental functions over float arrays through glibc's vector math library
// (libmvec, 8 lanes with AVX2; std:: functions without AVX2). Every element, the tail too, goes
// through the same routine, so a value's result never depends on where it sits in an array.
// In place is allowed (y == x).
#pragma once

#include <cstdint>

namespace refeval::ops {

void tanh_floats(const float* x, float* y, int64_t n);
void exp_floats(const float* x, float* y, int64_t n);
void expm1_floats(const float* x, float* y, int64_t n);  // glibc >= 2.35 for these three
void log1p_floats(const float* x, float* y, int64_t n);
void log_floats(const float* x, float* y, int64_t n);
void sin_floats(const float* x, float* y, int64_t n);
void cos_floats(const float* x, float* y, int64_t n);
// The IEEE square root (correctly rounded, the bits of std::sqrt), 8 lanes at a time: std::sqrt in
// a loop stays scalar, each call checking for a negative argument to set errno.
void sqrt_floats(const float* x, float* y, int64_t n);
// erf(x) computed in double and rounded to float: within 0.52 ulp of the exact value (the unit
// test's dense sweep; scalar erff is within 0.97, glibc's vector erff 1.92). Where 1 + erf(x)
// cancels (x < -1) no float erf helps: use erfc_floats there.
void erf_floats(const float* x, float* y, int64_t n);  // glibc >= 2.35
// 1 - erf(x), accurate (a few ulps) where 1 - erf cancels: Gelu's 0.5 z erfc(-z / sqrt 2) for z < 0.
void erfc_floats(const float* x, float* y, int64_t n);  // glibc >= 2.35
// Exact GELU, y = 0.5 x erfc(-x / sqrt 2) (= 0.5 x (1 + erf(x / sqrt 2)), kept accurate for x < 0):
// the standard Gelu's and com.microsoft Gelu's float32 form.
void gelu_erf_floats(const float* x, float* y, int64_t n);

// y[i] = x[i] < 0 ? alpha * t[i] : x[i] (LeakyRelu with t = x, Elu with t = expm1(x)), in vectors:
// compiled from that expression, with floating-point traps respected, the loop keeps a branch per
// element. y may be x or t.
void scale_negatives(const float* x, const float* t, float alpha, float* y, int64_t n);
// y[i] = max(a[i], b[i]) (or min) as the Max and Min ops define it: NaN if either is NaN (a + b:
// a NaN operand's payload), else b when it is strictly larger (smaller), else a; 8 lanes at a time,
// large arrays split across threads. y may be a or b.
void max_floats(const float* a, const float* b, float* y, int64_t n);
void min_floats(const float* a, const float* b, float* y, int64_t n);
void tanh_doubles(const double* x, double* y, int64_t n);  // 4 lanes with AVX2
void exp_doubles(const double* x, double* y, int64_t n);   // 4 lanes with AVX2

// The largest (IsMax) or smallest of p[0, n), n >= 1, compared 8 lanes at a time (an extreme's
// value does not depend on the order of the comparisons); `nan` tells whether any element is NaN
// (the extreme is then meaningless: callers look for the NaN).
template <bool IsMax>
float extreme_floats(const float* p, int64_t n, bool& nan) {
  typedef float Float8 __attribute__((vector_size(32)));
  typedef int Int8 __attribute__((vector_size(32)));
  auto wins = [](float b, float a) { return IsMax ? b > a : b < a; };
  int64_t j = 0;
  float m = p[0];
  nan = false;
  if (n >= 8) {
    Float8 lanes, v;
    Int8 unordered = {};
    __builtin_memcpy(&lanes, p, sizeof lanes);
    for (; j + 8 <= n; j += 8) {
      __builtin_memcpy(&v, p + j, sizeof v);
      unordered |= v != v;
      lanes = (IsMax ? v > lanes : v < lanes) ? v : lanes;
    }
    for (int l = 0; l < 8; ++l) nan |= unordered[l] != 0, m = wins(lanes[l], m) ? lanes[l] : m;
  }
  for (; j < n; ++j) nan |= p[j] != p[j], m = wins(p[j], m) ? p[j] : m;
  return m;
}

}  // namespace refeval::ops
