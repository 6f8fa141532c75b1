// MeanVarianceNormalization (ONNX 9, 13): Y = (X - mean) / (sqrt(var) + 1e-9) over `axes`
// (default [0, 2, 3]). The spec's body computes var as E[X^2] - E[X]^2; this uses the equal
// E[(X - mean)^2], which cannot go negative by rounding and turn a constant input into NaN.
#include "decompositions/decompositions.h"
#include "decompositions/normalization_common.h"

namespace refeval::fusion {

void decompose_mean_variance_normalization(GraphWriter& w, int64_t) {
  using build::attr;
  const DType dtype = w.dtype(0);
  std::vector<int64_t> axes{0, 2, 3};
  if (const Attribute* a = w.node().find_attribute("axes")) axes = a->ints;
  const std::string x = w.in(0), axes_value = w.ints(axes);
  const std::string mean = w.op("ReduceMean", {x, axes_value}, {attr("keepdims", 1)});
  const std::string d = w.op("Sub", {x, mean});
  const std::string var = w.op("ReduceMean", {w.op("Mul", {d, d}), axes_value}, {attr("keepdims", 1)});
  w.output(0, w.op("Div", {d, w.op("Add", {w.op("Sqrt", {var}), w.scalar(1e-9, dtype)})}));
}

}  // namespace refeval::fusion
