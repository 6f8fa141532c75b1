// The attention family: Attention, RotaryEmbedding, LinearAttention, CausalConvWithState and
// FlexAttention (ai.onnx.preview).
#include "refeval/registry.h"

namespace refeval::ops {

void register_attention_op(Registry& reg);
void register_rotary_embedding(Registry& reg);
void register_linear_attention(Registry& reg);
void register_causal_conv_with_state(Registry& reg);
void register_flex_attention(Registry& reg);

void register_attention(Registry& reg) {
  register_attention_op(reg);
  register_rotary_embedding(reg);
  register_linear_attention(reg);
  register_causal_conv_with_state(reg);
  register_flex_attention(reg);
}

}  // namespace refeval::ops
