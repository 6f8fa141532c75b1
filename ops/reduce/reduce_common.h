// The reduction engine shared by every Reduce* operator. An op is a few lines: its accumulator
// type and start value (the empty-set identity), a step folding one element in, and a final map:
//
//   struct Sum {
//     template <class T> using acc_t = sum_acc_t<T>;
//     template <class A> static A init() { return A(0); }
//     template <class A, class C> static A step(A a, C v) { return wrap_add(a, A(v)); }
//     template <class A> static A finish(A a, int64_t) { return a; }
//   };
//   reg.add("", "ReduceSum", {1, 11, 13}, make<ReduceOp<Sum, SumTypes, 13>>);  // axes input from 13
//
// Axes come from the `axes` attribute (old versions) or the optional second input (ReduceSum from
// 13, the others from 18). No axes reduces everything, unless noop_with_empty_axes is set: then
// nothing is reduced and each output is the reduction of its single element (|x| for ReduceL1,
// x*x for ReduceSumSquare, x for ReduceMax...).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/tensor.h"

#include "../math/vector_math.h"

namespace refeval::ops {

// Which input dimensions are reduced, the output shape, and the input walked as runs.
struct ReducePlan {
  Shape out_shape;
  int64_t out_size = 1;
  int64_t group = 1;                  // input elements folded into each output
  std::vector<int64_t> dims;          // input dims with neighbours of the same kind merged
  std::vector<int64_t> out_strides;   // output stride of each merged dim; 0 where reduced
};

inline ReducePlan plan_reduce(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan p;
  int64_t stride = 1;
  std::vector<int64_t> strides(in.size(), 0);
  for (size_t d = in.size(); d-- > 0;)
    if (!reduced[d]) { strides[d] = stride; stride *= in[d]; }
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      p.group *= in[d];
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.out_size *= in[d];
      p.out_shape.push_back(in[d]);
    }
    if (in[d] == 1) continue;
    if (!p.dims.empty() && (p.out_strides.back() == 0) == reduced[d] &&
        (reduced[d] || p.out_strides.back() == strides[d] * in[d])) {
      p.dims.back() *= in[d];
      p.out_strides.back() = strides[d];
      continue;
    }
    p.dims.push_back(in[d]);
    p.out_strides.push_back(strides[d]);
  }
  return p;
}

// Calls f(in_offset, out_offset, n, out_stride) for runs of n consecutive input elements whose
// outputs start at out_offset and advance by out_stride (0 or 1), in row-major input order.
template <class F>
void for_each_run(const ReducePlan& p, F&& f) {
  for (int64_t d : p.dims)
    if (d == 0) return;
  if (p.dims.empty()) { f(int64_t(0), int64_t(0), int64_t(1), int64_t(0)); return; }
  const size_t outer = p.dims.size() - 1;
  const int64_t n = p.dims.back(), s = p.out_strides.back();
  std::vector<int64_t> idx(outer, 0);
  int64_t in_off = 0, out_off = 0;
  while (true) {
    f(in_off, out_off, n, s);
    in_off += n;
    size_t d = outer;
    while (true) {
      if (d == 0) return;
      --d;
      out_off += p.out_strides[d];
      if (++idx[d] < p.dims[d]) break;
      out_off -= p.out_strides[d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

// acc[o] = step(acc[o], x, o) for every input element x of output o.
template <class Acc, class C, class T, class Step>
void accumulate(const ReducePlan& p, const T* x, std::vector<Acc>& acc, Step&& step) {
  for_each_run(p, [&](int64_t i0, int64_t o, int64_t n, int64_t s) {
    if (s == 0) {
      Acc a = acc[size_t(o)];
      for (int64_t i = 0; i < n; ++i) a = step(a, C(x[i0 + i]), o);
      acc[size_t(o)] = a;
    } else {
      for (int64_t i = 0; i < n; ++i) acc[size_t(o + i)] = step(acc[size_t(o + i)], C(x[i0 + i]), o + i);
    }
  });
}

// accumulate for an additive step (step(a, x) = a + g(x)) into floating accumulators: a run of
// elements into one output is summed as four interleaved partial sums, four independent chains of
// additions, added together at the end (one chain waits out the latency of each addition: a sum
// of 1M floats took 1.1 ms).
template <class Acc, class C, class T, class Step>
void accumulate_additive(const ReducePlan& p, const T* x, std::vector<Acc>& acc, Step&& step) {
  for_each_run(p, [&](int64_t i0, int64_t o, int64_t n, int64_t s) {
    if (s != 0) {
      for (int64_t i = 0; i < n; ++i) acc[size_t(o + i)] = step(acc[size_t(o + i)], C(x[i0 + i]), o + i);
      return;
    }
    // The four partial sums in one vector register (an array of four kept them in scalars).
    typedef Acc Acc4 __attribute__((vector_size(4 * sizeof(Acc))));
    Acc4 part = {Acc(0), Acc(0), Acc(0), Acc(0)};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      const T* v = x + i0 + i;
      part = Acc4{step(part[0], C(v[0]), o), step(part[1], C(v[1]), o), step(part[2], C(v[2]), o), step(part[3], C(v[3]), o)};
    }
    for (; i < n; ++i) part[0] = step(part[0], C(x[i0 + i]), o);
    acc[size_t(o)] += (part[0] + part[1]) + (part[2] + part[3]);
  });
}

// accumulate for ReduceMax (IsMax) or ReduceMin of floats: a run into one output is scanned 8 lanes
// at a time (extreme_floats). Its value does not depend on the order of the comparisons, except
// for the sign of a zero and which NaN wins; a run whose extreme is a zero or that holds a NaN is
// rescanned in order with `step`, so the result is the in-order scan's, bit for bit.
template <bool IsMax, class Step>
void accumulate_extreme(const ReducePlan& p, const float* x, std::vector<float>& acc, Step&& step) {
  for_each_run(p, [&](int64_t i0, int64_t o, int64_t n, int64_t s) {
    if (s != 0) {
      for (int64_t i = 0; i < n; ++i) acc[size_t(o + i)] = step(acc[size_t(o + i)], x[i0 + i], o + i);
      return;
    }
    bool nan = false;
    const float m = extreme_floats<IsMax>(x + i0, n, nan);
    float a = acc[size_t(o)];
    if (nan || m == 0) {
      for (int64_t i = 0; i < n; ++i) a = step(a, x[i0 + i], o);
    } else {
      a = step(a, m, o);
    }
    acc[size_t(o)] = a;
  });
}

// Wrapping integer arithmetic (numpy keeps the element type), exact float arithmetic.
template <class A> A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return A(U(W(U(a)) + W(U(b))));
  } else {
    return a + b;
  }
}
template <class A> A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return A(U(W(U(a)) * W(U(b))));
  } else {
    return a * b;
  }
}

// Stores a computed value as T; a floating value bound for an integer type is truncated toward
// zero and clamped (NaN gives 0), never undefined behaviour.
template <class T, class V>
T store(V v) {
  if constexpr (std::is_integral_v<T> && std::is_floating_point_v<V>) {
    if (std::isnan(v)) return T(0);
    if (v <= V(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= V(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  } else {
    return from_compute<T>(v);
  }
}

// The accumulator of a sum-like reduction: double for floating types, the type itself otherwise.
template <class T> using sum_acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, T>;

// Reads keepdims, axes / noop_with_empty_axes (as the version has them) and resolves the plan.
class ReduceBase : public OpRun {
 protected:
  ReduceBase(const NodeContext& ctx, int axes_input_since)
      : keepdims_(ctx.attr<int64_t>("keepdims", 1) != 0), axes_as_input_(ctx.since_version() >= axes_input_since) {
    if (axes_as_input_) noop_ = ctx.attr<int64_t>("noop_with_empty_axes", 0) != 0;
    else axes_ = ctx.attr<std::vector<int64_t>>("axes", {});
  }

  ReducePlan plan(const Values& in, const Tensor& x) const {
    std::vector<int64_t> axes = axes_;
    if (axes_as_input_ && has_value(in, 1)) {
      const Tensor& a = input_tensor(in, 1);
      if (a.dtype() != DType::Int64 || a.rank() > 1) fail_runtime("axes must be a 1-D int64 tensor");
      axes = a.to_vector<int64_t>();
    }
    const int64_t r = int64_t(x.rank());
    std::vector<bool> reduced(x.rank(), axes.empty() && !(axes_as_input_ && noop_));
    for (int64_t a : axes) {
      if (a < -r || a >= r) fail_runtime(fmt::format("axis {} is out of range for rank {}", a, r));
      if (a < 0) a += r;
      if (reduced[size_t(a)]) fail_runtime(fmt::format("axis {} is repeated", a));
      reduced[size_t(a)] = true;
    }
    return plan_reduce(x.shape(), reduced, keepdims_);
  }

 private:
  bool keepdims_;
  bool axes_as_input_;
  bool noop_ = false;
  std::vector<int64_t> axes_;
};

// The common body: Op supplies
//   static constexpr bool kAdditive;                       step(a, x) = a + g(x), init 0 (sums may split)
//   static constexpr bool kIsMax;                          (Max and Min only) float runs scan in vectors
//   template <class T> using acc_t = ...;                  accumulator type
//   template <class A> static A init();                    value for an empty set
//   template <class A, class C> static A step(A, C);       fold one element in
//   template <class A> static double/A finish(A, group);   final value (converted to T)
// Whether Op scans for an extreme (Max, Min), and which. Read outside the lambda below because
// clang 14 instantiates Op::kIsMax in its discarded branch.
template <class Op>
constexpr bool kScansExtremes = requires { Op::kIsMax; };
template <class Op>
constexpr bool scans_max() {
  if constexpr (kScansExtremes<Op>) return Op::kIsMax;
  return false;
}

template <class Op, class TypeSet, int AxesInputSince>
class ReduceOp : public ReduceBase {
 public:
  using Types = TypeSet;
  explicit ReduceOp(const NodeContext& ctx) : ReduceBase(ctx, AxesInputSince) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const ReducePlan p = plan(in, x);
    Tensor y(x.dtype(), p.out_shape);
    visit<Types>(x.dtype(), [&]<class T>() {
      using A = typename Op::template acc_t<T>;
      std::vector<A> acc(size_t(p.out_size), Op::template init<A>());
      auto step = [](A a, compute_t<T> v, int64_t) { return Op::step(a, v); };
      if constexpr (kScansExtremes<Op> && std::is_same_v<T, float>)
        accumulate_extreme<scans_max<Op>()>(p, x.data<T>(), acc, step);
      else if constexpr (Op::kAdditive && std::is_floating_point_v<A>) accumulate_additive<A, compute_t<T>>(p, x.data<T>(), acc, step);
      else accumulate<A, compute_t<T>>(p, x.data<T>(), acc, step);
      T* out = y.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) out[i] = store<T>(Op::template finish<A>(acc[i], p.group));
    });
    return {y};
  }
};

}  // namespace refeval::ops
