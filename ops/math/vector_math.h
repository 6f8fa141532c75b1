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

// y[i] = x[i] < 0 ? alpha * t[i] : x[i] (LeakyRelu with t = x, Elu with t = expm1(x)), in vectors:
// compiled from that expression, with floating-point traps respected, the loop keeps a branch per
// element. y may be x or t.
void scale_negatives(const float* x, const float* t, float alpha, float* y, int64_t n);
void tanh_doubles(const double* x, double* y, int64_t n);  // 4 lanes with AVX2

}  // namespace refeval::ops
