// Storage types for the element types C++ lacks: float16, bfloat16, the float8 family, float4e2m1
// and the 4- and 2-bit integers. Each is one byte or two in memory and converts to and from float
// with round-to-nearest-even, the rounding ONNX (and ml_dtypes) use. Arithmetic is done by
// converting to float first (STYLE.md §4).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace refeval {

namespace detail {
inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t float_to_half_bits(float value) {
  const uint32_t f = float_bits(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN stays NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (abs < 0x38800000u) {                                   // below 2^-14: subnormal or zero
    if (abs < 0x33000000u) return uint16_t(sign);            // below 2^-25 rounds to zero
    const uint32_t shift = 126u - (abs >> 23);
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = (abs >> 13) - (112u << 10);  // rebias the exponent from 127 to 15
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // a carry correctly bumps the exponent
  return uint16_t(sign | r);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = float(m) * 5.9604644775390625e-08f;  // m * 2^-24
    return sign ? -v : v;
  }
  if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// Rounds to float toward zero and sets the last bit when inexact ("round to odd"): rounding that
// float once more to any format at least two bits narrower then gives the correctly rounded
// result, so double -> float16 (or a float8) is not rounded twice. long double holds every
// double and every 64-bit integer exactly on x86-64 and aarch64.
inline float round_to_odd_float(long double d) {
  float f = float(d);
  if (d != d || static_cast<long double>(f) == d) return f;
  if ((f < 0 ? -static_cast<long double>(f) : static_cast<long double>(f)) > (d < 0 ? -d : d))
    f = bits_float(float_bits(f) - 1);  // one step toward zero (f is finite and non-zero here)
  return bits_float(float_bits(f) | 1u);
}

inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t f = float_bits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return uint16_t((f >> 16) | 0x40u);  // quiet NaN
  return uint16_t((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}
}  // namespace detail

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) : bits(detail::float_to_half_bits(f)) {}
  explicit float16(double d) : float16(detail::round_to_odd_float(d)) {}
  static float16 from_bits(uint16_t b) { float16 h; h.bits = b; return h; }
  explicit operator float() const { return detail::half_bits_to_float(bits); }
  explicit operator double() const { return float(*this); }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}
  explicit bfloat16(double d) : bfloat16(detail::round_to_odd_float(d)) {}
  static bfloat16 from_bits(uint16_t b) { bfloat16 h; h.bits = b; return h; }
  explicit operator float() const { return detail::bits_float(uint32_t(bits) << 16); }
  explicit operator double() const { return float(*this); }
};

// The 8- and 4-bit float formats. Encoding is out of line (narrow_types.cc); `saturate` follows
// the ONNX Cast attribute: out-of-range values become the largest finite value, otherwise NaN
// (or infinity for e5m2, the one format that has it; float4e2m1 has neither, always saturates,
// and encodes NaN as -0 (0x8), as ONNX's reference and test data do).
enum class MiniFloat { E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E2M1 };
uint8_t minifloat_encode(MiniFloat kind, float value, bool saturate);
float minifloat_decode(MiniFloat kind, uint8_t bits);

template <MiniFloat K>
struct minifloat {
  uint8_t bits = 0;
  minifloat() = default;
  explicit minifloat(float f, bool saturate = true) : bits(minifloat_encode(K, f, saturate)) {}
  explicit minifloat(double d, bool saturate = true) : minifloat(detail::round_to_odd_float(d), saturate) {}
  static minifloat from_bits(uint8_t b) { minifloat m; m.bits = b; return m; }
  explicit operator float() const { return minifloat_decode(K, bits); }
  explicit operator double() const { return float(*this); }
};
using float8e4m3fn = minifloat<MiniFloat::E4M3FN>;
using float8e4m3fnuz = minifloat<MiniFloat::E4M3FNUZ>;
using float8e5m2 = minifloat<MiniFloat::E5M2>;
using float8e5m2fnuz = minifloat<MiniFloat::E5M2FNUZ>;
using float4e2m1 = minifloat<MiniFloat::E2M1>;

// float8e8m0: an unsigned power of two 2^(bits-127); 0xFF is NaN; there is no zero.
enum class E8M0Rounding { Up, Down, Nearest };
uint8_t e8m0_encode(float value, bool saturate, E8M0Rounding mode);
float e8m0_decode(uint8_t bits);
struct float8e8m0 {
  uint8_t bits = 127;
  float8e8m0() = default;
  explicit float8e8m0(float f, bool saturate = true, E8M0Rounding mode = E8M0Rounding::Up)
      : bits(e8m0_encode(f, saturate, mode)) {}
  explicit float8e8m0(double d) : float8e8m0(float(d)) {}
  static float8e8m0 from_bits(uint8_t b) { float8e8m0 m; m.bits = b; return m; }
  explicit operator float() const { return e8m0_decode(bits); }
  explicit operator double() const { return float(*this); }
};

// Small integers, one per byte in memory; `value` always holds an in-range number.
template <int Bits, bool Signed>
struct small_int {
  using repr = std::conditional_t<Signed, int8_t, uint8_t>;
  static constexpr int lowest = Signed ? -(1 << (Bits - 1)) : 0;
  static constexpr int highest = Signed ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1;
  repr value = 0;
  small_int() = default;
  // Keeps the low `Bits` bits (two's complement wrap), as a packed nibble would.
  static small_int wrap(int64_t v) {
    const int64_t mask = (int64_t(1) << Bits) - 1;
    int64_t low = v & mask;
    if (Signed && low > highest) low -= (int64_t(1) << Bits);
    small_int s; s.value = repr(low); return s;
  }
  explicit operator int() const { return value; }
  explicit operator float() const { return float(value); }
  explicit operator double() const { return double(value); }
};
using int4 = small_int<4, true>;
using uint4 = small_int<4, false>;
using int2 = small_int<2, true>;
using uint2 = small_int<2, false>;

}  // namespace refeval
