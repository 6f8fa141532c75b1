// Elementwise appliers (STYLE.md §5): an elementwise op is a scalar lambda plus a type set.
//
//   unary:   map_unary<T>(x, [](auto v) { return v < 0 ? -v : v; })
//   binary:  map_binary<T, T>(a, b, [](auto x, auto y) { return x + y; })   // broadcasts
//
// Narrow floats are widened to float before the lambda and rounded back after (compute_t).
#pragma once

#include <algorithm>
#include <array>
#include <vector>

#include "refeval/dispatch.h"
#include "refeval/tensor.h"
#include "refeval/threads.h"

namespace refeval {

// Multidirectional (numpy) broadcasting of several shapes; throws naming the shapes if they
// do not broadcast.
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// Elements from which an elementwise op is split across the evaluator's threads (refeval/threads.h).
constexpr int64_t kParallelElements = int64_t(1) << 14;

// Walks an output shape in row-major order while tracking each input's element offset under
// broadcasting. Dimensions that are contiguous for every input are merged, so the inner loop
// is as long as possible.
template <size_t N>
class BroadcastWalker {
 public:
  BroadcastWalker(const Shape& out, const std::array<const Shape*, N>& ins);
  // f(out_offset, in_offsets, inner_count, inner_strides): a run of `inner_count` outputs starting
  // at out_offset; input k starts at in_offsets[k] and advances by inner_strides[k] (0 or 1).
  template <class F> void for_each_run(F&& f) const { for_each_run(0, rows(), f); }
  // The same runs split by rows across the evaluator's threads: each run is one thread's, and its
  // elements are computed as for_each_run computes them.
  template <class F> void parallel_for_each_run(F&& f) const {
    const int64_t inner = dims_.empty() ? 1 : dims_.back();
    parallel_for(rows(), std::max<int64_t>(1, kParallelElements / std::max<int64_t>(inner, 1)),
                 [&](int64_t first, int64_t last) { for_each_run(first, last, f); });
  }

 private:
  // Runs [first, last) of the rows() runs of dims_.back() outputs each, in row-major order.
  template <class F> void for_each_run(int64_t first, int64_t last, F&& f) const;
  int64_t rows() const;

  std::vector<int64_t> dims_;                 // merged output dims, outermost first
  std::vector<std::array<int64_t, N>> strides_;  // per merged dim, per input
};

template <size_t N>
BroadcastWalker<N>::BroadcastWalker(const Shape& out, const std::array<const Shape*, N>& ins) {
  const size_t rank = out.size();
  std::vector<std::array<int64_t, N>> st(rank);
  for (size_t k = 0; k < N; ++k) {
    const Shape& s = *ins[k];
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      const size_t offset = rank - d;  // position counted from the right
      const int64_t dim = offset <= s.size() ? s[s.size() - offset] : 1;
      st[d][k] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // size-1 dims contribute nothing
    if (!dims_.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k) merge = merge && strides_.back()[k] == st[d][k] * out[d];
      if (merge) {
        dims_.back() *= out[d];
        strides_.back() = st[d];
        continue;
      }
    }
    dims_.push_back(out[d]);
    strides_.push_back(st[d]);
  }
}

template <size_t N>
int64_t BroadcastWalker<N>::rows() const {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims_.size(); ++d) rows *= dims_[d];
  for (int64_t d : dims_)
    if (d == 0) return 0;
  return rows;
}

template <size_t N>
template <class F>
void BroadcastWalker<N>::for_each_run(int64_t first, int64_t last, F&& f) const {
  if (first >= last) return;
  if (dims_.empty()) {
    std::array<int64_t, N> zero{};
    f(int64_t(0), zero, int64_t(1), zero);
    return;
  }
  const size_t outer = dims_.size() - 1;
  const int64_t inner = dims_.back();
  const std::array<int64_t, N>& inner_strides = strides_.back();
  // Row `first`'s index along each outer dim and each input's offset there.
  std::vector<int64_t> idx(outer, 0);
  std::array<int64_t, N> off{};
  for (size_t d = outer, rest = size_t(first); d-- > 0;) {
    idx[d] = int64_t(rest % size_t(dims_[d]));
    rest /= size_t(dims_[d]);
    for (size_t k = 0; k < N; ++k) off[k] += idx[d] * strides_[d][k];
  }
  for (int64_t row = first, out_off = first * inner;;) {
    f(out_off, off, inner, inner_strides);
    if (++row == last) return;
    out_off += inner;
    for (size_t d = outer; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides_[d][k];
      if (idx[d] < dims_[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides_[d][k] * dims_[d];
      idx[d] = 0;
    }
  }
}

// y[i] = f(x[i]); Out defaults to T.
template <class T, class Out = T, class F>
Tensor map_unary(const Tensor& x, F&& f) {
  Tensor y = Tensor::uninitialized(dtype_of<Out>, x.shape());
  const T* in = x.data<T>();
  Out* out = y.data<Out>();
  parallel_for(x.size(), kParallelElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = from_compute<Out>(f(compute_t<T>(in[i])));
  });
  return y;
}

// z = f(a, b) with broadcasting; A and B are the input storage types, Out the output's.
template <class A, class B, class Out = A, class F>
Tensor map_binary(const Tensor& a, const Tensor& b, F&& f) {
  Tensor z = Tensor::uninitialized(dtype_of<Out>, a.shape() == b.shape() ? a.shape() : broadcast_shapes({a.shape(), b.shape()}));
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* pz = z.data<Out>();
  // One run of `n` outputs from o; input k starts at off[k] and advances by s[k] (0 or 1).
  auto run = [&](int64_t o, const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& s) {
    const A* x = pa + off[0];
    const B* y = pb + off[1];
    Out* out = pz + o;
    if (s[0] == 1 && s[1] == 1)
      for (int64_t i = 0; i < n; ++i) out[i] = from_compute<Out>(f(compute_t<A>(x[i]), compute_t<B>(y[i])));
    else if (s[0] == 1)
      for (int64_t i = 0; i < n; ++i) out[i] = from_compute<Out>(f(compute_t<A>(x[i]), compute_t<B>(*y)));
    else if (s[1] == 1)
      for (int64_t i = 0; i < n; ++i) out[i] = from_compute<Out>(f(compute_t<A>(*x), compute_t<B>(y[i])));
    else
      for (int64_t i = 0; i < n; ++i) out[i] = from_compute<Out>(f(compute_t<A>(*x), compute_t<B>(*y)));
  };
  // Equal shapes or a scalar operand: one run, split across threads when large.
  const bool a_whole = a.shape() == z.shape(), b_whole = b.shape() == z.shape();
  if ((a_whole || a.size() == 1) && (b_whole || b.size() == 1) && z.size() > 0) {
    const std::array<int64_t, 2> step{a_whole ? 1 : 0, b_whole ? 1 : 0};
    parallel_for(z.size(), kParallelElements, [&](int64_t begin, int64_t end) {
      run(begin, {step[0] * begin, step[1] * begin}, end - begin, step);
    });
    return z;
  }
  BroadcastWalker<2>(z.shape(), {&a.shape(), &b.shape()}).parallel_for_each_run(run);
  return z;
}

}  // namespace refeval
