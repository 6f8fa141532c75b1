#include "decompositions/normalization_common.h"

#include <fmt/format.h>

namespace refeval::fusion {

std::vector<int64_t> trailing_axes(GraphWriter& w, int64_t axis, size_t rank) {
  const int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) w.unsupported(fmt::format("axis {} is out of range for rank {}", axis, rank));
  std::vector<int64_t> axes;
  for (int64_t a = axis < 0 ? axis + r : axis; a < r; ++a) axes.push_back(a);
  return axes;
}

Normalized normalize(GraphWriter& w, const std::string& x, DType dtype, const std::vector<int64_t>& axes,
                     double epsilon, bool subtract_mean) {
  using build::attr;
  const std::string axes_value = w.ints(axes);
  Normalized out;
  std::string centered = x;
  if (subtract_mean) {
    out.mean = w.op("ReduceMean", {x, axes_value}, {attr("keepdims", 1)});
    centered = w.op("Sub", {x, out.mean});
  }
  const std::string var = w.op("ReduceMean", {w.op("Mul", {centered, centered}), axes_value}, {attr("keepdims", 1)});
  out.inv_std = w.op("Reciprocal", {w.op("Sqrt", {w.op("Add", {var, w.scalar(epsilon, dtype)})})});
  out.normalized = w.op("Mul", {centered, out.inv_std});
  return out;
}

std::string cast_if(GraphWriter& w, const std::string& x, DType from, DType to) {
  return from == to ? x : w.op("Cast", {x}, {build::attr("to", int64_t(to))});
}

DType compute_type(DType t) { return t == DType::Float16 || t == DType::BFloat16 ? DType::Float : t; }

}  // namespace refeval::fusion
