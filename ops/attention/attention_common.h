// Helpers of the attention family: the compute type an op uses (float, or double for double
// tensors) and the scaled-dot-product kernel that Attention and FlexAttention share. Tensor to
// vector conversion is refeval/compute_vector.h.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/dispatch.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// Calls f.template operator()<C>() with C = double for double tensors and float otherwise.
template <class F>
decltype(auto) with_compute_type(DType t, F&& f) {
  if (!Floats::contains(t)) fail_unsupported_dtype(t, Floats::dtypes());
  if (t == DType::Double) return f.template operator()<double>();
  return f.template operator()<float>();
}

}  // namespace refeval::ops
