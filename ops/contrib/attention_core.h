// The scaled-dot-product core shared by com.microsoft Attention and MultiHeadAttention, after
// their input projections: masks, softmax and the weighted sum of values, in double.
//
//   score[b,n,i,j] = scale * q[b,n,i] . k[b,n,j]
//                    + mask_filter_value      where the key padding mask hides key j, or
//                                             causal and j > past + i (added once, as ORT's
//                                             mask buffer does; GPT-2's own graph replaces the
//                                             score instead, which softmax makes ~equal)
//   score += attention_bias[b,n,i,j]          (broadcast from (B or 1, N or 1, S, T))
//   out[b,i,n,:] = softmax_j(score) . v[b,n,j,:]
// For float tensors the two products (q . k and the probabilities times v) run in float on
// ops/linalg's float gemm, as ONNX Runtime's kernels and the unfused MatMuls do; masks and the
// softmax stay in double.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "contrib_common.h"

namespace refeval::ops::contrib {

// The element types ORT registers both operators for.
using AttentionTypes = TypeList<float, float16, bfloat16>;

struct AttentionProblem {
  int64_t batch = 0, heads = 0, seq = 0, total = 0, past = 0, head_size = 0, v_head_size = 0;
  std::vector<double> q;     // (B, N, S, head_size)
  std::vector<double> k;     // (B, N, T, head_size), past keys first
  std::vector<double> v;     // (B, N, T, v_head_size)
  std::vector<char> hidden;  // (B, S, T): 1 where the padding mask hides the key; empty: no mask
  bool causal = false;
  double scale = 1, mask_filter_value = -10000.0;
  std::vector<double> bias;  // attention_bias values, empty if none
  Shape bias_shape;          // (B or 1, N or 1, S, T)
  bool float_products = false;  // float tensors: the products in float (set by finish_problem)
};

// c (M x N) = a (M x K) b^T (trans_b, b: N x K) or a b (b: K x N) from double values that hold
// floats, multiplied in float on ops/linalg's float gemm and widened back: the products of float
// attention (AttentionProblem::float_products, GroupQueryAttention).
void float_product(bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c);

// x[j] = exp(x[j] - top) over n values, returning their sum (in order): the vector exp
// (vector_math.h), below e^-700 (masked keys: the vector exp's scalar path) taken as zero.
double exp_shifted(double* x, int64_t n, double top);

// The attributes Attention and MultiHeadAttention share, checked.
struct AttentionAttrs {
  int64_t heads;
  bool unidirectional;
  float mask_filter_value;
  std::optional<float> scale;
  explicit AttentionAttrs(const NodeContext& ctx);
};

// The inputs both ops read after their projections, by index and by the name errors use.
struct AttentionMaskInputs {
  size_t key_padding_mask;
  const char* key_padding_mask_name;
  size_t attention_bias;
};

// Completes p once q, k, v (past keys and values included), batch, heads, seq, past and the head
// sizes are set, kv_length new keys following the past ones: total length, the attributes (scale 1/sqrt(head_size) unless given), the key
// padding mask and attention_bias inputs when present.
void finish_problem(AttentionProblem& p, int64_t kv_length, const AttentionAttrs& a, const Values& in,
                    const AttentionMaskInputs& inputs, DType dtype);

// Sets p.past = P and puts past keys (B, N, P, h) and values (B, N, P, hv) before p.k and p.v,
// which hold L new positions each.
void prepend_past(AttentionProblem& p, const std::vector<double>& past_k, const std::vector<double>& past_v, int64_t P,
                  int64_t L);

// Separates `parts` interleaved projections: rows of (N, parts, h) values (ORT's packed QKV and KV
// layouts) become `parts` row-major (rows, N * h) matrices.
std::vector<std::vector<double>> unpack_interleaved(const std::vector<double>& packed, int64_t rows, int64_t N,
                                                    int64_t parts, int64_t h);

// The attention output as (B, S, N * v_head_size).
std::vector<double> attend(const AttentionProblem& p);

// The pre-softmax scores (B, N, S, T): scale * q . k plus masks and attention_bias, as attend
// uses them (the qk output of the decoder attention ops).
std::vector<double> attention_scores(const AttentionProblem& p);

// Reads an attention_bias input (B or 1, N or 1, S, T) into p.bias, naming it in errors.
void set_attention_bias(AttentionProblem& p, const Tensor& bias, DType dtype);

// The key padding mask of `mask` (int32 or int64, 1 = keep, 0 = hide) as (B, S, T) flags. Forms:
//   (B)          key lengths: keys j >= length hidden (right padding)
//   (2B)         exclusive ends then inclusive starts: keys outside [start, end) hidden
//   (B, T)       one row per batch; (B, 1) or (1, 1) with T != 1 is a dummy that hides nothing
//   (B, S, T)    one row per query
//   (B, 1, M, M) Megatron style, M >= past + S: row past + i, columns [0, T)
std::vector<char> key_padding_mask(const Tensor& mask, const AttentionProblem& p, const std::string& name);

// Splits rows of a (B * L, offset + N * size + ...) row-major matrix into (B, N, L, size) heads,
// taking the N * size columns that start at `offset`.
std::vector<double> split_heads(const std::vector<double>& rows, int64_t row_width, int64_t offset, int64_t B, int64_t L,
                                int64_t N, int64_t size);

// (B, N, P, h) followed by (B, N, L, h) along the sequence axis: (B, N, P + L, h).
std::vector<double> concat_sequence(const std::vector<double>& past, const std::vector<double>& now, int64_t B, int64_t N,
                                    int64_t P, int64_t L, int64_t h);

}  // namespace refeval::ops::contrib
