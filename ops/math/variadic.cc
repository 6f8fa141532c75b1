// Variadic elementwise Max, Min, Sum and Mean over one or more inputs, broadcasting numpy-style.
// Max and Min propagate NaN, as numpy's maximum/minimum do.
#include <cmath>

#include "math_common.h"
#include "vector_math.h"

namespace refeval::ops {
namespace {

struct MaxFn { template <class C> C operator()(C a, C b) const {
  if constexpr (std::is_floating_point_v<C>) if (std::isnan(a) || std::isnan(b)) return a + b;
  return a < b ? b : a;
} };
struct MinFn { template <class C> C operator()(C a, C b) const {
  if constexpr (std::is_floating_point_v<C>) if (std::isnan(a) || std::isnan(b)) return a + b;
  return b < a ? b : a;
} };
struct SumFn { template <class C> C operator()(C a, C b) const { return wrap_add(a, b); } };

template <class F, class List, bool Mean = false>
class Variadic : public OpRun {
 public:
  using Types = List;
  explicit Variadic(const NodeContext& ctx) {
    ignore_consumed_inputs(ctx);
    if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& first = input_tensor(in, 0);
    return {visit<Types>(first.dtype(), [&]<class T>() {
      Tensor acc = first;
      for (size_t i = 1; i < in.size(); ++i) {
        const Tensor& next = input_tensor(in, i);
        require_same_dtype(first, next);
        if constexpr (std::is_same_v<T, float> && (std::is_same_v<F, MaxFn> || std::is_same_v<F, MinFn>)) {
          if (acc.shape() == next.shape()) {  // float Max and Min of equal shapes: in vectors
            Tensor z = Tensor::uninitialized(DType::Float, acc.shape());
            (std::is_same_v<F, MaxFn> ? max_floats : min_floats)(acc.data<float>(), next.data<float>(), z.data<float>(), z.size());
            acc = z;
            continue;
          }
        }
        acc = map_binary<T, T>(acc, next, F{});
      }
      if (in.size() == 1) acc = acc.clone();
      if constexpr (Mean) {
        const auto n = compute_t<T>(in.size());
        acc = map_unary<T>(acc, [n](auto v) { return v / n; });
      }
      return acc;
    })};
  }
};

}  // namespace

void register_variadic(Registry& reg) {
  reg.add("", "Max", {1, 6, 8, 12, 13}, make<Variadic<MaxFn, Numeric>>);
  reg.add("", "Min", {1, 6, 8, 12, 13}, make<Variadic<MinFn, Numeric>>);
  reg.add("", "Sum", {1, 6, 8, 13}, make<Variadic<SumFn, Floats>>);
  reg.add("", "Mean", {1, 6, 8, 13}, make<Variadic<SumFn, Floats, true>>);
}

}  // namespace refeval::ops
