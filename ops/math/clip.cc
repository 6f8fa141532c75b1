// Clip: y = min(max(x, min), max). Opsets 1 and 6 take the bounds as float attributes; from 11
// they are optional scalar inputs of x's type. NaN passes through; min > max gives max (numpy).
#include <limits>

#include "math_common.h"

namespace refeval::ops {
namespace {

template <class C> C clip_value(C v, C lo, C hi) {
  const C r = v < lo ? lo : v;
  return hi < r ? hi : r;
}

class ClipAttr : public OpRun {  // opsets 1 and 6
 public:
  using Types = Floats;
  explicit ClipAttr(const NodeContext& ctx)
      : min_(ctx.attr<float>("min", std::numeric_limits<float>::lowest())),
        max_(ctx.attr<float>("max", std::numeric_limits<float>::max())) {
    ignore_consumed_inputs(ctx);
  }
  Values run(const Values& in, RunContext&) override {
    return {map_unary_of<Types>(input_tensor(in, 0), [&](auto v) {
      using C = decltype(v);
      return clip_value(v, C(min_), C(max_));
    })};
  }
 private:
  float min_, max_;
};

class Clip : public OpRun {  // opsets 11, 12, 13
 public:
  using Types = Numeric;
  explicit Clip(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    return {visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      auto bound = [&](size_t i, C fallback) -> C {
        if (!has_value(in, i)) return fallback;
        const Tensor& b = input_tensor(in, i);
        require_same_dtype(x, b, "input and bounds");
        if (b.size() != 1) fail_runtime(fmt::format("input {} (a bound) must be a scalar, got shape {}", i, shape_to_string(b.shape())));
        return C(b.data<T>()[0]);
      };
      const C lo = bound(1, std::numeric_limits<C>::lowest());
      const C hi = bound(2, std::numeric_limits<C>::max());
      return map_unary<T>(x, [&](C v) { return clip_value(v, lo, hi); });
    })};
  }
};

}  // namespace

void register_clip(Registry& reg) {
  reg.add("", "Clip", {1, 6}, make<ClipAttr>);
  reg.add("", "Clip", {11, 12, 13}, make<Clip>);
}

}  // namespace refeval::ops
