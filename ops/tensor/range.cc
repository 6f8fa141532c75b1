// Range: start, start + delta, ... up to (excluding) limit; the element count is
// max(ceil((limit - start) / delta), 0). Integers are exact and wrap; float16/bfloat16 compute in
// float. delta 0 is an error.
#include "tensor_common.h"

#include <cmath>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Range : public OpRun {
 public:
  using Types = TypeList<float, double, int16_t, int32_t, int64_t, float16, bfloat16>;
  explicit Range(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& s = input_tensor(in, 0);
    const Tensor& l = input_tensor(in, 1);
    const Tensor& d = input_tensor(in, 2);
    if (s.dtype() != l.dtype() || s.dtype() != d.dtype()) fail_runtime("Range: inputs must have one element type");
    if (s.size() != 1 || l.size() != 1 || d.size() != 1) fail_runtime("Range: start, limit and delta must be scalars");
    return {visit<Types>(s.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const C start = C(s.data<T>()[0]), limit = C(l.data<T>()[0]), delta = C(d.data<T>()[0]);
      if (delta == C(0)) fail_runtime("Range: delta cannot be 0");
      int64_t n;
      if constexpr (std::is_integral_v<C>) {
        const __int128 diff = __int128(limit) - __int128(start);
        __int128 q = diff / delta;
        if (q * delta != diff && ((diff > 0) == (delta > 0))) ++q;  // ceil
        n = q > 0 ? int64_t(q) : 0;
      } else {
        const double q = std::ceil((double(limit) - double(start)) / double(delta));
        if (!(q < 9.0e18)) fail_runtime("Range: the element count is not a finite int64");
        n = q > 0 ? int64_t(q) : 0;
      }
      Tensor y(dtype_of<T>, {n});
      T* out = y.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<C>)
          out[i] = T(uint64_t(start) + uint64_t(i) * uint64_t(delta));  // wraps, never overflows
        else
          out[i] = from_compute<T>(C(start + C(i) * delta));
      }
      return y;
    })};
  }
};

}  // namespace

void register_range(Registry& reg) {
  reg.add("", "Range", {11, 27}, make<Range>);
}

}  // namespace refeval::ops
