// Self-attention of decoders, as torch exports write it in any of its forms, into one fused
// operator (ORT's FusionGptAttention / FusionGptAttentionNoPast / FusionRotaryAttention). The
// match starts at each Softmax and reads the computation around it by its meaning:
//
//   scores = MatMul(q, kT) [/ c | * c]        (the scale on the scores, on q, or on k)
//            [Where(causal, scores, filler) | Where(not causal, filler, scores)]
//            [+ padding mask (1 - mask[:, None, None, :]) * big_negative | + any (B|1, 1, S, T) bias]
//   y      = Reshape(Transpose(MatMul(Softmax(scores), v), 0 2 1 3), (B, S, N*h))
//
// with q, k, v the heads of 3-D projections: Transpose(Reshape(x, (B, S, N, h)), 0 2 1 3), K
// maybe transposed straight to 0 2 3 1; K and V maybe after a past (Concat on the sequence axis,
// with a per-layer past input, or a slice of ORT's stacked (2, B, N, P, h) past); q and k maybe
// through com.microsoft RotaryEmbedding (4-D, fused earlier); K and V maybe repeated for grouped
// query attention (Llama's repeat_kv: Unsqueeze -> Expand -> Reshape).
//
// The causal mask is checked, not assumed: a lower-triangular constant buffer sliced to rows
// [T - S, T) and columns [0, T) (S queries, T keys, as symbolic shapes prove), in whichever
// polarity the Where uses. A padding mask must come from a 2-D graph input. Any other additive
// term of shape (B or 1, 1, S, T) is passed through as attention_bias.
//
// Emitted:
//   - com.microsoft Attention(x, W, b, mask_index, past) when Q, K and V are the three equal
//     parts of one projection x W + b (GPT-2's c_attn) and any past is ORT's stacked one;
//   - com.microsoft MultiHeadAttention(q, k, v, , key_padding_mask, attention_bias, past_key,
//     past_value) otherwise, with presents replacing the past Concats; keys and values repeated
//     for grouped-query attention enter in their (B, N, T, h) form, their Concats and repeats kept.
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "../pass.h"
#include "attention_reading.h"
#include "refeval/builder.h"
#include "refeval/error.h"
#include "refeval/compute_vector.h"
#include "../pattern.h"

namespace refeval::optimize {
namespace {

using namespace attention;

// A node reading a value nothing defines, described; empty when the graph is whole.
std::string undefined_read(const Graph& g) {
  std::set<std::string> defined;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const Initializer& i : g.initializers) defined.insert(i.name);
  for (const Node& n : g.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
  for (const Node& n : g.nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty() && !defined.count(in)) return fmt::format("node '{}' reading '{}', which nothing computes", n.name, in);
  return "";
}

bool graph_input(const GraphIndex& g, const std::string& v) {
  for (const ValueInfo* in : g.graph().feed_inputs())
    if (in->name == v) return true;
  return false;
}

// Adds to `used` the nodes that read its values (not `kept`, which the fused node writes) and
// would be dead after the fusion: the shape computations of the views (Shape -> Gather -> ...),
// a transposed K read only for its size. A reader whose results reach anything else stays, and
// the escape check then refuses the fusion.
void absorb_dead_readers(const GraphIndex& g, std::set<int>& used, const std::set<std::string>& kept) {
  std::set<int> extra;
  std::vector<int> todo;
  for (int i : used)
    for (const std::string& out : g.graph().nodes[size_t(i)].outputs)
      if (!out.empty() && !kept.count(out))
        for (int c : g.consumers(out))
          if (!used.count(c)) todo.push_back(c);
  while (!todo.empty() && extra.size() < 256) {
    const int i = todo.back();
    todo.pop_back();
    if (!extra.insert(i).second) continue;
    for (const std::string& out : g.graph().nodes[size_t(i)].outputs)
      for (int c : out.empty() ? std::vector<int>{} : g.consumers(out))
        if (!used.count(c)) todo.push_back(c);
  }
  // Keep only what is read inside: drop, to a fixed point, nodes read from outside.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = extra.begin(); it != extra.end();) {
      bool outside = false;
      for (const std::string& out : g.graph().nodes[size_t(*it)].outputs) {
        if (out.empty()) continue;
        outside = outside || g.is_graph_output(out);
        for (int c : g.consumers(out)) outside = outside || (!used.count(c) && !extra.count(c));
      }
      if (outside) it = extra.erase(it), changed = true;
      else ++it;
    }
  }
  used.insert(extra.begin(), extra.end());
}

// The fused nodes read values (a run-time mask's condition) whose computation may pass through
// nodes of the match (the Shape of K): those stay.
void keep_what_new_nodes_read(const GraphIndex& g, const std::vector<Node>& nodes, std::set<int>& used) {
  std::set<std::string> made;
  for (const Node& n : nodes) made.insert(n.outputs.begin(), n.outputs.end());
  std::vector<std::string> todo;
  for (const Node& n : nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty() && !made.count(in)) todo.push_back(in);
  std::set<int> seen;
  while (!todo.empty()) {
    const int p = g.producer(todo.back());
    todo.pop_back();
    if (p < 0 || !seen.insert(p).second) continue;
    used.erase(p);
    for (const std::string& in : g.graph().nodes[size_t(p)].inputs)
      if (!in.empty()) todo.push_back(in);
  }
}

// The (B, N, T, h) heads of the 3-D value `x` (Transpose 0 2 1 3 of its Reshape into heads) when
// the graph outputs them (a present of a decoder's first step); empty otherwise.
std::string heads_output(const GraphIndex& g, const std::string& x) {
  for (int r : g.consumers(x)) {
    const Node& view = g.graph().nodes[size_t(r)];
    if (view.op_type != "Reshape" || view.inputs.size() != 2) continue;
    const std::vector<Dim>* d = g.dims(view.outputs[0]);
    const auto target = g.shape_values(view.inputs[1]);
    if (!(d && d->size() == 4) && !(target && target->size() == 4)) continue;
    for (int t : g.consumers(view.outputs[0])) {
      const Node& tr = g.graph().nodes[size_t(t)];
      if (tr.op_type == "Transpose" && ints_attr(tr, "perm") == std::vector<int64_t>{0, 2, 1, 3} && g.is_graph_output(tr.outputs[0]))
        return tr.outputs[0];
    }
  }
  return "";
}

// True when every output of the nodes in `used`, but the `kept` values, is read only inside.
std::string escaping(const GraphIndex& g, const std::set<int>& used, const std::set<std::string>& kept) {
  for (int i : used)
    for (const std::string& out : g.graph().nodes[size_t(i)].outputs) {
      if (out.empty() || kept.count(out)) continue;
      if (g.is_graph_output(out)) return fmt::format("'{}' is a graph output", out);
      for (int c : g.consumers(out))
        if (!used.count(c)) return fmt::format("'{}' is also read by '{}'", out, g.graph().nodes[size_t(c)].name);
    }
  return "";
}

// Nodes the layers share, named under one base ("/CausalPaddingBias/..."): value(what) names an
// output there, add(op, inputs, what, attributes) appends a node writing it and returns its name.
class SharedBuilder {
 public:
  SharedBuilder(NameGen& names, std::vector<Node>& nodes, const std::string& base)
      : names_(names), nodes_(nodes), base_(names.node(base)) {}
  std::string value(const std::string& what) { return names_.value(base_ + "/" + what); }
  std::string add(const std::string& op, std::vector<std::string> in, const std::string& what, std::vector<Attribute> a = {}) {
    const std::string out = value(what);
    nodes_.push_back(make_node(op, "", std::move(in), {out}, std::move(a), names_.node(base_ + "/" + op)));
    return out;
  }

 private:
  NameGen& names_;
  std::vector<Node>& nodes_;
  std::string base_;
};

// What layers whose values have the same length on an axis share a computation by: that dim's
// size or symbol, else (unknown) the value's own name.
std::string length_key(const Dim* d, const std::string& value) {
  return d && d->fixed() ? std::to_string(d->value) : d && !d->param.empty() ? d->param : value;
}

// Why grouped-query attention `f` cannot be GroupQueryAttention (empty: it can). ORT's operator
// reads per-layer pasts (B, Nkv, P, h) that the new keys follow; its CPU kernel wants head sizes
// that are multiples of 8. Causal (query s of S sees keys j <= P + s) or not (causal=0), it takes
// any additive mask as attention_bias.
// (The reader's repeats are of 3-D projections split into heads, N = Nkv x repeats.)
std::string gqa_refusal(const GraphIndex& g, const Found& f, const std::string& mask_index) {
  if (f.k.past.empty() || !f.k.concat || !f.v.concat || !graph_input(g, f.k.past) || !graph_input(g, f.v.past))
    return "no per-layer past to append to";
  if (f.k.repeated_bsnh) return "the keys are repeated in (B, T, N, h), between transposes of the cache";
  if (f.q.heads.h % 8 != 0) return fmt::format("head size {} (ORT's CPU kernel needs a multiple of 8)", f.q.heads.h);
  if (!mask_index.empty()) return "a key padding mask without a causal one to build GroupQueryAttention's bias with";
  return "";
}

}  // namespace

Pass attention_pass() {
  return {"attention", "Fused Attention", Level::Extended, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g, ctx.inference);
            NameGen names(g);
            std::vector<bool> drop(g.nodes.size(), false);
            std::map<int, std::vector<Node>> insert_at;  // before node index
            std::set<int> claimed;
            std::vector<Provenance> provenance;
            std::vector<Initializer> new_inits;
            int fused = 0, candidates = 0;
            auto refuse = [&](const Node& sm, const std::string& why) {
              if (ctx.explain) ctx.explain->add("attention", sm.name.empty() ? sm.outputs[0] : sm.name, why);
            };
            // One exact causal + padding bias per (buffer, mask, past, filler), shared by the layers.
            std::map<std::string, std::string> shared_bias;
            // One raw (B, T) int32 mask per padding input and polarity, shared by the layers.
            std::map<std::string, std::string> shared_mask;
            std::map<std::string, std::string> shared_rows;  // a (.., 1, T) bias -> its (.., S, T) expansion
            auto mask_key = [](const Found& f) { return f.mask.padding_input + (f.mask.padding_keeps_nonzero ? "|keep" : "|hide"); };
            std::vector<Node> shared_nodes;
            auto shared_causal_padding_bias = [&](const Found& f) -> std::optional<std::string> {
              const Tensor* buffer = index.constant(f.mask.causal_buffer);
              const ValueType* mtype = index.type(f.mask.padding_value);
              const std::vector<Dim>* mdims = index.dims(f.mask.padding_value);
              if (!buffer || buffer->rank() != 4 || !mtype || mtype->kind != ValueType::Kind::Tensor || !mdims || mdims->size() != 4) return std::nullopt;
              // The past length: a per-layer past (B, N, P, h) input, ORT's stacked (2, B, N, P, h) one, or none.
              std::string past;
              int64_t past_axis = 0;
              if (!f.k.stacked_past.empty()) past = f.k.stacked_past, past_axis = 3;
              else if (!f.k.past.empty() && graph_input(index, f.k.past)) past = f.k.past, past_axis = 2;
              else if (!f.k.past.empty()) return std::nullopt;
              // Every layer's past has the same length: keyed by its dim, not its name.
              std::string past_dim;
              if (!past.empty()) {
                const std::vector<Dim>* pd = index.dims(past);
                if (!pd || int64_t(pd->size()) <= past_axis) return std::nullopt;
                past_dim = length_key(&(*pd)[size_t(past_axis)], past);
              }
              const std::string key = fmt::format("{}|{}|{}|{}", f.mask.causal_buffer, f.mask.padding_value, past_dim, f.mask.causal_filler);
              if (auto it = shared_bias.find(key); it != shared_bias.end()) return it->second;
              SharedBuilder b(names, shared_nodes, "/CausalPaddingBias");
              auto ints_init = [&](const std::string& what, std::vector<int64_t> v) {
                const std::string n = b.value(what);
                new_inits.push_back({n, Tensor::from_vector<int64_t>({int64_t(v.size())}, v)});
                return n;
              };
              std::string keep = f.mask.causal_buffer;
              if (f.mask.causal_buffer_sliced) {
                const std::string total = b.add("Slice", {b.add("Shape", {f.mask.padding_input}, "mask_shape"), ints_init("one", {1}), ints_init("two", {2})}, "total");
                const std::string start = past.empty() ? ints_init("zero", {0})
                                                       : b.add("Slice", {b.add("Shape", {past}, "past_shape"), ints_init("past_axis", {past_axis}),
                                                                       ints_init("past_axis_end", {past_axis + 1})}, "past_length");
                const std::string starts = b.add("Concat", {start, ints_init("zero_col", {0})}, "starts", {build::attr("axis", int64_t(0))});
                const std::string ends = b.add("Concat", {total, total}, "ends", {build::attr("axis", int64_t(0))});
                keep = b.add("Slice", {keep, starts, ends, ints_init("axes", {2, 3})}, "causal_block");
              }
              if (buffer->dtype() != DType::Bool) keep = b.add("Cast", {keep}, "keep", {build::attr("to", int64_t(DType::Bool))});
              const std::string fill = b.value("filler");
              new_inits.push_back({fill, from_doubles(mtype->dtype, {}, {std::max(f.mask.causal_filler, -3.4028234663852886e38)})});
              const std::string hidden = b.add("Add", {f.mask.padding_value, fill}, "hidden");
              const std::string bias = b.add("Where", {keep, f.mask.padding_value, hidden}, "bias");
              return shared_bias[key] = bias;
            };
            // The sum of additive mask terms as one (B|1, N|1, S|1, T) bias, shared by the layers
            // that add the same terms. Every term's shape is known: the reader takes a bias or a
            // padding value only with its dims.
            std::map<std::string, std::pair<std::string, bool>> shared_sums;  // terms -> (sum, one row)
            auto summed_bias = [&](const std::vector<std::string>& terms, Mask& mask) {
              const std::string key = fmt::format("{}", fmt::join(terms, "|"));
              if (auto it = shared_sums.find(key); it != shared_sums.end()) {
                mask.bias = it->second.first, mask.bias_one_row = it->second.second;
                return;
              }
              size_t rank = 0;
              bool one_row = true;
              for (const std::string& t : terms) {
                const std::vector<Dim>* d = index.dims(t);
                rank = std::max(rank, d->size());
                one_row = one_row && d->size() == 4 && (*d)[2].fixed() && (*d)[2].value == 1;
              }
              const std::string base = names.node("/AttentionMaskSum");
              std::string sum = terms[0];
              for (size_t i = 1; i < terms.size(); ++i) {
                const std::string next = names.value(base + "/sum");
                shared_nodes.push_back(make_node("Add", "", {sum, terms[i]}, {next}, {}, names.node(base + "/Add")));
                sum = next;
              }
              if (rank < 4) {
                const std::vector<int64_t> ax = rank == 3 ? std::vector<int64_t>{1} : std::vector<int64_t>{0, 1};
                const std::string axes = names.value(base + "/axes"), b4 = names.value(base + "/bias_4d");
                new_inits.push_back({axes, Tensor::from_vector<int64_t>({int64_t(ax.size())}, ax)});
                shared_nodes.push_back(make_node("Unsqueeze", "", {sum, axes}, {b4}, {}, names.node(base + "/Unsqueeze")));
                sum = b4;
              }
              shared_sums[key] = {sum, one_row};
              mask.bias = sum, mask.bias_one_row = one_row;
            };
            // GroupQueryAttention's seqlens_k (B) and total_sequence_length (scalar), both int32,
            // for rows of the whole length T = P + S: from the first layer's query projection
            // (B, S, D) and past (B, Nkv, P, h), values of the graph as it was (so they stay if that
            // layer is not fused after all), shared by the layers whose past has the same length
            // (per layer when the length is not known).
            std::map<std::string, std::pair<std::string, std::string>> shared_total;
            auto shared_lengths = [&](const std::string& query, const std::string& past) {
              const std::vector<Dim>* pd = index.dims(past);
              const std::string key = length_key(pd && pd->size() == 4 ? &(*pd)[2] : nullptr, past);
              if (auto it = shared_total.find(key); it != shared_total.end()) return it->second;
              SharedBuilder b(names, shared_nodes, "/GroupQueryLengths");
              auto dim = [&](const std::string& x, int64_t axis, const std::string& what) {
                return b.add("Shape", {x}, what, {build::attr("start", axis), build::attr("end", axis + 1)});
              };
              // total - 1 as an Add of -1: a Sub would read as a rotation's candidate to --explain
              const std::string minus_one = b.value("minus_one");
              new_inits.push_back({minus_one, Tensor::from_vector<int32_t>({1}, {-1})});
              const std::string total = b.add("Cast", {b.add("Add", {dim(past, 2, "past_length"), dim(query, 1, "new_length")}, "total64")}, "total",
                                            {build::attr("to", int64_t(DType::Int32))});
              const std::string last = b.add("Add", {total, minus_one}, "last");
              const std::string seqlens = b.add("Expand", {last, dim(query, 0, "batch")}, "seqlens_k");
              return shared_total[key] = {seqlens, b.add("Squeeze", {total}, "total_sequence_length")};
            };
            for (int si = 0; si < int(g.nodes.size()); ++si) {
              const Node& sm = g.nodes[size_t(si)];
              if (sm.op_type != "Softmax" || !sm.domain.empty()) continue;
              ++candidates;
              std::string why;
              std::optional<Found> f = read(index, si, why);
              if (!f) {
                refuse(sm, why);
                continue;
              }
              if (std::any_of(f->used.begin(), f->used.end(), [&](int i) { return claimed.count(i) > 0; })) {
                refuse(sm, "it shares nodes with another attention");
                continue;
              }
              const int64_t N = f->q.heads.N, h = f->q.heads.h;
              std::vector<Node> nodes;
              const std::string scope = names.node(sm.name.substr(0, sm.name.rfind('/') + 1) + "Attention");
              // A bias of rank 2 (S, T) or 3 (B, S, T) as the (B|1, 1, S, T) the operators take.
              auto to_4d = [&](const std::string& bias, size_t rank) {
                if (rank >= 4) return bias;
                const std::vector<int64_t> ax = rank == 3 ? std::vector<int64_t>{1} : std::vector<int64_t>{0, 1};
                const std::string axes = names.value(scope + "/mask_axes"), b4 = names.value(scope + "/mask_bias_4d");
                new_inits.push_back({axes, Tensor::from_vector<int64_t>({int64_t(ax.size())}, ax)});
                nodes.push_back(make_node("Unsqueeze", "", {bias, axes}, {b4}, {}, names.node(scope + "/MaskBias4d")));
                return b4;
              };
              // Causal and padding together: the fused operators add mask_filter_value once where
              // either hides a key, where the export adds the padding mask to the already filled
              // causal scores. They differ only in rows with every key hidden (a left-padded
              // row's first queries), where the export attends uniformly to the keys hidden by
              // one mask and not the other; the exact bias Where(causal, M, M + filler) keeps that.
              // It is built once for every layer, from graph inputs only: the padding mask's total
              // length T and the past's length P give the causal block, rows [P, T), columns [0, T).
              // Not with ORT's stacked past: its Attention refuses past together with attention_bias
              // ("Attention cannot have both past and attention_bias"), so there the padding rows
              // keep the fused operator's reading of the masks.
              if (f->mask.causal && !f->mask.padding_input.empty() && f->mask.bias.empty() && f->mask.more_biases.empty() &&
                  f->mask.where_cond.empty() && f->k.stacked_past.empty()) {
                if (auto bias = shared_causal_padding_bias(*f)) f->mask.bias = *bias, f->mask.causal = false, f->mask.padding_input.clear();
              }
              // Several additive terms (CLIP's causal then padding mask, in either order or
              // nesting): one bias, their sum, innermost first as the graph adds them, built once
              // for the layers that add the same terms. The padding value is then one of them.
              std::vector<std::string> terms(f->mask.more_biases.rbegin(), f->mask.more_biases.rend());
              if (!terms.empty()) {
                if (!f->mask.bias.empty()) terms.push_back(f->mask.bias);
                if (!f->mask.padding_value.empty()) terms.push_back(f->mask.padding_value), f->mask.padding_input.clear();
                summed_bias(terms, f->mask);
              }
              std::vector<Attribute> attrs = {build::attr("num_heads", N)};
              if (f->mask.causal) attrs.push_back(build::attr("unidirectional", int64_t(1)));
              if (f->mask.causal || !f->mask.padding_input.empty())
                attrs.push_back(build::attr("mask_filter_value", float(std::max(f->mask.filler, -3.4028234663852886e38))));
              if (std::fabs(f->scale * std::sqrt(double(h)) - 1) > 1e-6) attrs.push_back(build::attr("scale", float(f->scale)));
              std::string mask_index;
              if (!f->mask.padding_input.empty() && shared_mask.count(mask_key(*f))) {
                mask_index = shared_mask.at(mask_key(*f));
              } else if (!f->mask.padding_input.empty()) {
                // ORT's raw mask: 1 keeps a key, 0 hides it. torch's key_padding_mask is the opposite.
                std::string keep = f->mask.padding_input;
                if (!f->mask.padding_keeps_nonzero) {
                  const ValueType* mt = index.type(keep);
                  keep = names.value(f->mask.padding_input + "_keep");
                  std::string as_bool = f->mask.padding_input;
                  if (!mt || mt->kind != ValueType::Kind::Tensor || mt->dtype != DType::Bool) {
                    as_bool = names.value(f->mask.padding_input + "_bool");
                    shared_nodes.push_back(make_node("Cast", "", {f->mask.padding_input}, {as_bool}, {build::attr("to", int64_t(DType::Bool))},
                                                     names.node("/MaskIndex/ToBool")));
                  }
                  shared_nodes.push_back(make_node("Not", "", {as_bool}, {keep}, {}, names.node("/MaskIndex/Not")));
                }
                const ValueType* kt = index.type(keep);
                if (keep == f->mask.padding_input && kt && kt->kind == ValueType::Kind::Tensor && kt->dtype == DType::Int32) {
                  mask_index = keep;  // already ORT's type
                } else {
                  mask_index = names.value(f->mask.padding_input + "_int32");
                  shared_nodes.push_back(make_node("Cast", "", {keep}, {mask_index}, {build::attr("to", int64_t(DType::Int32))},
                                                   names.node("/MaskIndex/Cast")));
                }
                shared_mask[mask_key(*f)] = mask_index;
              }
              if (!f->mask.where_cond.empty()) {
                if (!f->mask.bias.empty()) {
                  refuse(sm, "a run-time Where mask and an additive bias together");
                  continue;
                }
                // bias = Where(cond, 0, filler) (or the reverse), 4-D (.., 1, S, T) by Unsqueeze.
                const ValueType* st = index.type(sm.inputs[0]);  // a tensor's: the reader took the scores only with their shape
                const std::string zero = names.value(scope + "/mask_zero"), fill = names.value(scope + "/mask_filler");
                new_inits.push_back({zero, from_doubles(st->dtype, {}, {0.0})});
                new_inits.push_back({fill, from_doubles(st->dtype, {}, {std::max(f->mask.where_filler, -3.4028234663852886e38)})});
                std::string bias = names.value(scope + "/mask_bias");
                nodes.push_back(make_node("Where", "", {f->mask.where_cond, f->mask.where_keeps ? zero : fill, f->mask.where_keeps ? fill : zero},
                                          {bias}, {}, names.node(scope + "/MaskBias")));
                f->mask.bias = to_4d(bias, index.dims(f->mask.where_cond)->size());
              } else if (!f->mask.bias.empty() && terms.empty() && index.dims(f->mask.bias)) {
                f->mask.bias = to_4d(f->mask.bias, index.dims(f->mask.bias)->size());
              }
              const Node& merge = g.nodes[size_t(f->output)];
              // torch's nn.MultiheadAttention works on (S, B, D): the fused operators read and
              // write (B, S, D), transposed here, and the output goes back to the merge's shape.
              const std::string y = f->output_seq_first ? names.value(scope + "/output_bsd") : merge.outputs[0];
              auto batch_first = [&](const std::string& x) {
                if (!f->q.heads.seq_first) return x;
                if (const int p = index.producer(x); p >= 0 && g.nodes[size_t(p)].op_type == "Transpose" && ints_attr(g.nodes[size_t(p)], "perm") == std::vector<int64_t>{1, 0, 2})
                  return g.nodes[size_t(p)].inputs[0];
                const std::string t = names.value(x + "_batch_first");
                nodes.push_back(make_node("Transpose", "", {x}, {t}, {build::attr("perm", std::vector<int64_t>{1, 0, 2})}, names.node(scope + "/BatchFirst")));
                return t;
              };
              std::set<int> used = f->used;
              std::set<std::string> kept;  // values of used nodes that stay read outside
              const std::optional<Packed> packed = packed_qkv(index, *f);
              const std::optional<SeparateQKV> separate = packed ? std::nullopt : separate_qkv(index, *f);
              const std::optional<StackedPresent> present = stacked_present(index, *f);
              // A first step with no past that outputs its keys and values in heads (an
              // encoder-decoder's decoder_model: present.N.decoder/encoder.*): MultiHeadAttention
              // writes them as its presents.
              std::string present_k, present_v;
              if (f->k.past.empty() && f->k.repeated.empty() && !f->k.rotary_node && !f->k.heads.given && !f->v.heads.given)
                present_k = heads_output(index, f->k.heads.x), present_v = heads_output(index, f->v.heads.x);
              const bool presents = !present_k.empty() && !present_v.empty();
              const bool self_only = f->k.past.empty() && f->k.repeated.empty() && !f->q.rotary_node && !f->k.rotary_node && !presents;
              // --forms cpu: ORT's CPU Attention (the projection inside) runs up to 3.6x slower
              // than MultiHeadAttention at batch > 1 (ort_cpu_forms.h); only a batch fixed at 1
              // keeps it.
              const std::vector<Dim>* xd = packed ? index.dims(packed->x) : separate ? index.dims(separate->x) : nullptr;
              const size_t batch_axis = f->q.heads.seq_first ? 1 : 0;
              const bool attention_op =
                  !ctx.cpu_forms || (xd && xd->size() > batch_axis && (*xd)[batch_axis].fixed() && (*xd)[batch_axis].value == 1);
              if (packed && self_only && attention_op) {
                used.insert(packed->nodes.begin(), packed->nodes.end());
                nodes.push_back(make_node("Attention", "com.microsoft", {batch_first(packed->x), packed->w, packed->b, mask_index, "", f->mask.bias}, {y},
                                          attrs, scope));
              } else if (separate && self_only && attention_op) {
                // One (D_in, 3D) weight and (3D) bias from the three projections, as ORT's
                // FusionAttention packs BERT's query, key and value.
                used.insert(separate->nodes.begin(), separate->nodes.end());
                const Tensor& w0 = *index.constant(separate->w[0]);
                const int64_t din = w0.dim(0), width = w0.dim(1);
                std::vector<double> w(size_t(din * 3 * width)), b(size_t(3 * width), 0.0);
                for (int part = 0; part < 3; ++part) {
                  const std::vector<double> wp = to_doubles(*index.constant(separate->w[part]));
                  for (int64_t r = 0; r < din; ++r)
                    for (int64_t c = 0; c < width; ++c) w[size_t(r * 3 * width + part * width + c)] = wp[size_t(r * width + c)];
                  if (!separate->b[part].empty()) {
                    const std::vector<double> bp = to_doubles(*index.constant(separate->b[part]));
                    std::copy(bp.begin(), bp.end(), b.begin() + part * width);
                  }
                }
                const std::string wn = names.value(scope + "/qkv_weight"), bn = names.value(scope + "/qkv_bias");
                new_inits.push_back({wn, from_doubles(w0.dtype(), {din, 3 * width}, w)});
                new_inits.push_back({bn, from_doubles(w0.dtype(), {3 * width}, b)});
                nodes.push_back(make_node("Attention", "com.microsoft", {batch_first(separate->x), wn, bn, mask_index, "", f->mask.bias}, {y}, attrs, scope));
              } else if (packed && present && f->k.repeated.empty() && !f->q.rotary_node && !f->k.rotary_node) {
                // ORT's GPT-2 with past: Attention(x, W, b, mask_index, past) -> (y, present).
                used.insert(packed->nodes.begin(), packed->nodes.end());
                used.insert({present->unsqueeze_k, present->unsqueeze_v, present->stack});
                kept.insert(present->value);
                nodes.push_back(make_node("Attention", "com.microsoft",
                                          {packed->x, packed->w, packed->b, mask_index, f->k.stacked_past, f->mask.bias}, {y, present->value},
                                          attrs, scope));
              } else {
                // MultiHeadAttention on 3-D Q (rotated here in its 3-D form), K and V.
                auto three_d = [&](const Source& s, int64_t heads) -> std::string {
                  if (!s.rotary_node) return s.heads.given ? s.heads.x : batch_first(s.heads.x);
                  Node rot = *s.rotary_node;
                  rot.inputs[0] = s.heads.x;
                  rot.outputs = {names.value(s.rotary_node->outputs[0] + "_3d")};
                  rot.name = names.node(s.rotary_node->name + "_3d");
                  std::erase_if(rot.attributes, [](const Attribute& a) { return a.name == "num_heads"; });
                  rot.attributes.push_back(build::attr("num_heads", heads));
                  nodes.push_back(rot);
                  return rot.outputs[0];
                };
                std::vector<std::string> inputs = {three_d(f->q, N), "", "", "", mask_index, f->mask.bias, "", ""};
                std::vector<std::string> outputs = {y};
                const std::string no_gqa = ctx.cpu_forms && !f->k.repeated.empty() ? gqa_refusal(index, *f, mask_index) : "";
                const bool gqa = ctx.cpu_forms && !f->k.repeated.empty() && no_gqa.empty();
                if (gqa) {
                  // --forms cpu, grouped-query with a past: GroupQueryAttention reads the Nkv key and
                  // value heads as they are and writes the presents itself, so the repeats (an Expand
                  // copying the whole cache N / Nkv times a step) and the past Concats go. Every row's
                  // length is the whole total (seqlens_k = total - 1): padding, and causality when the
                  // export computes it into its mask, stay in the bias, with causal=0.
                  const int64_t kv_heads = f->k.heads.N;
                  const auto [seqlens, total] = shared_lengths(f->q.heads.x, f->k.past);
                  std::vector<std::string> gqa_inputs = {inputs[0], three_d(f->k, kv_heads), batch_first(f->v.heads.x), f->k.past, f->v.past, seqlens, total,
                                                         "", "", "", f->mask.bias};
                  while (gqa_inputs.back().empty()) gqa_inputs.pop_back();
                  std::vector<Attribute> gqa_attrs = {build::attr("num_heads", N), build::attr("kv_num_heads", kv_heads),
                                                      build::attr("causal", int64_t(f->mask.causal))};
                  if (std::fabs(f->scale * std::sqrt(double(h)) - 1) > 1e-6) gqa_attrs.push_back(build::attr("scale", float(f->scale)));
                  inputs = std::move(gqa_inputs), attrs = std::move(gqa_attrs), outputs = {y, f->k.present, f->v.present};
                  // ORT's kernel takes a query of several tokens after a non-empty past (a chunked or
                  // subsequent prompt) at batch 1 only; a prefill (no past) and decode steps (one
                  // token) run at any batch. Said unless the batch or the query length is fixed at 1.
                  const std::vector<Dim>* qd = index.dims(f->q.heads.x);
                  auto one = [](const Dim& d) { return d.fixed() && d.value == 1; };
                  if (!qd || qd->size() < 2 || (!one((*qd)[0]) && !one((*qd)[1])))
                    ctx.limits.insert(
                        "GroupQueryAttention (written for grouped-query attention after a past) takes a query of more than one token "
                        "after a non-empty past at batch 1 only, as ONNX Runtime's kernel does: such a step at batch > 1 fails where "
                        "the original computes it (--forms all writes MultiHeadAttention instead)");
                  used.insert({int(f->k.concat - g.nodes.data()), int(f->v.concat - g.nodes.data())});
                } else if (!f->k.repeated.empty()) {
                  if (ctx.cpu_forms && ctx.explain)  // named by the fused node: the Softmax goes
                    ctx.explain->add("attention", scope, "MultiHeadAttention over the repeated keys, not GroupQueryAttention: " + no_gqa);
                  // Grouped-query: the repeated (B, N, T, h) keys and values; everything that
                  // computes them (past Concats read as presents, rotation, repeats) stays, and
                  // what only fed the product goes with dead-code removal.
                  inputs[1] = f->k.repeated, inputs[2] = f->v.repeated;
                  if (f->k.repeated_bsnh) {  // (B, T, N, h) as MultiHeadAttention's 3-D (B, T, N*h)
                    const std::string flat = names.value(scope + "/kv_flat_shape");
                    new_inits.push_back({flat, Tensor::from_vector<int64_t>({3}, {0, 0, N * f->q.heads.h})});
                    for (int i : {1, 2}) {
                      const std::string v = names.value(inputs[size_t(i)] + "_3d");
                      nodes.push_back(make_node("Reshape", "", {inputs[size_t(i)], flat}, {v}, {}, names.node(scope + (i == 1 ? "/KeysFlat" : "/ValuesFlat"))));
                      inputs[size_t(i)] = v;
                    }
                  }
                  for (int i : f->kv_nodes) used.erase(i);
                } else {
                  inputs[1] = three_d(f->k, f->k.heads.N), inputs[2] = f->v.heads.given ? f->v.heads.x : batch_first(f->v.heads.x);
                  if (!f->k.past.empty()) {
                    if (!graph_input(index, f->k.past) || !graph_input(index, f->v.past)) {
                      refuse(sm, "the past keys and values are not graph inputs (ORT's stacked past is not supported here)");
                      continue;
                    }
                    inputs[6] = f->k.past, inputs[7] = f->v.past;
                    outputs = {y, f->k.present, f->v.present};
                  } else if (presents) {
                    outputs = {y, present_k, present_v};
                    for (const std::string& present : {present_k, present_v}) {
                      kept.insert(present);
                      used.insert(index.producer(present));
                    }
                  }
                }
                nodes.push_back(make_node(gqa ? "GroupQueryAttention" : "MultiHeadAttention", "com.microsoft", inputs, outputs, attrs, scope));
              }
              if (f->mask.bias_one_row) {
                Node& fused = *std::find_if(nodes.rbegin(), nodes.rend(), [](const Node& n) { return n.domain == "com.microsoft" && n.op_type.find("Attention") != std::string::npos; });
                // attention_bias has a row per query: (.., 1, T) expanded to (.., S, T), once per bias.
                if (!shared_rows.count(f->mask.bias)) {
                  SharedBuilder b(names, shared_nodes, "/AttentionBiasRows");
                  const std::string one = b.value("one"), ones = b.value("ones");
                  new_inits.push_back({one, Tensor::from_vector<int64_t>({1}, {1})});
                  new_inits.push_back({ones, Tensor::from_vector<int64_t>({2}, {1, 1})});
                  const std::string S = b.add("Shape", {fused.inputs[0]}, "S", {build::attr("start", int64_t(1)), build::attr("end", int64_t(2))});
                  const std::string rows = b.add("Concat", {ones, S, one}, "rows", {build::attr("axis", int64_t(0))});
                  shared_rows[f->mask.bias] = b.add("Expand", {f->mask.bias, rows}, "bias");
                }
                fused.inputs[fused.op_type == "GroupQueryAttention" ? 10 : 5] = shared_rows.at(f->mask.bias);
              }
              if (f->output_seq_first) {
                const std::string sbd = names.value(scope + "/output_sbd");
                nodes.push_back(make_node("Transpose", "", {y}, {sbd}, {build::attr("perm", std::vector<int64_t>{1, 0, 2})}, names.node(scope + "/SequenceFirst")));
                nodes.push_back(make_node("Reshape", "", {sbd, merge.inputs[1]}, {merge.outputs[0]}, {}, names.node(scope + "/Merge")));
              }
              for (const Source* s : {&f->q, &f->k, &f->v})
                if (s->concat && used.count(int(s->concat - g.nodes.data()))) kept.insert(s->present);
              kept.insert(merge.outputs[0]);
              absorb_dead_readers(index, used, kept);
              keep_what_new_nodes_read(index, nodes, used);
              // A value the fused node writes (a present) whose old producer has to stay: the
              // mask reads the attention's own intermediates (MixFormer's causal mask sized by the
              // scores' shape). Both would write it.
              std::string twice;
              for (const Node& n : nodes)
                for (const std::string& out : n.outputs)
                  if (const int p = index.producer(out); twice.empty() && p >= 0 && !used.count(p))
                    twice = fmt::format("'{}' stays (the mask is computed from the attention's own values) and writes '{}'", g.nodes[size_t(p)].name, out);
              if (!twice.empty()) {
                refuse(sm, twice);
                continue;
              }
              if (const std::string e = escaping(index, used, kept); !e.empty()) {
                refuse(sm, "an intermediate is read elsewhere: " + e);
                continue;
              }
              Provenance p;
              for (int i : used) {
                drop[size_t(i)] = true, claimed.insert(i);
                // the readers of sizes are bookkeeping, not the attention a user looks for
                if (!std::set<std::string>{"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Constant"}.count(g.nodes[size_t(i)].op_type))
                  p.replaced.push_back(g.nodes[size_t(i)].name);
              }
              for (const Node& n : nodes) p.created.push_back(n.name);
              provenance.push_back(std::move(p));
              insert_at[f->output] = std::move(nodes);
              ++fused;
            }
            if (ctx.explain) ctx.explain->count("attention", candidates, fused);
            if (!fused) return 0;
            record_provenance(m, provenance);
            if (!shared_nodes.empty()) {
              auto& first = insert_at.begin()->second;
              first.insert(first.begin(), shared_nodes.begin(), shared_nodes.end());
            }
            for (Initializer& i : new_inits) g.initializers.push_back(std::move(i));
            std::vector<Node> out;
            for (int i = 0; i < int(g.nodes.size()); ++i) {
              if (auto it = insert_at.find(i); it != insert_at.end())
                for (Node& n : it->second) out.push_back(std::move(n));
              if (!drop[size_t(i)]) out.push_back(std::move(g.nodes[size_t(i)]));
            }
            g.nodes = std::move(out);
            // Size computations of removed values (a Shape of K) that fed only the removed
            // nodes are dead now; anything else reading a removed value would be a defect here.
            remove_dead(g);
            topological_sort(g);
            if (const std::string missing = undefined_read(g); !missing.empty())
              fail_runtime(fmt::format("optimize: the attention pass left {}; please report this model", missing));
            return fused;
          }};
}

}  // namespace refeval::optimize
