// The attention family: Attention, RotaryEmbedding, LinearAttention and FlexAttention
// (ai.onnx.preview). CausalConvWithState lives with the convolutions (ops/conv).
#include "refeval/registry.h"

namespace refeval::ops {

void register_attention_op(Registry& reg);
void register_rotary_embedding(Registry& reg);
void register_linear_attention(Registry& reg);
void register_flex_attention(Registry& reg);

void register_attention(Registry& reg) {
  register_attention_op(reg);
  register_rotary_embedding(reg);
  register_linear_attention(reg);
  register_flex_attention(reg);
}

}  // namespace refeval::ops
