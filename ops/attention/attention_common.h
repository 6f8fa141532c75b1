// Helpers of the attention family: float/double conversion of tensors for ops that compute in
// float (float16 and bfloat16 too) or double, and the scaled-dot-product kernel that Attention
// and FlexAttention share.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// The values of a floating tensor in compute type C.
template <class C>
std::vector<C> to_compute_vec(const Tensor& t) {
  return visit<Floats>(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    std::vector<C> v(size_t(t.size()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = C(compute_t<T>(p[i]));
    return v;
  });
}

// A new tensor of a floating type from computed values.
template <class C>
Tensor from_compute_vec(DType dtype, const Shape& shape, const std::vector<C>& v) {
  Tensor t(dtype, shape);
  visit<Floats>(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_compute<T>(v[i]);
  });
  return t;
}

// Calls f.template operator()<C>() with C = double for double tensors and float otherwise.
template <class F>
decltype(auto) with_compute_type(DType t, F&& f) {
  if (!Floats::contains(t)) fail_unsupported_dtype(t, Floats::dtypes());
  if (t == DType::Double) return f.template operator()<double>();
  return f.template operator()<float>();
}

// Row-major strides of `shape` broadcast (right-aligned) to `target`, 0 on broadcast axes.
inline std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& target, const char* name) {
  if (shape.size() > target.size())
    fail_runtime(fmt::format("{} of shape {} does not broadcast to {}", name, shape_to_string(shape), shape_to_string(target)));
  std::vector<int64_t> st(target.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t d = target.size() - 1 - i, sd = shape.size() - 1 - i;
    if (shape[sd] != 1 && shape[sd] != target[d])
      fail_runtime(fmt::format("{} of shape {} does not broadcast to {}", name, shape_to_string(shape), shape_to_string(target)));
    st[d] = shape[sd] == 1 ? 0 : stride;
    stride *= shape[sd];
  }
  return st;
}

}  // namespace refeval::ops
