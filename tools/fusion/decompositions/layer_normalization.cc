// LayerNormalization (ONNX 17, and ONNX Runtime's version-1 kernel in the ONNX and com.microsoft
// domains): Y = (X - mean) / sqrt(var + epsilon) * Scale + B over the axes [axis, rank), computed
// in stash_type; optional outputs Mean and InvStdDev. SimplifiedLayerNormalization (ORT) and
// RMSNormalization (ONNX 23) are the RMS form: Y = X / sqrt(mean(X^2) + epsilon) * Scale.
#include "decompositions/decompositions.h"
#include "decompositions/normalization_common.h"

namespace refeval::fusion {
namespace {

// has_bias: the node may have input 2 (B). Outputs: 0 Y, then Mean (when centred), then InvStdDev.
void layer_norm(GraphWriter& w, bool subtract_mean, bool has_bias) {
  const DType dtype = w.dtype(0);
  const DType stash = DType(w.attr_int("stash_type", int64_t(DType::Float)));
  const auto axes = trailing_axes(w, w.attr_int("axis", -1), w.sample(0).rank());
  const std::string x = cast_if(w, w.in(0), dtype, stash);
  const Normalized n = normalize(w, x, stash, axes, w.attr_float("epsilon", 1e-5f), subtract_mean);
  std::string y = w.op("Mul", {cast_if(w, n.normalized, stash, dtype), w.in(1)});
  if (has_bias && w.has(2)) y = w.op("Add", {y, w.in(2)});
  w.output(0, y);
  if (subtract_mean) {
    w.output(1, n.mean);
    w.output(2, n.inv_std);
  } else {
    w.output(1, n.inv_std);
  }
}

}  // namespace

void decompose_layer_normalization(GraphWriter& w, int64_t) { layer_norm(w, true, true); }
void decompose_simplified_layer_normalization(GraphWriter& w, int64_t) { layer_norm(w, false, false); }
void decompose_rms_normalization(GraphWriter& w, int64_t) { layer_norm(w, false, false); }

}  // namespace refeval::fusion
