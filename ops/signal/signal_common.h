// Helpers of the signal family: an FFT of any length in double precision, scalar inputs read as
// integers or doubles, output_datatype checking, and writing doubles into a numeric tensor.
#pragma once

#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../nn/nn_common.h"
#include "refeval/dispatch.h"
#include "refeval/limits.h"
#include "refeval/op_run.h"
#include "refeval/registry.h"
#include "refeval/tensor.h"

namespace refeval::ops {

using cdouble = std::complex<double>;

// In place: a[k] = sum_j a[j] exp(-+2 pi i jk / n) (+ when inverse; no 1/n scaling). Radix-2
// for powers of two, Bluestein's chirp-z (through a power-of-two FFT) otherwise.
void fft(std::vector<cdouble>& a, bool inverse);

// Element types a window or MelWeightMatrix may produce (output_datatype).
using SignalOutTypes = Numeric;

inline DType output_datatype(const NodeContext& ctx) {
  const int64_t d = ctx.attr<int64_t>("output_datatype", int64_t(DType::Float));
  if (!is_valid_dtype(int32_t(d)) || !SignalOutTypes::contains(DType(d)))
    ctx.fail(fmt::format("unsupported output_datatype {}", d));
  return DType(d);
}

// The value of a one-element integer tensor.
inline int64_t scalar_int(const Tensor& t, const char* what) {
  if (t.size() != 1) fail_runtime(fmt::format("{} must hold one value, got shape {}", what, shape_to_string(t.shape())));
  return visit<TypeList<int32_t, int64_t>>(t.dtype(), [&]<class I>() { return int64_t(t.data<I>()[0]); });
}

inline double scalar_double(const Tensor& t, const char* what) {
  if (t.size() != 1) fail_runtime(fmt::format("{} must hold one value, got shape {}", what, shape_to_string(t.shape())));
  return to_doubles(t)[0];
}

// Doubles stored into any numeric type: floats round, integers truncate toward zero (as a cast).
inline Tensor numeric_from_doubles(DType dtype, const Shape& shape, const std::vector<double>& v) {
  Tensor t(dtype, shape);
  visit<Numeric>(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        const double x = std::trunc(v[i]);
        p[i] = std::isnan(x) ? T(0)
               : x <= double(std::numeric_limits<T>::lowest()) ? std::numeric_limits<T>::lowest()
               : x >= double(std::numeric_limits<T>::max())    ? std::numeric_limits<T>::max()
                                                               : T(x);
      } else {
        p[i] = from_compute<T>(v[i]);
      }
    }
  });
  return t;
}

}  // namespace refeval::ops
