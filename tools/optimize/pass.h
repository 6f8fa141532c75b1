// An optimization pass: a name the command line uses, the counter it reports, its level, and a
// function that rewrites the model and says how many times it did. Pattern rewrites become
// passes through rewrite_pass(); graph-wide passes (folding, CSE, dead code) are functions.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "graph_index.h"
#include "refeval/registry.h"
#include "rewrite.h"

namespace refeval::optimize {

enum class Level { Basic = 1, Extended = 2 };

struct PassContext {
  const Registry& registry;
  const Inference* inference = nullptr;  // types of the values at the start of the level
  Explain* explain = nullptr;            // --explain: passes say what they left and why
  // --target onnx: each com.microsoft node the standard-ops pass could not rewrite, as
  // (op type, "node 'n': why"); the optimizer then leaves that fusion out (optimizer.cc).
  std::vector<std::pair<std::string, std::string>> unconverted = {};
  // --target ort --forms cpu: write the forms ORT's CPU kernels run fastest (ort_cpu_forms.h).
  bool cpu_forms = false;
  // What a written node cannot compute that the original could (an ORT kernel's own limits), each
  // said once to the user as a warning (OptimizeResult::notes).
  std::set<std::string> limits = {};
};

struct Pass {
  std::string name;     // "fast-gelu"
  std::string counter;  // the statistics line: "Fused FastGelu", "Removed Identity"
  Level level = Level::Basic;
  std::function<int(Model&, PassContext&)> run;
};

Pass rewrite_pass(std::string name, Level level, Rewrite rewrite);

// Every pass, by file (passes/*.cc); optimizer.cc orders them.
Pass identity_elimination_pass();
Pass dropout_elimination_pass();
Pass noop_elimination_pass();      // Cast to the same type, Reshape/Expand to the same shape, identity Transpose
Pass transpose_chain_pass();       // Transpose of Transpose composed; Unsqueeze then Squeeze of the same axes
Pass constant_folding_pass();
Pass shape_folding_pass();
Pass cse_pass();
Pass constant_sharing_pass();
Pass dead_code_pass();
Pass conv_bn_pass();
Pass matmul_add_gemm_pass();
Pass layer_norm_pass();
Pass simplified_layer_norm_pass();
Pass gelu_pass();
Pass fast_gelu_pass();
Pass quick_gelu_pass();  // SiLU x * Sigmoid(x) (and x * Sigmoid(alpha x)) -> com.microsoft QuickGelu
Pass reshape_fusion_pass();
Pass skip_layer_norm_pass();
Pass skip_simplified_layer_norm_pass();  // Add + SimplifiedLayerNormalization (the Llama residual)
// Packed q/k/v in layouts that hide the heads (GPT-NeoX interleaved per head; timm unbind) -> parts the attention pass reads.
Pass split_qkv_pass();
Pass rotary_embedding_pass();  // rotate-half RoPE -> com.microsoft RotaryEmbedding
Pass attention_pass();
// Word + position (+ token type) embeddings and their LayerNormalization -> com.microsoft
// EmbedLayerNormalization (BERT, RoBERTa, DistilBERT).
Pass embed_layer_norm_pass();
Pass bias_gelu_pass();
Pass bias_skip_layer_norm_pass();
Pass fused_matmul_pass();
// Transpose(x, p) -> MatMul(., W) [+ b] -> Transpose(., p^-1) with p keeping the last axis: MatMul(x, W) [+ b].
Pass transpose_sandwich_pass();
// --target ort --forms cpu: a residual Add that ORT would fuse with its LayerNormalization into the
// slower SkipLayerNormalization written as Sum (ort_cpu_forms.h).
Pass residual_sum_pass();
// --target ort --forms cpu: MultiHeadAttention's q, k and v as three MatMuls with its bias input
// (a packed projection's Slices or Split and the bias Adds go).
Pass mha_projections_pass();
// Shape of attention scores -> its dims read from the graph inputs (MixFormer's mask sized by the scores).
Pass shape_source_pass();
Pass einsum_matmul_pass();         // a two-operand Einsum that is a batched product -> Transposes + MatMul
Pass gemm_reshape_pass();         // Reshape -> Gemm -> Reshape (Hugging Face's Conv1D) back to MatMul + Add
// --target onnx (passes/standard_ops.cc): com.microsoft fused operators rewritten into ai.onnx
// operators, then the model raised to opset 23 (opset_convert.h). A node that does not map is a
// usage error naming it, or with ctx.explain a "not fused" line and the node left as it is.
Pass to_standard_ops_pass();

}  // namespace refeval::optimize
