// Helpers of the nn family: axis normalisation. (Tensors as double vectors and unidirectional
// broadcasting of parameters come from refeval/compute_vector.h.)
#pragma once

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

}  // namespace refeval::ops
