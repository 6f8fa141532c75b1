#include "model_type.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "passes/attention_reading.h"

namespace refeval::optimize {
namespace {

// The token states an attention's projection reads: the x of x W (+ b), through a packed
// projection's Split or Slice; `v` itself when it is not a projection.
std::string projected_from(const GraphIndex& g, std::string v) {
  for (int steps = 0; steps < 8; ++steps) {
    const Node* n = g.producer_node(v);
    if (!n || n->inputs.empty()) return v;
    if (n->op_type == "MatMul") return n->inputs[0];
    // parts, views and rotations of heads in (B, S, N, h) (flattened around RotaryEmbedding)
    if (n->op_type == "Split" || n->op_type == "Slice" || n->op_type == "Reshape" || n->op_type == "RotaryEmbedding") v = n->inputs[0];
    else if (n->op_type == "Add" && n->inputs.size() == 2) v = g.constant(n->inputs[0]) ? n->inputs[1] : n->inputs[0];
    else if (n->op_type == "Transpose") v = n->inputs[0];
    else if ((n->op_type == "Mul" || n->op_type == "Div") && n->inputs.size() == 2 && (g.scalar(n->inputs[0]) || g.scalar(n->inputs[1])))
      v = g.scalar(n->inputs[0]) ? n->inputs[1] : n->inputs[0];
    else return v;
  }
  return v;
}

bool feeds_from_input(const GraphIndex& g, const std::string& v, size_t rank) {
  for (const ValueInfo* in : g.graph().feed_inputs())
    if (in->name == v) {
      const std::vector<Dim>* d = g.dims(v);
      return d && d->size() == rank;
    }
  return false;
}

// A mean of squares not centred first (T5, Llama): ReduceMean(Pow(x, 2)) or ReduceMean(x * x)
// with x no difference from a mean; or the fused forms.
bool has_rms_norm(const GraphIndex& g) {
  for (const Node& n : g.graph().nodes) {
    if (n.op_type == "SimplifiedLayerNormalization" || n.op_type == "SkipSimplifiedLayerNormalization" || n.op_type == "RMSNormalization") return true;
    if (n.op_type != "ReduceMean" || n.inputs.empty()) continue;
    const Node* sq = g.producer_node(n.inputs[0]);
    if (!sq || sq->inputs.size() != 2) continue;
    const bool square = (sq->op_type == "Pow" && g.scalar(sq->inputs[1]) == 2.0) || (sq->op_type == "Mul" && sq->inputs[0] == sq->inputs[1]);
    if (!square) continue;
    const Node* x = g.producer_node(sq->inputs[0]);
    if (x && x->op_type == "Cast") x = g.producer_node(x->inputs[0]);
    if (!x || x->op_type != "Sub") return true;
  }
  return false;
}

// CLIP's activation: x * Sigmoid(1.702 x), or its fused form.
bool has_quick_gelu(const GraphIndex& g) {
  for (const Node& n : g.graph().nodes) {
    if (n.op_type == "QuickGelu") return true;
    if (n.op_type != "Sigmoid" || n.inputs.empty()) continue;
    const Node* m = g.producer_node(n.inputs[0]);
    if (m && m->op_type == "Mul" && m->inputs.size() == 2)
      for (const std::string& in : m->inputs)
        if (auto c = g.scalar(in); c && std::fabs(*c - 1.702) < 1e-3) return true;
  }
  return false;
}

// A Conv reading a graph input of the given rank: image patches (4-D) or audio frames (3-D).
std::string conv_over_input(const GraphIndex& g, size_t rank) {
  for (const Node& n : g.graph().nodes)
    if (n.op_type == "Conv" && !n.inputs.empty() && feeds_from_input(g, n.inputs[0], rank)) return n.inputs[0];
  return "";
}

// True when `v` is computed from a Range (a run-time position index) within a few steps.
bool from_range(const GraphIndex& g, const std::string& v, int depth = 6) {
  const Node* n = g.producer_node(v);
  if (!n || depth == 0 || g.constant(v)) return false;
  if (n->op_type == "Range") return true;
  for (const std::string& in : n->inputs)
    if (!in.empty() && !g.constant(in) && from_range(g, in, depth - 1)) return true;
  return false;
}

// A mask computed from a triangle: a Trilu, or a comparison of two run-time positions (query
// index against key index, HF's `arange(T) < (arange(T) + 1).view(T, 1)`), upstream of `v`. A
// comparison with a constant (T5's relative-position buckets) is not one.
bool triangular(const GraphIndex& g, const std::string& v) {
  std::vector<std::string> todo = {v};
  std::set<std::string> seen;
  while (!todo.empty() && seen.size() < 96) {
    const std::string cur = todo.back();
    todo.pop_back();
    if (cur.empty() || !seen.insert(cur).second) continue;
    const Node* n = g.producer_node(cur);
    if (!n) continue;
    if (n->op_type == "Trilu") return true;
    static const std::set<std::string> compare = {"Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    if (compare.count(n->op_type) && n->inputs.size() == 2 && from_range(g, n->inputs[0]) && from_range(g, n->inputs[1])) return true;
    for (const std::string& in : n->inputs) todo.push_back(in);
  }
  return false;
}

// The states an attention's projections read (a norm's output) also read by another product: one
// norm feeding attention and MLP side by side (Phi's and GPT-J's parallel block).
bool norm_feeds_mlp_too(const GraphIndex& g, const std::string& x, const std::set<std::string>& attention_inputs) {
  for (int c : g.consumers(x)) {
    const Node& n = g.graph().nodes[size_t(c)];
    if (n.op_type == "MatMul" && !n.inputs.empty() && n.inputs[0] == x && !attention_inputs.count(n.outputs[0])) return true;
  }
  return false;
}

std::string layers(int n) { return fmt::format("{} layer{}", n, n == 1 ? "" : "s"); }

}  // namespace

const std::vector<std::pair<std::string, std::string>>& model_types() {
  static const std::vector<std::pair<std::string, std::string>> types = {
      {"bert", "encoder"}, {"vit", "vision"},    {"clip", "vision"}, {"t5", "encoder-decoder"},
      {"bart", "encoder-decoder"}, {"whisper", "encoder-decoder"}, {"gpt2", "decoder"}, {"llama", "decoder"},
      {"phi", "decoder"},  {"gpt_neox", "decoder"}};
  return types;
}

ModelKind detect_model_kind(const GraphIndex& g) {
  int self = 0, cross = 0, causal = 0, computed = 0, read = 0, softmaxes = 0, cached = 0, rotary = 0, grouped = 0, triangle = 0;
  int parallel = 0;  // layers whose attention input also feeds another product (one norm, attention and MLP side by side)
  int unbiased_keys = 0;  // attentions whose q projection has a bias and k's none (Whisper's k_proj)
  std::set<std::string> padding;
  for (int i = 0; i < int(g.graph().nodes.size()); ++i) {
    const Node& n = g.graph().nodes[size_t(i)];
    if (n.op_type != "Softmax" || !n.domain.empty()) continue;
    ++softmaxes;
    std::string why;
    const auto f = attention::read(g, i, why);
    if (!f) continue;
    ++read;
    const bool is_cross = projected_from(g, f->q.heads.x) != projected_from(g, f->k.heads.x);
    (is_cross ? cross : self) += 1;
    causal += f->mask.causal;
    // What only decoders' self-attention has, where the causal mask is a computed bias.
    cached += !is_cross && !f->k.past.empty();
    auto op_of = [&](const std::string& v) { const Node* p = g.producer_node(v); return p ? p->op_type : std::string(); };
    rotary += !is_cross && (f->q.rotary_node || f->k.rotary_node || op_of(f->q.heads.x) == "RotaryEmbedding");
    grouped += !is_cross && !f->k.repeated.empty();
    std::vector<std::string> computed_masks = f->mask.more_biases;
    computed_masks.push_back(!f->mask.bias.empty() ? f->mask.bias : f->mask.where_cond);
    triangle += !is_cross && !f->mask.causal &&
                std::any_of(computed_masks.begin(), computed_masks.end(), [&](const std::string& m) { return !m.empty() && triangular(g, m); });
    computed += !is_cross && !f->mask.causal && (!f->mask.bias.empty() || !f->mask.where_cond.empty());
    if (!f->mask.padding_input.empty()) padding.insert(f->mask.padding_input);
    unbiased_keys += !f->k.heads.given && op_of(f->q.heads.x) == "Add" && op_of(f->k.heads.x) == "MatMul";
    if (!is_cross) {
      std::set<std::string> projections;  // what the q, k and v projections compute
      for (const std::string* x : {&f->q.heads.x, &f->k.heads.x, &f->v.heads.x})
        for (std::string v = *x; const Node* p = g.producer_node(v);) {
          projections.insert(v);
          if (p->op_type == "MatMul" || p->inputs.empty()) break;
          v = p->op_type == "Add" && p->inputs.size() == 2 && g.constant(p->inputs[0]) ? p->inputs[1] : p->inputs[0];
          if (projections.size() > 16) break;
        }
      parallel += norm_feeds_mlp_too(g, projected_from(g, f->q.heads.x), projections);
    }
  }
  // Fused already (an ORT-optimized model): the operators say it.
  int fused_attention = 0, unidirectional = 0;
  for (const Node& n : g.graph().nodes)
    if (n.domain == "com.microsoft" && (n.op_type == "Attention" || n.op_type == "MultiHeadAttention" || n.op_type == "GroupQueryAttention")) {
      ++fused_attention;
      for (const Attribute& a : n.attributes) unidirectional += a.name == "unidirectional" && a.i != 0;
      unidirectional += n.op_type == "GroupQueryAttention";
    }
  const bool rms = has_rms_norm(g);
  const std::string image = conv_over_input(g, 4), audio = conv_over_input(g, 3);
  std::string mask_note;
  if (!padding.empty()) mask_note = fmt::format(", key padding from '{}'", *padding.begin());

  ModelKind k;
  if (!image.empty() && read + fused_attention > 0) {
    k.family = "vision";
    k.type = has_quick_gelu(g) ? "clip" : "vit";
    k.reason = fmt::format("patch embedding (Conv over '{}'), bidirectional attention in {}{}", image, layers(read + fused_attention),
                           k.type == "clip" ? ", QuickGelu (x * sigmoid(1.702 x))" : "");
  } else if (cross > 0) {
    k.family = "encoder-decoder";
    // A Whisper decoder alone shows no audio Conv; its k projections have no bias (its q and v do).
    k.type = !audio.empty() || unbiased_keys > 0 ? "whisper" : rms ? "t5" : "bart";
    const std::string self_kind = causal ? "causal " : computed ? "" : "bidirectional ";
    k.reason = fmt::format("cross-attention over other states in {}, {}self-attention in {}{}{}{}{}", layers(cross), self_kind, layers(self),
                           computed ? " (its mask a run-time value)" : "", rms ? ", norms without the mean" : "",
                           audio.empty() && unbiased_keys ? ", key projections without bias (Whisper's)" : "", mask_note);
  } else if (causal > 0 || cached > 0 || rotary > 0 || grouped > 0 || triangle > 0 || (read == 0 && unidirectional > 0)) {
    k.family = "decoder";
    // Rotary positions with LayerNorms (the mean subtracted) are Phi's (one norm feeding attention
    // and MLP side by side) or GPT-NeoX's, not Llama's; CLIP's text tower is a causal encoder
    // with QuickGelu.
    k.type = rms ? "llama" : rotary ? (parallel ? "phi" : "gpt_neox") : has_quick_gelu(g) ? "clip" : "gpt2";
    std::vector<std::string> traits;
    if (cached) traits.push_back("a KV cache");
    if (rotary) traits.push_back("rotary positions");
    if (grouped) traits.push_back("grouped-query heads");
    if (triangle) traits.push_back("a mask computed from a triangle");
    if (parallel) traits.push_back("attention and MLP side by side from one norm");
    k.reason = fmt::format("{}self-attention in {}{}{}{}{}", causal ? "causal " : "decoder ", layers(std::max({causal, cached, rotary, triangle, unidirectional})),
                           traits.empty() ? "" : fmt::format(" with {}", fmt::join(traits, ", ")), rms ? ", norms without the mean" : "",
                           k.type == "clip" ? ", QuickGelu (x * sigmoid(1.702 x))" : "", mask_note);
  } else if (read > 0 || fused_attention > 0) {
    k.family = "encoder";
    k.type = !audio.empty() ? "whisper" : rms ? "t5" : "bert";
    k.reason = fmt::format("{}self-attention in {}{}{}{}", computed ? "" : "bidirectional ", layers(read + fused_attention),
                           computed ? fmt::format(" ({} with a run-time mask or bias, not read as causal)", computed) : "",
                           rms ? ", norms without the mean" : "", mask_note);
  } else if (softmaxes > 0) {
    k.reason = fmt::format("{} Softmax node{}, none read as attention", softmaxes, softmaxes == 1 ? "" : "s");
  }
  return k;
}

std::string type_mismatch(const std::string& given, const ModelKind& found) {
  if (given.empty() || found.type.empty() || given == found.type) return "";
  std::string family;
  for (const auto& [type, fam] : model_types())
    if (type == given) family = fam;
  // An encoder-decoder's type names both halves: its encoder alone fits (BART's reads as BERT's).
  const bool fits = family == found.family || (family == "encoder-decoder" && found.family == "encoder") ||
                    (given == "bert" && found.type == "t5") || (given == "vit" && found.type == "clip") || (given == "clip" && found.type == "vit");
  if (fits) return "";
  return fmt::format("--model-type {}, but the graph shows {} ({}: {}); every fusion the graph allows is applied", given, found.type, found.family,
                     found.reason);
}

}  // namespace refeval::optimize
