// Small fused / unfused model pairs for check-fusion's tests, built with refeval's builder. The
// unit tests check them through the library, tests/cli/make_test_models.cc writes them for the
// CLI tests. Each "wrong" variant is a subtle, realistic fusion bug.
#pragma once

#include "refeval/ir.h"

namespace refeval::testing {

// Y = Gelu(X), X [2, 64], opset 20; approximate "none" (erf) or "tanh".
Model gelu_model(const char* approximate);
// Y = 0.5 X (1 + erf(X / sqrt 2)) as an exporter writes it: Div, Erf, Add, Mul, Mul.
Model gelu_erf_unfused();

// Y = LayerNormalization(X, Scale, B), X [2, 3, 16], epsilon 1e-5, opset 17.
Model layer_norm_model();
// ReduceMean, Sub, Mul, ReduceMean, Add eps, Sqrt, Div, Mul, Add; `eps_outside_sqrt` writes the
// bug sqrt(var) + eps instead of sqrt(var + eps).
Model layer_norm_unfused(bool eps_outside_sqrt);

// Y = Attention(Q, K, V) with is_causal = 1, Q, K, V [1, 2, 6, 8], opset 23.
Model causal_attention_model();
// softmax(Q K^T / sqrt(8) + mask) V with key j visible from query i when j <= i + shift:
// shift 0 is right, shift 1 lets every query see one future position.
Model causal_attention_unfused(int shift);

// Y = Relu(X), X [1, 4], at the given opset.
// GPT-2's tanh GELU as torch exports it (x: (2, 8)), with a chosen cubic coefficient; the tanh
// optionally a graph output too (which must block a fusion).
Model fast_gelu_unfused(float cubic, bool expose_tanh = false);
// One GPT-2 self-attention block without past as torch exports it: x (batch, seq, 8), 2 heads of
// 4, causal mask by Where over a 16 x 16 lower-triangular buffer; `mask_shift` 1 lets each
// query see one future key (not the causal mask: must not become Attention). Nodes are named
// "/attn/<OpType>_<index>" as torch names them.
Model gpt2_attention_unfused(int mask_shift = 0);
Model relu_model(int64_t opset);

}  // namespace refeval::testing
