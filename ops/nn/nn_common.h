// Helpers of the nn family: parameters read as doubles, unidirectional broadcasting of a
// parameter to the normalised shape, and axis normalisation.
#pragma once

#include <vector>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// The values of a floating tensor as doubles.
inline std::vector<double> as_doubles(const Tensor& t) {
  return visit<Floats>(t.dtype(), [&]<class T>() {
    std::vector<double> v(static_cast<size_t>(t.size()));
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(compute_t<T>(p[i]));
    return v;
  });
}

// Writes doubles into a new tensor of a floating type.
inline Tensor from_doubles(DType dtype, const Shape& shape, const std::vector<double>& v) {
  Tensor t(dtype, shape);
  visit<Floats>(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_compute<T>(v[i]);
  });
  return t;
}

// The values of t broadcast unidirectionally to `target`, as doubles.
inline std::vector<double> expand_to(const Tensor& t, const Shape& target, const char* name) {
  const Shape& s = t.shape();
  auto fail = [&] {
    fail_runtime(fmt::format("{} of shape {} does not broadcast to {}", name, shape_to_string(s), shape_to_string(target)));
  };
  if (s.size() > target.size()) fail();
  const size_t r = target.size(), lead = r - s.size();
  std::vector<int64_t> strides(r, 0);
  int64_t stride = 1;
  for (size_t d = r; d-- > lead;) {
    const int64_t dim = s[d - lead];
    if (dim != 1 && dim != target[d]) fail();
    strides[d] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  const std::vector<double> src = as_doubles(t);
  const int64_t n = shape_size(target);
  std::vector<double> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += idx[d] * strides[d];
    out[size_t(i)] = src[size_t(off)];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < target[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// An axis in [-rank, rank-1] made non-negative; a run-time error otherwise.
inline size_t normalize_axis(int64_t axis, size_t rank) {
  const int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) fail_runtime(fmt::format("axis {} is out of range for rank {}", axis, r));
  return size_t(axis < 0 ? axis + r : axis);
}

}  // namespace refeval::ops
