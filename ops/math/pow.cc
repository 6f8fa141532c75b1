// Pow: Z = X ^ Y with broadcasting; Z has X's type, Y may be any numeric type. As numpy:
// integer ^ integer is exact with two's complement wrap-around (a negative integer exponent is
// an error, as in numpy); anything involving a float computes in floating point (float when both
// are float or narrower, double otherwise) and converts to X's type (see float_to_int). A float or
// double X raised to a scalar 2 or 3 (GELU's cube, variances) is multiplied out in double and
// rounded once, and to a scalar 0.5 (a norm's root) is a square root (correctly rounded, with
// pow's results for -0 and -inf): as accurate as std::pow and several times faster.
#include <cmath>
#include <optional>

#include "math_common.h"

namespace refeval::ops {
namespace {

template <class T, class E>
T int_pow(T base, E exp) {
  if constexpr (std::is_signed_v<E>)
    if (exp < 0) fail_runtime("integers to negative integer powers are not allowed");
  T result = 1;
  using U = std::make_unsigned_t<E>;
  for (U e = U(exp); e != 0; e >>= 1) {
    if (e & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
  }
  return result;
}

class Pow : public OpRun {
 public:
  using Types = TypeList<float, double, float16, bfloat16, int32_t, int64_t>;
  using ExponentTypes = Numeric;
  explicit Pow(const NodeContext& ctx) : legacy_(ctx) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor y = legacy_.align(x, input_tensor(in, 1));
    // (not when a (1,) exponent raises a scalar x: the result is (1,) then, not x's shape)
    if (auto small = simple_exponent(y); small && y.rank() <= x.rank() && (x.dtype() == DType::Float || x.dtype() == DType::Double))
      return {visit<TypeList<float, double>>(x.dtype(), [&]<class T>() { return power(x, *small, T{}); })};
    return {visit<Types>(x.dtype(), [&]<class T>() {
      return visit<ExponentTypes>(y.dtype(), [&]<class E>() {
        return map_binary<T, E, T>(x, y, [](auto b, auto e) -> compute_t<T> {
          using B = decltype(b);
          using X = decltype(e);
          if constexpr (std::is_integral_v<B> && std::is_integral_v<X>) {
            return int_pow(b, e);
          } else {
            constexpr bool narrow = sizeof(B) <= 4 && sizeof(X) <= 4 && !std::is_integral_v<B> && !std::is_integral_v<X>;
            using W = std::conditional_t<narrow, float, double>;
            const W r = std::pow(W(b), W(e));
            if constexpr (std::is_integral_v<B>) return float_to_int<B>(double(r));
            else return B(r);
          }
        });
      });
    })};
  }
 private:
  // 2, 3 or 0.5 when y is a one-element floating or integer tensor holding exactly that.
  static std::optional<double> simple_exponent(const Tensor& y) {
    if (y.size() != 1 || y.rank() > 1) return std::nullopt;
    double e = 0;
    if (y.dtype() == DType::Float) e = y.data<float>()[0];
    else if (y.dtype() == DType::Double) e = y.data<double>()[0];
    else if (y.dtype() == DType::Int64) e = double(y.data<int64_t>()[0]);
    else if (y.dtype() == DType::Int32) e = double(y.data<int32_t>()[0]);
    else return std::nullopt;
    if (e == 2.0 || e == 3.0 || e == 0.5) return e;
    return std::nullopt;
  }
  template <class T>
  static Tensor power(const Tensor& x, double e, T) {
    Tensor z(x.dtype(), x.shape());  // a one-element exponent broadcasts to x's shape
    const T* px = x.data<T>();
    T* pz = z.data<T>();
    if (e == 0.5) {
      for (int64_t i = 0; i < x.size(); ++i)  // pow(+-0, 0.5) = +0 and pow(-inf, 0.5) = +inf, unlike sqrt
        pz[i] = px[i] == 0 ? T(0) : std::isinf(px[i]) ? std::abs(px[i]) : std::sqrt(px[i]);
      return z;
    }
    for (int64_t i = 0; i < x.size(); ++i) {
      const double v = px[i];
      pz[i] = T(e == 2 ? v * v : v * v * v);
    }
    return z;
  }
  LegacyBroadcast legacy_;
};

}  // namespace

void register_pow(Registry& reg) { reg.add("", "Pow", {1, 7, 12, 13, 15}, make<Pow>); }

}  // namespace refeval::ops
