// Unary math functions: Abs Neg Sign Ceil Floor Round Reciprocal Sqrt Exp Log Erf, the
// trigonometric and hyperbolic functions and their inverses, IsNaN and IsInf (Tanh has its own
// file: tanh.cc). Float32 Exp, Log, Erf, Sin and Cos run on glibc's vector functions; Sqrt
// on the IEEE square root in vectors.
#include <cmath>

#include "math_common.h"
#include "vector_math.h"

namespace refeval::ops {
namespace {

using CeilFn = decltype([](auto v) { return std::ceil(v); });
using FloorFn = decltype([](auto v) { return std::floor(v); });
using RoundFn = decltype([](auto v) { return std::nearbyint(v); });  // default mode: half to even
using ReciprocalFn = decltype([](auto v) { return decltype(v)(1) / v; });
using SqrtFn = decltype([](auto v) { return std::sqrt(v); });
using ExpFn = decltype([](auto v) { return std::exp(v); });
using LogFn = decltype([](auto v) { return std::log(v); });
using SinFn = decltype([](auto v) { return std::sin(v); });
using CosFn = decltype([](auto v) { return std::cos(v); });
using TanFn = decltype([](auto v) { return std::tan(v); });
using AsinFn = decltype([](auto v) { return std::asin(v); });
using AcosFn = decltype([](auto v) { return std::acos(v); });
using AtanFn = decltype([](auto v) { return std::atan(v); });
using SinhFn = decltype([](auto v) { return std::sinh(v); });
using CoshFn = decltype([](auto v) { return std::cosh(v); });
using AsinhFn = decltype([](auto v) { return std::asinh(v); });
using AcoshFn = decltype([](auto v) { return std::acosh(v); });
using AtanhFn = decltype([](auto v) { return std::atanh(v); });
using IsNaNFn = decltype([](auto v) { return std::isnan(v); });

using AbsFn = decltype([]<class C>(C v) -> C {
  if constexpr (std::is_unsigned_v<C>) return v;
  else if constexpr (std::is_integral_v<C>) return v < 0 ? wrap_neg(v) : v;  // abs(INT_MIN) wraps
  else return std::fabs(v);
});
using NegFn = decltype([](auto v) { return wrap_neg(v); });
using SignFn = decltype([]<class C>(C v) -> C {
  if (v > C(0)) return C(1);
  if constexpr (!std::is_unsigned_v<C>) if (v < C(0)) return C(-1);
  return v;  // 0 stays 0 (with its sign), NaN stays NaN
});
// Erf accepts integers too; they compute in double and truncate back.
using ErfFn = decltype([]<class C>(C v) -> C {
  if constexpr (std::is_integral_v<C>) return C(std::erf(double(v)));
  else return std::erf(v);
});

using FloatsAndF8 = Concat<Floats, Float8s>;

// F over Numeric or Floats, float32 through glibc's vector function Vector (vector_math.h: within
// the backend tests' tolerance of the scalar one, as Tanh).
template <class F, class List, void (*Vector)(const float*, float*, int64_t)>
class VectorUnaryOp : public UnaryOp<F, List> {
 public:
  using UnaryOp<F, List>::UnaryOp;
  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.dtype() != DType::Float) return UnaryOp<F, List>::run(in, ctx);
    Tensor y = Tensor::uninitialized(DType::Float, x.shape());  // written in full
    Vector(x.data<float>(), y.data<float>(), x.size());
    return {y};
  }
};

class IsInf : public OpRun {
 public:
  using Types = FloatsAndF8;
  explicit IsInf(const NodeContext& ctx)
      : detect_negative_(ctx.attr<int64_t>("detect_negative", 1) != 0),
        detect_positive_(ctx.attr<int64_t>("detect_positive", 1) != 0) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    return {visit<Types>(x.dtype(), [&]<class T>() {
      return map_unary<T, bool>(x, [&](auto v) {
        return std::isinf(v) && (v > 0 ? detect_positive_ : detect_negative_);
      });
    })};
  }
 private:
  bool detect_negative_, detect_positive_;
};

}  // namespace

void register_unary(Registry& reg) {
  reg.add("", "Abs", {1, 6, 13}, make<UnaryOp<AbsFn, Numeric>>);
  reg.add("", "Neg", {1, 6, 13}, make<UnaryOp<NegFn, SignedNumeric>>);
  reg.add("", "Sign", {9, 13}, make<UnaryOp<SignFn, Numeric>>);
  reg.add("", "Ceil", {1, 6, 13}, make<UnaryOp<CeilFn, Floats>>);
  reg.add("", "Floor", {1, 6, 13}, make<UnaryOp<FloorFn, Floats>>);
  reg.add("", "Round", {11, 22}, make<UnaryOp<RoundFn, Floats>>);
  reg.add("", "Reciprocal", {1, 6, 13}, make<UnaryOp<ReciprocalFn, Floats>>);
  reg.add("", "Sqrt", {1, 6, 13}, make<VectorUnaryOp<SqrtFn, Floats, sqrt_floats>>);
  reg.add("", "Exp", {1, 6, 13}, make<VectorUnaryOp<ExpFn, Floats, exp_floats>>);
  reg.add("", "Log", {1, 6, 13}, make<VectorUnaryOp<LogFn, Floats, log_floats>>);
  // Float32 Erf through glibc's vector erf in double, rounded once: closer to the exact erf than
  // scalar erff (vector_math.h), and 8 times as fast.
  reg.add("", "Erf", {9, 13}, make<VectorUnaryOp<ErfFn, Numeric, erf_floats>>);
  reg.add("", "Sin", {7, 22}, make<VectorUnaryOp<SinFn, Floats, sin_floats>>);
  reg.add("", "Cos", {7, 22}, make<VectorUnaryOp<CosFn, Floats, cos_floats>>);
  reg.add("", "Tan", {7, 22}, make<UnaryOp<TanFn, Floats>>);
  reg.add("", "Asin", {7, 22}, make<UnaryOp<AsinFn, Floats>>);
  reg.add("", "Acos", {7, 22}, make<UnaryOp<AcosFn, Floats>>);
  reg.add("", "Atan", {7, 22}, make<UnaryOp<AtanFn, Floats>>);
  reg.add("", "Sinh", {9, 22}, make<UnaryOp<SinhFn, Floats>>);
  reg.add("", "Cosh", {9, 22}, make<UnaryOp<CoshFn, Floats>>);
  reg.add("", "Asinh", {9, 22}, make<UnaryOp<AsinhFn, Floats>>);
  reg.add("", "Acosh", {9, 22}, make<UnaryOp<AcoshFn, Floats>>);
  reg.add("", "Atanh", {9, 22}, make<UnaryOp<AtanhFn, Floats>>);
  reg.add("", "IsNaN", {9, 13, 20}, make<UnaryOp<IsNaNFn, FloatsAndF8, bool>>);
  reg.add("", "IsInf", {10, 20}, make<IsInf>);
}

}  // namespace refeval::ops
