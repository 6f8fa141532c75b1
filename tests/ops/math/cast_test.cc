// Cast and CastLike: the conversions the backend tests do not pin down (float -> int out of
// range, NaN, strings, small integers, double rounding), and attribute errors.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor cast(const Tensor& x, DType to, std::vector<Attribute> extra = {}, int64_t opset = kLatestOnnxOpset) {
  extra.push_back(attr("to", int64_t(to)));
  return run_node(node("Cast", {"x"}, {"y"}, extra), {x}, opset)[0].tensor();
}
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
}  // namespace

TEST_CASE("Cast float to integers truncates, and out-of-range values give numpy's x86-64 results") {
  struct Case { const char* what; Tensor x; DType to; Tensor expected; };
  const Case cases[] = {
      // truncation toward zero
      {"trunc", tensor<float>({4}, {1.9f, -1.9f, 0.5f, -0.5f}), DType::Int32, tensor<int32_t>({4}, {1, -1, 0, 0})},
      // narrow targets go through int32 and keep the low bits
      {"uint8 wraps", tensor<float>({3}, {300.f, -1.f, 255.9f}), DType::UInt8, tensor<uint8_t>({3}, {44, 255, 255})},
      // NaN and out of range become INT_MIN in 32 and 64 bits, 0 in narrower types
      {"int32 NaN", tensor<float>({3}, {kNaN, 3e9f, -kInf}), DType::Int32,
       tensor<int32_t>({3}, {INT32_MIN, INT32_MIN, INT32_MIN})},
      {"int64 NaN", tensor<double>({2}, {std::nan(""), 1e19}), DType::Int64, tensor<int64_t>({2}, {INT64_MIN, INT64_MIN})},
      {"int8 NaN", tensor<float>({1}, {kNaN}), DType::Int8, tensor<int8_t>({1}, {0})},
      // uint64 takes values up to 2^64 exactly
      {"uint64 big", tensor<double>({1}, {1.8e19}), DType::UInt64, tensor<uint64_t>({1}, {18000000000000000000ull})},
      // to bool: nonzero, NaN included, is true
      {"bool", tensor<float>({3}, {0.f, -0.f, kNaN}), DType::Bool, tensor<bool>({3}, {false, false, true})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(cast(c.x, c.to), c.expected);
  }
}

TEST_CASE("Cast between integers keeps the low bits") {
  check_equal(cast(tensor<int64_t>({3}, {257, -1, 65535}), DType::UInt8), tensor<uint8_t>({3}, {1, 255, 255}));
  check_equal(cast(tensor<uint64_t>({1}, {UINT64_MAX}), DType::Int64), tensor<int64_t>({1}, {-1}));
  check_equal(cast(tensor<int32_t>({3}, {7, -9, 8}), DType::Int4), tensor<int4>({3}, {int4::wrap(7), int4::wrap(7), int4::wrap(-8)}));
}

TEST_CASE("Cast float to 4- and 2-bit integers truncates and keeps the low bits") {
  check_equal(cast(tensor<float>({5}, {2.5f, -9.f, 8.f, -2.7f, kNaN}), DType::Int4),
              tensor<int4>({5}, {int4::wrap(2), int4::wrap(7), int4::wrap(-8), int4::wrap(-2), int4::wrap(0)}));
  check_equal(cast(tensor<float>({2}, {-3.f, 20.f}), DType::UInt2), tensor<uint2>({2}, {uint2::wrap(1), uint2::wrap(0)}));
}

TEST_CASE("Cast to float4e2m1 saturates and maps NaN to -0") {
  const Tensor y = cast(tensor<float>({4}, {0.25f, 9.f, -kInf, kNaN}), DType::Float4E2M1);
  const float4e2m1* p = y.data<float4e2m1>();
  CHECK(p[0].bits == 0x0);  // tie between 0 and 0.5 goes to even
  CHECK(float(p[1]) == 6.f);
  CHECK(float(p[2]) == -6.f);
  CHECK(p[3].bits == 0x8);
}

TEST_CASE("Cast double to float16 rounds once") {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint between two float16 values; rounding to float
  // first would land exactly on the midpoint and round down to even.
  const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const Tensor y = cast(tensor<double>({1}, {v}), DType::Float16);
  CHECK(y.data<float16>()[0].bits == float16(1.0f + std::ldexp(1.0f, -10)).bits);
}

TEST_CASE("Cast to and from strings") {
  check_equal(cast(tensor<float>({5}, {1.f, 0.1f, -2.5f, 1e-5f, kInf}), DType::String),
              tensor<std::string>({5}, {"1.0", "0.1", "-2.5", "1e-05", "inf"}));
  check_equal(cast(tensor<int64_t>({2}, {-12, 7}), DType::String), tensor<std::string>({2}, {"-12", "7"}));
  check_equal(cast(tensor<std::string>({5}, {"3.14", "1e-5", "+INF", "-inf", "1E8"}), DType::Float),
              tensor<float>({5}, {3.14f, 1e-5f, kInf, -kInf, 1e8f}));
  const Tensor nan = cast(tensor<std::string>({1}, {"NaN"}), DType::Double);
  CHECK(std::isnan(nan.data<double>()[0]));
  // integers are read exactly; a decimal literal truncates
  check_equal(cast(tensor<std::string>({3}, {"9007199254740993", "100.5", "-7"}), DType::Int64),
              tensor<int64_t>({3}, {9007199254740993, 100, -7}));
  CHECK_THROWS_AS(cast(tensor<std::string>({1}, {"Hello World!"}), DType::Float), Error);
}

TEST_CASE("Cast to float8 saturates unless saturate=0") {
  const Tensor x = tensor<float>({2}, {1000.f, -1000.f});
  const Tensor sat = cast(x, DType::Float8E4M3FN);
  CHECK(float(sat.data<float8e4m3fn>()[0]) == 448.f);
  CHECK(float(sat.data<float8e4m3fn>()[1]) == -448.f);
  const Tensor nosat = cast(x, DType::Float8E5M2, {attr("saturate", int64_t(0))});
  CHECK(std::isinf(float(cast(tensor<float>({1}, {1e6f}), DType::Float8E5M2, {attr("saturate", int64_t(0))}).data<float8e5m2>()[0])));
  CHECK(float(nosat.data<float8e5m2>()[0]) == 1024.f);  // 1000 rounds to 1024, in range
}

TEST_CASE("Cast to float8e8m0 follows round_mode") {
  const Tensor x = tensor<float>({1}, {3.f});
  CHECK(float(cast(x, DType::Float8E8M0).data<float8e8m0>()[0]) == 4.f);
  CHECK(float(cast(x, DType::Float8E8M0, {attr("round_mode", "down")}).data<float8e8m0>()[0]) == 2.f);
  CHECK_THROWS_AS(cast(x, DType::Float8E8M0, {attr("round_mode", "sideways")}), Error);
}

TEST_CASE("CastLike takes the type of its second input") {
  auto out = run_node(node("CastLike", {"x", "like"}, {"y"}), {tensor<float>({2}, {1.5f, -2.f}), tensor<int64_t>({1}, {0})});
  check_equal(out[0], tensor<int64_t>({2}, {1, -2}));
}

TEST_CASE("Cast at opset 1 accepts the type name as a string") {
  auto out = run_node(node("Cast", {"x"}, {"y"}, {attr("to", "INT32")}), {tensor<float>({1}, {2.7f})}, 1);
  check_equal(out[0], tensor<int32_t>({1}, {2}));
}

TEST_CASE("Cast refuses an unknown target type") {
  CHECK_THROWS_AS(cast(tensor<float>({1}, {1.f}), DType(99)), Error);
}

TEST_CASE("BitCast reinterprets bits of equal width") {
  auto bc = [](const Tensor& x, DType to) {
    return run_node(node("BitCast", {"x"}, {"y"}, {attr("to", int64_t(to))}), {x})[0].tensor();
  };
  check_equal(bc(tensor<float>({2}, {1.f, -0.f}), DType::UInt32), tensor<uint32_t>({2}, {0x3f800000u, 0x80000000u}));
  check_equal(bc(tensor<int4>({2}, {int4::wrap(-1), int4::wrap(7)}), DType::UInt4), tensor<uint4>({2}, {uint4::wrap(15), uint4::wrap(7)}));
  check_equal(bc(tensor<uint8_t>({3}, {0, 1, 2}), DType::Bool), tensor<bool>({3}, {false, true, true}));
  CHECK_THROWS_AS(bc(tensor<float>({1}, {1.f}), DType::Int64), Error);
  CHECK_THROWS_AS(bc(tensor<float>({1}, {1.f}), DType::String), Error);
}

TEST_CASE("Cast int64 to bfloat16 rounds once") {
  // 2^24 + 2^16 + 1 is just above the midpoint 2^24 + 2^16 between two bfloat16 values; through
  // float it would become the midpoint and round down to even (2^24).
  const int64_t v = (int64_t(1) << 24) + (int64_t(1) << 16) + 1;
  const Tensor y = cast(tensor<int64_t>({1}, {v}), DType::BFloat16);
  CHECK(float(y.data<bfloat16>()[0]) == float((int64_t(1) << 24) + (int64_t(1) << 17)));
}
