// Mod: elementwise remainder with broadcasting. fmod=1 is C's fmod (the sign of the dividend);
// fmod=0 (integers only, per the spec) is Python's/numpy's % (the sign of the divisor).
// An integer remainder by zero is an error; INT_MIN % -1 is 0.
#include <cmath>

#include "math_common.h"

namespace refeval::ops {
namespace {

class Mod : public OpRun {
 public:
  using Types = Numeric;
  explicit Mod(const NodeContext& ctx) : fmod_(ctx.attr<int64_t>("fmod", 0)) {
    if (fmod_ != 0 && fmod_ != 1) ctx.fail(fmt::format("fmod must be 0 or 1, got {}", fmod_));
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& a = input_tensor(in, 0);
    const Tensor& b = input_tensor(in, 1);
    require_same_dtype(a, b);
    return {visit<Types>(a.dtype(), [&]<class T>() {
      if constexpr (std::is_integral_v<T>) {
        return map_binary<T, T>(a, b, [&](T x, T y) -> T {
          if (y == 0) fail_runtime("integer modulo by zero");
          if constexpr (std::is_signed_v<T>) if (y == T(-1)) return T(0);
          const T r = T(x % y);
          if (fmod_ == 0 && r != 0 && ((r < 0) != (y < 0))) return T(r + y);
          return r;
        });
      } else {
        if (fmod_ == 0) fail_runtime("fmod must be 1 for floating-point inputs");
        return map_binary<T, T>(a, b, [](auto x, auto y) { return std::fmod(x, y); });
      }
    })};
  }
 private:
  int64_t fmod_;
};

}  // namespace

void register_mod(Registry& reg) { reg.add("", "Mod", {10, 13, 28}, make<Mod>); }

}  // namespace refeval::ops
