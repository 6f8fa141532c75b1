// Helpers of the nn family: axis normalisation, sums of statistics. (Tensors as double vectors and unidirectional
// broadcasting of parameters come from refeval/compute_vector.h.)
#pragma once

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/dispatch.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// An axis in [-rank, rank-1] made non-negative; a run-time error otherwise.
inline size_t normalize_axis(int64_t axis, size_t rank) {
  const int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) fail_runtime(fmt::format("axis {} is out of range for rank {}", axis, r));
  return size_t(axis < 0 ? axis + r : axis);
}

// The sum of f(i) for i in [0, n), in four interleaved partial sums (independent chains of
// additions; one chain waits out every addition's latency), held in one vector register (as an
// array of 4 doubles GCC kept them in 4 scalar registers, one addition per element).
template <class F>
double sum_of(int64_t n, F f) {
  typedef double Double4 __attribute__((vector_size(32)));
  Double4 part = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) part += Double4{f(i), f(i + 1), f(i + 2), f(i + 3)};
  for (; i < n; ++i) part[0] += f(i);
  return (part[0] + part[1]) + (part[2] + part[3]);
}

}  // namespace refeval::ops
