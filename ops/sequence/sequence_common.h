// Helpers shared by the sequence operators.
#pragma once

#include <fmt/format.h>

#include "../control/control_common.h"
#include "refeval/op_run.h"

namespace refeval::ops {

inline const Sequence& input_sequence(const Values& in, size_t i) {
  if (i >= in.size() || in[i].is_absent()) fail_runtime(fmt::format("input {} is missing", i));
  if (!in[i].is_sequence()) fail_runtime(fmt::format("input {} must be a sequence, got a {}", i, in[i].kind_name()));
  return in[i].sequence();
}

// A position input (int32 or int64, one element), normalised against [-n, n-1] (or [-n, n] when
// `allow_end`, for insertion).
inline size_t sequence_position(const Tensor& t, size_t n, bool allow_end) {
  int64_t p = 0;
  if (t.size() != 1) fail_runtime(fmt::format("position must be a scalar, got shape {}", shape_to_string(t.shape())));
  if (t.dtype() == DType::Int64) p = t.data<int64_t>()[0];
  else if (t.dtype() == DType::Int32) p = t.data<int32_t>()[0];
  else fail_runtime(fmt::format("position must be int32 or int64, got {}", dtype_short_name(t.dtype())));
  const int64_t size = int64_t(n), hi = allow_end ? size : size - 1;
  if (p < -size || p > hi)
    fail_runtime(fmt::format("position {} is out of range for a sequence of {} (accepted: [{}, {}])", p, n, -size, hi));
  return size_t(p < 0 ? p + size : p);
}

// The element dtype a sequence holds, checked against a tensor being added to it.
inline void check_element(const Sequence& s, const Tensor& t) {
  if (s.elem_dtype != DType::Undefined && s.elem_dtype != t.dtype())
    fail_runtime(fmt::format("cannot add a {} tensor to a sequence of {} tensors", dtype_short_name(t.dtype()),
                             dtype_short_name(s.elem_dtype)));
}

}  // namespace refeval::ops
