// com.microsoft Attention (v1), the form the GPT-2 fusion produces (research notes D.5):
// QKV = input * weights + bias, split into Q, K, V (qkv_hidden_sizes or three equal parts) and
// into num_heads heads; with `past` [2, B, N, P, h] the keys and values are appended to the past
// ones and `present` = stack(K, V); scaled dot-product attention with the causal mask
// (unidirectional), mask_index and attention_bias; output [B, S, Hv]. Not decomposed:
// past_sequence_length (buffer sharing), do_rotary.
#include <fmt/format.h>

#include "decompositions/attention_common.h"
#include "decompositions/decompositions.h"

namespace refeval::fusion {

void decompose_attention(GraphWriter& w, int64_t) {
  using build::attr;
  if (w.has(6)) w.unsupported("past_sequence_length (shared past/present buffers) is not decomposed");
  if (w.attr_int("do_rotary", 0)) w.unsupported("do_rotary is not decomposed");
  if (w.attr_int("past_present_share_buffer", 0)) w.unsupported("past_present_share_buffer is not decomposed");
  const Tensor& input = w.sample(0);
  const Tensor& weights = w.sample(1);
  if (input.rank() != 3 || weights.rank() != 2) w.unsupported("input must be [B, S, H] and weights 2-D");
  const int64_t B = input.dim(0), S = input.dim(1), N = w.attr_int("num_heads", 0);
  std::vector<int64_t> sizes;
  if (const Attribute* a = w.node().find_attribute("qkv_hidden_sizes")) sizes = a->ints;
  else sizes.assign(3, weights.dim(1) / 3);
  if (N <= 0 || sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] % N != 0 || sizes[2] % N != 0)
    w.unsupported(fmt::format("hidden sizes {} do not split into {} heads", fmt::join(sizes, ", "), N));

  std::string qkv = w.op("MatMul", {w.in(0), w.in(1)});
  if (w.has(2)) qkv = w.op("Add", {qkv, w.in(2)});
  const auto parts = w.ops("Split", {qkv, w.ints(sizes)}, 3, {attr("axis", int64_t(-1))});
  const std::string q = split_heads(w, parts[0], B, S, N);
  std::string k = split_heads(w, parts[1], B, S, N), v = split_heads(w, parts[2], B, S, N);

  int64_t past = 0;
  if (w.has(4)) {
    const Tensor& p = w.sample(4);
    if (p.rank() != 5 || p.dim(0) != 2) w.unsupported("past must be [2, B, N, P, h]");
    past = p.dim(3);
    const auto kv = w.ops("Split", {w.in(4), w.ints({1, 1})}, 2, {attr("axis", int64_t(0))});
    k = w.op("Concat", {w.op("Squeeze", {kv[0], w.ints({0})}), k}, {attr("axis", int64_t(2))});
    v = w.op("Concat", {w.op("Squeeze", {kv[1], w.ints({0})}), v}, {attr("axis", int64_t(2))});
  }
  if (w.wants(1)) {
    if (!w.has(4)) w.unsupported("present without past is not decomposed");
    const std::string axis0 = w.ints({0});
    w.output(1, w.op("Concat", {w.op("Unsqueeze", {k, axis0}), w.op("Unsqueeze", {v, axis0})}, {attr("axis", int64_t(0))}));
  }
  const int64_t T = past + S;
  AttentionParams p;
  p.scale = w.attr_float("scale", 0.0f);
  p.mask_filter_value = w.attr_float("mask_filter_value", -10000.0f);
  if (w.attr_int("unidirectional", 0)) p.causal = causal_keep(w, S, T, past);
  if (w.has(3)) p.padding = padding_keep(w, 3, B, S, T);
  if (w.has(5)) p.attention_bias = w.in(5);
  w.output(0, merge_heads(w, attend(w, q, k, v, sizes[0] / N, p), B, S));
}

}  // namespace refeval::fusion
