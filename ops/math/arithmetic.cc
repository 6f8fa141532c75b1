// Add, Sub, Mul, Div: numpy-broadcasting binary arithmetic on two inputs of the same type.
#include "math_common.h"

#include <fmt/format.h>

namespace refeval::ops {
namespace {

// Integer division and remainder by zero are errors, never C++ undefined behaviour; INT_MIN / -1
// wraps as two's complement does.
template <class T>
T checked_div(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) fail_runtime("integer division by zero");
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));  // negate, wrapping
  }
  return a / b;
}

template <class F>
class Arithmetic : public OpRun {
 public:
  using Types = Numeric;
  explicit Arithmetic(const NodeContext& ctx) : legacy_(ctx) { ignore_consumed_inputs(ctx); }
  Values run(const Values& in, RunContext&) override {
    const Tensor& a = input_tensor(in, 0);
    const Tensor aligned = legacy_.active() ? legacy_.align(a, input_tensor(in, 1)) : Tensor();
    const Tensor& b = legacy_.active() ? aligned : input_tensor(in, 1);  // no copy of B from opset 7
    if (a.dtype() != b.dtype())
      fail_runtime(fmt::format("inputs must have one element type, got {} and {}", dtype_short_name(a.dtype()),
                               dtype_short_name(b.dtype())));
    return {visit<Types>(a.dtype(), [&]<class T>() { return map_binary<T, T>(a, b, F{}); })};
  }
 private:
  LegacyBroadcast legacy_;
};

// Narrow integer types compute in their own width and wrap, as numpy does.
template <class T> using wrap_t = std::conditional_t<(sizeof(T) < sizeof(int)), std::make_unsigned_t<int>, T>;

struct AddFn { template <class T> T operator()(T a, T b) const {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else return T(a + b);
} };
struct SubFn { template <class T> T operator()(T a, T b) const {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return T(std::make_unsigned_t<T>(a) - std::make_unsigned_t<T>(b));
  else return T(a - b);
} };
struct MulFn { template <class T> T operator()(T a, T b) const {
  // (an int16's unsigned halves would promote to int, whose 65535 * 65535 overflows: undefined)
  if constexpr (std::is_integral_v<T>) return T(wrap_t<std::make_unsigned_t<T>>(a) * wrap_t<std::make_unsigned_t<T>>(b));
  else return T(a * b);
} };
struct DivFn { template <class T> T operator()(T a, T b) const { return checked_div(a, b); } };

}  // namespace

void register_arithmetic(Registry& reg) {
  reg.add("", "Add", {1, 6, 7, 13, 14}, make<Arithmetic<AddFn>>);
  reg.add("", "Sub", {1, 6, 7, 13, 14}, make<Arithmetic<SubFn>>);
  reg.add("", "Mul", {1, 6, 7, 13, 14}, make<Arithmetic<MulFn>>);
  reg.add("", "Div", {1, 6, 7, 13, 14}, make<Arithmetic<DivFn>>);
}

}  // namespace refeval::ops
