// Scaled dot-product attention as ONNX Runtime's CPU kernels compute it, shared by the
// Attention and MultiHeadAttention decompositions (research notes D.5):
//   scores = scale * Q K^T (+ attention_bias) + mask_bias, mask_bias = 0 where the key padding
//   mask keeps key j and mask_filter_value where it hides it; then, causal, float's lowest for
//   every key j > past + query i (ONNX Runtime 1.30: whatever mask_filter_value is);
//   out = softmax(scores, last axis) V.
#pragma once

#include <string>

#include "decompositions/graph_writer.h"

namespace refeval::fusion {

// [B, L, N*h] -> [B, N, L, h]
std::string split_heads(GraphWriter& w, const std::string& x, int64_t batch, int64_t length, int64_t heads);
// [B, N, L, h] -> [B, L, N*h]
std::string merge_heads(GraphWriter& w, const std::string& x, int64_t batch, int64_t length);

// A bool [S, T] constant: key j is visible from query i when j <= past + i.
std::string causal_keep(GraphWriter& w, int64_t queries, int64_t keys, int64_t past);
// A bool mask broadcastable to [B, N, S, T] from a key padding mask input: lengths [B] (keys
// j < length are kept), raw [B, T] or [B, S, T] (non-zero kept).
std::string padding_keep(GraphWriter& w, size_t input, int64_t batch, int64_t queries, int64_t keys);
struct AttentionParams {
  double scale = 0;            // 0: 1 / sqrt(head size)
  double mask_filter_value = -10000.0;
  std::string padding;         // bool: keys the padding mask keeps, empty for none
  std::string causal;          // bool: keys the causal mask keeps, empty for none
  std::string attention_bias;  // added to the scores, empty for none
};

// q [B, N, S, h], k [B, N, T, h], v [B, N, T, hv] -> [B, N, S, hv]
std::string attend(GraphWriter& w, const std::string& q, const std::string& k, const std::string& v, int64_t head_size,
                   const AttentionParams& p);

}  // namespace refeval::fusion
