// The scaled-dot-product core shared by com.microsoft Attention and MultiHeadAttention, after
// their input projections: masks, softmax (in double) and the weighted sum of values.
//
//   score[b,n,i,j] = scale * q[b,n,i] . k[b,n,j]
//                    + mask_filter_value      where the key padding mask hides key j
//                    = float's lowest         where causal and j > past + i (as ONNX Runtime
//                                             1.30 does, whatever mask_filter_value is)
//   score += attention_bias[b,n,i,j]          (broadcast from (B or 1, N or 1, S, T))
//   out[b,i,n,:] = softmax_j(score) . v[b,n,j,:]
// The problem holds q, k and v in T: float for float tensors, whose two products (q . k and the
// probabilities times v) then run in float on ops/linalg's float gemm, as ONNX Runtime's kernels
// and the unfused MatMuls do; double for the other types. Masks are added in double and the
// masked score rounded to T (what ORT's kernel and the unfused graph hold: a mask of -1e9 absorbs
// a float score); the softmax runs in double. One query row (decoding) takes its q . k as dot products over the keys and its
// output as a sum of value rows, rather than products of one-row matrices; those heads run in
// parallel (refeval/threads.h), each on its own, so the bits do not depend on the thread count
// (longer queries are split inside their products, which must not nest in a parallel loop).
#pragma once

#include <string>
#include <vector>

#include "../math/dot_rows.h"
#include "contrib_common.h"

namespace refeval::ops::contrib {

// The element types ORT registers both operators for.
using AttentionTypes = TypeList<float, float16, bfloat16>;

template <class T>
struct AttentionProblemOf {
  int64_t batch = 0, heads = 0, seq = 0, total = 0, past = 0, head_size = 0, v_head_size = 0;
  std::vector<T> q;          // (B, N, S, head_size)
  std::vector<T> k;          // (B, N, T, head_size), past keys first
  std::vector<T> v;          // (B, N, T, v_head_size)
  std::vector<char> hidden;  // (B, S, T): 1 where the padding mask hides the key; empty: no mask
  bool causal = false;
  double scale = 1, mask_filter_value = -10000.0;
  std::vector<double> bias;  // attention_bias values, empty if none
  Shape bias_shape;          // (B or 1, N or 1, S, T)
};
using AttentionProblem = AttentionProblemOf<double>;

// The compute type of an attention of element type `dtype`: float for float, else double.
template <class F>
decltype(auto) with_attention_type(DType dtype, F&& f) {
  if (dtype == DType::Float) return f.template operator()<float>();
  return f.template operator()<double>();
}

// c (M x N) = a (M x K) b^T (trans_b, b: N x K) or a b (b: K x N) in T: ops/linalg's float gemm
// for float, the contrib family's double gemm for double.
void product(bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c);
void product(bool trans_b, int64_t M, int64_t N, int64_t K, const double* a, const double* b, double* c);

// out (hv values) = sum_j w[j] * values[j] (values: n rows of hv), in T, j in order.
template <class T>
void weighted_rows(const T* w, const T* values, int64_t n, int64_t hv, T* out);

// The largest of n >= 1 values (four running maxima: a vector loop, where std::max_element's
// one chain of comparisons took as long as the exponentials of the softmax).
double row_max(const double* x, int64_t n);

// x[j] = exp(x[j] - top) over n values, returning their sum (in a fixed order): the vector exp
// (vector_math.h), below e^-700 (masked keys: the vector exp's scalar path) taken as zero.
double exp_shifted(double* x, int64_t n, double top);

// The score scale of an attention op's `scale` attribute: 0 (its default) is ONNX Runtime's "not
// set", 1 / sqrt(head_size), in every attention kernel of its CPU provider.
double attention_scale(float scale, int64_t head_size);

// The attributes Attention and MultiHeadAttention share, checked.
struct AttentionAttrs {
  int64_t heads;
  bool unidirectional;
  float mask_filter_value;
  float scale;  // 0: unset (attention_scale)
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
template <class T>
void finish_problem(AttentionProblemOf<T>& p, int64_t kv_length, const AttentionAttrs& a, const Values& in,
                    const AttentionMaskInputs& inputs, DType dtype);

// Sets p.past = P and puts past keys (B, N, P, h) and values (B, N, P, hv) before p.k and p.v,
// which hold L new positions each.
template <class T>
void prepend_past(AttentionProblemOf<T>& p, const std::vector<T>& past_k, const std::vector<T>& past_v, int64_t P, int64_t L);

// Separates `parts` interleaved projections: rows of (N, parts, h) values (ORT's packed QKV and KV
// layouts) become `parts` row-major (rows, N * h) matrices.
template <class T>
std::vector<std::vector<T>> unpack_interleaved(const std::vector<T>& packed, int64_t rows, int64_t N,
                                                    int64_t parts, int64_t h);

// The attention output as (B, S, N * v_head_size).
template <class T>
std::vector<T> attend(const AttentionProblemOf<T>& p);

// The pre-softmax scores (B, N, S, T): scale * q . k plus masks and attention_bias, as attend
// uses them (the qk output of the decoder attention ops).
template <class T>
std::vector<double> attention_scores(const AttentionProblemOf<T>& p);

// Reads an attention_bias input (B or 1, N or 1, S, T) into p.bias, naming it in errors.
template <class T>
void set_attention_bias(AttentionProblemOf<T>& p, const Tensor& bias, DType dtype);

// The key padding mask of `mask` (int32 or int64, 1 = keep, 0 = hide) as (B, S, T) flags. Forms:
//   (B)          key lengths: keys j >= length hidden (right padding)
//   (2B)         exclusive ends then inclusive starts: keys outside [start, end) hidden
//   (B, T)       one row per batch; (B, 1) or (1, 1) with T != 1 is a dummy that hides nothing
//   (B, S, T)    one row per query
//   (B, 1, M, M) Megatron style, M >= past + S: row past + i, columns [0, T)
template <class T>
std::vector<char> key_padding_mask(const Tensor& mask, const AttentionProblemOf<T>& p, const std::string& name);

// Splits rows of a (B * L, offset + N * size + ...) row-major matrix into (B, N, L, size) heads,
// taking the N * size columns that start at `offset`.
template <class T>
std::vector<T> split_heads(const std::vector<T>& rows, int64_t row_width, int64_t offset, int64_t B, int64_t L,
                                int64_t N, int64_t size);
// The same of a tensor's values, read in place when they are floats and T is float.
template <class T>
std::vector<T> split_heads(const Tensor& rows, int64_t row_width, int64_t offset, int64_t B, int64_t L, int64_t N,
                           int64_t size);
// heads (B, N, L, size) += bias (N * size values, one slice per head), each sum in double
// rounded once to T.
template <class T>
void add_head_bias(std::vector<T>& heads, const std::vector<double>& bias, int64_t N, int64_t L, int64_t size);

// (B, N, P, h) followed by (B, N, L, h) along the sequence axis: (B, N, P + L, h).
template <class T>
std::vector<T> concat_sequence(const std::vector<T>& past, const std::vector<T>& now, int64_t B, int64_t N,
                                    int64_t P, int64_t L, int64_t h);

}  // namespace refeval::ops::contrib
