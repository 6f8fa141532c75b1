// Helpers shared by the math family: input type checks, a generic unary op, wrapping integer
// arithmetic, and the numeric conversion every cast-like operation uses (Cast, Pow, Clip bounds).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "refeval/elementwise.h"
#include "refeval/op_run.h"
#include "refeval/registry.h"

namespace refeval::ops {

// All inputs of an op whose schema ties them to one type variable must share it.
inline void require_same_dtype(const Tensor& a, const Tensor& b, const char* what = "inputs") {
  if (a.dtype() != b.dtype())
    fail_runtime(fmt::format("{} must have one element type, got {} and {}", what, dtype_short_name(a.dtype()),
                             dtype_short_name(b.dtype())));
}

// Two's complement wrap-around for signed integers, without undefined behaviour.
template <class T> T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
  else return T(-a);
}
template <class T> T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return T(U(a) * U(b));
  } else return T(a * b);
}
template <class T> T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return T(U(a) + U(b));
  } else return T(a + b);
}

// Opset-1 versions carry `consumed_inputs`, an optimisation hint with no effect on results.
inline void ignore_consumed_inputs(const NodeContext& ctx) {
  if (ctx.since_version() < 6) ctx.ignore("consumed_inputs");
}

// Broadcasting before opset 7 (Add Sub Mul Div Pow Equal Greater Less And Or Xor): without
// `broadcast` the shapes must be equal; with broadcast=1, B's shape must match a contiguous run of
// A's dimensions starting at `axis` (default: B's dims are A's trailing dims). From opset 7 numpy
// broadcasting applies and align() returns B unchanged.
class LegacyBroadcast {
 public:
  explicit LegacyBroadcast(const NodeContext& ctx) {
    if (ctx.since_version() >= 7) return;
    legacy_ = true;
    broadcast_ = ctx.attr<int64_t>("broadcast", 0) != 0;
    axis_ = ctx.optional_attr<int64_t>("axis");
  }
  bool active() const { return legacy_; }  // false from opset 7: align() is B itself
  // B reshaped so that numpy broadcasting lines it up with A as the legacy rules do.
  Tensor align(const Tensor& a, const Tensor& b) const {
    if (!legacy_) return b;
    if (!broadcast_) {
      if (a.shape() != b.shape())
        fail_runtime("shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) +
                     " differ and broadcast is not set");
      return b;
    }
    const int64_t ra = int64_t(a.rank()), rb = int64_t(b.rank());
    int64_t axis = axis_ ? *axis_ : ra - rb;
    if (axis < 0) axis += ra;
    bool ok = rb <= ra && axis >= 0 && axis + rb <= ra;
    for (int64_t k = 0; ok && k < rb; ++k) ok = b.dim(size_t(k)) == a.dim(size_t(axis + k)) || b.dim(size_t(k)) == 1;
    if (!ok)
      fail_runtime(fmt::format("B of shape {} does not broadcast to A of shape {} at axis {}", shape_to_string(b.shape()),
                               shape_to_string(a.shape()), axis));
    Shape s = b.shape();
    s.resize(size_t(ra - axis), 1);
    return b.reshaped(s);
  }
 private:
  bool legacy_ = false, broadcast_ = false;
  std::optional<int64_t> axis_;
};

// A unary elementwise op: y = F(x) with the element types of `List`. F is a stateless generic
// callable applied to compute_t<T> values; Out is the output type (void: same as the input).
template <class F, class List, class Out = void>
class UnaryOp : public OpRun {
 public:
  using Types = List;
  explicit UnaryOp(const NodeContext& ctx) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    return {visit<Types>(x.dtype(), [&]<class T>() {
      if constexpr (std::is_void_v<Out>) return map_unary<T>(x, F{});
      else return map_unary<T, Out>(x, F{});
    })};
  }
};

// ---------------------------------------------------------------------------------------------
// Numeric conversion (Cast). Float to integer truncates toward zero. Values outside the target
// range, infinities and NaN have no value in C++ (undefined behaviour) and none in the ONNX spec;
// refeval gives the result numpy gives on x86-64, which the Python reference evaluator returns:
//   - targets of 8, 16 bits and int32: through int32, where NaN and out-of-range values become
//     INT32_MIN, then the low bits are kept (so 300.0 -> uint8 44, NaN -> int8 0, 3e9 -> int32 INT32_MIN);
//   - uint32 and int64: the same through int64 (INT64_MIN for NaN / out of range);
//   - uint64: values in [2^63, 2^64) convert exactly, everything else as int64 above.
// Integer to integer keeps the low bits (two's complement), as the spec says. Anything to bool
// is `x != 0` (NaN is true).

namespace detail {
inline int64_t float_to_i64_x86(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}
inline int32_t float_to_i32_x86(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return int32_t(v);
}
}  // namespace detail

template <class To>
To float_to_int(double v) {
  if constexpr (sizeof(To) <= 2 || std::is_same_v<To, int32_t>) {
    return To(std::make_unsigned_t<To>(uint32_t(detail::float_to_i32_x86(v))));
  } else if constexpr (std::is_same_v<To, uint64_t>) {
    if (v >= 9223372036854775808.0 && v < 18446744073709551616.0)
      return uint64_t(v - 9223372036854775808.0) + (uint64_t(1) << 63);
    return uint64_t(detail::float_to_i64_x86(v));
  } else {
    return To(std::make_unsigned_t<To>(uint64_t(detail::float_to_i64_x86(v))));
  }
}

}  // namespace refeval::ops

namespace refeval::ops {

// y = f(x) for the element types of List; f is a generic callable on compute_t<T>.
template <class List, class F>
Tensor map_unary_of(const Tensor& x, F&& f) {
  return visit<List>(x.dtype(), [&]<class T>() { return map_unary<T>(x, f); });
}

}  // namespace refeval::ops

namespace refeval::ops {

// Cast's options (attributes of Cast and CastLike).
struct CastOptions {
  bool saturate = true;                          // float8 targets: out of range -> max finite, else NaN/inf
  E8M0Rounding round_mode = E8M0Rounding::Up;    // float8e8m0 targets
};
// Casts every element of x to `to` (cast_impl.cc); the element types Cast accepts are CastTypes.
using CastTypes = Concat<Numeric, TypeList<bool, std::string>, Float8s, TypeList<float8e8m0, float4e2m1>, SmallInts>;
Tensor cast_tensor(const Tensor& x, DType to, const CastOptions& options);

}  // namespace refeval::ops
