// float16, bfloat16, the float8 family and float4e2m1 round to nearest even, and their special
// values (NaN, infinities, saturation) follow the ONNX spec.
#include <cmath>
#include <limits>

#include "refeval/narrow_types.h"
#include "test_util.h"

using namespace refeval;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("float16 conversion rounds to nearest even and keeps the special values") {
  struct Case { float in; uint16_t bits; const char* what; };
  const Case cases[] = {
      {1.0f, 0x3c00, "one"},
      {-2.0f, 0xc000, "negative"},
      {65504.0f, 0x7bff, "largest finite"},
      {65520.0f, 0x7c00, "half-way above the largest rounds to infinity"},
      {65519.0f, 0x7bff, "just below half-way stays finite"},
      {kInf, 0x7c00, "infinity"},
      {5.9604644775390625e-08f, 0x0001, "smallest subnormal"},
      {2.98023223876953125e-08f, 0x0000, "half the smallest subnormal ties to even (zero)"},
      {1.0f + 1.0f / 2048, 0x3c00, "tie between 1 and its successor goes to even"},
      {1.0f + 3.0f / 2048, 0x3c02, "tie goes up to the even neighbour"},
      {-0.0f, 0x8000, "negative zero"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK(float16(c.in).bits == c.bits);
  }
  CHECK(std::isnan(float(float16(kNaN))));
  for (uint32_t b = 0; b < 0x7c00; ++b)  // every finite half survives the round trip through float
    REQUIRE(float16(float(float16::from_bits(uint16_t(b)))).bits == b);
}

TEST_CASE("bfloat16 rounds to nearest even") {
  CHECK(bfloat16(1.0f).bits == 0x3f80);
  CHECK(bfloat16(1.00390625f).bits == 0x3f80);   // exactly half an ulp above 1: ties to even
  CHECK(bfloat16(1.01171875f).bits == 0x3f82);   // 1.5 ulps: ties to even (up)
  CHECK(std::isnan(float(bfloat16(kNaN))));
  CHECK(float(bfloat16(kInf)) == kInf);
}

TEST_CASE("float8 e4m3fn: 448 is the largest value; saturation decides what lies beyond") {
  CHECK(float(float8e4m3fn(448.0f)) == 448.0f);
  CHECK(float(float8e4m3fn(464.0f)) == 448.0f);               // tie rounds to even (448)
  CHECK(float(float8e4m3fn(1000.0f, true)) == 448.0f);        // saturate
  CHECK(std::isnan(float(float8e4m3fn(1000.0f, false))));     // no saturation: NaN
  CHECK(float(float8e4m3fn(kInf, true)) == 448.0f);
  CHECK(std::isnan(float(float8e4m3fn(kNaN))));
  CHECK(float(float8e4m3fn(0.001953125f)) == 0.001953125f);   // smallest subnormal 2^-9
  CHECK(float8e4m3fn(-0.0f).bits == 0x80);
}

TEST_CASE("float8 fnuz formats have one NaN (0x80) and no negative zero") {
  CHECK(float8e4m3fnuz(-0.0f).bits == 0x00);
  CHECK(float8e4m3fnuz(kNaN).bits == 0x80);
  CHECK(float(float8e4m3fnuz(240.0f)) == 240.0f);
  CHECK(float(float8e5m2fnuz(57344.0f)) == 57344.0f);
  CHECK(std::isnan(float(float8e5m2fnuz(1e6f, false))));
}

TEST_CASE("float8 e5m2 has infinities") {
  CHECK(float(float8e5m2(kInf, false)) == kInf);
  CHECK(float(float8e5m2(kInf, true)) == 57344.0f);
  CHECK(float(float8e5m2(1e6f, false)) == kInf);
  CHECK(float(float8e5m2(-1e6f, false)) == -kInf);
}

TEST_CASE("float4e2m1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6 and saturates") {
  const float values[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (float v : values) CHECK(float(float4e2m1(v)) == v);
  CHECK(float(float4e2m1(5.0f)) == 4.0f);   // tie between 4 and 6 goes to even mantissa (4)
  CHECK(float(float4e2m1(100.0f)) == 6.0f);
  CHECK(float(float4e2m1(-2.5f)) == -2.0f);
  CHECK(float4e2m1(kNaN).bits == 0x8);  // no NaN in the format: -0, as ONNX's test data has
}

TEST_CASE("conversions from double round once, not twice") {
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);  // just above a float16 tie
  CHECK(float16(d).bits == 0x3c01);
  CHECK(float16(float(d)).bits == 0x3c00);  // through float the tie is lost and rounds to even
  CHECK(bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)).bits == 0x3f81);
}

TEST_CASE("float8e8m0 stores powers of two") {
  CHECK(float(float8e8m0(1.0f)) == 1.0f);
  CHECK(float(float8e8m0(3.0f)) == 4.0f);  // rounds up by default
  CHECK(float(float8e8m0(3.0f, true, E8M0Rounding::Down)) == 2.0f);
  CHECK(std::isnan(float(float8e8m0::from_bits(0xff))));
}

TEST_CASE("small integers wrap like packed nibbles") {
  CHECK(int(int4::wrap(7)) == 7);
  CHECK(int(int4::wrap(8)) == -8);
  CHECK(int(uint4::wrap(17)) == 1);
  CHECK(int(int2::wrap(-3)) == 1);
}
