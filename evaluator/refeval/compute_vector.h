// Floating tensors as vectors of a compute type, and back. Operators that compute a whole tensor
// in double (or float) before rounding once to the output type — normalisations, attention,
// recurrent cells, the contrib family — read their inputs and write their outputs through these,
// so every such operator widens and rounds the same way (narrow floats through compute_t).
//
//   std::vector<double> x = to_compute<double>(input_tensor(in, 0));
//   ... compute y ...
//   return {tensor_from_compute(x_tensor.dtype(), x_tensor.shape(), y)};
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "refeval/dispatch.h"
#include "refeval/tensor.h"

namespace refeval {

// The values of a floating tensor (any of Floats) converted to C; an error names the type otherwise.
template <class C>
std::vector<C> to_compute(const Tensor& t) {
  return visit<Floats>(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    std::vector<C> v(size_t(t.size()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = C(compute_t<T>(p[i]));
    return v;
  });
}

// Shorthand for the common case.
inline std::vector<double> to_doubles(const Tensor& t) { return to_compute<double>(t); }

// Stores v (one value per element, row-major) into the floating tensor t, rounding each once.
template <class C>
void write_compute(Tensor& t, const std::vector<C>& v) {
  visit<Floats>(t.dtype(), [&]<class T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_compute<T>(v[i]);
  });
}

// A new floating tensor of `dtype` and `shape` holding v.
template <class C>
Tensor tensor_from_compute(DType dtype, Shape shape, const std::vector<C>& v) {
  Tensor t(dtype, std::move(shape));
  write_compute(t, v);
  return t;
}

// Doubles into a new floating tensor (accepts a braced list: from_doubles(dt, {}, {sum})).
inline Tensor from_doubles(DType dtype, Shape shape, const std::vector<double>& v) {
  return tensor_from_compute(dtype, std::move(shape), v);
}

// Row-major strides of `shape` broadcast unidirectionally (numpy rules, dims aligned right) to
// `target`, 0 on broadcast axes. Errors say "<name> of shape (..) does not broadcast to (..)".
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& target, std::string_view name);

// The values of t broadcast unidirectionally to `target`, converted to C.
template <class C = double>
std::vector<C> expand_to(const Tensor& t, const Shape& target, std::string_view name) {
  const std::vector<int64_t> strides = broadcast_strides(t.shape(), target, name);
  const std::vector<C> src = to_compute<C>(t);
  const size_t r = target.size();
  std::vector<C> out(size_t(shape_size(target)));
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = src[size_t(off)];
    for (size_t d = r; d-- > 0;) {  // odometer step, keeping the source offset in step
      off += strides[d];
      if (++idx[d] < target[d]) break;
      off -= strides[d] * idx[d];
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace refeval
