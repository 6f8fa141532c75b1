// com.microsoft EmbedLayerNormalization (v1, research notes D.7):
//   e = word_embedding[input_ids] + position_embedding[position_ids or 0..S-1]
//       (+ segment_embedding[segment_ids]);  output = LayerNorm(e, last axis) * gamma + beta
// Outputs: output, mask_index = number of non-zero mask entries per row (int32), embedding_sum = e.
// Inputs: input_ids, segment_ids?, word_embedding, position_embedding, segment_embedding?, gamma,
// beta, mask?, position_ids?; epsilon defaults to 1e-12.
#include "decompositions/decompositions.h"
#include "decompositions/normalization_common.h"

namespace refeval::fusion {

void decompose_embed_layer_normalization(GraphWriter& w, int64_t) {
  using build::attr;
  const Tensor& ids = w.sample(0);
  if (ids.rank() != 2) w.unsupported("input_ids must be [B, S]");
  const int64_t S = ids.dim(1);
  std::string positions;
  if (w.has(8)) {
    positions = w.in(8);
  } else {
    std::vector<int64_t> range(static_cast<size_t>(S));
    for (int64_t s = 0; s < S; ++s) range[size_t(s)] = s;
    positions = w.ints(range);
  }
  std::string e = w.op("Add", {w.op("Gather", {w.in(2), w.in(0)}), w.op("Gather", {w.in(3), positions})});
  if (w.has(1) && w.has(4)) e = w.op("Add", {e, w.op("Gather", {w.in(4), w.in(1)})});
  const DType dtype = w.dtype(2), compute = compute_type(dtype);
  const Normalized n = normalize(w, cast_if(w, e, dtype, compute), compute, {2}, w.attr_float("epsilon", 1e-12f), true);
  w.output(0, w.op("Add", {w.op("Mul", {cast_if(w, n.normalized, compute, dtype), w.in(5)}), w.in(6)}));
  if (w.wants(1)) {
    if (!w.has(7)) w.unsupported("mask_index without a mask input is not decomposed");
    const std::string nonzero = w.op("Cast", {w.op("Not", {w.op("Equal", {w.in(7), w.constant(Tensor::scalar<int32_t>(0))})})},
                                     {attr("to", int64_t(DType::Int32))});
    w.output(1, w.op("ReduceSum", {nonzero, w.ints({1})}, {attr("keepdims", 0)}));
  }
  w.output(2, e);
}

}  // namespace refeval::fusion
