// ONNX Runtime's contrib operators (domain com.microsoft), written with the same public API a
// custom operator uses (refeval/op_run.h), so they double as examples of it. Semantics:
// shared/docs/ort-profiling-and-fusions.md section D and ORT's ContribOperators.md.
#include "refeval/registry.h"

namespace refeval::ops {
namespace contrib {
void register_layer_normalization(Registry& reg);
void register_skip_layer_normalization(Registry& reg);
void register_gelu(Registry& reg);
void register_bias_add(Registry& reg);
void register_fused_matmul(Registry& reg);
void register_attention(Registry& reg);
void register_embed_layer_normalization(Registry& reg);
void register_rotary_embedding(Registry& reg);
void register_multi_head_attention(Registry& reg);
void register_group_query_attention(Registry& reg);
void register_matmul_nbits(Registry& reg);
void register_gather_block_quantized(Registry& reg);
void register_moe(Registry& reg);
void register_qmoe(Registry& reg);
void register_decoder_masked_multi_head_attention(Registry& reg);
void register_sparse_attention(Registry& reg);
void register_m_rotary_embedding(Registry& reg);
}  // namespace contrib

void register_contrib(Registry& reg) {
  contrib::register_layer_normalization(reg);
  contrib::register_skip_layer_normalization(reg);
  contrib::register_gelu(reg);
  contrib::register_bias_add(reg);
  contrib::register_fused_matmul(reg);
  contrib::register_attention(reg);
  contrib::register_embed_layer_normalization(reg);
  contrib::register_rotary_embedding(reg);
  contrib::register_multi_head_attention(reg);
  contrib::register_group_query_attention(reg);
  contrib::register_matmul_nbits(reg);
  contrib::register_gather_block_quantized(reg);
  contrib::register_moe(reg);
  contrib::register_qmoe(reg);
  contrib::register_decoder_masked_multi_head_attention(reg);
  contrib::register_sparse_attention(reg);
  contrib::register_m_rotary_embedding(reg);
}

}  // namespace refeval::ops
