// Helpers shared by the ai.onnx.preview.training optimizers: the (R, T, tensors...) input layout
// and the float/double dispatch of the per-tensor update.
#pragma once

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/registry.h"

namespace refeval::ops {

using OptimizerTypes = TypeList<float, double>;

// The scalar learning rate R (input 0) as a double, and the step count T (input 1).
inline double learning_rate(const Values& in) {
  const Tensor& r = input_tensor(in, 0);
  if (r.size() != 1) fail_runtime("the learning rate R must be a scalar");
  return visit<OptimizerTypes>(r.dtype(), [&]<class T>() { return double(r.data<T>()[0]); });
}
inline int64_t step_count(const Values& in) {
  const Tensor& t = input_tensor(in, 1);
  if (t.size() != 1) fail_runtime("the step count T must be a scalar");
  return t.data<int64_t>()[0];
}

// The optimized tensors come in `groups` groups of n after R and T; returns n.
inline size_t tensors_per_group(const Values& in, size_t groups) {
  if (in.size() < 2 || (in.size() - 2) % groups != 0)
    fail_runtime(fmt::format("expected R, T and {} groups of equally many tensors, got {} inputs", groups, in.size()));
  return (in.size() - 2) / groups;
}

// The tensor of group g, index i, checked to have the shape and type of X_i.
inline const Tensor& group_tensor(const Values& in, size_t n, size_t g, size_t i) {
  const Tensor& x = input_tensor(in, 2 + i);
  const Tensor& t = input_tensor(in, 2 + g * n + i);
  if (t.shape() != x.shape() || t.dtype() != x.dtype())
    fail_runtime(fmt::format("input {} must have the shape and type of X{} ({} {}), got {} {}", 2 + g * n + i, i,
                             dtype_short_name(x.dtype()), shape_to_string(x.shape()), dtype_short_name(t.dtype()),
                             shape_to_string(t.shape())));
  return t;
}

}  // namespace refeval::ops
