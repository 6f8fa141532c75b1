// com.microsoft SkipLayerNormalization (v1): s = input + skip (+ bias); over the last axis
// output = (s - mean) / sqrt(var + epsilon) * gamma (+ beta); outputs output, mean, inv_std_var,
// input_skip_bias_sum = s. Inputs: input, skip, gamma, beta?, bias?. epsilon defaults to 1e-12.
// SkipSimplifiedLayerNormalization: the RMS form, inputs input, skip, gamma, bias?, no mean.
#include "decompositions/decompositions.h"
#include "decompositions/normalization_common.h"

namespace refeval::fusion {
namespace {

void skip_layer_norm(GraphWriter& w, bool simplified) {
  const DType dtype = w.dtype(0);
  const size_t bias_input = simplified ? 3 : 4;
  std::string sum = w.op("Add", {w.in(0), w.in(1)});
  if (w.has(bias_input)) sum = w.op("Add", {sum, w.in(bias_input)});
  const DType compute = compute_type(dtype);
  const auto axes = trailing_axes(w, -1, w.sample(0).rank());
  const Normalized n = normalize(w, cast_if(w, sum, dtype, compute), compute, axes, w.attr_float("epsilon", 1e-12f), !simplified);
  std::string y = w.op("Mul", {cast_if(w, n.normalized, compute, dtype), w.in(2)});
  if (!simplified && w.has(3)) y = w.op("Add", {y, w.in(3)});
  w.output(0, y);
  if (simplified && w.wants(1)) w.unsupported("the simplified form has no mean output");
  if (!simplified) w.output(1, n.mean);
  w.output(2, n.inv_std);
  w.output(3, sum);
}

}  // namespace

void decompose_skip_layer_normalization(GraphWriter& w, int64_t) { skip_layer_norm(w, false); }
void decompose_skip_simplified_layer_normalization(GraphWriter& w, int64_t) { skip_layer_norm(w, true); }

}  // namespace refeval::fusion
