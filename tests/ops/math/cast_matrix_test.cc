// Cast over every pair of numeric element types: exact round trips of the values both types
// hold, saturation into the float8 formats, NaN into every float type, and ties to even.
#include <cmath>
#include <complex>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

using Types = Concat<Numeric, TypeList<bool>, Float8s, TypeList<float8e8m0, float4e2m1>, SmallInts>;

template <class T>
T make(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_same_v<T, int4> || std::is_same_v<T, uint4> || std::is_same_v<T, int2> || std::is_same_v<T, uint2>)
    return T::wrap(int64_t(v));
  else if constexpr (is_narrow_float_v<T>) return T(float(v));
  else return T(v);
}

Tensor tensor_of(DType t, const std::vector<double>& values) {
  return visit<Types>(t, [&]<class T>() {
    Tensor x(t, {int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i) x.data<T>()[i] = make<T>(values[i]);
    return x;
  });
}

double at(const Tensor& x, int64_t i) {
  return visit<Types>(x.dtype(), [&]<class T>() -> double {
    const T v = x.data<T>()[i];
    if constexpr (std::is_same_v<T, bool>) return v ? 1 : 0;
    else if constexpr (std::is_same_v<T, int4> || std::is_same_v<T, uint4> || std::is_same_v<T, int2> || std::is_same_v<T, uint2>)
      return int(v);
    else return double(v);
  });
}

Tensor cast(const Tensor& x, DType to, int saturate = 1) {
  return run_node(node("Cast", {"x"}, {"y"}, {attr("to", int64_t(to)), attr("saturate", saturate)}), {x}, 25)[0].tensor();
}

// Whether element type t holds v exactly.
bool holds(DType t, double v) {
  const bool whole = v == std::floor(v);
  switch (t) {
    case DType::Bool: return v == 0 || v == 1;
    case DType::UInt2: return whole && v >= 0 && v <= 3;
    case DType::Int2: return whole && v >= -2 && v <= 1;
    case DType::UInt4: return whole && v >= 0 && v <= 15;
    case DType::Int4: return whole && v >= -8 && v <= 7;
    case DType::UInt8: return whole && v >= 0 && v <= 255;
    case DType::Int8: return whole && v >= -128 && v <= 127;
    case DType::UInt16: case DType::UInt32: case DType::UInt64: return whole && v >= 0;
    case DType::Int16: case DType::Int32: case DType::Int64: return whole;
    case DType::Float8E8M0: return v > 0 && std::exp2(std::round(std::log2(v))) == v;
    case DType::Float4E2M1: {
      const double a = std::fabs(v);
      return a == 0 || a == 0.5 || a == 1 || a == 1.5 || a == 2 || a == 3 || a == 4 || a == 6;
    }
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ: {
      const double a = std::fabs(v);
      return a <= 8 && a * 2 == std::floor(a * 2) && (a < 4 || a == std::floor(a)) && a != 5;
    }
    default: return true;  // float16, bfloat16, float, double hold every value used here
  }
}

const double kValues[] = {-128, -8, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6, 7, 8, 15, 100, 127, 255};

}  // namespace

TEST_CASE("every pair of numeric types round-trips the values both hold") {
  const std::vector<DType> types = Types::dtypes();
  int pairs = 0;
  for (DType from : types) {
    for (DType to : types) {
      std::vector<double> values;
      for (double v : kValues)
        if (holds(from, v) && holds(to, v)) values.push_back(v);
      if (values.empty()) continue;
      CAPTURE(dtype_short_name(from));
      CAPTURE(dtype_short_name(to));
      const Tensor there = cast(tensor_of(from, values), to);
      const Tensor back = cast(there, from);
      for (size_t i = 0; i < values.size(); ++i) {
        CAPTURE(values[i]);
        CHECK(at(there, int64_t(i)) == values[i]);
        CHECK(at(back, int64_t(i)) == values[i]);
      }
      ++pairs;
    }
  }
  CHECK(pairs == int(types.size() * types.size()));  // every pair shares at least one value
}

TEST_CASE("values beyond a float8 format saturate to its largest value, or become NaN/infinity") {
  struct Target { DType to; double max; bool has_inf; };
  const Target targets[] = {{DType::Float8E4M3FN, 448, false}, {DType::Float8E4M3FNUZ, 240, false},
                            {DType::Float8E5M2, 57344, true}, {DType::Float8E5M2FNUZ, 57344, false}};
  for (DType from : {DType::Float, DType::Double, DType::Float16, DType::BFloat16}) {
    for (const auto& t : targets) {
      CAPTURE(dtype_short_name(from));
      CAPTURE(dtype_short_name(t.to));
      const Tensor x = tensor_of(from, {65000, -65000});
      CHECK(at(cast(x, t.to, 1), 0) == t.max);
      CHECK(at(cast(x, t.to, 1), 1) == -t.max);
      const double over = at(cast(x, t.to, 0), 0);
      CHECK((t.has_inf ? std::isinf(over) : std::isnan(over)));
    }
  }
}

TEST_CASE("NaN stays NaN between float types; float4e2m1, which has none, gets -0") {
  const DType with_nan[] = {DType::Float, DType::Double, DType::Float16, DType::BFloat16, DType::Float8E4M3FN,
                            DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ, DType::Float8E8M0};
  for (DType from : with_nan) {
    const Tensor nan = cast(tensor_of(DType::Float, {std::nan("")}), from);
    REQUIRE(std::isnan(at(nan, 0)));
    for (DType to : with_nan) {
      CAPTURE(dtype_short_name(from));
      CAPTURE(dtype_short_name(to));
      CHECK(std::isnan(at(cast(nan, to), 0)));
    }
    const Tensor f4 = cast(nan, DType::Float4E2M1);
    CHECK(f4.data<float4e2m1>()[0].bits == 0x8);
    CHECK(at(cast(nan, DType::Bool), 0) == 1);
  }
}

TEST_CASE("ties round to the even neighbour") {
  struct Case { DType to; double in, out; const char* what; };
  const Case cases[] = {
      {DType::Float16, 1 + std::ldexp(1, -11), 1, "half-way above 1 goes down to even"},
      {DType::Float16, 1 + 3 * std::ldexp(1, -11), 1 + std::ldexp(1, -9), "half-way above an odd value goes up"},
      {DType::BFloat16, 1 + std::ldexp(1, -8), 1, "bfloat16 tie down"},
      {DType::BFloat16, 1 + 3 * std::ldexp(1, -8), 1 + std::ldexp(1, -6), "bfloat16 tie up"},
      {DType::Float8E4M3FN, 1.0625, 1, "e4m3: between 1 and 1.125"},
      {DType::Float8E4M3FN, 1.1875, 1.25, "e4m3: between 1.125 and 1.25"},
      {DType::Float8E5M2, 1.125, 1, "e5m2: between 1 and 1.25"},
      {DType::Float8E5M2, 1.375, 1.5, "e5m2: between 1.25 and 1.5"},
      {DType::Float4E2M1, 2.5, 2, "e2m1: between 2 and 3"},
      {DType::Float4E2M1, 3.5, 4, "e2m1: between 3 and 4"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    for (DType from : {DType::Float, DType::Double}) CHECK(at(cast(tensor_of(from, {c.in, -c.in}), c.to), 0) == c.out);
    CHECK(at(cast(tensor_of(DType::Double, {-c.in}), c.to), 0) == -c.out);
  }
}
