// The forms `--target ort --forms cpu` (the default) writes: what ONNX Runtime 1.30's CPU kernels
// run fastest, measured by benchmarks/ort_forms (each fused form against the nodes it replaces, at
// ORT's own optimization level `all`, over 36 seeded shapes: batch 1-8, sequence 1-512, hidden
// 256-4096, 1 and 2 threads; ratios are geometric means, below 1 faster):
//   - SkipLayerNormalization is left out: against Add + LayerNormalization it runs 5.5x (one
//     thread) and 3.3x (two) slower with the sum as output 3 (pre-LN), and ORT's own fusion of a
//     post-LN Add + LayerNormalization into it is what the torch export already pays: written as
//     Sum + LayerNormalization, which ORT leaves alone, that costs 0.18x / 0.39x of it.
//     SkipSimplifiedLayerNormalization likewise (0.87x against Add + SimplifiedLayerNormalization's
//     0.56x of the RMSNorm decomposition).
//   - com.microsoft Attention (the projection inside) is written only for ORT's stacked past, its
//     only form there: at batch > 1 and short sequences it is up to 3.6x slower (1.17x geometric
//     mean); MultiHeadAttention on the projections is 0.98x / 0.93x.
//   - MultiHeadAttention's q, k and v as three products with the biases in its bias input
//     (mha-projections): its CPU kernel takes no packed q/k/v (ORT splits a packed projection
//     with a copy) and adds the bias while it reorders the heads (2T 0.897x against 0.909x for
//     a packed product cut by Split; nn.TransformerEncoder 1.024x -> 0.99x of the original).
//   - Kept as fused: MultiHeadAttention (with past at a decode step: 0.91x / 0.86x),
//     RotaryEmbedding (0.49x / 0.48x), FastGelu (0.90x / 0.87x), BiasGelu and Gelu (equal: ORT
//     fuses the erf form itself), SimplifiedLayerNormalization.
// The rule and its measurements: docs/cli/optimize.md ("ONNX Runtime's CPU kernels").
#pragma once

#include <set>
#include <string>

namespace refeval::optimize {

// Fusion passes `--forms cpu` leaves out (unless named by --only), with the reason.
inline const std::set<std::string>& slower_on_ort_cpu() {
  static const std::set<std::string> passes = {"skip-layer-norm", "skip-simplified-layer-norm", "bias-skip-layer-norm"};
  return passes;
}
inline constexpr const char* kSlowerOnOrtCpu =
    "ONNX Runtime's CPU SkipLayerNormalization kernels run slower than the Add and the norm they replace (3-5x, benchmarks/ort_forms)";

}  // namespace refeval::optimize
