// Range: start, start + delta, ... up to (excluding) limit; the element count is
// max(ceil((limit - start) / delta), 0). Integers are exact and wrap. Version 27 adds float16 and
// bfloat16, which compute in the `stash_type` precision (float by default, or double) and are
// rounded back; float and double compute in their own type. delta 0 is an error.
#include "tensor_common.h"

#include <cmath>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

template <class T, class S>
Tensor range_of(S start, S limit, S delta) {
  if (delta == S(0)) fail_runtime("Range: delta cannot be 0");
  int64_t n;
  if constexpr (std::is_integral_v<S>) {
    const __int128 diff = __int128(limit) - __int128(start);
    __int128 q = diff / delta;
    if (q * delta != diff && ((diff > 0) == (delta > 0))) ++q;  // ceil
    n = q > 0 ? int64_t(q) : 0;
  } else {
    const S q = std::ceil((limit - start) / delta);
    if (!(q < S(9.0e18))) fail_runtime("Range: the element count is not a finite int64");
    n = q > 0 ? int64_t(q) : 0;
  }
  Tensor y(dtype_of<T>, {n});
  T* out = y.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<S>)
      out[i] = T(uint64_t(start) + uint64_t(i) * uint64_t(delta));  // wraps, never overflows
    else
      out[i] = from_compute<T>(S(start + S(i) * delta));
  }
  return y;
}

class Range : public OpRun {
 public:
  using Types = TypeList<float, double, int16_t, int32_t, int64_t, float16, bfloat16>;
  explicit Range(const NodeContext& ctx) {
    if (ctx.since_version() >= 27) {
      const int64_t stash = ctx.attr<int64_t>("stash_type", 1);
      if (stash != int64_t(DType::Float) && stash != int64_t(DType::Double))
        ctx.fail(fmt::format("Range: unsupported stash_type {} (float or double)", stash));
      stash_double_ = stash == int64_t(DType::Double);
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& s = input_tensor(in, 0);
    const Tensor& l = input_tensor(in, 1);
    const Tensor& d = input_tensor(in, 2);
    if (s.dtype() != l.dtype() || s.dtype() != d.dtype()) fail_runtime("Range: inputs must have one element type");
    if (s.size() != 1 || l.size() != 1 || d.size() != 1) fail_runtime("Range: start, limit and delta must be scalars");
    return {visit<Types>(s.dtype(), [&]<class T>() {
      const T a = s.data<T>()[0], b = l.data<T>()[0], c = d.data<T>()[0];
      if constexpr (is_narrow_float_v<T>) {
        if (stash_double_) return range_of<T, double>(double(a), double(b), double(c));
        return range_of<T, float>(float(a), float(b), float(c));
      } else {
        return range_of<T, T>(a, b, c);
      }
    })};
  }

 private:
  bool stash_double_ = false;
};

}  // namespace

void register_range(Registry& reg) {
  reg.add("", "Range", {11, 27}, make<Range>);
}

}  // namespace refeval::ops
