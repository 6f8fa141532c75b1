// Summary statistics of a tensor, for dumps, NaN hunting and the debugger's `print VALUE stats`.
#pragma once

#include <cstdint>
#include <vector>

#include "refeval/tensor.h"

namespace refeval {

struct TensorStats {
  int64_t count = 0;   // elements
  bool numeric = false; // false for strings (and complex): min/max/mean stay 0
  double min = 0, max = 0, mean = 0;  // over finite elements; 0 when none is finite
  int64_t nan = 0, inf = 0;
  std::vector<int64_t> first_nonfinite;  // flat indices of the first NaN/Inf elements (at most `keep`)
};

TensorStats tensor_stats(const Tensor& t, size_t keep = 5);

// A flat index as a multi-index: 7 in shape (2, 4) -> {1, 3}.
std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace refeval
