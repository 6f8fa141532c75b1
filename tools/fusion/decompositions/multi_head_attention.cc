// com.microsoft MultiHeadAttention (v1), separate 3-D query [B, S, D], key [B, L, D] and value
// [B, L, Dv]: optional bias (D + D + Dv) added to each, num_heads heads; past_key / past_value
// [B, N, P, h] prepended, present_key / present_value returned; key_padding_mask,
// attention_bias and unidirectional as in Attention. Packed QKV and 4-D keys are not decomposed.
#include "decompositions/attention_common.h"
#include "decompositions/decompositions.h"

namespace refeval::fusion {

void decompose_multi_head_attention(GraphWriter& w, int64_t) {
  using build::attr;
  if (!w.has(1) || !w.has(2)) w.unsupported("packed QKV (no key/value inputs) is not decomposed");
  if (w.has(8) || w.has(9) || w.wants(3)) w.unsupported("past_sequence_length, cache_indirection and qk are not decomposed");
  const Tensor& query = w.sample(0);
  if (query.rank() != 3 || w.sample(1).rank() != 3 || w.sample(2).rank() != 3) w.unsupported("query, key and value must be 3-D");
  const int64_t B = query.dim(0), S = query.dim(1), L = w.sample(1).dim(1), N = w.attr_int("num_heads", 0);
  if (N <= 0 || query.dim(2) % N != 0) w.unsupported("the hidden size does not split into num_heads heads");

  std::string q = w.in(0), k = w.in(1), v = w.in(2);
  if (w.has(3)) {
    const auto b = w.ops("Split", {w.in(3), w.ints({query.dim(2), w.sample(1).dim(2), w.sample(2).dim(2)})}, 3);
    q = w.op("Add", {q, b[0]});
    k = w.op("Add", {k, b[1]});
    v = w.op("Add", {v, b[2]});
  }
  q = split_heads(w, q, B, S, N);
  k = split_heads(w, k, B, L, N);
  v = split_heads(w, v, B, L, N);
  int64_t past = 0;
  if (w.has(6) != w.has(7)) w.unsupported("past_key and past_value must be given together");
  if (w.has(6)) {
    past = w.sample(6).dim(2);
    k = w.op("Concat", {w.in(6), k}, {attr("axis", int64_t(2))});
    v = w.op("Concat", {w.in(7), v}, {attr("axis", int64_t(2))});
  }
  w.output(1, k);
  w.output(2, v);
  const int64_t T = past + L;
  AttentionParams p;
  p.scale = w.attr_float("scale", 0.0f);
  p.mask_filter_value = w.attr_float("mask_filter_value", -10000.0f);
  if (w.attr_int("unidirectional", 0)) p.causal = causal_keep(w, S, T, past);
  if (w.has(4)) p.padding = padding_keep(w, 4, B, S, T);
  if (w.has(5)) p.attention_bias = w.in(5);
  w.output(0, merge_heads(w, attend(w, q, k, v, query.dim(2) / N, p), B, S));
}

}  // namespace refeval::fusion
