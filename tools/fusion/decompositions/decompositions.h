// Built-in decompositions: the meaning of a fused operator written as an ONNX graph of basic
// operators, built from the node's attributes and its inputs' shapes. check-fusion runs the
// operator's kernel against this graph. One small file per operator family; table.cc maps
// (domain, op type) to its builder.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "decompositions/graph_writer.h"

namespace refeval::fusion {

// The opset of the basic operators a decomposition uses.
inline constexpr int64_t kDecompositionOpset = 21;

// Writes the node's outputs into `w`. `opset` is the model's opset for the node's domain.
using DecompositionBuilder = void (*)(GraphWriter& w, int64_t opset);

// The builder for (domain, op type), or null.
DecompositionBuilder find_decomposition(const std::string& domain, const std::string& op_type);
// Every (domain, op type) with a built-in decomposition, for help texts and tests.
std::vector<std::pair<std::string, std::string>> decomposed_ops();

// The builders, one per operator (grouped by family file).
void decompose_layer_normalization(GraphWriter& w, int64_t opset);
void decompose_simplified_layer_normalization(GraphWriter& w, int64_t opset);
void decompose_skip_layer_normalization(GraphWriter& w, int64_t opset);
void decompose_skip_simplified_layer_normalization(GraphWriter& w, int64_t opset);
void decompose_rms_normalization(GraphWriter& w, int64_t opset);
void decompose_group_normalization(GraphWriter& w, int64_t opset);
void decompose_mean_variance_normalization(GraphWriter& w, int64_t opset);
void decompose_gelu(GraphWriter& w, int64_t opset);
void decompose_bias_gelu(GraphWriter& w, int64_t opset);
void decompose_fast_gelu(GraphWriter& w, int64_t opset);
void decompose_quick_gelu(GraphWriter& w, int64_t opset);
void decompose_bias_add(GraphWriter& w, int64_t opset);
void decompose_fused_matmul(GraphWriter& w, int64_t opset);
void decompose_attention(GraphWriter& w, int64_t opset);
void decompose_multi_head_attention(GraphWriter& w, int64_t opset);
void decompose_embed_layer_normalization(GraphWriter& w, int64_t opset);
void decompose_rotary_embedding(GraphWriter& w, int64_t opset);
void decompose_onnx_rotary_embedding(GraphWriter& w, int64_t opset);

}  // namespace refeval::fusion
