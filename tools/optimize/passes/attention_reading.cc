// Reading attention by its meaning: attention_reading.h.
#include "attention_reading.h"

#include <cmath>
#include <set>
#include <fmt/format.h>
#include "refeval/builder.h"
#include "refeval/error.h"
#include "refeval/compute_vector.h"
#include "../symbolic_shapes.h"

namespace refeval::optimize::attention {
namespace {

constexpr double kMaskFloor = -1e4;  // a filler or mask value this negative hides a score

// The stacking axis of ORT's (2, B, N, P, h) past and present: 0, or -5 of their rank 5.
bool stack_axis(int64_t axis) { return axis == 0 || axis == -5; }

// The graph around one Softmax, read as attention; every node read is recorded in `used`.
class AttentionReader {
 public:
  AttentionReader(const GraphIndex& g) : g_(g) {}

  const Node* producer(const std::string& v, const char* op) const {
    const int p = g_.producer(v);
    if (p < 0 || g_.graph().nodes[size_t(p)].op_type != op || !g_.graph().nodes[size_t(p)].domain.empty()) return nullptr;
    return &g_.graph().nodes[size_t(p)];
  }
  void use(const Node* n) { used.insert(int(n - g_.graph().nodes.data())); }
  // The single node reading `v` but for Shape nodes (the size() of a view), if that is all.
  const Node* only_consumer(const std::string& v, const char* op) const {
    const Node* only = nullptr;
    for (int c : g_.consumers(v)) {
      const Node& n = g_.graph().nodes[size_t(c)];
      if (n.op_type == "Shape") continue;
      if (only) return nullptr;
      only = &n;
    }
    if (g_.is_graph_output(v) || !only) return nullptr;
    return only->op_type == op ? only : nullptr;
  }

  std::set<int> used;

 protected:
  const GraphIndex& g_;
};

bool perm_is(const Node& n, std::vector<int64_t> p) { return ints_attr(n, "perm") == p; }

std::optional<int64_t> fixed(const Dim& d) { return d.fixed() ? std::optional<int64_t>(d.value) : std::nullopt; }



class Reader : public AttentionReader {
 public:
  using AttentionReader::AttentionReader;

  // (B, S, N*h) -> Reshape (B, S, N, h) -> Transpose perm; or torch's nn.MultiheadAttention:
  // (S, B, N*h) -> Reshape (S, B*N, h) -> Transpose 1 0 2 (K maybe straight to 1 2 0).
  std::optional<Heads> heads(const std::string& v, bool k_transposed, std::string& why) {
    const Node* t = producer(v, "Transpose");
    if (!t && !k_transposed && given_heads(v)) return given_heads(v);
    if (!t) return why = fmt::format("'{}' is not the Transpose of a head split", v), std::nullopt;
    if (perm_is(*t, {1, 0, 2}) || perm_is(*t, {1, 2, 0})) return seq_first_heads(*t, k_transposed, why);
    if (perm_is(*t, {1, 2, 0, 3}) && !k_transposed) return seq_first_4d_heads(*t, why);
    const bool plain = perm_is(*t, {0, 2, 1, 3}), kt = perm_is(*t, {0, 2, 3, 1});
    if (!(plain && !k_transposed) && !(kt && k_transposed)) return why = fmt::format("'{}' has perm {} for a head split", t->name, fmt::join(ints_attr(*t, "perm"), " ")), std::nullopt;
    std::string split = t->inputs.empty() ? "" : t->inputs[0];
    // A scale between the split and the transpose (Q or K only: V's would scale the context).
    if (const Node* sc = split.empty() ? nullptr : scale_of(split); sc && may_scale) {
      use(sc);
      head_scale *= scale_factor(*sc);
      split = sc->inputs[g_.scalar(sc->inputs[1]) ? 0 : 1];
    }
    const Node* r = split.empty() ? nullptr : producer(split, "Reshape");
    if (!r || r->inputs.size() != 2) return why = fmt::format("'{}' does not transpose a Reshape into heads", t->name), std::nullopt;
    const std::vector<Dim>* x = g_.dims(r->inputs[0]);
    const auto target = g_.shape_values(r->inputs[1]);
    if (!x || x->size() != 3 || !target || target->size() != 4)
      return why = fmt::format("the head split '{}' has unknown shapes", r->name), std::nullopt;
    // view(B, S, -1, h) or view(B, S, N, -1): one -1 among the head sizes is D / the other.
    const auto ints = g_.ints(r->inputs[1]);
    auto size_at = [&](size_t i) { return ints && ints->size() == 4 ? std::optional<int64_t>((*ints)[i]) : fixed((*target)[i]); };
    auto N = size_at(2), h = size_at(3);
    const auto D = fixed((*x)[2]);
    if (D && N == -1 && h && *h > 0 && *D % *h == 0) N = *D / *h;
    if (D && h == -1 && N && *N > 0 && *D % *N == 0) h = *D / *N;
    if (!N || !h || !D || *N <= 0 || *h <= 0 || *N * *h != *D) return why = fmt::format("the head split '{}' is not (B, S, N, h) of a (B, S, N*h) input", r->name), std::nullopt;
    const std::vector<Dim>* rd = g_.dims(r->outputs[0]);
    auto keeps = [&](size_t i) {
      return same_dim((*target)[i], (*x)[i]) || (*target)[i].value == 0 || (rd && rd->size() == 4 && dims_equal((*rd)[i], (*x)[i], g_.inference()));
    };
    if (!keeps(0) || !keeps(1)) return why = fmt::format("the head split '{}' changes the batch or sequence dims", r->name), std::nullopt;
    use(t), use(r);
    return Heads{r->inputs[0], *N, *h, k_transposed};
  }

  // A 4-D graph input (B, N, T, h) with N and h known: keys or values already in heads.
  std::optional<Heads> given_heads(const std::string& v) const {
    const std::vector<Dim>* d = g_.dims(v);
    bool input = false;
    for (const ValueInfo* in : g_.graph().feed_inputs()) input = input || in->name == v;
    if (!input || !d || d->size() != 4 || !(*d)[1].fixed() || !(*d)[3].fixed() || (*d)[1].value <= 0 || (*d)[3].value <= 0) return std::nullopt;
    Heads h{v, (*d)[1].value, (*d)[3].value};
    h.given = true;
    return h;
  }

  // A positive scalar Mul or Div read once: its node (its factor is scale_factor()), else null.
  const Node* scale_of(const std::string& v) const {
    const int p = g_.producer(v);
    if (p < 0 || g_.consumers(v).size() != 1 || g_.is_graph_output(v)) return nullptr;
    const Node& n = g_.graph().nodes[size_t(p)];
    if ((n.op_type != "Mul" && n.op_type != "Div") || n.inputs.size() != 2 || !n.domain.empty()) return nullptr;
    const auto c = g_.scalar(n.inputs[1]) ? g_.scalar(n.inputs[1]) : n.op_type == "Mul" ? g_.scalar(n.inputs[0]) : std::nullopt;
    if (!c || !(*c > 0)) return nullptr;
    return &n;
  }
  double scale_factor(const Node& n) const {
    const double c = g_.scalar(n.inputs[1]) ? *g_.scalar(n.inputs[1]) : *g_.scalar(n.inputs[0]);
    return n.op_type == "Div" ? 1 / c : c;
  }
  bool may_scale = false;      // set while reading Q or K
  double head_scale = 1;       // the scales found between head splits and transposes

  // (S, B, N*h) viewed as (S, B*N, h): with S kept and the last size h dividing N*h, the middle
  // size is B*N whatever it is written as. Transposed 1 0 2 for Q and V, 1 2 0 for K^T.
  std::optional<Heads> seq_first_heads(const Node& t, bool k_transposed, std::string& why) {
    if (perm_is(t, {1, 2, 0}) != k_transposed) return why = fmt::format("'{}' has perm {} for a head split", t.name, fmt::join(ints_attr(t, "perm"), " ")), std::nullopt;
    const Node* r = t.inputs.empty() ? nullptr : producer(t.inputs[0], "Reshape");
    if (!r || r->inputs.size() != 2) return why = fmt::format("'{}' does not transpose a Reshape into heads", t.name), std::nullopt;
    const std::vector<Dim>* x = g_.dims(r->inputs[0]);
    const std::vector<Dim>* rd = g_.dims(r->outputs[0]);
    if (!x || x->size() != 3 || !rd || rd->size() != 3 || !(*x)[2].fixed() || !(*rd)[2].fixed())
      return why = fmt::format("the head split '{}' has unknown shapes", r->name), std::nullopt;
    const int64_t D = (*x)[2].value, h = (*rd)[2].value;
    if (h <= 0 || D % h != 0 || !dims_equal((*rd)[0], (*x)[0], g_.inference()))
      return why = fmt::format("the head split '{}' is not (S, B*N, h) of an (S, B, N*h) input", r->name), std::nullopt;
    use(&t), use(r);
    Heads hd{r->inputs[0], D / h, h, k_transposed};
    hd.seq_first = true;
    return hd;
  }

  // (S, B, N*h) -> Reshape (S, B, N, h) -> Transpose 1 2 0 3: 4-D heads (B, N, S, h) of a
  // sequence-first value (fairseq's `view(T, B, H, h).permute(1, 2, 0, 3)`).
  std::optional<Heads> seq_first_4d_heads(const Node& t, std::string& why) {
    const Node* r = t.inputs.empty() ? nullptr : producer(t.inputs[0], "Reshape");
    if (!r || r->inputs.size() != 2) return why = fmt::format("'{}' does not transpose a Reshape into heads", t.name), std::nullopt;
    const std::vector<Dim>* x = g_.dims(r->inputs[0]);
    const std::vector<Dim>* rd = g_.dims(r->outputs[0]);
    if (!x || x->size() != 3 || !rd || rd->size() != 4 || !(*x)[2].fixed() || !(*rd)[2].fixed() || !(*rd)[3].fixed() ||
        (*rd)[2].value * (*rd)[3].value != (*x)[2].value || !dims_equal((*rd)[0], (*x)[0], g_.inference()) ||
        !dims_equal((*rd)[1], (*x)[1], g_.inference()))
      return why = fmt::format("the head split '{}' is not (S, B, N, h) of an (S, B, N*h) input", r->name), std::nullopt;
    use(&t), use(r);
    Heads hd{r->inputs[0], (*rd)[2].value, (*rd)[3].value};
    hd.seq_first = true;
    return hd;
  }

  // A 3-D (B*N, S, h) view of 4-D heads (B, N, S, h): the 4-D value, or `v` when it is not one.
  std::string four_d(const std::string& v) {
    const Node* r = producer(v, "Reshape");
    if (!r || r->inputs.size() != 2) return v;
    const std::vector<Dim>* in = g_.dims(r->inputs[0]);
    const std::vector<Dim>* out = g_.dims(v);
    if (!in || !out || in->size() != 4 || out->size() != 3 || !(*in)[1].fixed() || !dims_equal((*in)[2], (*out)[1], g_.inference()) ||
        !dims_equal((*in)[3], (*out)[2], g_.inference()))
      return v;
    use(r);
    viewed_heads = (*in)[1].value;
    return r->inputs[0];
  }
  int64_t viewed_heads = 0;

  // ORT's gpt2_helper past: Squeeze(Split(past, axis 0)[i], 0) or Gather(past, i, axis 0) of a
  // (2, B, N, P, h) graph input; the axis may be written -5 and the index -2 or -1 (the stack's
  // rank is checked last, so -5 is the stacking axis only there).
  void stacked(Source& s) {
    const Node* n = g_.producer_node(s.past);
    if (!n) return;
    if (n->op_type == "Gather" && n->inputs.size() == 2 && stack_axis(int_attr(*n, "axis", 0))) {
      const auto i = g_.scalar(n->inputs[1]);
      const Tensor* it = g_.constant(n->inputs[1]);
      const int64_t k = i && it && it->rank() == 0 ? gather_index(*i, 2) : -1;
      if (k >= 0) s.stacked_past = n->inputs[0], s.stacked_index = k, use(n);
    } else if (n->op_type == "Squeeze" && !n->inputs.empty()) {
      const std::vector<int64_t> axes = axes_of(*n, g_).value_or(std::vector<int64_t>{});
      const Node* split = g_.producer_node(n->inputs[0]);
      if (axes.size() != 1 || !stack_axis(axes[0]) || !split) return;
      if (split->op_type != "Split" || split->outputs.size() != 2 || !stack_axis(int_attr(*split, "axis", 0)) || split->inputs.empty())
        return;
      s.stacked_past = split->inputs[0], s.stacked_index = split->outputs[0] == n->inputs[0] ? 0 : 1;
      use(n), use(split);
    }
    if (!s.stacked_past.empty()) {
      const std::vector<Dim>* d = g_.dims(s.stacked_past);
      if (!d || d->size() != 5 || !(*d)[0].fixed() || (*d)[0].value != 2) s.stacked_past.clear(), s.stacked_index = -1;
    }
  }

  // Reshape(Expand(Unsqueeze(kv))) of `v`: the repeat of grouped-query keys or values.
  struct Repeat {
    const Node *reshape, *expand, *unsqueeze;
  };
  std::optional<Repeat> repeat(const std::string& v) const {
    const Node* r = producer(v, "Reshape");
    const Node* e = r && !r->inputs.empty() ? producer(r->inputs[0], "Expand") : nullptr;
    const Node* u = e && !e->inputs.empty() ? producer(e->inputs[0], "Unsqueeze") : nullptr;
    if (!u || u->inputs.empty()) return std::nullopt;
    return Repeat{r, e, u};
  }

  // Q, K or V: heads, maybe rotated, maybe after a past, maybe repeated.
  std::optional<Source> source(const std::string& v, bool k_transposed, std::string& why) {
    Source s;
    std::string cur = v;
    if (k_transposed) {  // K^T: Transpose(K, 0 1 3 2) of a 4-D K (0 2 1 of a 3-D one), or the head split's perm 0 2 3 1
      const Node* t = producer(cur, "Transpose");
      if (t && !t->inputs.empty() && (perm_is(*t, {0, 1, 3, 2}) || perm_is(*t, {0, 2, 1}))) use(t), cur = t->inputs[0], k_transposed = false;
    }
    // A scale on the 4-D keys or queries themselves (MixFormer's einsum(q, k * softmax_scale)).
    if (const Node* sc = may_scale ? scale_of(cur) : nullptr) {
      use(sc);
      head_scale *= scale_factor(*sc);
      cur = sc->inputs[g_.scalar(sc->inputs[1]) ? 0 : 1];
    }
    cur = four_d(cur);
    // Meta's llama repeats keys and values in (B, T, Hkv, h), between transposes of the cache:
    // Transpose(Reshape(Expand(Unsqueeze(Transpose(kv, 0 2 1 3), 3)), (B, T, N, h)), 0 2 1 3)
    // (0 2 3 1 for K^T).
    if (const Node* t = producer(cur, "Transpose"); t && !t->inputs.empty() && perm_is(*t, k_transposed ? std::vector<int64_t>{0, 2, 3, 1}
                                                                                                        : std::vector<int64_t>{0, 2, 1, 3})) {
      const auto rep = repeat(t->inputs[0]);
      const auto axes = rep ? axes_of(*rep->unsqueeze, g_) : std::nullopt;
      const Node* back = axes && (*axes == std::vector<int64_t>{3} || *axes == std::vector<int64_t>{-2}) ? producer(rep->unsqueeze->inputs[0], "Transpose") : nullptr;
      if (back && !back->inputs.empty() && perm_is(*back, {0, 2, 1, 3})) {
        s.repeated = t->inputs[0], s.repeated_bsnh = true;
        use(t), use(rep->reshape), use(rep->expand), use(rep->unsqueeze), use(back);
        cur = back->inputs[0], k_transposed = false;
      }
    }
    if (!k_transposed) {
      // Repeated keys and values (grouped-query): Reshape(Expand(Unsqueeze(kv, 2), ...), (B, N, T, h)).
      if (const auto rep = s.repeated.empty() ? repeat(cur) : std::nullopt) {
        s.repeated = cur;
        use(rep->reshape), use(rep->expand), use(rep->unsqueeze);
        cur = rep->unsqueeze->inputs[0];
      }
      if (const Node* c = producer(cur, "Concat"); c && c->inputs.size() == 2 && !c->outputs.empty()) {
        const int64_t axis = int_attr(*c, "axis", 0);
        if (axis == -1 || axis == 3)
          return why = fmt::format("'{}' concatenates '{}' and '{}' on the last axis (parts of the heads joined back), not a past on the sequence",
                                   c->name, c->inputs[0], c->inputs[1]), std::nullopt;
        if (axis != 2 && axis != -2) return why = fmt::format("'{}' concatenates the past on axis {}, not the sequence", c->name, axis), std::nullopt;
        s.concat = c, s.present = c->outputs[0];
        s.past = c->inputs[0];
        stacked(s);
        cur = c->inputs[1];
        use(c);
      }
    }
    if (const int p = g_.producer(cur); p >= 0 && g_.graph().nodes[size_t(p)].op_type == "RotaryEmbedding" &&
                                        g_.graph().nodes[size_t(p)].domain == "com.microsoft") {
      if (g_.graph().nodes[size_t(p)].inputs.size() < 4) return why = "a RotaryEmbedding with too few inputs", std::nullopt;
      s.rotary_node = &g_.graph().nodes[size_t(p)];
      use(s.rotary_node);
      cur = s.rotary_node->inputs[0];
    }
    auto h = heads(cur, k_transposed, why);
    if (!h) return std::nullopt;
    s.heads = *h;
    return s;
  }
};


// An S x T constant (leading dims 1) that is nonzero exactly where key j <= query i + (T - S), or
// (`hides`) exactly where j > i + (T - S).
bool constant_keeps_causal(const Tensor& c, int64_t S, int64_t T, bool hides) {
  std::vector<double> v;
  if (c.dtype() == DType::Bool) {
    for (int64_t i = 0; i < S * T; ++i) v.push_back(c.data<bool>()[i]);
  } else if (c.dtype() == DType::Float || c.dtype() == DType::UInt8) {
    v = to_doubles(c);
  } else {
    return false;
  }
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < T; ++j)
      if ((v[size_t(i * T + j)] != 0) != ((j <= i + (T - S)) != hides)) return false;
  return true;
}

// `cond` true exactly where key j <= query i + (T - S): the causal mask in the "keep" polarity.
bool is_causal_keep(const GraphIndex& g, std::string cond, const Dim& S, const Dim& T, bool& flip, std::set<int>& used,
                    std::string& buffer, bool& sliced) {
  for (;;) {
    const int p = g.producer(cond);
    if (p < 0) break;
    const Node& n = g.graph().nodes[size_t(p)];
    if (n.op_type == "Cast") cond = n.inputs[0];
    else if (n.op_type == "Not") flip = !flip, cond = n.inputs[0];
    else if (n.op_type == "Equal" && n.inputs.size() == 2 && g.scalar(n.inputs[1]) == 0.0) flip = !flip, cond = n.inputs[0];
    else break;
    used.insert(p);
  }
  // Slices of a constant: rows [r0, r1), columns [c0, c1) of its last two axes.
  std::optional<Dim> r0, r1, c0, c1;
  for (;;) {
    const int p = g.producer(cond);
    if (p < 0 || g.graph().nodes[size_t(p)].op_type != "Slice") break;
    const Node& n = g.graph().nodes[size_t(p)];
    const std::vector<Dim>* in = n.inputs.empty() ? nullptr : g.dims(n.inputs[0]);
    const auto b = in && in->size() >= 2 ? slice_bounds(n, g, in->size()) : std::nullopt;
    if (!b) return false;
    for (size_t i = 0; i < b->axes.size(); ++i) {
      if (b->steps[i] != 1) return false;
      if (b->axes[i] == int64_t(in->size()) - 2 && !r0) r0 = b->starts[i], r1 = b->ends[i];
      else if (b->axes[i] == int64_t(in->size()) - 1 && !c0) c0 = b->starts[i], c1 = b->ends[i];
      else return false;
    }
    used.insert(p);
    cond = n.inputs[0];
  }
  const Tensor* c = g.constant(cond);
  buffer = cond, sliced = r0 || c0;
  // A constant in the hiding polarity (masked_fill of `j > i`) reads as the keeping one negated,
  // as a Not would: the polarity is used up.
  const auto causal = [&](int64_t rows, int64_t cols) {
    if (!constant_keeps_causal(*c, rows, cols, flip)) return false;
    flip = false;
    return true;
  };
  if (c && !r0 && !c0 && S.fixed() && T.fixed() && c->rank() >= 2 && c->dim(c->rank() - 2) == S.value &&
      c->dim(c->rank() - 1) == T.value && c->size() == S.value * T.value)
    return causal(S.value, T.value);  // fixed shapes: the slice was folded
  if (!c || c->rank() < 2 || c->dim(c->rank() - 1) != c->dim(c->rank() - 2) || c->size() != c->dim(c->rank() - 1) * c->dim(c->rank() - 2))
    return false;
  const int64_t W = c->dim(c->rank() - 1);
  // Rows [T - S, T) and columns [0, T): with no past (S = T) the slices may start at 0 for both.
  const Inference* inf = g.inference();
  const bool rows_ok = r0 && r1 && dims_equal(*r1, T, inf) && dims_equal(dim_difference(*r1, *r0, inf).value_or(Dim{}), S, inf);
  const bool cols_ok = c0 && c1 && c0->fixed() && c0->value == 0 && dims_equal(*c1, T, inf);
  if (!rows_ok || !cols_ok) return false;
  return causal(W, W);  // the whole W x W buffer, of which the slices take the rows and columns
}

// True when `cond` is a constant, or Cast / Not / Equal(., 0) / Slice of one.
bool slices_a_constant(const GraphIndex& g, std::string cond) {
  for (int steps = 0; steps < 16; ++steps) {
    if (g.constant(cond)) return true;
    const int p = g.producer(cond);
    if (p < 0) return false;
    const Node& n = g.graph().nodes[size_t(p)];
    if (n.inputs.empty() || !(n.op_type == "Cast" || n.op_type == "Not" || n.op_type == "Equal" || n.op_type == "Slice")) return false;
    cond = n.inputs[0];
  }
  return false;
}

// A key padding mask behind `v`: a value computed from one 2-D (B, T) graph input through
// element-wise steps on constants only (Cast, Not, Equal(., 0), 1 - m, Mul or Div by a constant,
// Where(m, a, b) of constants) and broadcasting views (Unsqueeze, Reshape, Expand). The steps are
// evaluated for a mask element of 0 and of 1, so every form exporters write reads the same way:
// HF's (1 - m) * min, DistilBERT's masked_fill(m == 0, min), torch's masked_fill(key_padding_mask,
// -inf) of zeros. The views must keep the batch first and the keys last ((B, 1, 1, T),
// (B, N, S, T)), or, for 3-D scores, merge (B, N) into B*N in that order.
struct PaddingRead {
  std::string input;
  double if_zero = 0, if_one = 1;  // the value `v` holds where the mask element is 0, and 1
  std::set<int> nodes;
  size_t rank = 0;                 // rank of `v`
  int64_t merged_heads = 0;        // 3-D: the N of the (B, N, ., T) view merged into B*N
};

// A constant scalar, or the fill of a ConstantOfShape (torch's zeros_like of a run-time shape).
std::optional<double> fill_value(const GraphIndex& g, const std::string& v) {
  if (auto c = g.scalar(v)) return c;
  const int p = g.producer(v);
  if (p < 0 || g.graph().nodes[size_t(p)].op_type != "ConstantOfShape") return std::nullopt;
  const Attribute* a = g.graph().nodes[size_t(p)].find_attribute("value");
  if (!a) return 0.0;
  return scalar_of(a->t);
}

std::optional<PaddingRead> read_padding(const GraphIndex& g, const std::string& v) {
  std::vector<const Node*> chain;  // from v back to the input
  std::string cur = v;
  for (int steps = 0; steps < 16; ++steps) {
    if (const ValueInfo* in = [&]() -> const ValueInfo* {
          for (const ValueInfo* i : g.graph().feed_inputs())
            if (i->name == cur) return i;
          return nullptr;
        }()) {
      const std::vector<Dim>* d = g.dims(cur);
      if (!d || d->size() != 2 || chain.empty()) return std::nullopt;
      PaddingRead r;
      r.input = in->name;
      const std::vector<Dim>* vd = g.dims(v);
      if (!vd) return std::nullopt;
      r.rank = vd->size();
      // Forward over the chain for a mask element of 0 and of 1.
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        const Node& n = **it;
        auto apply = [&](double x) -> std::optional<double> {
          const std::string& op = n.op_type;
          if (op == "Cast" || op == "Unsqueeze" || op == "Reshape" || op == "Expand") return x;
          if (op == "Not") return double(x == 0);
          if (op == "Equal") return double(x == *g.scalar(n.inputs[1]));
          if (op == "Sub") return g.scalar(n.inputs[0]) ? *g.scalar(n.inputs[0]) - x : x - *g.scalar(n.inputs[1]);
          if (op == "Mul") return x * (g.scalar(n.inputs[0]) ? *g.scalar(n.inputs[0]) : *g.scalar(n.inputs[1]));
          if (op == "Div") return x / *g.scalar(n.inputs[1]);
          if (op == "Where") return x != 0 ? *fill_value(g, n.inputs[1]) : *fill_value(g, n.inputs[2]);
          return std::nullopt;
        };
        const auto a = apply(r.if_zero), b = apply(r.if_one);
        if (!a || !b) return std::nullopt;
        r.if_zero = *a, r.if_one = *b;
        // Views: the batch stays first and the keys last; a 4-D view merged to 3-D is (B, N, ., T).
        if (n.op_type == "Reshape" || n.op_type == "Unsqueeze" || n.op_type == "Expand") {
          const std::vector<Dim>* od = g.dims(n.outputs[0]);
          const std::vector<Dim>* id = g.dims(n.inputs[0]);
          // An Expand of unchanged rank keeps every axis where it is, whatever its target (a
          // run-time broadcast, maybe to dims no inference follows): the caller checks v's shape.
          if (n.op_type == "Expand" && (!od || (id && id->size() == od->size()))) continue;
          const Inference* inf = g.inference();
          if (!od || !id || od->size() < 2 || !dims_equal(od->back(), (*d)[1], inf)) return std::nullopt;
          if (dims_equal((*od)[0], (*d)[0], inf)) continue;
          const bool merge = n.op_type == "Reshape" && id->size() == 4 && od->size() == 3 && dims_equal((*id)[0], (*d)[0], inf) &&
                             (*id)[1].fixed() && dims_equal((*id)[2], (*od)[1], inf);
          if (!merge) return std::nullopt;
          r.merged_heads = (*id)[1].value;
        }
      }
      for (const Node* n : chain) r.nodes.insert(int(n - g.graph().nodes.data()));
      return r;
    }
    const Node* producer = g.producer_node(cur);
    if (!producer) return std::nullopt;
    const Node& n = *producer;
    if (!n.domain.empty() || n.inputs.empty()) return std::nullopt;
    static const std::set<std::string> views = {"Cast", "Not", "Unsqueeze", "Reshape", "Expand"};
    std::string next;
    if (views.count(n.op_type)) {
      next = n.inputs[0];
    } else if ((n.op_type == "Equal" || n.op_type == "Div") && n.inputs.size() == 2 && g.scalar(n.inputs[1])) {
      next = n.inputs[0];
    } else if ((n.op_type == "Sub" || n.op_type == "Mul") && n.inputs.size() == 2 && (g.scalar(n.inputs[0]).has_value() != g.scalar(n.inputs[1]).has_value())) {
      next = g.scalar(n.inputs[0]) ? n.inputs[1] : n.inputs[0];
    } else if (n.op_type == "Where" && n.inputs.size() == 3 && fill_value(g, n.inputs[1]) && fill_value(g, n.inputs[2])) {
      next = n.inputs[0];
    } else {
      return std::nullopt;
    }
    chain.push_back(&n);
    cur = next;
  }
  return std::nullopt;
}

// An additive padding mask: 0 where the mask keeps a key and a hiding value where it does not.
bool hides_by_adding(const PaddingRead& r) {
  return (r.if_one == 0 && r.if_zero <= kMaskFloor) || (r.if_zero == 0 && r.if_one <= kMaskFloor);
}

// The dims of the MatMul that the scores `v` come from, through the masks and scales.
const std::vector<Dim>* product_dims(const GraphIndex& g, const std::string& v, int depth) {
  const int p = g.producer(v);
  if (p < 0 || depth == 0) return nullptr;
  const Node& n = g.graph().nodes[size_t(p)];
  if (n.op_type == "MatMul") return g.dims(v);
  std::vector<std::string> from;
  if (n.inputs.size() < (n.op_type == "Where" ? 3u : 2u)) return nullptr;
  if (n.op_type == "Div" || n.op_type == "Mul") from = {n.inputs[0]};
  else if (n.op_type == "Where") from = {n.inputs[1], n.inputs[2]};
  else if (n.op_type == "Add") from = {n.inputs[0], n.inputs[1]};
  for (const std::string& x : from)
    if (!g.constant(x))
      if (const std::vector<Dim>* d = product_dims(g, x, depth - 1)) return d;
  return nullptr;
}

// The operand of a scale that is a scalar constant: a Div's divisor (1), either factor of a Mul
// (`scores * 0.125` and `0.125 * scores` export the constant on either side); -1 for anything else.
int scale_operand(const GraphIndex& g, const Node& n) {
  if ((n.op_type != "Mul" && n.op_type != "Div") || n.inputs.size() != 2) return -1;
  if (g.scalar(n.inputs[1])) return 1;
  return n.op_type == "Mul" && g.scalar(n.inputs[0]) ? 0 : -1;
}

}  // namespace

// Reads the attention around Softmax node `si`; nullopt with `why` set when it is not one.
std::optional<Found> read(const GraphIndex& g, int si, std::string& why) {
  const Node& sm = g.graph().nodes[size_t(si)];
  Reader r(g);
  Found f;
  f.softmax = si;
  r.use(&sm);
  if (sm.inputs.empty() || sm.outputs.empty()) return why = "a Softmax without input or output", std::nullopt;
  const std::vector<Dim>* sd = g.dims(sm.inputs[0]);
  const int64_t axis = int_attr(sm, "axis", -1);
  if (!(axis == -1 || (sd && axis == int64_t(sd->size()) - 1))) return why = fmt::format("Softmax over axis {}, not the keys", axis), std::nullopt;
  if (!sd || (sd->size() != 4 && sd->size() != 3)) return why = "the scores' shape is unknown or not (B, N, S, T) or (B*N, S, T)", std::nullopt;
  f.scores_rank = int(sd->size());
  // S and T as the product of Q and K has them (the Softmax's may carry a mask's name for T).
  Dim S = (*sd)[sd->size() - 2], T = (*sd)[sd->size() - 1];
  if (const std::vector<Dim>* pd = product_dims(g, sm.inputs[0], 8); pd && pd->size() >= 3) S = (*pd)[pd->size() - 2], T = (*pd)[pd->size() - 1];
  const Inference* inf = g.inference();
  auto show = [](const Dim& d) { return d.fixed() ? std::to_string(d.value) : d.param.empty() ? std::string("?") : d.param; };
  auto shape_text = [&](const std::vector<Dim>* d) {
    if (!d) return std::string("shape unknown");
    std::vector<std::string> parts;
    for (const Dim& x : *d) parts.push_back(show(x));
    return fmt::format("shape ({})", fmt::join(parts, ", "));
  };
  // A 3-D <-> 4-D view between (B*N, S, x) and (B, N, S, x): N, or 0 when `n` is not one.
  auto heads_view = [&](const Node& n) -> int64_t {
    const std::vector<Dim>* in = g.dims(n.inputs[0]);
    const std::vector<Dim>* out = g.dims(n.outputs[0]);
    if (n.op_type != "Reshape" || !in || !out) return 0;
    const std::vector<Dim>* four = in->size() == 4 && out->size() == 3 ? in : in->size() == 3 && out->size() == 4 ? out : nullptr;
    const std::vector<Dim>* three = four == in ? out : in;
    if (!four || !(*four)[1].fixed() || !dims_equal((*four)[2], (*three)[1], inf) || !dims_equal((*four)[3], (*three)[2], inf)) return 0;
    return (*four)[1].value;
  };
  auto views_heads = [&](int64_t n) {
    if (n <= 0) return false;
    if (f.view_heads && f.view_heads != n) return false;
    f.view_heads = n;
    return true;
  };

  // Output: MatMul(p, v), then the heads merged back to tokens: Transpose 0 2 1 3 -> Reshape
  // (B, S, N*h) of 4-D heads (3-D ones viewed as (B, N, S, h) first), or torch's
  // nn.MultiheadAttention: Transpose 1 0 2 of (B*N, S, h) -> Reshape (S*B, N*h) or (S, B, N*h).
  const Node* pv = r.only_consumer(sm.outputs[0], "MatMul");
  if (!pv || pv->inputs.size() != 2 || pv->inputs[0] != sm.outputs[0]) return why = "the probabilities are not only multiplied by V", std::nullopt;
  std::string context = pv->outputs[0];
  if (f.scores_rank == 3) {
    if (const Node* v4 = r.only_consumer(context, "Reshape"); v4 && v4->inputs.size() == 2 && views_heads(heads_view(*v4))) {
      r.use(v4);
      context = v4->outputs[0];
    } else if (const Node* t = r.only_consumer(context, "Transpose"); t && perm_is(*t, {1, 0, 2})) {
      const Node* y = r.only_consumer(t->outputs[0], "Reshape");
      const std::vector<Dim>* yd = y ? g.dims(y->outputs[0]) : nullptr;
      const std::vector<Dim>* td = g.dims(t->outputs[0]);
      if (!y || y->inputs.size() != 2 || !yd || !td || (yd->size() != 2 && yd->size() != 3) || !yd->back().fixed() || !(*td)[2].fixed() ||
          (yd->size() == 3 && !dims_equal((*yd)[0], (*td)[0], inf)))
        return why = "the (S, B*N, h) context is not merged to (S*B, N*h) or (S, B, N*h)", std::nullopt;
      r.use(pv), r.use(t), r.use(y);
      f.output = int(y - g.graph().nodes.data());
      f.output_seq_first = true;
      f.merged_width = yd->back().value;
    } else {
      return why = "the (B*N, S, h) context is neither viewed as (B, N, S, h) nor transposed to (S, B*N, h)", std::nullopt;
    }
  }
  if (!f.output_seq_first) {
    const Node* t = r.only_consumer(context, "Transpose");
    if (!t || !perm_is(*t, {0, 2, 1, 3})) return why = "the context is not transposed back to (B, S, N, h)", std::nullopt;
    const Node* y = r.only_consumer(t->outputs[0], "Reshape");
    const std::vector<Dim>* td = g.dims(t->outputs[0]);
    const auto target = y ? g.shape_values(y->inputs[1]) : std::nullopt;
    if (!y || y->inputs.size() != 2) return why = "the transposed context is not only reshaped", std::nullopt;
    if (!td || td->size() != 4) return why = fmt::format("the transposed context '{}' has an unknown shape", t->outputs[0]), std::nullopt;
    if (!target || target->size() != 3) return why = fmt::format("the head merge '{}' has an unknown or non-3-D target", y->name), std::nullopt;
    auto keeps = [&](size_t i) { return same_dim((*target)[i], (*td)[i]) || ((*target)[i].fixed() && (*target)[i].value == 0); };
    // The last size N*h, or -1 (view(B, S, -1)) with the heads' sizes known.
    const auto target_ints = g.ints(y->inputs[1]);  // a constant's -1 is not a Dim
    const auto Nh = target_ints && target_ints->size() == 3 ? std::optional<int64_t>((*target_ints)[2]) : fixed((*target)[2]);
    const bool heads_known = (*td)[2].fixed() && (*td)[3].fixed();
    // A 3-D view (B, S, N*h) of the 4-D context: its first two dims may be the product's symbols.
    const std::vector<Dim>* yd = g.dims(y->outputs[0]);
    const bool same_tokens = (keeps(0) && keeps(1)) || (yd && yd->size() == 3 && dims_equal((*yd)[0], (*td)[0], inf) && dims_equal((*yd)[1], (*td)[1], inf));
    if (!same_tokens || !heads_known || !Nh || (*Nh != (*td)[2].value * (*td)[3].value && *Nh != -1))
      return why = fmt::format("the head merge '{}' is not (B, S, N*h)", y->name), std::nullopt;
    r.use(pv), r.use(t), r.use(y);
    f.output = int(y - g.graph().nodes.data());
  }

  // Scores: peel masks, scales and 3-D <-> 4-D views down to MatMul(q, kT).
  std::string cur = sm.inputs[0];
  const Node* qk = nullptr;
  bool k_plain = false;  // the product takes K, not K^T (FusedMatMul with transB)
  int rank = f.scores_rank;  // of `cur`
  for (int steps = 0; steps < 10 && !qk; ++steps) {
    const int p = g.producer(cur);
    if (p < 0) return why = "the scores do not come from a product of Q and K", std::nullopt;
    const Node& n = g.graph().nodes[size_t(p)];
    // Read once, or also by a Shape (DistilBERT expands its mask to the scores' shape).
    int readers = 0;
    for (int c : g.consumers(cur)) readers += g.graph().nodes[size_t(c)].op_type != "Shape";
    if (g.is_graph_output(cur) || readers != 1) return why = fmt::format("the scores '{}' are read elsewhere", cur), std::nullopt;
    if (n.inputs.size() < (n.op_type == "Where" ? 3u : 2u)) return why = fmt::format("'{}' has too few inputs", n.name), std::nullopt;
    if (n.op_type == "MatMul" && n.domain.empty()) {
      qk = &n;
    } else if (n.op_type == "FusedMatMul" && n.domain == "com.microsoft" && int_attr(n, "transA", 0) == 0 && int_attr(n, "transB", 0) == 1 &&
               int_attr(n, "transBatchA", 0) == 0 && int_attr(n, "transBatchB", 0) == 0 && float_attr(n, "alpha", 1.0f) > 0) {
      // Q K^T as the fused-matmul pass writes it (the order of the passes must not matter): K
      // itself, the scale in alpha.
      qk = &n;
      k_plain = true;
      f.scale *= float_attr(n, "alpha", 1.0f);
    } else if (const int side = scale_operand(g, n); side >= 0) {
      const double c = *g.scalar(n.inputs[size_t(side)]);
      if (!(c > 0)) return why = fmt::format("the scale '{}' is not positive", n.name), std::nullopt;
      f.scale *= n.op_type == "Div" ? 1 / c : c;
      cur = n.inputs[size_t(1 - side)];
    } else if (n.op_type == "Reshape" && (f.scores_rank == 3 || rank == 4)) {
      // (B*N, S, T) <-> (B, N, S, T) views of the scores (GPT-NeoX's baddbmm on 3-D heads, viewed
      // as 4-D for the mask and Softmax).
      if (!views_heads(heads_view(n))) return why = fmt::format("'{}' reshapes the scores other than (B*N, S, T) <-> (B, N, S, T)", n.name), std::nullopt;
      rank = int(g.dims(n.inputs[0])->size());
      cur = n.inputs[0];
    } else if (n.op_type == "Where") {
      const auto a = g.scalar(n.inputs[1]), b = g.scalar(n.inputs[2]);
      if (a.has_value() == b.has_value()) return why = fmt::format("the Where '{}' does not choose between the scores and a constant", n.name), std::nullopt;
      const double filler = a ? *a : *b;
      if (!(filler <= kMaskFloor)) return why = fmt::format("the Where '{}' fills {:g}, not a hiding value", n.name, filler), std::nullopt;
      bool flip = a.has_value();  // Where(cond, filler, scores): cond hides
      std::set<int> mask_nodes;  // shared by the layers: left to dead-code removal
      std::string buffer;
      bool sliced = false;
      const std::optional<PaddingRead> pad = read_padding(g, n.inputs[0]);
      // The causal reading flips its own copy of the polarity as it peels Not and Equal(., 0): a
      // condition it does not prove causal (masked_fill(mask == 0, ..) of a padding mask) must
      // reach the padding reading with the Where's own polarity.
      bool causal_flip = flip;
      if (!f.mask.causal && rank == 4 && is_causal_keep(g, n.inputs[0], S, T, causal_flip, mask_nodes, buffer, sliced) && !causal_flip) {
        f.mask.causal = true, f.mask.filler = std::min(f.mask.filler, filler);
        f.mask.causal_buffer = buffer, f.mask.causal_buffer_sliced = sliced;
        f.mask.causal_cond = n.inputs[0], f.mask.causal_keeps = !a.has_value(), f.mask.causal_filler = filler;
      } else if (pad && pad->rank == size_t(rank) && (pad->if_zero != 0) != (pad->if_one != 0) && f.mask.padding_input.empty() &&
                 (rank == 4 || pad->merged_heads > 0) && (!pad->merged_heads || views_heads(pad->merged_heads))) {
        // masked_fill on a key padding mask: hidden where the condition holds (or, flipped, not).
        const bool hides_where_one = (pad->if_one != 0) == flip;
        f.mask.padding_input = pad->input, f.mask.padding_keeps_nonzero = !hides_where_one;
        f.mask.filler = std::min(f.mask.filler, filler);
      } else if (slices_a_constant(g, n.inputs[0])) {
        // A causal look-alike (a buffer off by one, an upper triangle): left as it is, named.
        return why = fmt::format("the mask of '{}' slices a constant buffer that is not causal (key j <= query i + past) over S = {}, T = {}",
                                 n.name, show(S), show(T)), std::nullopt;
      } else if (f.mask.where_cond.empty() && rank == 4) {
        // Another mask (built at run time, not provably causal): it becomes an additive bias
        // Where(cond, 0, filler), which hides the same scores. Its shape must end in (S, T).
        const std::vector<Dim>* cd = g.dims(n.inputs[0]);
        if (!cd || cd->size() < 2 || cd->size() > 4 || !dims_equal((*cd)[cd->size() - 2], S, inf) || !dims_equal((*cd)[cd->size() - 1], T, inf) ||
            (cd->size() == 4 && !((*cd)[1].fixed() && (*cd)[1].value == 1)))
          return why = fmt::format("the mask of '{}' is not causal (key j <= query i + past) and its shape is not (.., 1, S, T) with S = {}, T = {}",
                                   n.name, show(S), show(T)), std::nullopt;
        f.mask.where_cond = n.inputs[0], f.mask.where_keeps = !a.has_value(), f.mask.where_filler = filler;
      } else {
        return why = fmt::format("'{}' is a second Where mask, or a run-time mask of 3-D scores not read as key padding", n.name), std::nullopt;
      }
      // The mask's own nodes are shared by the layers: left to dead-code removal.
      cur = a ? n.inputs[2] : n.inputs[1];
    } else if (n.op_type == "Add") {
      // The operand leading to the product is the scores; the other is the mask.
      std::optional<PaddingRead> pads[2] = {read_padding(g, n.inputs[0]), read_padding(g, n.inputs[1])};
      int side = -1;
      for (int s2 = 0; s2 < 2 && side < 0; ++s2) {
        const int q = g.producer(n.inputs[size_t(s2)]);
        if (q >= 0 && std::set<std::string>{"MatMul", "FusedMatMul", "Div", "Mul", "Where", "Add", "Reshape"}.count(g.graph().nodes[size_t(q)].op_type) &&
            !pads[s2]) {
          const std::vector<Dim>* other = g.dims(n.inputs[size_t(1 - s2)]);
          const std::vector<Dim>* mine = g.dims(n.inputs[size_t(s2)]);
          if (mine && int(mine->size()) == rank && (!other || int(other->size()) <= rank)) side = s2;
        }
      }
      if (side < 0)
        return why = fmt::format("neither operand of '{}' is the scores ({}-D; operands {} and {})", n.name, rank, shape_text(g.dims(n.inputs[0])),
                                 shape_text(g.dims(n.inputs[1]))), std::nullopt;
      const std::string& m = n.inputs[size_t(1 - side)];
      const std::optional<PaddingRead>& pad = pads[1 - side];
      // A term after the first additive one is summed with it into one bias (exact but for the
      // order of the float additions): a key padding value among several is such a term too.
      const bool another = !f.mask.padding_value.empty() || !f.mask.bias.empty();
      if (another && !f.mask.padding_input.empty() && f.mask.padding_value.empty())
        return why = fmt::format("'{}' adds a mask to scores a Where already masks with key padding", n.name), std::nullopt;
      if (pad && pad->rank == size_t(rank) && (rank == 4 || pad->merged_heads > 0) && !another) {
        if (!hides_by_adding(*pad))
          return why = fmt::format("the padding mask of '{}' adds {:g} and {:g}, not 0 and a hiding value (<= {:g})", n.name, pad->if_one,
                                   pad->if_zero, kMaskFloor), std::nullopt;
        if (pad->merged_heads && !views_heads(pad->merged_heads)) return why = fmt::format("the padding mask of '{}' has other heads than the scores", n.name), std::nullopt;
        f.mask.padding_input = pad->input, f.mask.padding_keeps_nonzero = pad->if_one == 0;
        f.mask.filler = std::min(f.mask.filler, std::min(pad->if_one, pad->if_zero));
        f.mask.padding_value = m;
      } else {
        // Any other additive term: a bias (S, T), (1|B, S, T) or (B|1, N|1, S, T) of 4-D scores.
        const std::vector<Dim>* md = g.dims(m);
        // (B|1, N|1, 1, T): a float mask given as a graph input, one row for every query.
        const bool one_row = md && md->size() == 4 && (*md)[2].fixed() && (*md)[2].value == 1 && !(S.fixed() && S.value == 1);
        // On (B*N, S, T) scores only a bias the same for every batch row and head, (S, T) or
        // (1, S, T), keeps its meaning in the fused operator's (B, N, S, T) (fairseq's future mask).
        const bool shared_by_rows = md && (md->size() == 2 || (md->size() == 3 && (*md)[0].fixed() && (*md)[0].value == 1));
        if ((rank != 4 && !(rank == 3 && shared_by_rows)) || !md || md->size() < 2 || md->size() > 4 ||
            !(dims_equal((*md)[md->size() - 2], S, inf) || one_row) || !dims_equal((*md)[md->size() - 1], T, inf))
          return why = fmt::format("the added '{}' ({}) is neither a padding mask nor a bias of shape (S, T), (1|B, S, T), (B|1, N|1, S, T) or "
                                   "(B|1, N|1, 1, T) with S = {}, T = {}", m, shape_text(md), show(S), show(T)), std::nullopt;
        if (md->size() == 4 && !(*md)[1].fixed()) return why = fmt::format("the bias '{}' has an unknown head axis", m), std::nullopt;
        if (md->size() == 4) f.mask.bias_heads = std::max(f.mask.bias_heads, (*md)[1].value);
        if (pad && !hides_by_adding(*pad))
          return why = fmt::format("the padding mask of '{}' adds {:g} and {:g}, not 0 and a hiding value (<= {:g})", n.name, pad->if_one,
                                   pad->if_zero, kMaskFloor), std::nullopt;
        if (!another) {
          f.mask.bias_one_row = one_row;
          f.mask.bias = m;
        } else {
          f.mask.bias_one_row = f.mask.bias_one_row && one_row;  // the sum has a row per query unless every term has one row
          f.mask.more_biases.push_back(m);
        }
      }
      cur = n.inputs[size_t(side)];
    } else {
      return why = fmt::format("'{}' ({}) between the product and the Softmax", n.name, n.op_type), std::nullopt;
    }
    r.use(&n);
  }
  if (!qk) return why = "the scores do not come from a product of Q and K", std::nullopt;
  // Scales on q or k right before the product (k.transpose(-1, -2) * s: the reader's own scale
  // step sees K^T only after its transpose).
  auto peel_scale = [&](std::string v) {
    const Node* producer = g.producer_node(v);
    if (!producer) return v;
    const Node& n = *producer;
    const int side = scale_operand(g, n);
    if (side >= 0 && *g.scalar(n.inputs[size_t(side)]) > 0 && g.consumers(v).size() == 1) {
      const double c = *g.scalar(n.inputs[size_t(side)]);
      f.scale *= n.op_type == "Div" ? 1 / c : c;
      r.use(&n);
      return n.inputs[size_t(1 - side)];
    }
    return v;
  };
  const std::string qv = peel_scale(qk->inputs[0]), kv = peel_scale(qk->inputs[1]);
  r.may_scale = true;
  auto q = r.source(qv, false, why);
  if (!q) return std::nullopt;
  const std::set<int> before_kv = r.used;
  auto k = r.source(kv, !k_plain, why);
  if (!k) return std::nullopt;
  r.may_scale = false;
  auto v = r.source(pv->inputs[1], false, why);
  if (!v) return std::nullopt;
  f.scale *= r.head_scale;
  for (int i : r.used)
    if (!before_kv.count(i)) f.kv_nodes.insert(i);
  if (!q->past.empty() || !q->repeated.empty()) return why = "Q has a past or repeats", std::nullopt;
  if (k->heads.h != q->heads.h) return why = "Q and K have different head sizes", std::nullopt;
  if (k->repeated.empty() != v->repeated.empty() || k->repeated_bsnh != v->repeated_bsnh || k->past.empty() != v->past.empty())
    return why = "K and V differ in past or repeats", std::nullopt;
  if (k->repeated.empty() && (k->heads.N != q->heads.N || v->heads.N != q->heads.N)) return why = "K or V has other heads than Q", std::nullopt;
  for (const Source* s : {&*k, &*v}) {  // repeated: the value fed to attention has Q's heads
    const std::vector<Dim>* d = s->repeated.empty() ? nullptr : g.dims(s->repeated);
    const size_t heads_axis = s->repeated_bsnh ? 2 : 1;
    if (!s->repeated.empty() && (!d || d->size() != 4 || !(*d)[heads_axis].fixed() || (*d)[heads_axis].value != q->heads.N ||
                                 !(*d)[3].fixed() || (*d)[3].value != q->heads.h))
      return why = fmt::format("the repeated keys or values '{}' do not have Q's {} heads of {}", s->repeated, q->heads.N, q->heads.h), std::nullopt;
  }
  if (v->rotary_node) return why = "V is rotated", std::nullopt;
  if (q->heads.given) return why = fmt::format("the queries '{}' are a graph input, not a head split", q->heads.x), std::nullopt;
  if (k->heads.given != v->heads.given || (k->heads.given && (!k->past.empty() || !k->repeated.empty() || k->rotary_node)))
    return why = "K and V are not both given in heads (B, N, T, h) with no past, repeat or rotation", std::nullopt;
  // A scale on the 3-D projection before the head split (BART's and CLIP's q_proj(x) * scaling).
  for (Source* src : {&*q, &*k}) {
    const Node* producer = g.producer_node(src->heads.x);
    if (!producer) continue;
    const Node& n = *producer;
    const int side = scale_operand(g, n);
    if (side < 0 || !(*g.scalar(n.inputs[size_t(side)]) > 0)) continue;
    int readers = 0;
    for (int c : g.consumers(src->heads.x)) readers += g.graph().nodes[size_t(c)].op_type != "Shape";
    if (readers != 1 || g.is_graph_output(src->heads.x)) continue;
    const double c = *g.scalar(n.inputs[size_t(side)]);
    f.scale *= n.op_type == "Div" ? 1 / c : c;
    src->heads.x = n.inputs[size_t(1 - side)];
    r.use(&n);
  }
  const int64_t N = q->heads.N;
  // Keys and values given in heads (B, N, T, h) are batch-first whatever the query's layout.
  auto other_layout = [&](const Source& s) { return !s.heads.given && s.heads.seq_first != q->heads.seq_first; };
  if (other_layout(*k) || other_layout(*v))
    return why = "Q, K and V are not all split the same way (batch-first and sequence-first)", std::nullopt;
  if ((f.view_heads && f.view_heads != N) || (r.viewed_heads && r.viewed_heads != N))
    return why = fmt::format("the scores or heads are viewed with {} heads, the projections split {}", std::max(f.view_heads, r.viewed_heads), N), std::nullopt;
  if (f.mask.bias_heads != 1 && f.mask.bias_heads != N) return why = fmt::format("the bias '{}' has {} heads, not 1 or {}", f.mask.bias, f.mask.bias_heads, N), std::nullopt;
  if (f.output_seq_first && f.merged_width != N * q->heads.h) return why = "the context is not merged to N*h", std::nullopt;
  f.q = *q, f.k = *k, f.v = *v;
  r.use(qk);
  f.used.insert(r.used.begin(), r.used.end());
  return f;
}

// Q, K and V as the three parts [0, D), [D, 2D), [2D, 3D) of one value's last axis: a Split,
// or three Slices (torch's chunk(3) with bounds computed from the shape); the value and the nodes.
std::optional<std::pair<std::string, std::vector<int>>> thirds(const GraphIndex& g, const Found& f) {
  const int64_t D = f.q.heads.N * f.q.heads.h;
  const std::string* parts[3] = {&f.q.heads.x, &f.k.heads.x, &f.v.heads.x};
  const int sp = g.producer(f.q.heads.x);
  if (sp < 0) return std::nullopt;
  const Node& split = g.graph().nodes[size_t(sp)];
  if (split.op_type == "Split") {
    if (g.producer(f.k.heads.x) != sp || g.producer(f.v.heads.x) != sp || split.outputs.size() != 3 || split.outputs[0] != f.q.heads.x ||
        split.outputs[1] != f.k.heads.x || split.outputs[2] != f.v.heads.x)
      return std::nullopt;
    const std::vector<Dim>* d = g.dims(split.inputs[0]);
    const int64_t axis = int_attr(split, "axis", 0);
    if (!d || !(axis == -1 || axis == int64_t(d->size()) - 1)) return std::nullopt;
    std::vector<int64_t> sizes = ints_attr(split, "split");
    if (split.inputs.size() > 1 && !split.inputs[1].empty()) sizes = g.ints(split.inputs[1]).value_or(std::vector<int64_t>{});
    if (!sizes.empty() && sizes != std::vector<int64_t>{D, D, D}) return std::nullopt;
    return std::make_pair(split.inputs[0], std::vector<int>{sp});
  }
  std::string whole;
  std::vector<int> nodes;
  for (int i = 0; i < 3; ++i) {
    const int p = g.producer(*parts[i]);
    if (p < 0) return std::nullopt;
    const Node& s = g.graph().nodes[size_t(p)];
    if (s.op_type != "Slice" || s.inputs.size() < 4 || (i > 0 && s.inputs[0] != whole)) return std::nullopt;
    whole = s.inputs[0];
    const std::vector<Dim>* d = g.dims(whole);
    const auto starts = g.shape_values(s.inputs[1]), ends = g.shape_values(s.inputs[2]);
    const auto axes = g.ints(s.inputs[3]);
    const bool unit = s.inputs.size() < 5 || s.inputs[4].empty() || g.ints(s.inputs[4]) == std::vector<int64_t>{1};
    if (!d || !starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 || axes->size() != 1 || !unit) return std::nullopt;
    if (!((*axes)[0] == -1 || (*axes)[0] == int64_t(d->size()) - 1)) return std::nullopt;
    if (!(*starts)[0].fixed() || !(*ends)[0].fixed() || (*starts)[0].value != i * D || (*ends)[0].value != (i + 1) * D) return std::nullopt;
    nodes.push_back(p);
  }
  const std::vector<Dim>* d = g.dims(whole);
  if (!d || !d->back().fixed() || d->back().value != 3 * D) return std::nullopt;
  return std::make_pair(whole, nodes);
}

std::optional<Packed> packed_qkv(const GraphIndex& g, const Found& f) {
  const int64_t D = f.q.heads.N * f.q.heads.h;
  const auto parts = thirds(g, f);
  if (!parts) return std::nullopt;
  const std::string& whole = parts->first;
  const int ap = g.producer(whole);
  if (ap < 0 || g.graph().nodes[size_t(ap)].op_type != "Add") return std::nullopt;
  const Node& add = g.graph().nodes[size_t(ap)];
  if (add.inputs.size() != 2) return std::nullopt;
  // Read only by the three parts (and Shapes computing their bounds).
  int readers = 0;
  for (int c : g.consumers(whole)) readers += g.graph().nodes[size_t(c)].op_type != "Shape";
  if (readers != int(parts->second.size()) || g.is_graph_output(whole)) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Tensor* b = g.constant(add.inputs[size_t(1 - side)]);
    const int mp = g.producer(add.inputs[size_t(side)]);
    if (!b || b->rank() != 1 || b->dim(0) != 3 * D || mp < 0 || g.graph().nodes[size_t(mp)].op_type != "MatMul") continue;
    const Node& mm = g.graph().nodes[size_t(mp)];
    if (mm.inputs.size() != 2) continue;
    const Tensor* w = g.constant(mm.inputs[1]);
    const std::vector<Dim>* x = g.dims(mm.inputs[0]);
    if (!w || w->rank() != 2 || w->dim(1) != 3 * D || !x || x->size() != 3) continue;
    if (g.consumers(mm.outputs[0]).size() != 1 || g.is_graph_output(mm.outputs[0])) continue;
    Packed p{mm.inputs[0], mm.inputs[1], add.inputs[size_t(1 - side)], parts->second};
    p.nodes.push_back(ap), p.nodes.push_back(mp);
    return p;
  }
  return std::nullopt;
}

std::optional<SeparateQKV> separate_qkv(const GraphIndex& g, const Found& f) {
  SeparateQKV s;
  const std::string* xs[3] = {&f.q.heads.x, &f.k.heads.x, &f.v.heads.x};
  for (int i = 0; i < 3; ++i) {
    std::string v = *xs[i];
    // Read only by its head split (and the Shape of a view).
    int readers = 0;
    for (int c : g.consumers(v)) readers += g.graph().nodes[size_t(c)].op_type != "Shape";
    if (readers != 1 || g.is_graph_output(v)) return std::nullopt;
    int p = g.producer(v);
    if (p < 0) return std::nullopt;
    if (g.graph().nodes[size_t(p)].op_type == "Add") {
      const Node& add = g.graph().nodes[size_t(p)];
      if (add.inputs.size() != 2) return std::nullopt;
      const int side = g.constant(add.inputs[1]) ? 0 : g.constant(add.inputs[0]) ? 1 : -1;
      if (side < 0 || g.consumers(add.inputs[size_t(side)]).size() != 1) return std::nullopt;
      s.b[i] = add.inputs[size_t(1 - side)];
      s.nodes.insert(p);
      v = add.inputs[size_t(side)];
      p = g.producer(v);
    }
    if (p < 0 || g.graph().nodes[size_t(p)].op_type != "MatMul" || !g.graph().nodes[size_t(p)].domain.empty()) return std::nullopt;
    const Node& mm = g.graph().nodes[size_t(p)];
    const Tensor* w = mm.inputs.size() == 2 ? g.constant(mm.inputs[1]) : nullptr;
    if (!w || w->rank() != 2 || w->dim(1) != f.q.heads.N * f.q.heads.h) return std::nullopt;
    if (!s.b[i].empty()) {
      const Tensor* b = g.constant(s.b[i]);
      if (!b || b->rank() != 1 || b->dim(0) != w->dim(1) || b->dtype() != w->dtype()) return std::nullopt;
    }
    if (i == 0) s.x = mm.inputs[0];
    else if (mm.inputs[0] != s.x || w->dim(0) != g.constant(s.w[0])->dim(0) || w->dtype() != g.constant(s.w[0])->dtype()) return std::nullopt;
    s.w[i] = mm.inputs[1];
    s.nodes.insert(p);
  }
  return s;
}

std::optional<StackedPresent> stacked_present(const GraphIndex& g, const Found& f) {
  if (f.k.stacked_past.empty() || f.k.stacked_past != f.v.stacked_past || f.k.stacked_index != 0 || f.v.stacked_index != 1)
    return std::nullopt;
  auto unsqueeze0 = [&](const std::string& v) -> int {
    for (int c : g.consumers(v)) {
      const Node& n = g.graph().nodes[size_t(c)];
      const std::vector<int64_t> axes = axes_of(n, g).value_or(std::vector<int64_t>{});
      // (the keys and values are rank 4: their unsqueezed form is the stack's rank 5)
      if (n.op_type == "Unsqueeze" && axes.size() == 1 && stack_axis(axes[0])) return c;
    }
    return -1;
  };
  const int uk = unsqueeze0(f.k.present), uv = unsqueeze0(f.v.present);
  if (uk < 0 || uv < 0) return std::nullopt;
  const std::vector<int>& readers = g.consumers(g.graph().nodes[size_t(uk)].outputs[0]);
  if (readers.size() != 1) return std::nullopt;
  const Node& stack = g.graph().nodes[size_t(readers[0])];
  if (stack.op_type != "Concat" || !stack_axis(int_attr(stack, "axis", -1)) || stack.inputs.size() != 2 ||
      stack.inputs[0] != g.graph().nodes[size_t(uk)].outputs[0] || stack.inputs[1] != g.graph().nodes[size_t(uv)].outputs[0])
    return std::nullopt;
  return StackedPresent{stack.outputs[0], uk, uv, readers[0]};
}

}  // namespace refeval::optimize::attention
