// What com.microsoft MoE and QMoE share: attributes, routing, shape checks and the expert FFN.
// They differ only in how an expert's weight matrix is stored (float vs quantized), so each op
// hands this code a function returning one expert's matrix in double.
//
// Routing, per row of router_probs (logits, despite the name):
//   the k experts with the largest logits (equal logits: the larger expert index first, as ORT's
//   CPU kernels order them); weight = softmax over all E logits at that expert, divided by the
//   sum over the k chosen when normalize_routing_weights = 1. With router_weights (QMoE), the
//   weight is router_weights[row, expert] instead of the softmax, normalised the same way.
//   use_sparse_mixer = 1 (k = 2, Phi-3.5-MoE's sparsemixer, as ORT's CUDA kernel): expert 1 is
//   the arg-max m1, expert 2 the arg-max m2 of the rest; expert j's weight is
//   1 / sum exp(x_e - m_j) over the experts e not masked, where e is masked when
//   (m_j - x_e) > 2 * 0.01 * max(|x_e|, m_j), and for j = 2 also when e is expert 1.
// Expert e on a row x (hidden values), with FCn(x) = W_n[e] x + b_n[e] and W_n[e] (N, K):
//   h = act(FC1(x))                       relu, gelu (tanh form, as ORT), silu, identity
//   h = act(FC1(x)) * FC3(x)              the same when fc3 weights are given
//   h = G * sigmoid(alpha * G) * (L + beta), G = min(g, limit), L = clamp(l, -limit, limit)
//       swiglu; (g, l) = FC1(x) interleaved (g0, l0, g1, l1, ...) when swiglu_fusion = 1,
//       concatenated (g..., l...) when 2, and (FC1(x), FC3(x)) when 0
//   y_e = FC2(h);  output row = sum over the chosen experts of weight * y_e
// Weights are (E, N, K): fc1 (E, fusion * inter, hidden), fc2 (E, hidden, inter),
// fc3 (E, inter, hidden), fusion = 2 for fused swiglu; the last dimension is divided by the
// packing of quantized weights. ORT still accepts its legacy labels (E, hidden, fusion * inter),
// (E, inter, hidden), (E, hidden, inter) for the same memory (moe_helper.h), and so does this
// code. Attributes swiglu_fusion, swiglu_limit, activation_alpha/beta only affect swiglu.
#pragma once

#include <functional>

#include "contrib_common.h"

namespace refeval::ops::contrib {

enum class MoEActivation { Relu, Gelu, Silu, Identity, SwiGLU };

struct MoEAttributes {
  explicit MoEAttributes(const NodeContext& ctx);
  int64_t k;
  MoEActivation activation;
  bool normalize, sparse_mixer;
  int64_t swiglu_fusion;
  double limit, alpha, beta;
  // FC1 computes both SwiGLU halves (2 * inter outputs).
  bool fused() const { return activation == MoEActivation::SwiGLU && swiglu_fusion != 0; }
};

struct MoESizes {
  int64_t rows, hidden, inter, experts;
};

// Checks input (rows, hidden) or (B, S, hidden), router_probs (rows, E) and the weights' shapes
// (fc3 may be null), weights packing `pack` values per element along K.
MoESizes moe_sizes(const Tensor& input, const Tensor& router, const Shape& fc1, const Shape& fc2, const Shape* fc3,
                   int64_t pack, const MoEAttributes& a);

// One FC layer of every expert: expert e's (n, k) matrix, row-major, and a bias (E, n) or empty.
struct ExpertLayer {
  int64_t n = 0, k = 0;
  std::function<std::vector<double>(int64_t expert)> weights;
  std::vector<double> bias;
};

struct Route {
  int64_t expert;
  double weight;
};
// The k (expert, weight) pairs of every row; router_weights may be null.
std::vector<std::vector<Route>> route_rows(const std::vector<double>& logits, const std::vector<double>* router_weights,
                                           const MoESizes& s, const MoEAttributes& a);

// The (rows, hidden) output for input x (rows, hidden); fc3 may be null.
std::vector<double> run_experts(const std::vector<double>& x, const std::vector<std::vector<Route>>& routes,
                                const ExpertLayer& fc1, const ExpertLayer& fc2, const ExpertLayer* fc3, const MoESizes& s,
                                const MoEAttributes& a);

// An optional (E, n) bias input in the input's type, or empty.
std::vector<double> expert_bias(const Values& in, size_t i, int64_t experts, int64_t n, DType dtype, const std::string& name);

}  // namespace refeval::ops::contrib
