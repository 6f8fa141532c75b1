// Helpers of the quant family: the quantized element types, the value conversion with rounding
// and saturation, and the scale layout (per tensor, per axis, blocked) of Quantize/DequantizeLinear.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "refeval/dispatch.h"
#include "refeval/tensor.h"

namespace refeval::ops {

using Int8Types = TypeList<int8_t, uint8_t>;
using QuantFloat8 = TypeList<float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz>;
// Every type QuantizeLinear can produce (by version: 8-bit ints at 10, float8 at 19, 16-bit and
// 4-bit ints at 21, float4e2m1 at 23, 2-bit ints at 25).
using QuantTypes = Concat<TypeList<uint8_t, int8_t, uint16_t, int16_t>, TypeList<int4, uint4, int2, uint2>, QuantFloat8,
                          TypeList<float4e2m1>>;

template <class T> inline constexpr bool is_quant_small_int_v = false;
template <int B, bool S> inline constexpr bool is_quant_small_int_v<small_int<B, S>> = true;

// A quantized value as double (for small ints and minifloats too).
template <class Q>
double quant_to_double(const Q& q) {
  if constexpr (is_quant_small_int_v<Q>) return double(int(q));
  else return double(q);
}

// v converted to Q: integers round half to even and saturate to their range; float8 types convert
// with round to nearest even, saturating to the largest finite value when `saturate`
// (otherwise NaN, or infinity for e5m2); float4e2m1 always saturates.
template <class Q>
Q quant_from_double(double v, bool saturate = true) {
  if constexpr (std::is_integral_v<Q> || is_quant_small_int_v<Q>) {
    double lo, hi;
    if constexpr (is_quant_small_int_v<Q>) lo = Q::lowest, hi = Q::highest;
    else lo = double(std::numeric_limits<Q>::lowest()), hi = double(std::numeric_limits<Q>::max());
    double r = std::nearbyint(v);
    if (std::isnan(r)) r = 0;  // NaN has no integer value; quantize it to 0
    r = std::min(hi, std::max(lo, r));
    if constexpr (is_quant_small_int_v<Q>) return Q::wrap(int64_t(r));
    else return Q(r);
  } else if constexpr (std::is_same_v<Q, float4e2m1>) {
    return Q(v);
  } else {
    return Q(v, saturate);
  }
}

// For each element of a tensor of shape `x`, the index of its scale (and zero point) in a tensor of
// shape `s`: per tensor when s has one element; per axis when s is 1-D of x[axis] values and
// block_size is 0; blocked when s has x's rank, s[axis] = ceil(x[axis] / block_size) and the other
// dims equal x's. Throws naming the shapes otherwise. `axis` may be negative.
std::vector<int64_t> scale_indices(const Shape& x, const Shape& s, int64_t axis, int64_t block_size);

// The scale layout of a per-tensor or per-axis scale (block_size 0), for the vector loops of
// Quantize/DequantizeLinear: element (o, a, k) of x seen as [outer, A, inner] uses scale (and
// zero point) a; a per-tensor scale is [1, 1, size]. nullopt for a blocked scale or one that does
// not fit (the element-by-element path then handles, or reports, it).
struct AxisScale {
  int64_t outer = 1, A = 1, inner = 1;
};
std::optional<AxisScale> axis_scale(const Shape& x, const Shape& s, int64_t axis, int64_t block_size);

// The value of `t` (any numeric type, narrow floats included) at flat index i, as double.
double element_as_double(const Tensor& t, int64_t i);

}  // namespace refeval::ops
