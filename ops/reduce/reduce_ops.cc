// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
// ReduceLogSumExp, ReduceSumSquare on the shared engine (reduce_common.h). Each op is its
// accumulator, its empty-set identity, its step and its final map.
#include "reduce_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

using SumTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint32_t, uint64_t>;
using MinMaxTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint32_t, uint64_t, int8_t, uint8_t, bool>;

// Sum-like ops accumulate floats in double and integers in their own type (wrapping).
struct SumLike {
  static constexpr bool kAdditive = true;
  template <class T> using acc_t = sum_acc_t<T>;
  template <class A> static A init() { return A(0); }
};

struct Sum : SumLike {
  template <class A, class C> static A step(A a, C v) { return wrap_add(a, A(v)); }
  template <class A> static A finish(A a, int64_t) { return a; }
};
struct Mean : SumLike {
  template <class A, class C> static A step(A a, C v) { return wrap_add(a, A(v)); }
  template <class A> static A finish(A a, int64_t n) {
    if constexpr (std::is_integral_v<A>) return n == 0 ? A(0) : A(a / A(n));
    else return a / A(n);  // NaN for an empty set
  }
};
struct Prod : SumLike {
  static constexpr bool kAdditive = false;
  template <class A> static A init() { return A(1); }
  template <class A, class C> static A step(A a, C v) { return wrap_mul(a, A(v)); }
  template <class A> static A finish(A a, int64_t) { return a; }
};
struct L1 : SumLike {
  template <class A, class C> static A step(A a, C v) {
    if constexpr (std::is_unsigned_v<C>) return wrap_add(a, A(v));
    else return wrap_add(a, A(v < C(0) ? wrap_mul(v, C(-1)) : v));
  }
  template <class A> static A finish(A a, int64_t) { return a; }
};
struct SumSquare : SumLike {
  template <class A, class C> static A step(A a, C v) { return wrap_add(a, wrap_mul(A(v), A(v))); }
  template <class A> static A finish(A a, int64_t) { return a; }
};
struct L2 : SumSquare {
  template <class A> static double finish(A a, int64_t) { return std::sqrt(double(a)); }
};
struct LogSum : Sum {
  template <class A> static double finish(A a, int64_t) { return std::log(double(a)); }
};

// Max and Min keep the element's compute type; NaN propagates as numpy's max does.
template <bool IsMax>
struct Extremum {
  static constexpr bool kAdditive = false;
  static constexpr bool kIsMax = IsMax;
  template <class T> using acc_t = compute_t<T>;
  template <class A> static A init() {
    if constexpr (std::is_same_v<A, bool>) return !IsMax;
    else if constexpr (std::is_floating_point_v<A>)
      return IsMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    else return IsMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
  }
  template <class A, class C> static A step(A a, C v) {
    if constexpr (std::is_floating_point_v<A>)
      if (std::isnan(v)) return v;
    if constexpr (IsMax) return v > a ? v : a;
    else return v < a ? v : a;
  }
  template <class A> static A finish(A a, int64_t) { return a; }
};

template <class F, class Types, int AxesInputSince>
using Reduce = ReduceOp<F, Types, AxesInputSince>;

// log(sum(exp(x))), computed as m + log(sum(exp(x - m))) with m the maximum, so it cannot overflow.
class ReduceLogSumExp : public ReduceBase {
 public:
  using Types = SumTypes;
  explicit ReduceLogSumExp(const NodeContext& ctx) : ReduceBase(ctx, 18) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const ReducePlan p = plan(in, x);
    Tensor y(x.dtype(), p.out_shape);
    visit<Types>(x.dtype(), [&]<class T>() {
      std::vector<double> m(size_t(p.out_size), -std::numeric_limits<double>::infinity());
      accumulate<double, double>(p, x.data<T>(), m, [](double a, double v, int64_t) { return std::isnan(v) || v > a ? v : a; });
      std::vector<double> s(size_t(p.out_size), 0.0);
      accumulate<double, double>(p, x.data<T>(), s, [&](double a, double v, int64_t o) {
        const double mo = m[size_t(o)];
        return std::isinf(mo) ? a + std::exp(v) : a + std::exp(v - mo);
      });
      T* out = y.data<T>();
      for (size_t i = 0; i < s.size(); ++i)
        out[i] = store<T>(std::isinf(m[i]) ? std::log(s[i]) : m[i] + std::log(s[i]));
    });
    return {y};
  }
};

}  // namespace

void register_reduce_ops(Registry& reg) {
  reg.add("", "ReduceSum", {1, 11, 13}, make<Reduce<Sum, SumTypes, 13>>);
  reg.add("", "ReduceMean", {1, 11, 13, 18}, make<Reduce<Mean, SumTypes, 18>>);
  reg.add("", "ReduceMax", {1, 11, 12, 13, 18, 20}, make<Reduce<Extremum<true>, MinMaxTypes, 18>>);
  reg.add("", "ReduceMin", {1, 11, 12, 13, 18, 20}, make<Reduce<Extremum<false>, MinMaxTypes, 18>>);
  reg.add("", "ReduceProd", {1, 11, 13, 18}, make<Reduce<Prod, SumTypes, 18>>);
  reg.add("", "ReduceL1", {1, 11, 13, 18}, make<Reduce<L1, SumTypes, 18>>);
  reg.add("", "ReduceL2", {1, 11, 13, 18}, make<Reduce<L2, SumTypes, 18>>);
  reg.add("", "ReduceLogSum", {1, 11, 13, 18}, make<Reduce<LogSum, SumTypes, 18>>);
  reg.add("", "ReduceLogSumExp", {1, 11, 13, 18}, make<ReduceLogSumExp>);
  reg.add("", "ReduceSumSquare", {1, 11, 13, 18}, make<Reduce<SumSquare, SumTypes, 18>>);
}

}  // namespace refeval::ops
