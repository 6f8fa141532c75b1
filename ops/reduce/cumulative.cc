// CumSum (11, 14) and CumProd (26): running sum / product along the axis given by a scalar int32
// or int64 input. exclusive shifts by one (starting from the identity), reverse runs backwards.
// Integers wrap; narrow floats accumulate in float.
#include <fmt/format.h>

#include "reduce_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

template <bool IsProd>
class Cumulative : public OpRun {
 public:
  using Types = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint32_t, uint64_t>;
  explicit Cumulative(const NodeContext& ctx)
      : exclusive_(ctx.attr<int64_t>("exclusive", 0) != 0), reverse_(ctx.attr<int64_t>("reverse", 0) != 0) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& a = input_tensor(in, 1);
    if (a.size() != 1 || a.rank() > 1 || (a.dtype() != DType::Int32 && a.dtype() != DType::Int64))
      ctx.fail("axis must be a 0-D int32 or int64 tensor");
    const int64_t axis_in = a.dtype() == DType::Int32 ? a.data<int32_t>()[0] : a.data<int64_t>()[0];
    const int64_t r = int64_t(x.rank());
    if (axis_in < -r || axis_in >= r) ctx.fail(fmt::format("axis {} is out of range for rank {}", axis_in, r));
    const size_t axis = size_t(axis_in < 0 ? axis_in + r : axis_in);
    int64_t outer = 1, inner = 1;
    const int64_t n = x.dim(axis);
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      if (d > axis) inner *= x.dim(d);
    }
    Tensor y(x.dtype(), x.shape());
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * n * inner + i;
          C acc = C(IsProd ? 1 : 0);
          for (int64_t k = 0; k < n; ++k) {
            const int64_t j = base + (reverse_ ? n - 1 - k : k) * inner;
            const C v = C(px[j]);
            if (exclusive_) py[j] = from_compute<T>(acc);
            acc = IsProd ? wrap_mul(acc, v) : wrap_add(acc, v);
            if (!exclusive_) py[j] = from_compute<T>(acc);
          }
        }
    });
    return {y};
  }

 private:
  bool exclusive_, reverse_;
};

}  // namespace

void register_cumulative(Registry& reg) {
  reg.add("", "CumSum", {11, 14}, make<Cumulative<false>>);
  reg.add("", "CumProd", {26}, make<Cumulative<true>>);
}

}  // namespace refeval::ops
