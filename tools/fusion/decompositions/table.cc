#include <array>

#include "decompositions/decompositions.h"
#include "refeval/ir.h"

namespace refeval::fusion {
namespace {

struct Entry {
  const char* domain;
  const char* op_type;
  DecompositionBuilder build;
};

// ONNX Runtime registers LayerNormalization and SimplifiedLayerNormalization in the ONNX domain
// (since version 1, see the research notes D.1); exporters also write them in com.microsoft.
constexpr std::array kTable = {
    Entry{"", "LayerNormalization", decompose_layer_normalization},
    Entry{"com.microsoft", "LayerNormalization", decompose_layer_normalization},
    Entry{"", "SimplifiedLayerNormalization", decompose_simplified_layer_normalization},
    Entry{"com.microsoft", "SimplifiedLayerNormalization", decompose_simplified_layer_normalization},
    Entry{"com.microsoft", "SkipLayerNormalization", decompose_skip_layer_normalization},
    Entry{"com.microsoft", "SkipSimplifiedLayerNormalization", decompose_skip_simplified_layer_normalization},
    Entry{"", "RMSNormalization", decompose_rms_normalization},
    Entry{"", "GroupNormalization", decompose_group_normalization},
    Entry{"", "MeanVarianceNormalization", decompose_mean_variance_normalization},
    Entry{"", "Gelu", decompose_gelu},
    Entry{"com.microsoft", "Gelu", decompose_gelu},
    Entry{"com.microsoft", "BiasGelu", decompose_bias_gelu},
    Entry{"com.microsoft", "FastGelu", decompose_fast_gelu},
    Entry{"com.microsoft", "QuickGelu", decompose_quick_gelu},
    Entry{"com.microsoft", "BiasAdd", decompose_bias_add},
    Entry{"com.microsoft", "FusedMatMul", decompose_fused_matmul},
    Entry{"com.microsoft", "Attention", decompose_attention},
    Entry{"com.microsoft", "MultiHeadAttention", decompose_multi_head_attention},
    Entry{"com.microsoft", "EmbedLayerNormalization", decompose_embed_layer_normalization},
    Entry{"com.microsoft", "RotaryEmbedding", decompose_rotary_embedding},
    Entry{"", "RotaryEmbedding", decompose_onnx_rotary_embedding},
};

}  // namespace

DecompositionBuilder find_decomposition(const std::string& domain, const std::string& op_type) {
  const std::string d = normalize_domain(domain);
  for (const Entry& e : kTable)
    if (d == e.domain && op_type == e.op_type) return e.build;
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> decomposed_ops() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Entry& e : kTable) out.emplace_back(e.domain, e.op_type);
  return out;
}

}  // namespace refeval::fusion
