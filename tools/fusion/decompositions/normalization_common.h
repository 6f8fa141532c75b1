// The normalisation step shared by the LayerNorm family, written once:
//   mean = ReduceMean(x, axes), d = x - mean, var = ReduceMean(d*d, axes),
//   inv_std = 1 / sqrt(var + epsilon), normalized = d * inv_std
// (RMS variants skip the mean: var = ReduceMean(x*x), normalized = x * inv_std).
#pragma once

#include <string>
#include <vector>

#include "decompositions/graph_writer.h"

namespace refeval::fusion {

struct Normalized {
  std::string normalized;  // in the compute type
  std::string mean;        // empty for RMS
  std::string inv_std;
};

// Axes [axis, rank) for a normalisation from `axis` (negative counts from the end).
std::vector<int64_t> trailing_axes(GraphWriter& w, int64_t axis, size_t rank);

// `x` is already in the compute type `dtype`.
Normalized normalize(GraphWriter& w, const std::string& x, DType dtype, const std::vector<int64_t>& axes,
                     double epsilon, bool subtract_mean);

// Casts `x` from `from` to `to` when they differ.
std::string cast_if(GraphWriter& w, const std::string& x, DType from, DType to);

// The compute type: float for float16 and bfloat16, the element type otherwise (ORT's kernels).
DType compute_type(DType t);

}  // namespace refeval::fusion
