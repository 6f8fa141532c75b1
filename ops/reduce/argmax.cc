// ArgMax, ArgMin: int64 indices of the first (or, with select_last_index from version 12, the
// last) extreme element along `axis`; keepdims keeps the reduced axis as size 1. A NaN counts as
// the extreme value, as in numpy.
#include <cmath>

#include <fmt/format.h>

#include "../math/vector_math.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

template <bool IsMax>
class ArgExtremum : public OpRun {
 public:
  using Types = Numeric;
  explicit ArgExtremum(const NodeContext& ctx)
      : axis_(ctx.attr<int64_t>("axis", 0)),
        keepdims_(ctx.attr<int64_t>("keepdims", 1) != 0),
        last_(ctx.since_version() >= 12 && ctx.attr<int64_t>("select_last_index", 0) != 0) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t r = int64_t(x.rank());
    if (axis_ < -r || axis_ >= r) ctx.fail(fmt::format("axis {} is out of range for rank {}", axis_, r));
    const size_t axis = size_t(axis_ < 0 ? axis_ + r : axis_);
    int64_t outer = 1, inner = 1;
    const int64_t n = x.dim(axis);
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      if (d > axis) inner *= x.dim(d);
    }
    if (n == 0 && outer * inner > 0) ctx.fail("cannot take the arg of an empty axis");
    Shape out_shape = x.shape();
    if (keepdims_) out_shape[axis] = 1;
    else out_shape.erase(out_shape.begin() + long(axis));
    Tensor y(DType::Int64, out_shape);
    int64_t* py = y.data<int64_t>();
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T* px = x.data<T>();
      // b replaces the best a: strictly better, equal with select_last_index, or a NaN.
      auto better = [&](C b, C a) {
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(a)) return false;
          if (std::isnan(b)) return true;
        }
        return IsMax ? (b > a || (last_ && b == a)) : (b < a || (last_ && b == a));
      };
      if constexpr (std::is_same_v<T, float>) {
        if (inner == 1 && n > 0) {
          for (int64_t o = 0; o < outer; ++o) py[o] = contiguous_arg(px + o * n, n);
          return;
        }
      }
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const T* p = px + o * n * inner + i;
          int64_t best = 0;
          for (int64_t j = 1; j < n; ++j)
            if (better(C(p[j * inner]), C(p[best * inner]))) best = j;
          py[o * inner + i] = best;
        }
    });
    return {y};
  }

 private:
  // The arg of a contiguous float row: its extreme value in 8 lanes of independent comparisons
  // (they vectorise), then the first (last) index holding it; the first NaN if there is one. The
  // same index as the element-by-element scan (+0 and -0 are equal to both).
  int64_t contiguous_arg(const float* p, int64_t n) const {
    bool nan = false;
    const float m = extreme_floats<IsMax>(p, n, nan);
    int64_t j = 0;
    if (nan)
      for (;; ++j)
        if (p[j] != p[j]) return j;
    if (last_) {
      for (j = n - 1; p[j] != m; --j) {}
    } else {
      for (j = 0; p[j] != m; ++j) {}
    }
    return j;
  }

  int64_t axis_;
  bool keepdims_, last_;
};

}  // namespace

void register_argmax(Registry& reg) {
  reg.add("", "ArgMax", {1, 11, 12, 13}, make<ArgExtremum<true>>);
  reg.add("", "ArgMin", {1, 11, 12, 13}, make<ArgExtremum<false>>);
}

}  // namespace refeval::ops
