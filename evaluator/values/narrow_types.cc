// Encoding and decoding of the 8- and 4-bit float formats (ONNX "Float stored in 8 bits" and
// FLOAT4E2M1), with round-to-nearest-even. Computed in double, where every step is exact.
#include <cmath>
#include <limits>

#include "refeval/narrow_types.h"

namespace refeval {
namespace {

struct Format {
  int exp_bits, mant_bits, bias;
  bool has_inf;       // IEEE-like infinities (e5m2 only)
  bool fnuz;          // no negative zero; 0x80 is the only NaN
  bool has_nan;       // float4e2m1 has no NaN
  double max_finite;
};

const Format& format_of(MiniFloat k) {
  static const Format formats[] = {
      {4, 3, 7, false, false, true, 448.0},       // E4M3FN: S.1111.111 is NaN
      {4, 3, 8, false, true, true, 240.0},        // E4M3FNUZ
      {5, 2, 15, true, false, true, 57344.0},     // E5M2
      {5, 2, 16, false, true, true, 57344.0},     // E5M2FNUZ
      {2, 1, 1, false, false, false, 6.0},        // E2M1
  };
  return formats[int(k)];
}

uint8_t nan_bits(const Format& f) {
  if (f.fnuz) return 0x80;
  return f.has_inf ? 0x7f : 0x7f;  // e4m3fn NaN S.1111.111; e5m2 quiet NaN S.11111.11
}

uint8_t max_bits(const Format& f) {  // bit pattern of max_finite, positive
  const int total = f.exp_bits + f.mant_bits;
  if (f.has_inf) return uint8_t(((1 << f.exp_bits) - 2) << f.mant_bits | ((1 << f.mant_bits) - 1));
  if (f.fnuz || !f.has_nan) return uint8_t((1 << total) - 1);
  return uint8_t((1 << total) - 2);  // e4m3fn: all ones is NaN, so max ends in ...110
}

}  // namespace

uint8_t minifloat_encode(MiniFloat kind, float value, bool saturate) {
  const Format& f = format_of(kind);
  const int total = f.exp_bits + f.mant_bits;
  const uint8_t sign_bit = uint8_t(1u << total);
  if (std::isnan(value)) return f.has_nan ? nan_bits(f) : sign_bit;  // float4e2m1: NaN becomes -0
  const bool negative = std::signbit(value);
  const uint8_t sign = negative ? sign_bit : 0;
  double a = std::fabs(double(value));
  auto overflow = [&]() -> uint8_t {
    if (saturate || !f.has_nan) return uint8_t(sign | max_bits(f));
    if (f.has_inf) return uint8_t(sign | (((1 << f.exp_bits) - 1) << f.mant_bits));
    return nan_bits(f);
  };
  if (std::isinf(a)) return overflow();
  const int emin = 1 - f.bias;  // exponent of the smallest normal number
  int e;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1)
  --e;                // now a = m' * 2^e with m' in [1, 2)
  const double quantum = std::ldexp(1.0, (e < emin ? emin : e) - f.mant_bits);
  const double rounded = std::nearbyint(a / quantum) * quantum;  // default mode: ties to even
  if (rounded > f.max_finite) return overflow();
  if (rounded == 0) return f.fnuz ? 0 : sign;
  uint8_t bits;
  std::frexp(rounded, &e);
  --e;
  if (e < emin) {
    bits = uint8_t(rounded / std::ldexp(1.0, emin - f.mant_bits));
  } else {
    const int mant = int(rounded / std::ldexp(1.0, e - f.mant_bits)) - (1 << f.mant_bits);
    bits = uint8_t(((e + f.bias) << f.mant_bits) | mant);
  }
  return uint8_t(sign | bits);
}

float minifloat_decode(MiniFloat kind, uint8_t bits) {
  const Format& f = format_of(kind);
  const int total = f.exp_bits + f.mant_bits;
  const uint8_t sign_bit = uint8_t(1u << total);
  bits &= uint8_t((sign_bit << 1) - 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.fnuz && bits == 0x80) return nan;
  const uint8_t mag = bits & uint8_t(sign_bit - 1);
  const int exp_field = mag >> f.mant_bits, mant = mag & ((1 << f.mant_bits) - 1);
  const int exp_all_ones = (1 << f.exp_bits) - 1;
  if (f.has_inf && exp_field == exp_all_ones) {
    const float special = mant == 0 ? std::numeric_limits<float>::infinity() : nan;
    return (bits & sign_bit) && mant == 0 ? -special : special;
  }
  if (!f.fnuz && f.has_nan && !f.has_inf && mag == sign_bit - 1) return nan;  // e4m3fn
  const double v = exp_field == 0
                       ? std::ldexp(double(mant), 1 - f.bias - f.mant_bits)
                       : std::ldexp(double(mant + (1 << f.mant_bits)), exp_field - f.bias - f.mant_bits);
  return float((bits & sign_bit) ? -v : v);
}

uint8_t e8m0_encode(float value, bool saturate, E8M0Rounding mode) {
  if (std::isnan(value) || value < 0) return 0xff;  // unsigned format: negatives are NaN
  if (std::isinf(value)) return saturate ? 0xfe : 0xff;
  if (value == 0) return 0;  // smallest value 2^-127: nothing smaller exists
  int e;
  const double m = std::frexp(double(value), &e);  // value = m * 2^e, m in [0.5, 1)
  int k = e - 1;                                    // value = (2m) * 2^k, 2m in [1, 2)
  const double frac = 2 * m;
  if (frac > 1.0) {
    if (mode == E8M0Rounding::Up) ++k;
    else if (mode == E8M0Rounding::Nearest && frac >= 1.5) ++k;  // ties away, as the spec's "nearest"
  }
  if (k < -127) return 0;
  if (k > 127) return saturate ? 0xfe : 0xff;
  return uint8_t(k + 127);
}

float e8m0_decode(uint8_t bits) {
  if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return float(std::ldexp(1.0, int(bits) - 127));
}

}  // namespace refeval
