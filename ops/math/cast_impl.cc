// The conversions of Cast. Every source element is read into a Num (an exact integer or a double),
// which is then written in the target type:
//   - to float types: one rounding, to nearest even (double -> float16/bfloat16/float8 goes
//     through float with round-to-odd, so it is not rounded twice);
//   - float to integer: see float_to_int (math_common.h); integer to integer keeps the low bits;
//   - to the 4- and 2-bit integers: as to the 8-bit ones, the low bits are kept (-9.0 -> int4 7);
//   - to float4e2m1: nearest even, saturating to +-6; NaN becomes -0 (0x8), as the test data has;
//   - to bool: x != 0 (NaN is true);
//   - to string: integers in decimal, floats as numpy prints them (shortest round-trip digits,
//     "1.0", "1e-05", "inf", "nan"), bool as "True"/"False";
//   - from string: numbers in plain or scientific notation, "inf"/"+inf"/"-inf"/"nan" in any case;
//     to integer types an integer literal is read exactly, a decimal one is truncated.
// float <-> float16 / bfloat16 convert directly (vectorised with F16C), with the same results.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "math_common.h"

namespace refeval::ops {
namespace {

struct Num {
  bool is_float = false;
  double f = 0;          // is_float
  uint64_t bits = 0;     // integer, two's complement
  bool is_unsigned = false;
};

template <class T> inline constexpr bool is_small_int_v = false;
template <int B, bool S> inline constexpr bool is_small_int_v<small_int<B, S>> = true;
template <class T> inline constexpr bool is_float8_like_v =
    std::is_same_v<T, float8e4m3fn> || std::is_same_v<T, float8e4m3fnuz> || std::is_same_v<T, float8e5m2> ||
    std::is_same_v<T, float8e5m2fnuz>;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

double parse_double(const std::string& s) {
  const std::string l = lower(s);
  if (l == "inf" || l == "+inf" || l == "infinity" || l == "+infinity") return HUGE_VAL;
  if (l == "-inf" || l == "-infinity") return -HUGE_VAL;
  if (l == "nan" || l == "+nan" || l == "-nan") return std::nan("");
  const char* begin = s.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (end == begin || *end != '\0') fail_runtime("cannot convert string '" + s + "' to a number");
  return v;
}

Num parse_num(const std::string& s, bool want_integer) {
  Num n;
  if (want_integer) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    const char* first = s.data() + b + (b < e && s[b] == '+' ? 1 : 0);
    int64_t i;
    auto r = std::from_chars(first, s.data() + e, i);
    if (r.ec == std::errc() && r.ptr == s.data() + e) { n.bits = uint64_t(i); return n; }
    uint64_t u;
    r = std::from_chars(first, s.data() + e, u);
    if (r.ec == std::errc() && r.ptr == s.data() + e) { n.bits = u; n.is_unsigned = true; return n; }
  }
  n.is_float = true;
  n.f = parse_double(s);
  return n;
}

template <class From>
Num read_num(const From& v) {
  Num n;
  if constexpr (std::is_same_v<From, bool>) n.bits = v ? 1 : 0;
  else if constexpr (std::is_integral_v<From>) { n.bits = uint64_t(v); n.is_unsigned = std::is_unsigned_v<From>; }
  else if constexpr (is_small_int_v<From>) n.bits = uint64_t(int64_t(int(v)));
  else { n.is_float = true; n.f = double(v); }  // float, double and the narrow floats (exact)
  return n;
}

// For the formats narrower than float.
float num_to_float(const Num& n) {
  if (n.is_float) return refeval::detail::round_to_odd_float(n.f);
  return refeval::detail::round_to_odd_float(n.is_unsigned ? (long double)n.bits : (long double)int64_t(n.bits));
}

// Numpy's str() of a float: shortest round-trip digits, positional between 1e-4 and 1e16.
template <class T>
std::string float_to_string(T v) {
  const double d = double(v);
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    s = fmt::format("{}", v);
  } else {  // the narrow floats: the fewest significant digits that read back to the same value
    for (int p = 1; p <= 9; ++p) {
      s = fmt::format("{:.{}g}", float(v), p);
      if (float(T(std::strtof(s.c_str(), nullptr))) == float(v)) break;
    }
    // match fmt's "{}" spelling of exponents for the shortest form
    s = fmt::format("{}", std::strtod(s.c_str(), nullptr));
  }
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

template <class From>
std::string to_string_value(const From& v) {
  if constexpr (std::is_same_v<From, std::string>) return v;
  else if constexpr (std::is_same_v<From, bool>) return v ? "True" : "False";
  else if constexpr (std::is_integral_v<From>) return fmt::format("{}", v);
  else if constexpr (is_small_int_v<From>) return fmt::format("{}", int(v));
  else return float_to_string(v);
}

template <class To>
To write_num(const Num& n, const CastOptions& o) {
  if constexpr (std::is_same_v<To, bool>) {
    return n.is_float ? n.f != 0 : n.bits != 0;
  } else if constexpr (std::is_integral_v<To>) {
    return n.is_float ? float_to_int<To>(n.f) : To(std::make_unsigned_t<To>(n.bits));
  } else if constexpr (std::is_same_v<To, float> || std::is_same_v<To, double>) {
    if (n.is_float) return To(n.f);
    return n.is_unsigned ? To(n.bits) : To(int64_t(n.bits));
  } else if constexpr (is_float8_like_v<To>) {
    return To(num_to_float(n), o.saturate);
  } else if constexpr (std::is_same_v<To, float8e8m0>) {
    return To(num_to_float(n), o.saturate, o.round_mode);
  } else if constexpr (is_small_int_v<To>) {
    // as the 8-bit integers: through int32, keeping the low bits
    return To::wrap(n.is_float ? float_to_int<int32_t>(n.f) : int64_t(n.bits));
  } else {  // float16, bfloat16, float4e2m1
    return To(num_to_float(n));
  }
}

// float <-> float16 eight at a time with F16C, which rounds to nearest even and keeps a NaN's sign
// and top payload bits (quieted) exactly as float16's constructor does; false without F16C.
bool floats_to_halves(const float* in, float16* out, int64_t n) {
#if defined(__F16C__)
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = float16(in[i]);
  return true;
#else
  (void)in, (void)out, (void)n;
  return false;
#endif
}
// F16C quiets a signalling NaN, float16's conversion keeps it: a block holding a NaN or an
// infinity (all exponent bits set) converts element by element.
bool halves_to_floats(const float16* in, float* out, int64_t n) {
#if defined(__F16C__)
  int64_t i = 0;
  const __m128i exponent = _mm_set1_epi16(0x7c00);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exponent), exponent)) != 0) {
      for (int64_t j = i; j < i + 8; ++j) out[j] = float(in[j]);
      continue;
    }
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = float(in[i]);
  return true;
#else
  (void)in, (void)out, (void)n;
  return false;
#endif
}

// One pair of element types; a function template, not a branch of the visiting lambdas, because
// clang 14 instantiates the discarded branches of an if constexpr nested in generic lambdas.
template <class From, class To>
void cast_elements(const From* in, To* out, int64_t n, const CastOptions& o) {
  if constexpr (std::is_same_v<From, To>) {
    for (int64_t i = 0; i < n; ++i) out[i] = in[i];
  } else if constexpr (std::is_same_v<From, float> && (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>)) {
    // A float is its own Num: one rounding, as write_num's (without the trip through double).
    if constexpr (std::is_same_v<To, float16>)
      if (floats_to_halves(in, out, n)) return;
    for (int64_t i = 0; i < n; ++i) out[i] = To(in[i]);
  } else if constexpr ((std::is_same_v<From, float16> || std::is_same_v<From, bfloat16>) && std::is_same_v<To, float>) {
    if constexpr (std::is_same_v<From, float16>)
      if (halves_to_floats(in, out, n)) return;
    for (int64_t i = 0; i < n; ++i) out[i] = float(in[i]);  // exact
  } else if constexpr (std::is_same_v<To, std::string>) {
    for (int64_t i = 0; i < n; ++i) out[i] = to_string_value(in[i]);
  } else if constexpr (std::is_same_v<From, std::string>) {
    constexpr bool integer = std::is_integral_v<To> || is_small_int_v<To>;
    for (int64_t i = 0; i < n; ++i) out[i] = write_num<To>(parse_num(in[i], integer), o);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = write_num<To>(read_num(in[i]), o);
  }
}

}  // namespace

Tensor cast_tensor(const Tensor& x, DType to, const CastOptions& o) {
  return visit<CastTypes>(x.dtype(), [&]<class From>() {
    return visit<CastTypes>(to, [&]<class To>() {
      Tensor y(to, x.shape());
      cast_elements<From, To>(x.data<From>(), y.data<To>(), x.size(), o);
      return y;
    });
  });
}

}  // namespace refeval::ops
