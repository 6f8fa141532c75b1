// `--target onnx`: ONNX Runtime's fused operators rewritten into standard ONNX operators (opset 23),
// for runtimes that speak only ONNX. Each node is replaced by nodes writing its outputs, so readers
// are untouched; what does not map is refused with the reason (a usage error, or an --explain line).
//   SimplifiedLayerNormalization (ORT's, default domain or com.microsoft) -> RMSNormalization-23
//     (axis, epsilon, stash_type); refused when its InvStdDev output is read.
//   SkipSimplifiedLayerNormalization / SkipLayerNormalization (input, skip, gamma, [beta,] bias?)
//     -> Add(input, skip) (+ Add bias) -> RMSNormalization / LayerNormalization over the last axis
//     (epsilon default 1e-12, as ORT's); the sum is output 3 when asked for; mean / inv_std_var read
//     elsewhere are refused.
//   Gelu, BiasGelu, FastGelu(bias?) -> (Add ->) Gelu-20 (approximate "none" / "tanh");
//   QuickGelu(alpha) -> x * Sigmoid(alpha x); FusedMatMul -> Transpose (transA / transB, on operands
//     of known rank) -> MatMul (-> Mul by alpha); transBatchA / transBatchB are refused.
//   RotaryEmbedding (input, position_ids, cos, sin) -> RotaryEmbedding-23 (input, cos, sin,
//     position_ids) with interleaved, rotary_embedding_dim and num_heads (3-D input: given, or the
//     hidden size over twice the cache width). Refused: position_ids as a start offset (shape (1)),
//     of unknown rank, is_packed_batching.
//   MultiHeadAttention (query 3-D; key/value 3-D or BNSH 4-D; constant bias; key_padding_mask
//     (B, T) or (B, S, T); attention_bias; past/present; scale; unidirectional; mask_filter_value)
//     -> Attention-23, the query reshaped to BNSH and back when key/value are 4-D. Refused: packed
//     QKV / KV, past_sequence_length, cache_indirection, the qk output, other mask forms.
//   Attention (input, weights, bias?, mask_index (B, T) or (B, S, T)?, past (2, B, N, P, h)?,
//     attention_bias?) -> MatMul (+ Add) -> Split -> Attention-23 (past split by Gather, present
//     stacked by Unsqueeze + Concat). Refused: past_present_share_buffer, do_rotary,
//     past_sequence_length, mask_index of rank 1 or 4.
//   GroupQueryAttention: refused (seqlens_k gives per-row valid lengths and the present buffer
//     holds max(total, past) rows: no Attention-23 form computes the same).
// Masks: ORT adds mask_filter_value (default -10000) once to a score hidden by the padding mask or
// by causality; Attention-23 gets that additive float mask, Where(hidden, mask_filter_value, 0)
// (+ attention_bias), built in the graph. is_causal = 1 is used only where it means the same:
// no past (so the upper-left and bottom-right readings of the spec coincide), query and key
// lengths the same dim, no padding mask (a fully hidden row would differ) and mask_filter_value
// <= -1000 (its softmax weight is then 0 like -inf's). Otherwise the causal mask j > past + i is
// built from the shapes.
// After the rewrites the model's ai.onnx opset is raised to 23 (opset_convert.h) and com.microsoft
// is dropped from the imports when no node uses it any more.
#include <algorithm>

#include <limits>

#include <fmt/format.h>

#include "../opset_convert.h"
#include "../pass.h"
#include "refeval/builder.h"
#include "refeval/error.h"

namespace refeval::optimize {
namespace {

constexpr const char* kPass = "standard-ops";
constexpr int64_t kTargetOpset = 23;

struct Refusal {
  std::string why;
};

// Emits the nodes replacing one node: fresh names under the node's own name.
struct Emitter {
  const GraphIndex& index;
  NameGen& names;
  const Node& original;
  std::vector<Node> nodes;
  std::vector<Initializer> initializers;

  std::string scope() const { return original.name.empty() ? original.op_type : original.name; }

  void to(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs, std::vector<Attribute> attrs = {}) {
    nodes.push_back(make_node(op, "", std::move(inputs), std::move(outputs), std::move(attrs), names.node(scope() + "/" + op)));
  }
  std::string op(const std::string& op, std::vector<std::string> inputs, std::vector<Attribute> attrs = {}) {
    const std::string out = names.value(scope() + "/" + op + "_out");
    to(op, std::move(inputs), {out}, std::move(attrs));
    return out;
  }
  std::string constant(const std::string& base, Tensor t) {
    const std::string name = names.value(scope() + "/" + base);
    initializers.push_back({name, std::move(t)});
    return name;
  }
  std::string ints(const std::string& base, std::vector<int64_t> v) {
    return constant(base, Tensor::from_vector<int64_t>({int64_t(v.size())}, v));
  }
  // A float scalar in `like`'s element type: a float initializer when `like` (or, for a value
  // made here, the original node's first input, whose type every rewrite keeps) is known to be
  // float, else CastLike.
  std::string scalar_like(const std::string& base, float v, const std::string& like) {
    const std::string c = constant(base, Tensor::scalar<float>(v));
    const ValueType* t = index.type(like);
    if (!t && !original.inputs.empty()) t = index.type(original.inputs[0]);
    if (t && t->kind == ValueType::Kind::Tensor && t->dtype == DType::Float) return c;
    return op("CastLike", {c, like});
  }
  // Shape(x)[axis] as a 1-D int64 tensor of one element.
  std::string dim(const std::string& x, int64_t axis) {
    return op("Shape", {x}, {build::attr("start", axis), build::attr("end", axis + 1)});
  }
};

bool given(const Node& n, size_t i) { return i < n.inputs.size() && !n.inputs[i].empty(); }
std::string input(const Node& n, size_t i) { return given(n, i) ? n.inputs[i] : std::string(); }
std::string output(const Node& n, size_t i) { return i < n.outputs.size() ? n.outputs[i] : std::string(); }

std::optional<size_t> rank_of(const GraphIndex& g, const std::string& v) {
  if (const Tensor* c = g.constant(v)) return c->rank();
  if (const auto* d = g.dims(v)) return d->size();
  return std::nullopt;
}
std::optional<int64_t> fixed_dim(const GraphIndex& g, const std::string& v, int64_t axis) {
  if (const Tensor* c = g.constant(v)) return axis < int64_t(c->rank()) ? std::optional<int64_t>(c->dim(size_t(axis))) : std::nullopt;
  const auto* d = g.dims(v);
  if (!d) return std::nullopt;
  if (axis < 0) axis += int64_t(d->size());
  if (axis < 0 || axis >= int64_t(d->size()) || !(*d)[size_t(axis)].fixed()) return std::nullopt;
  return (*d)[size_t(axis)].value;
}

// Outputs [first, end) of n must not be read.
void require_unread(const Node& n, const GraphIndex& g, size_t first, size_t end, const char* what) {
  for (size_t k = first; k < std::min(end, n.outputs.size()); ++k)
    if (!n.outputs[k].empty() && g.is_used(n.outputs[k])) throw Refusal{fmt::format("its {} output is read", what)};
}

void simplified_layer_norm(Emitter& e) {
  const Node& n = e.original;
  require_unread(n, e.index, 1, n.outputs.size(), "InvStdDev (or Mean)");
  e.to("RMSNormalization", {input(n, 0), input(n, 1)}, {output(n, 0)},
       {build::attr("axis", int_attr(n, "axis", -1)), build::attr("epsilon", float_attr(n, "epsilon", 1e-5f)),
        build::attr("stash_type", int_attr(n, "stash_type", 1))});
}

void skip_layer_norm(Emitter& e, bool rms) {
  const Node& n = e.original;
  require_unread(n, e.index, 1, 3, "mean / inv_std_var");
  const size_t bias_at = rms ? 3 : 4;
  const std::string sum_out = output(n, 3);
  // The last Add writes output 3 when it is asked for.
  auto add = [&](const std::string& a, const std::string& b, bool last) {
    if (!last || sum_out.empty()) return e.op("Add", {a, b});
    e.to("Add", {a, b}, {sum_out});
    return sum_out;
  };
  std::string sum = add(input(n, 0), input(n, 1), !given(n, bias_at));
  if (given(n, bias_at)) sum = add(sum, input(n, bias_at), true);
  const float eps = float_attr(n, "epsilon", 1e-12f);
  if (rms)
    e.to("RMSNormalization", {sum, input(n, 2)}, {output(n, 0)}, {build::attr("axis", int64_t(-1)), build::attr("epsilon", eps)});
  else
    e.to("LayerNormalization", {sum, input(n, 2), input(n, 3)}, {output(n, 0)}, {build::attr("axis", int64_t(-1)), build::attr("epsilon", eps)});
}

void gelu(Emitter& e, const std::string& approximate, size_t bias_at) {
  const Node& n = e.original;
  const std::string x = given(n, bias_at) ? e.op("Add", {input(n, 0), input(n, bias_at)}) : input(n, 0);
  e.to("Gelu", {x}, {output(n, 0)}, {build::attr("approximate", approximate)});
}

void quick_gelu(Emitter& e) {
  const Node& n = e.original;
  const float alpha = float_attr(n, "alpha", 1.702f);
  const std::string x = input(n, 0);
  const std::string scaled = alpha == 1.0f ? x : e.op("Mul", {x, e.scalar_like("alpha", alpha, x)});
  e.to("Mul", {x, e.op("Sigmoid", {scaled})}, {output(n, 0)});
}

void fused_matmul(Emitter& e) {
  const Node& n = e.original;
  if (int_attr(n, "transBatchA", 0) || int_attr(n, "transBatchB", 0)) throw Refusal{"transBatchA / transBatchB are not converted"};
  auto operand = [&](size_t i, const char* flag) {
    const std::string v = input(n, i);
    if (!int_attr(n, flag, 0)) return v;
    const auto r = rank_of(e.index, v);
    if (!r) throw Refusal{fmt::format("{} is set and the rank of '{}' is unknown", flag, v)};
    if (*r < 2) return v;  // a vector's transpose is itself
    std::vector<int64_t> perm(*r);
    for (size_t d = 0; d < *r; ++d) perm[d] = int64_t(d);
    std::swap(perm[*r - 2], perm[*r - 1]);
    return e.op("Transpose", {v}, {build::attr("perm", perm)});
  };
  const std::string a = operand(0, "transA"), b = operand(1, "transB");
  const float alpha = float_attr(n, "alpha", 1.0f);
  if (alpha == 1.0f) return e.to("MatMul", {a, b}, {output(n, 0)});
  const std::string mm = e.op("MatMul", {a, b});
  e.to("Mul", {mm, e.scalar_like("alpha", alpha, mm)}, {output(n, 0)});
}

void rotary_embedding(Emitter& e) {
  const Node& n = e.original;
  const GraphIndex& g = e.index;
  if (int_attr(n, "is_packed_batching", 0)) throw Refusal{"is_packed_batching=1 has no standard form"};
  const std::string x = input(n, 0), pos = input(n, 1), cos = input(n, 2), sin = input(n, 3);
  const auto pos_rank = rank_of(g, pos);
  if (!pos_rank) throw Refusal{fmt::format("the rank of position_ids '{}' is unknown", pos)};
  if (*pos_rank != 2)
    throw Refusal{"position_ids is a start offset (shape (1)); RotaryEmbedding-23 takes (batch, seq) position ids"};
  std::vector<Attribute> attrs = {build::attr("interleaved", int_attr(n, "interleaved", 0))};
  if (const int64_t rot = int_attr(n, "rotary_embedding_dim", 0); rot > 0) attrs.push_back(build::attr("rotary_embedding_dim", rot));
  const auto x_rank = rank_of(g, x);
  int64_t heads = int_attr(n, "num_heads", 0);
  if (heads == 0 && x_rank != std::optional<size_t>(4)) {  // 3-D without num_heads: head size = 2 * cache width
    const auto hidden = fixed_dim(g, x, -1), half = fixed_dim(g, cos, 1);
    if (!x_rank || !hidden || !half || *half == 0)
      throw Refusal{"num_heads is not given and the input's hidden size or the cache width is unknown"};
    heads = *hidden / (2 * *half);
  }
  if (heads > 0 && x_rank != std::optional<size_t>(4)) attrs.push_back(build::attr("num_heads", heads));
  e.to("RotaryEmbedding", {x, cos, sin, pos}, {output(n, 0)}, std::move(attrs));
}

// What both attention forms hand to Attention-23 after their projections.
struct AttentionParts {
  std::string q, k, v;     // 3-D (B, S, D) each, or q 3-D and k, v BNSH (kv4d)
  bool kv4d = false;
  std::string past_k, past_v, present_k, present_v;
  std::string pad_mask;    // key padding mask (B, T) or (B, S, T), 1 keep / 0 hide
  std::string attn_bias;   // additive (B|1, N|1, S, T)
  std::string y;           // the output name
  bool same_lengths = false;  // query and key sequence lengths known equal
};

// The key padding mask as bool "hidden" broadcastable to (B, 1, S, T).
std::string hidden_by_padding(Emitter& e, const std::string& mask, const char* name) {
  const auto r = rank_of(e.index, mask);
  if (!r || (*r != 2 && *r != 3))
    throw Refusal{fmt::format("{} '{}' is not (B, T) or (B, S, T) (lengths, start/end and 4-D forms are not converted)", name, mask)};
  if (*r == 2 && fixed_dim(e.index, mask, 1) == std::optional<int64_t>(1))
    throw Refusal{fmt::format("{} '{}' has shape (B, 1), ORT's dummy mask", name, mask)};
  const std::string as_int = e.op("Cast", {mask}, {build::attr("to", int64_t(DType::Int64))});
  const std::string hidden = e.op("Equal", {as_int, e.constant("zero", Tensor::scalar<int64_t>(0))});
  return e.op("Unsqueeze", {hidden, e.ints(*r == 2 ? "axes_1_2" : "axis_1", *r == 2 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1})});
}

// hidden[i, j] = j > past + i, (S, T) bool: S from the query, T = past + new key length.
std::string causal_hidden(Emitter& e, const std::string& q, const std::string& k, int64_t k_seq_axis, const std::string& past,
                          int64_t past_seq_axis) {
  const std::string zero = e.constant("zero_s", Tensor::scalar<int64_t>(0)), one = e.constant("one_s", Tensor::scalar<int64_t>(1));
  const std::string axis0 = e.ints("axis_0", {0});
  const std::string S = e.op("Squeeze", {e.dim(q, 1), axis0});
  std::string T = e.dim(k, k_seq_axis), P;
  if (!past.empty()) {
    P = e.dim(past, past_seq_axis);
    T = e.op("Add", {P, T});
  }
  std::string rows = e.op("Unsqueeze", {e.op("Range", {zero, S, one}), e.ints("axis_1", {1})});
  if (!P.empty()) rows = e.op("Add", {rows, P});
  const std::string cols = e.op("Range", {zero, e.op("Squeeze", {T, axis0}), one});
  return e.op("Greater", {cols, rows});
}

void emit_attention(Emitter& e, const AttentionParts& p, int64_t heads, const std::string& past_for_causal, int64_t past_axis) {
  const Node& n = e.original;
  const bool unidirectional = int_attr(n, "unidirectional", 0) != 0;
  const float mfv = float_attr(n, "mask_filter_value", -10000.0f);
  std::vector<Attribute> attrs;
  if (const Attribute* s = n.find_attribute("scale")) attrs.push_back(build::attr("scale", s->f));
  // Padded keys get mask_filter_value added; future keys (causal) float's lowest whatever the
  // filter is, as the com.microsoft kernels do (attention_core.h).
  std::string hidden = p.pad_mask.empty() ? "" : hidden_by_padding(e, p.pad_mask, n.op_type == "Attention" ? "mask_index" : "key_padding_mask");
  std::string future;
  if (unidirectional) {
    if (p.past_k.empty() && hidden.empty() && p.same_lengths) attrs.push_back(build::attr("is_causal", int64_t(1)));
    else future = causal_hidden(e, p.q, p.k, p.kv4d ? 2 : 1, past_for_causal, past_axis);
  }
  // A padding mask alone is (B, 1, 1, T): ONNX broadcasts it over the queries, ONNX Runtime 1.30's
  // Attention-23 does not ("inconsistent q_sequence_length"), so it gets the query rows here.
  if (!hidden.empty() && future.empty()) {
    const std::string rows = e.op("Concat", {e.ints("ones_2", {1, 1}), e.dim(p.q, 1), e.ints("one_1", {1})}, {build::attr("axis", int64_t(0))});
    hidden = e.op("Expand", {hidden, rows});
  }
  std::string mask;
  if (!hidden.empty()) mask = e.op("Where", {hidden, e.scalar_like("mask_filter_value", mfv, p.q), e.scalar_like("zero_f", 0.0f, p.q)});
  if (!future.empty())
    mask = e.op("Where", {future, e.scalar_like("lowest", -std::numeric_limits<float>::max(), p.q), mask.empty() ? e.scalar_like("zero_f", 0.0f, p.q) : mask});
  if (!p.attn_bias.empty()) mask = mask.empty() ? p.attn_bias : e.op("Add", {mask, p.attn_bias});
  std::string q = p.q, y = p.y;
  if (p.kv4d) {  // Attention-23 takes Q, K and V all 3-D or all 4-D: the query goes to BNSH and back
    q = e.op("Transpose", {e.op("Reshape", {q, e.ints("bnsh_shape", {0, 0, heads, -1})})}, {build::attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
    y = e.names.value(e.scope() + "/y_bnsh");
  } else {
    attrs.push_back(build::attr("q_num_heads", heads));
    attrs.push_back(build::attr("kv_num_heads", heads));
  }
  e.to("Attention", {q, p.k, p.v, mask, p.past_k, p.past_v}, {y, p.present_k, p.present_v}, std::move(attrs));
  Node& att = e.nodes.back();
  while (!att.inputs.empty() && att.inputs.back().empty()) att.inputs.pop_back();
  while (!att.outputs.empty() && att.outputs.back().empty()) att.outputs.pop_back();
  if (p.kv4d)
    e.to("Reshape", {e.op("Transpose", {y}, {build::attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), e.ints("bsd_shape", {0, 0, -1})}, {p.y});
}

void multi_head_attention(Emitter& e) {
  const Node& n = e.original;
  const GraphIndex& g = e.index;
  const int64_t heads = int_attr(n, "num_heads", 0);
  if (given(n, 8) || given(n, 9)) throw Refusal{"past_sequence_length / cache_indirection (buffer sharing, beam search) are not converted"};
  if (output(n, 3) != "") throw Refusal{"the qk output is not converted"};
  if (!given(n, 1) || !given(n, 2)) throw Refusal{"packed QKV or KV (no separate key and value) is not converted"};
  const auto qr = rank_of(g, input(n, 0)), kr = rank_of(g, input(n, 1));
  if (qr != std::optional<size_t>(3)) throw Refusal{"the query is not known to be 3-D (B, S, D)"};
  if (!kr || (*kr != 3 && *kr != 4)) throw Refusal{"the key is not known to be 3-D or 4-D BNSH (packed KV is not converted)"};
  AttentionParts p;
  p.q = input(n, 0), p.k = input(n, 1), p.v = input(n, 2), p.kv4d = *kr == 4;
  if (given(n, 3)) {  // bias (D + D + Dv), added to the 3-D projections
    const Tensor* bias = g.constant(input(n, 3));
    const auto D = fixed_dim(g, p.q, 2);
    if (!bias || bias->rank() != 1 || !D) throw Refusal{"the bias is not a 1-D constant with a query of known hidden size"};
    const int64_t dv = bias->dim(0) - 2 * *D;
    if (dv <= 0) throw Refusal{"the bias is shorter than twice the query's hidden size"};
    auto slice = [&](const char* base, int64_t offset, int64_t width) {
      const std::vector<float> all = bias->to_vector<float>();
      return e.constant(base, Tensor::from_vector<float>({width}, std::vector<float>(all.begin() + offset, all.begin() + offset + width)));
    };
    if (bias->dtype() != DType::Float) throw Refusal{"a bias other than float is not converted"};
    p.q = e.op("Add", {p.q, slice("bias_q", 0, *D)});
    if (!p.kv4d) {  // keys and values in BNSH form are used as they are
      p.k = e.op("Add", {p.k, slice("bias_k", *D, *D)});
      p.v = e.op("Add", {p.v, slice("bias_v", 2 * *D, dv)});
    }
  }
  p.pad_mask = input(n, 4), p.attn_bias = input(n, 5), p.past_k = input(n, 6), p.past_v = input(n, 7);
  if (p.past_k.empty() != p.past_v.empty()) throw Refusal{"past_key and past_value must be given together"};
  p.present_k = output(n, 1), p.present_v = output(n, 2), p.y = output(n, 0);
  const auto* qd = g.dims(input(n, 0));
  const auto* kd = g.dims(input(n, 1));
  p.same_lengths = qd && kd && same_dim((*qd)[1], (*kd)[p.kv4d ? 2 : 1]);
  emit_attention(e, p, heads, p.past_k, 2);
}

void packed_attention(Emitter& e) {
  const Node& n = e.original;
  const GraphIndex& g = e.index;
  const int64_t heads = int_attr(n, "num_heads", 0);
  if (int_attr(n, "past_present_share_buffer", 0) || int_attr(n, "do_rotary", 0))
    throw Refusal{"past_present_share_buffer / do_rotary are not converted"};
  if (given(n, 6)) throw Refusal{"past_sequence_length (buffer sharing) is not converted"};
  std::vector<int64_t> sizes = ints_attr(n, "qkv_hidden_sizes");
  if (sizes.empty()) {
    const auto width = fixed_dim(g, input(n, 1), 1);
    if (!width) throw Refusal{"the weights' width is unknown"};
    sizes = {*width / 3, *width / 3, *width / 3};
  }
  if (!output(n, 1).empty() && sizes[0] != sizes[2]) throw Refusal{"present needs equal key and value sizes"};
  std::string qkv = e.op("MatMul", {input(n, 0), input(n, 1)});
  if (given(n, 2)) qkv = e.op("Add", {qkv, input(n, 2)});
  AttentionParts p;
  p.q = e.names.value(e.scope() + "/q"), p.k = e.names.value(e.scope() + "/k"), p.v = e.names.value(e.scope() + "/v");
  e.to("Split", {qkv, e.ints("qkv_sizes", sizes)}, {p.q, p.k, p.v}, {build::attr("axis", int64_t(-1))});
  const std::string past = input(n, 4);
  if (!past.empty()) {
    p.past_k = e.op("Gather", {past, e.constant("index_0", Tensor::scalar<int64_t>(0))}, {build::attr("axis", int64_t(0))});
    p.past_v = e.op("Gather", {past, e.constant("index_1", Tensor::scalar<int64_t>(1))}, {build::attr("axis", int64_t(0))});
  }
  const std::string present = output(n, 1);
  if (!present.empty()) p.present_k = e.names.value(e.scope() + "/present_key"), p.present_v = e.names.value(e.scope() + "/present_value");
  p.pad_mask = input(n, 3), p.attn_bias = input(n, 5), p.y = output(n, 0), p.same_lengths = true;
  emit_attention(e, p, heads, past, 3);
  if (!present.empty()) {
    const std::string axis0 = e.ints("axis_0", {0});
    e.to("Concat", {e.op("Unsqueeze", {p.present_k, axis0}), e.op("Unsqueeze", {p.present_v, axis0})}, {present},
         {build::attr("axis", int64_t(0))});
  }
}

// Rewrites node n into e, or throws Refusal.
void rewrite(Emitter& e) {
  const Node& n = e.original;
  const std::string& op = n.op_type;
  if (op == "SimplifiedLayerNormalization") return simplified_layer_norm(e);
  if (op == "SkipSimplifiedLayerNormalization") return skip_layer_norm(e, true);
  if (op == "SkipLayerNormalization") return skip_layer_norm(e, false);
  if (op == "Gelu") return gelu(e, "none", 99);
  if (op == "BiasGelu") return gelu(e, "none", 1);
  if (op == "FastGelu") return gelu(e, "tanh", 1);
  if (op == "QuickGelu") return quick_gelu(e);
  if (op == "FusedMatMul" || op == "TransposeMatMul") return fused_matmul(e);
  if (op == "RotaryEmbedding") return rotary_embedding(e);
  if (op == "MultiHeadAttention") return multi_head_attention(e);
  if (op == "Attention") return packed_attention(e);
  if (op == "LayerNormalization") {  // ORT's com.microsoft copy of ONNX's LayerNormalization
    Node copy = n;
    copy.domain.clear();
    e.nodes.push_back(copy);
    return;
  }
  if (op == "GroupQueryAttention")
    throw Refusal{"seqlens_k gives per-row valid lengths and present holds max(total, past) rows; Attention-23 has no such form"};
  throw Refusal{fmt::format("no standard form is written for com.microsoft {}", op)};
}

bool to_rewrite(const Node& n) {
  return n.domain == "com.microsoft" || (n.domain.empty() && n.op_type == "SimplifiedLayerNormalization");
}

int to_standard_ops(Model& m, PassContext& ctx) {
  // The existing nodes first: the new ones exist only at the target opset.
  const int64_t opset = m.opsets.count("") ? m.opsets.at("") : 0;
  convert_opset(m, ctx.registry, std::max(opset, kTargetOpset));
  Graph& g = m.graph;
  const GraphIndex index(g, ctx.inference);
  NameGen names(g);
  std::vector<Node> nodes;
  std::vector<Initializer> initializers;
  int rewritten = 0;
  for (const Node& n : g.nodes) {
    if (!to_rewrite(n)) {
      nodes.push_back(n);
      continue;
    }
    Emitter e{index, names, n, {}, {}};
    try {
      rewrite(e);
    } catch (const Refusal& r) {
      if (ctx.explain) ctx.explain->add(kPass, n.name, r.why);
      ctx.unconverted.emplace_back(n.op_type, fmt::format("{}: {}", n.describe(), r.why));
      nodes.push_back(n);
      continue;
    }
    ++rewritten;
    for (Node& k : e.nodes) nodes.push_back(std::move(k));
    for (Initializer& i : e.initializers) initializers.push_back(std::move(i));
  }
  g.nodes = std::move(nodes);
  for (Initializer& i : initializers) g.initializers.push_back(std::move(i));
  bool microsoft = false;
  for (const Node& n : g.nodes) microsoft = microsoft || n.domain == "com.microsoft";
  if (!microsoft) m.opsets.erase("com.microsoft");
  return rewritten;
}

}  // namespace

Pass to_standard_ops_pass() { return {kPass, "Rewrote into standard operators", Level::Extended, to_standard_ops}; }

}  // namespace refeval::optimize
