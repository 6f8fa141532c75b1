// Element-type sets and the one dispatch helper every operator uses (STYLE.md §4):
//
//   using Types = Numeric;                       // declared once in the op class
//   visit<Types>(x.dtype(), [&]<class T>() { ... compute with T ... });
//
// An element type outside the set is an error naming the type; the engine adds the node.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "refeval/dtype.h"
#include "refeval/error.h"

namespace refeval {

template <class... Ts>
struct TypeList {
  static std::vector<DType> dtypes() { return {dtype_of<Ts>...}; }
  static constexpr bool contains(DType t) { return ((dtype_of<Ts> == t) || ...); }
};

namespace detail {
template <class... L> struct Concat;
template <class... A> struct Concat<TypeList<A...>> { using type = TypeList<A...>; };
template <class... A, class... B, class... Rest>
struct Concat<TypeList<A...>, TypeList<B...>, Rest...> { using type = typename Concat<TypeList<A..., B...>, Rest...>::type; };
}  // namespace detail
template <class... L> using Concat = typename detail::Concat<L...>::type;

using Float8s = TypeList<float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz>;
using Floats = TypeList<float, double, float16, bfloat16>;
using SignedInts = TypeList<int8_t, int16_t, int32_t, int64_t>;
using UnsignedInts = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;
using Ints = Concat<SignedInts, UnsignedInts>;
using Numeric = Concat<Floats, Ints>;
using SignedNumeric = Concat<Floats, SignedInts>;
using Complex = TypeList<std::complex<float>, std::complex<double>>;
using SmallInts = TypeList<int4, uint4, int2, uint2>;
using NumericAndBool = Concat<Numeric, TypeList<bool>>;
using AllNumeric = Concat<Numeric, TypeList<bool>, Complex, Float8s, TypeList<float8e8m0, float4e2m1>, SmallInts>;
using All = Concat<AllNumeric, TypeList<std::string>>;

[[noreturn]] void fail_unsupported_dtype(DType t, const std::vector<DType>& supported);

// Calls f.template operator()<T>() for the T in List whose DType is `t`.
template <class List, class F>
decltype(auto) visit(DType t, F&& f);

namespace detail {
template <class F, class T, class... Rest>
decltype(auto) visit_impl(DType t, F& f, TypeList<T, Rest...>*) {
  if (t == dtype_of<T>) return f.template operator()<T>();
  if constexpr (sizeof...(Rest) > 0) return visit_impl(t, f, static_cast<TypeList<Rest...>*>(nullptr));
  else fail_unsupported_dtype(t, {});
}
}  // namespace detail

template <class List, class F>
decltype(auto) visit(DType t, F&& f) {
  if (!List::contains(t)) fail_unsupported_dtype(t, List::dtypes());
  return detail::visit_impl(t, f, static_cast<List*>(nullptr));
}

// Unsigned integer types of 1, 2, 4 and 8 bytes, for movement ops that copy elements without
// looking at them (dispatch by width, STYLE.md §4).
template <size_t N> struct UIntOfSize;
template <> struct UIntOfSize<1> { using type = uint8_t; };
template <> struct UIntOfSize<2> { using type = uint16_t; };
template <> struct UIntOfSize<4> { using type = uint32_t; };
template <> struct UIntOfSize<8> { using type = uint64_t; };
struct Bytes16 { uint64_t lo, hi; };

// Calls f.template operator()<W>() with W a trivially copyable type of the element's width
// (std::string for strings).
template <class F>
decltype(auto) visit_by_width(DType t, F&& f) {
  if (t == DType::String) return f.template operator()<std::string>();
  switch (dtype_size(t)) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    case 16: return f.template operator()<Bytes16>();
    default: fail_unsupported_dtype(t, {});
  }
}

// Narrow floats compute in float (STYLE.md §4); every other type computes as itself.
template <class T> inline constexpr bool is_narrow_float_v =
    std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float8e4m3fn> ||
    std::is_same_v<T, float8e4m3fnuz> || std::is_same_v<T, float8e5m2> || std::is_same_v<T, float8e5m2fnuz> ||
    std::is_same_v<T, float8e8m0> || std::is_same_v<T, float4e2m1>;
template <class T> using compute_t = std::conditional_t<is_narrow_float_v<T>, float, T>;

// Converts a computed value back to the storage type T.
template <class T, class C> inline T from_compute(C v) {
  if constexpr (is_narrow_float_v<T>) return T(float(v));
  else return static_cast<T>(v);
}

}  // namespace refeval
