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
#include "refeval/builder.h"
#include "refeval/error.h"
#include "refeval/compute_vector.h"
#include "../symbolic_shapes.h"

namespace refeval::optimize {
namespace {

constexpr double kMaskFloor = -1e4;  // a filler or mask value this negative hides a score

struct Failure {
  std::string why;
};

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

// The dims of a shape value (constant or propagated), or nullopt.
std::optional<std::vector<Dim>> shape_value(const GraphIndex& g, const std::string& v) {
  if (const auto c = g.ints(v)) {
    std::vector<Dim> d;
    for (int64_t x : *c) d.push_back(Dim{x, ""});
    return d;
  }
  if (const std::vector<Dim>* d = g.shape_data(v)) return *d;
  return std::nullopt;
}

std::optional<int64_t> fixed(const Dim& d) { return d.fixed() ? std::optional<int64_t>(d.value) : std::nullopt; }

struct Heads {
  std::string x;      // the 3-D (B, S, N*h) value split into heads
  int64_t N = 0, h = 0;
  bool transposed_k = false;  // heads reached through perm 0 2 3 1 (K already transposed)
};

struct Source {   // where Q, K or V of the attention comes from
  Heads heads;
  std::string rotary;             // a com.microsoft RotaryEmbedding node's name on the 4-D heads, if any
  const Node* rotary_node = nullptr;
  std::string past, present;      // separate per-layer past (B, N, P, h) and the Concat's output
  const Node* concat = nullptr;
  std::string stacked_past;       // ORT's (2, B, N, P, h) past, and which half (0 = K, 1 = V)
  int64_t stacked_index = -1;
  std::string repeated;           // grouped-query: the repeated (B, N, T, h) value fed to attention
};

class Reader : public AttentionReader {
 public:
  using AttentionReader::AttentionReader;

  // (B, S, N*h) -> Reshape (B, S, N, h) -> Transpose perm.
  std::optional<Heads> heads(const std::string& v, bool k_transposed, std::string& why) {
    const Node* t = producer(v, "Transpose");
    if (!t) return why = fmt::format("'{}' is not the Transpose of a head split", v), std::nullopt;
    const bool plain = perm_is(*t, {0, 2, 1, 3}), kt = perm_is(*t, {0, 2, 3, 1});
    if (!(plain && !k_transposed) && !(kt && k_transposed)) return why = fmt::format("'{}' has perm {} for a head split", t->name, fmt::join(ints_attr(*t, "perm"), " ")), std::nullopt;
    const Node* r = t->inputs.empty() ? nullptr : producer(t->inputs[0], "Reshape");
    if (!r || r->inputs.size() != 2) return why = fmt::format("'{}' does not transpose a Reshape into heads", t->name), std::nullopt;
    const std::vector<Dim>* x = g_.dims(r->inputs[0]);
    const auto target = shape_value(g_, r->inputs[1]);
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
    auto keeps = [&](size_t i) { return same_dim((*target)[i], (*x)[i]) || (*target)[i].value == 0; };
    if (!keeps(0) || !keeps(1)) return why = fmt::format("the head split '{}' changes the batch or sequence dims", r->name), std::nullopt;
    use(t), use(r);
    return Heads{r->inputs[0], *N, *h, k_transposed};
  }

  // ORT's gpt2_helper past: Squeeze(Split(past, axis 0)[i], 0) or Gather(past, i, axis 0) of a
  // (2, B, N, P, h) graph input.
  void stacked(Source& s) {
    const int p = g_.producer(s.past);
    if (p < 0) return;
    const Node& n = g_.graph().nodes[size_t(p)];
    if (n.op_type == "Gather" && n.inputs.size() == 2 && int_attr(n, "axis", 0) == 0) {
      const auto i = g_.scalar(n.inputs[1]);
      const Tensor* it = g_.constant(n.inputs[1]);
      if (i && it && it->rank() == 0 && (*i == 0 || *i == 1)) s.stacked_past = n.inputs[0], s.stacked_index = int64_t(*i), use(&n);
    } else if (n.op_type == "Squeeze" && !n.inputs.empty()) {
      std::vector<int64_t> axes = ints_attr(n, "axes");
      if (n.inputs.size() > 1) axes = g_.ints(n.inputs[1]).value_or(std::vector<int64_t>{});
      const int q = g_.producer(n.inputs[0]);
      if (axes != std::vector<int64_t>{0} || q < 0) return;
      const Node& split = g_.graph().nodes[size_t(q)];
      if (split.op_type != "Split" || split.outputs.size() != 2 || int_attr(split, "axis", 0) != 0 || split.inputs.empty()) return;
      const int64_t i = split.outputs[0] == n.inputs[0] ? 0 : 1;
      s.stacked_past = split.inputs[0], s.stacked_index = i;
      use(&n), use(&split);
    }
    if (!s.stacked_past.empty()) {
      const std::vector<Dim>* d = g_.dims(s.stacked_past);
      if (!d || d->size() != 5 || !(*d)[0].fixed() || (*d)[0].value != 2) s.stacked_past.clear(), s.stacked_index = -1;
    }
  }

  // Q, K or V: heads, maybe rotated, maybe after a past, maybe repeated.
  std::optional<Source> source(const std::string& v, bool k_transposed, std::string& why) {
    Source s;
    std::string cur = v;
    if (k_transposed) {  // K^T: Transpose(K, 0 1 3 2) of a 4-D K, or the head split's perm 0 2 3 1
      const Node* t = producer(cur, "Transpose");
      if (t && !t->inputs.empty() && perm_is(*t, {0, 1, 3, 2})) use(t), cur = t->inputs[0], k_transposed = false;
    }
    if (!k_transposed) {
      // Repeated keys and values (grouped-query): Reshape(Expand(Unsqueeze(kv, 2), ...), (B, N, T, h)).
      if (const Node* r = producer(cur, "Reshape")) {
        const Node* e = r->inputs.empty() ? nullptr : producer(r->inputs[0], "Expand");
        const Node* u = e && !e->inputs.empty() ? producer(e->inputs[0], "Unsqueeze") : nullptr;
        if (u && u->inputs.empty()) u = nullptr;
        if (u) {
          s.repeated = cur;
          use(r), use(e), use(u);
          cur = u->inputs[0];
        }
      }
      if (const Node* c = producer(cur, "Concat"); c && c->inputs.size() == 2 && !c->outputs.empty()) {
        const int64_t axis = int_attr(*c, "axis", 0);
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

struct Mask {
  bool causal = false;
  std::string padding_input;     // a 2-D (B, T) graph input: key padding
  std::string bias;              // an additive (B|1, 1, S, T) value
  double filler = 0;             // the value masked scores get (the most negative seen)
  std::string causal_cond;       // the causal Where's condition, its polarity and filler
  bool causal_keeps = true;
  double causal_filler = 0;
  std::string padding_value;     // the additive padding mask (B, 1, 1, T) the graph computes
  std::string where_cond;        // a Where mask that is not provably causal: its condition,
  bool where_keeps = true;       // whether true keeps the score,
  double where_filler = 0;       // and what hidden scores get
};

// An S x T constant (leading dims 1) that is nonzero exactly where key j <= query i + (T - S).
bool constant_keeps_causal(const Tensor& c, int64_t S, int64_t T) {
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
      if ((v[size_t(i * T + j)] != 0) != (j <= i + (T - S))) return false;
  return true;
}

// `cond` true exactly where key j <= query i + (T - S): the causal mask in the "keep" polarity.
bool is_causal_keep(const GraphIndex& g, std::string cond, const Dim& S, const Dim& T, bool& flip, std::set<int>& used) {
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
    if (n.inputs.size() < 3) return false;
    const auto starts = shape_value(g, n.inputs[1]), ends = shape_value(g, n.inputs[2]);
    const auto axes = n.inputs.size() > 3 && !n.inputs[3].empty() ? g.ints(n.inputs[3]) : std::nullopt;
    const auto steps = n.inputs.size() > 4 && !n.inputs[4].empty() ? g.ints(n.inputs[4]) : std::optional<std::vector<int64_t>>(std::vector<int64_t>(starts ? starts->size() : 0, 1));
    if (!starts || !ends || !axes || !steps || axes->size() != starts->size() || ends->size() != starts->size()) return false;
    for (size_t i = 0; i < axes->size(); ++i) {
      if ((*steps)[i] != 1) return false;
      const int64_t a = (*axes)[i] < 0 ? (*axes)[i] + 4 : (*axes)[i];
      if (a == 2 && !r0) r0 = (*starts)[i], r1 = (*ends)[i];
      else if (a == 3 && !c0) c0 = (*starts)[i], c1 = (*ends)[i];
      else return false;
    }
    used.insert(p);
    cond = n.inputs[0];
  }
  const Tensor* c = g.constant(cond);
  if (c && !r0 && !c0 && S.fixed() && T.fixed() && c->rank() >= 2 && c->dim(c->rank() - 2) == S.value &&
      c->dim(c->rank() - 1) == T.value && c->size() == S.value * T.value)
    return constant_keeps_causal(*c, S.value, T.value);  // fixed shapes: the slice was folded
  if (!c || c->rank() < 2 || c->dim(c->rank() - 1) != c->dim(c->rank() - 2) || c->size() != c->dim(c->rank() - 1) * c->dim(c->rank() - 2))
    return false;
  const int64_t W = c->dim(c->rank() - 1);
  // Rows [T - S, T) and columns [0, T): with no past (S = T) the slices may start at 0 for both.
  const Inference* inf = g.inference();
  const bool rows_ok = r0 && r1 && dims_equal(*r1, T, inf) && dims_equal(dim_difference(*r1, *r0, inf).value_or(Dim{}), S, inf);
  const bool cols_ok = c0 && c1 && c0->fixed() && c0->value == 0 && dims_equal(*c1, T, inf);
  if (!rows_ok || !cols_ok) return false;
  std::vector<double> v(size_t(W * W));
  if (c->dtype() == DType::Bool) {
    for (int64_t i = 0; i < W * W; ++i) v[size_t(i)] = c->data<bool>()[i];
  } else if (c->dtype() == DType::Float) {
    for (int64_t i = 0; i < W * W; ++i) v[size_t(i)] = c->data<float>()[i];
  } else if (c->dtype() == DType::UInt8) {
    for (int64_t i = 0; i < W * W; ++i) v[size_t(i)] = c->data<uint8_t>()[i];
  } else {
    return false;
  }
  for (int64_t i = 0; i < W; ++i)
    for (int64_t j = 0; j < W; ++j)
      if ((v[size_t(i * W + j)] != 0) != (j <= i)) return false;
  return true;
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

// (1 - Cast(Unsqueeze(mask, 1, 2))) * c of a 2-D graph input: the key padding mask; its input.
std::optional<std::string> padding_input(const GraphIndex& g, const std::string& v, double& c, std::set<int>& used) {
  const int p = g.producer(v);
  if (p < 0) return std::nullopt;
  const Node& mul = g.graph().nodes[size_t(p)];
  if (mul.op_type != "Mul" || mul.inputs.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const auto k = g.scalar(mul.inputs[size_t(1 - side)]);
    const int q = g.producer(mul.inputs[size_t(side)]);
    if (!k || q < 0 || g.graph().nodes[size_t(q)].op_type != "Sub") continue;
    const Node& sub = g.graph().nodes[size_t(q)];
    if (sub.inputs.size() != 2 || g.scalar(sub.inputs[0]) != 1.0) continue;
    std::string cur = sub.inputs[1];
    std::set<int> chain = {p, q};
    for (int r; (r = g.producer(cur)) >= 0;) {
      const Node& n = g.graph().nodes[size_t(r)];
      if ((n.op_type != "Cast" && n.op_type != "Unsqueeze" && n.op_type != "Reshape") || n.inputs.empty()) break;
      chain.insert(r);
      cur = n.inputs[0];
    }
    const std::vector<Dim>* d = g.dims(cur);
    bool input = false;
    for (const ValueInfo* in : g.graph().feed_inputs()) input = input || in->name == cur;
    if (!input || !d || d->size() != 2) continue;
    c = *k;
    used.insert(chain.begin(), chain.end());
    return cur;
  }
  return std::nullopt;
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

struct Found {
  int softmax = -1, output = -1;  // the Softmax and the final Reshape
  Source q, k, v;
  Mask mask;
  double scale = 1;
  std::set<int> used;      // every node read
  std::set<int> kv_nodes;  // the nodes computing K and V from their projections
};

// Reads the attention around Softmax node `si`; nullopt with `why` set when it is not one.
std::optional<Found> read(const GraphIndex& g, int si, std::string& why) {
  const Node& sm = g.graph().nodes[size_t(si)];
  Reader r(g);
  Found f;
  f.softmax = si;
  r.use(&sm);
  const std::vector<Dim>* sd = g.dims(sm.inputs[0]);
  const int64_t axis = int_attr(sm, "axis", -1);
  if (!(axis == -1 || (sd && axis == int64_t(sd->size()) - 1))) return why = fmt::format("Softmax over axis {}, not the keys", axis), std::nullopt;
  if (!sd || sd->size() != 4) return why = "the scores' shape is unknown or not (B, N, S, T)", std::nullopt;
  // S and T as the product of Q and K has them (the Softmax's may carry a mask's name for T).
  Dim S = (*sd)[2], T = (*sd)[3];
  if (const std::vector<Dim>* pd = product_dims(g, sm.inputs[0], 8); pd && pd->size() == 4) S = (*pd)[2], T = (*pd)[3];
  // Output: MatMul(p, v) -> Transpose 0 2 1 3 -> Reshape (B, S, N*h).
  if (sm.inputs.empty() || sm.outputs.empty()) return why = "a Softmax without input or output", std::nullopt;
  const Node* pv = r.only_consumer(sm.outputs[0], "MatMul");
  if (!pv || pv->inputs.size() != 2 || pv->inputs[0] != sm.outputs[0]) return why = "the probabilities are not only multiplied by V", std::nullopt;
  const Node* t = r.only_consumer(pv->outputs[0], "Transpose");
  if (!t || !perm_is(*t, {0, 2, 1, 3})) return why = "the context is not transposed back to (B, S, N, h)", std::nullopt;
  const Node* y = r.only_consumer(t->outputs[0], "Reshape");
  const std::vector<Dim>* td = g.dims(t->outputs[0]);
  const auto target = y ? shape_value(g, y->inputs[1]) : std::nullopt;
  if (!y || y->inputs.size() != 2) return why = "the transposed context is not only reshaped", std::nullopt;
  if (!td || td->size() != 4) return why = fmt::format("the transposed context '{}' has an unknown shape", t->outputs[0]), std::nullopt;
  if (!target || target->size() != 3) return why = fmt::format("the head merge '{}' has an unknown or non-3-D target", y->name), std::nullopt;
  auto keeps = [&](size_t i) { return same_dim((*target)[i], (*td)[i]) || ((*target)[i].fixed() && (*target)[i].value == 0); };
  // The last size N*h, or -1 (view(B, S, -1)) with the heads' sizes known.
  const auto target_ints = g.ints(y->inputs[1]);  // a constant's -1 is not a Dim
  const auto Nh = target_ints && target_ints->size() == 3 ? std::optional<int64_t>((*target_ints)[2]) : fixed((*target)[2]);
  const bool heads_known = (*td)[2].fixed() && (*td)[3].fixed();
  if (!keeps(0) || !keeps(1) || !heads_known || !Nh || (*Nh != (*td)[2].value * (*td)[3].value && *Nh != -1))
    return why = fmt::format("the head merge '{}' is not (B, S, N*h)", y->name), std::nullopt;
  r.use(pv), r.use(t), r.use(y);
  f.output = int(y - g.graph().nodes.data());

  // Scores: peel masks and scales down to MatMul(q, kT).
  std::string cur = sm.inputs[0];
  const Node* qk = nullptr;
  for (int steps = 0; steps < 8 && !qk; ++steps) {
    const int p = g.producer(cur);
    if (p < 0) return why = "the scores do not come from a product of Q and K", std::nullopt;
    const Node& n = g.graph().nodes[size_t(p)];
    if (!g.is_graph_output(cur) && g.consumers(cur).size() != 1) return why = fmt::format("the scores '{}' are read elsewhere", cur), std::nullopt;
    if (n.inputs.size() < (n.op_type == "Where" ? 3u : 2u)) return why = fmt::format("'{}' has too few inputs", n.name), std::nullopt;
    if (n.op_type == "MatMul") {
      qk = &n;
    } else if ((n.op_type == "Div" || n.op_type == "Mul") && g.scalar(n.inputs[1])) {
      const double c = *g.scalar(n.inputs[1]);
      if (!(c > 0)) return why = fmt::format("the scale '{}' is not positive", n.name), std::nullopt;
      f.scale *= n.op_type == "Div" ? 1 / c : c;
      cur = n.inputs[0];
    } else if (n.op_type == "Where") {
      const auto a = g.scalar(n.inputs[1]), b = g.scalar(n.inputs[2]);
      if (a.has_value() == b.has_value()) return why = fmt::format("the Where '{}' does not choose between the scores and a constant", n.name), std::nullopt;
      const double filler = a ? *a : *b;
      if (!(filler <= kMaskFloor)) return why = fmt::format("the Where '{}' fills {:g}, not a hiding value", n.name, filler), std::nullopt;
      bool flip = a.has_value();  // Where(cond, filler, scores): cond hides
      std::set<int> mask_nodes;  // shared by the layers: left to dead-code removal
      if (!f.mask.causal && is_causal_keep(g, n.inputs[0], S, T, flip, mask_nodes) && !flip) {
        f.mask.causal = true, f.mask.filler = std::min(f.mask.filler, filler);
        f.mask.causal_cond = n.inputs[0], f.mask.causal_keeps = !a.has_value(), f.mask.causal_filler = filler;
      } else if (slices_a_constant(g, n.inputs[0])) {
        // A causal look-alike (a buffer off by one, an upper triangle): left as it is, named.
        return why = fmt::format("the mask of '{}' slices a constant buffer that is not causal (key j <= query i + past) over S = {}, T = {}",
                                 n.name, S.fixed() ? std::to_string(S.value) : S.param, T.fixed() ? std::to_string(T.value) : T.param), std::nullopt;
      } else if (f.mask.where_cond.empty()) {
        // Another mask (built at run time, not provably causal): it becomes an additive bias
        // Where(cond, 0, filler), which hides the same scores. Its shape must end in (S, T).
        const std::vector<Dim>* cd = g.dims(n.inputs[0]);
        if (!cd || cd->size() < 2 || cd->size() > 4 || !dims_equal((*cd)[cd->size() - 2], S, g.inference()) || !dims_equal((*cd)[cd->size() - 1], T, g.inference()) ||
            (cd->size() == 4 && !((*cd)[1].fixed() && (*cd)[1].value == 1)))
          return why = fmt::format("the mask of '{}' is not causal (key j <= query i + past) and its shape is not (.., 1, S, T) with S = {}, T = {}",
                                   n.name, S.fixed() ? std::to_string(S.value) : S.param, T.fixed() ? std::to_string(T.value) : T.param), std::nullopt;
        f.mask.where_cond = n.inputs[0], f.mask.where_keeps = !a.has_value(), f.mask.where_filler = filler;
      } else {
        return why = fmt::format("'{}' is a second Where mask", n.name), std::nullopt;
      }
      cur = a ? n.inputs[2] : n.inputs[1];
    } else if (n.op_type == "Add") {
      // The operand leading to the product is the scores; the other is the mask.
      int side = -1;
      double dummy_c = 0;
      std::set<int> dummy_nodes;
      for (int s2 = 0; s2 < 2 && side < 0; ++s2) {
        const int q = g.producer(n.inputs[size_t(s2)]);
        if (q >= 0 && std::set<std::string>{"MatMul", "Div", "Mul", "Where", "Add"}.count(g.graph().nodes[size_t(q)].op_type) &&
            !padding_input(g, n.inputs[size_t(s2)], dummy_c, dummy_nodes)) {
          const std::vector<Dim>* other = g.dims(n.inputs[size_t(1 - s2)]);
          const std::vector<Dim>* mine = g.dims(n.inputs[size_t(s2)]);
          if (mine && mine->size() == 4 && (!other || other->size() <= 4)) side = s2;
        }
      }
      if (side < 0) return why = fmt::format("neither operand of '{}' is the scores", n.name), std::nullopt;
      const std::string& m = n.inputs[size_t(1 - side)];
      double c = 0;
      if (f.mask.padding_input.empty() && f.mask.bias.empty()) {
        std::set<int> mask_nodes;
        if (auto in = padding_input(g, m, c, mask_nodes)) {
          if (!(c <= kMaskFloor)) return why = fmt::format("the padding mask of '{}' adds {:g}, not a hiding value", n.name, c), std::nullopt;
          f.mask.padding_input = *in, f.mask.filler = std::min(f.mask.filler, c);
          f.mask.padding_value = m;
        } else {
          const std::vector<Dim>* md = g.dims(m);
          if (!md || md->size() < 2 || md->size() > 4 || (md->size() == 4 && !((*md)[1].fixed() && (*md)[1].value == 1)) ||
              !dims_equal((*md)[md->size() - 2], S, g.inference()) || !dims_equal((*md)[md->size() - 1], T, g.inference()))
            return why = fmt::format("the added '{}' is neither a padding mask nor a bias of shape (S, T), (1|B, S, T) or (B|1, 1, S, T)", m), std::nullopt;
          f.mask.bias = m;
        }
      } else {
        return why = fmt::format("'{}' adds a second mask", n.name), std::nullopt;
      }
      cur = n.inputs[size_t(side)];
    } else {
      return why = fmt::format("'{}' ({}) between the product and the Softmax", n.name, n.op_type), std::nullopt;
    }
    r.use(&n);
  }
  if (!qk) return why = "the scores do not come from a product of Q and K", std::nullopt;
  // Scales on q or k before the product.
  auto peel_scale = [&](std::string v) {
    const int p = g.producer(v);
    if (p < 0) return v;
    const Node& n = g.graph().nodes[size_t(p)];
    if ((n.op_type == "Mul" || n.op_type == "Div") && n.inputs.size() == 2 && g.scalar(n.inputs[1]) && *g.scalar(n.inputs[1]) > 0 &&
        g.consumers(v).size() == 1) {
      const double c = *g.scalar(n.inputs[1]);
      f.scale *= n.op_type == "Div" ? 1 / c : c;
      r.use(&n);
      return n.inputs[0];
    }
    return v;
  };
  const std::string qv = peel_scale(qk->inputs[0]), kv = peel_scale(qk->inputs[1]);
  auto q = r.source(qv, false, why);
  if (!q) return std::nullopt;
  const std::set<int> before_kv = r.used;
  auto k = r.source(kv, true, why);
  if (!k) return std::nullopt;
  auto v = r.source(pv->inputs[1], false, why);
  if (!v) return std::nullopt;
  for (int i : r.used)
    if (!before_kv.count(i)) f.kv_nodes.insert(i);
  if (!q->past.empty() || !q->repeated.empty()) return why = "Q has a past or repeats", std::nullopt;
  if (k->heads.h != q->heads.h) return why = "Q and K have different head sizes", std::nullopt;
  if (k->repeated.empty() != v->repeated.empty() || k->past.empty() != v->past.empty()) return why = "K and V differ in past or repeats", std::nullopt;
  if (k->repeated.empty() && (k->heads.N != q->heads.N || v->heads.N != q->heads.N)) return why = "K or V has other heads than Q", std::nullopt;
  if (v->rotary_node) return why = "V is rotated", std::nullopt;
  f.q = *q, f.k = *k, f.v = *v;
  r.use(qk);
  f.used.insert(r.used.begin(), r.used.end());
  return f;
}

// The three equal parts of one projection x W + b split on the last axis: (x, W, b), or nullopt.
struct Packed {
  std::string x, w, b;
  int split = -1, add = -1, matmul = -1;
};
std::optional<Packed> packed_qkv(const GraphIndex& g, const Found& f) {
  const int sp = g.producer(f.q.heads.x);
  if (sp < 0 || g.producer(f.k.heads.x) != sp || g.producer(f.v.heads.x) != sp) return std::nullopt;
  const Node& split = g.graph().nodes[size_t(sp)];
  if (split.op_type != "Split" || split.outputs.size() != 3 || split.outputs[0] != f.q.heads.x || split.outputs[1] != f.k.heads.x ||
      split.outputs[2] != f.v.heads.x)
    return std::nullopt;
  const std::vector<Dim>* d = g.dims(split.inputs[0]);
  const int64_t axis = int_attr(split, "axis", 0);
  if (!d || !(axis == -1 || axis == int64_t(d->size()) - 1)) return std::nullopt;
  const int64_t D = f.q.heads.N * f.q.heads.h;
  std::vector<int64_t> sizes = ints_attr(split, "split");
  if (split.inputs.size() > 1 && !split.inputs[1].empty()) sizes = g.ints(split.inputs[1]).value_or(std::vector<int64_t>{});
  if (!sizes.empty() && sizes != std::vector<int64_t>{D, D, D}) return std::nullopt;
  const int ap = g.producer(split.inputs[0]);
  if (ap < 0 || g.graph().nodes[size_t(ap)].op_type != "Add") return std::nullopt;
  const Node& add = g.graph().nodes[size_t(ap)];
  if (add.inputs.size() != 2 || split.inputs.empty()) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Tensor* b = g.constant(add.inputs[size_t(1 - side)]);
    const int mp = g.producer(add.inputs[size_t(side)]);
    if (!b || b->rank() != 1 || b->dim(0) != 3 * D || mp < 0 || g.graph().nodes[size_t(mp)].op_type != "MatMul") continue;
    const Node& mm = g.graph().nodes[size_t(mp)];
    if (mm.inputs.size() != 2) continue;
    const Tensor* w = g.constant(mm.inputs[1]);
    const std::vector<Dim>* x = g.dims(mm.inputs[0]);
    if (!w || w->rank() != 2 || w->dim(1) != 3 * D || !x || x->size() != 3) continue;
    if (g.consumers(add.outputs[0]).size() != 1 || g.consumers(mm.outputs[0]).size() != 1) continue;
    return Packed{mm.inputs[0], mm.inputs[1], add.inputs[size_t(1 - side)], sp, ap, mp};
  }
  return std::nullopt;
}

// ORT's stacked present: Concat(Unsqueeze(K with past, 0), Unsqueeze(V with past, 0), axis 0),
// K and V taken from halves 0 and 1 of the same stacked past.
struct StackedPresent {
  std::string value;
  int unsqueeze_k = -1, unsqueeze_v = -1, stack = -1;
};
std::optional<StackedPresent> stacked_present(const GraphIndex& g, const Found& f) {
  if (f.k.stacked_past.empty() || f.k.stacked_past != f.v.stacked_past || f.k.stacked_index != 0 || f.v.stacked_index != 1)
    return std::nullopt;
  auto unsqueeze0 = [&](const std::string& v) -> int {
    for (int c : g.consumers(v)) {
      const Node& n = g.graph().nodes[size_t(c)];
      std::vector<int64_t> axes = ints_attr(n, "axes");
      if (n.op_type == "Unsqueeze" && n.inputs.size() > 1) axes = g.ints(n.inputs[1]).value_or(std::vector<int64_t>{});
      if (n.op_type == "Unsqueeze" && axes == std::vector<int64_t>{0}) return c;
    }
    return -1;
  };
  const int uk = unsqueeze0(f.k.present), uv = unsqueeze0(f.v.present);
  if (uk < 0 || uv < 0) return std::nullopt;
  const std::vector<int>& readers = g.consumers(g.graph().nodes[size_t(uk)].outputs[0]);
  if (readers.size() != 1) return std::nullopt;
  const Node& stack = g.graph().nodes[size_t(readers[0])];
  if (stack.op_type != "Concat" || int_attr(stack, "axis", -1) != 0 || stack.inputs.size() != 2 ||
      stack.inputs[0] != g.graph().nodes[size_t(uk)].outputs[0] || stack.inputs[1] != g.graph().nodes[size_t(uv)].outputs[0])
    return std::nullopt;
  return StackedPresent{stack.outputs[0], uk, uv, readers[0]};
}

// True when computing `v` reads one of `values` (through any chain of producers).
bool depends_on(const GraphIndex& g, const std::string& v, std::set<std::string> values) {
  values.erase("");
  std::vector<std::string> todo = {v};
  std::set<std::string> seen;
  while (!todo.empty() && !values.empty()) {
    const std::string x = todo.back();
    todo.pop_back();
    if (values.count(x)) return true;
    if (!seen.insert(x).second) continue;
    const int p = g.producer(x);
    if (p >= 0)
      for (const std::string& in : g.graph().nodes[size_t(p)].inputs)
        if (!in.empty()) todo.push_back(in);
  }
  return false;
}

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
              // Causal and padding together: the fused operators add mask_filter_value once where
              // either hides a key, where the export adds the padding mask to the already filled
              // causal scores. They differ only in rows with every key hidden (a left-padded
              // row's first queries), where the export attends uniformly to the keys hidden by
              // one mask and not the other; the exact bias Where(causal, M, M + filler) keeps that.
              const std::vector<Dim>* cond_dims = f->mask.causal ? index.dims(f->mask.causal_cond) : nullptr;
              const ValueType* score_type = index.type(sm.inputs[0]);
              // (Not when the condition is sliced by the length of a present the fused node writes.)
              if (f->mask.causal && !f->mask.padding_input.empty() && f->mask.bias.empty() && f->mask.where_cond.empty() && cond_dims &&
                  cond_dims->size() == 4 && score_type && score_type->kind == ValueType::Kind::Tensor &&
                  !depends_on(index, f->mask.causal_cond, {f->k.present, f->v.present})) {
                const std::string fill = names.value(scope + "/causal_filler"), hidden = names.value(scope + "/hidden_bias"),
                                  bias = names.value(scope + "/mask_bias");
                new_inits.push_back({fill, from_doubles(score_type->dtype, {}, {std::max(f->mask.causal_filler, -3.4028234663852886e38)})});
                nodes.push_back(make_node("Add", "", {f->mask.padding_value, fill}, {hidden}, {}, names.node(scope + "/HiddenBias")));
                nodes.push_back(make_node("Where", "", {f->mask.causal_cond, f->mask.causal_keeps ? f->mask.padding_value : hidden,
                                                        f->mask.causal_keeps ? hidden : f->mask.padding_value},
                                          {bias}, {}, names.node(scope + "/MaskBias")));
                f->mask.bias = bias, f->mask.causal = false, f->mask.padding_input.clear();
              }
              std::vector<Attribute> attrs = {build::attr("num_heads", N)};
              if (f->mask.causal) attrs.push_back(build::attr("unidirectional", int64_t(1)));
              if (f->mask.causal || !f->mask.padding_input.empty())
                attrs.push_back(build::attr("mask_filter_value", float(std::max(f->mask.filler, -3.4028234663852886e38))));
              if (std::fabs(f->scale * std::sqrt(double(h)) - 1) > 1e-6) attrs.push_back(build::attr("scale", float(f->scale)));
              std::string mask_index;
              if (!f->mask.padding_input.empty()) {
                mask_index = names.value(f->mask.padding_input + "_int32");
                nodes.push_back(make_node("Cast", "", {f->mask.padding_input}, {mask_index}, {build::attr("to", int64_t(DType::Int32))},
                                          names.node(scope + "/MaskCast")));
              }
              if (!f->mask.where_cond.empty()) {
                if (!f->mask.bias.empty()) {
                  refuse(sm, "a run-time Where mask and an additive bias together");
                  continue;
                }
                // bias = Where(cond, 0, filler) (or the reverse), 4-D (.., 1, S, T) by Unsqueeze.
                const ValueType* st = index.type(sm.inputs[0]);
                if (!st || st->kind != ValueType::Kind::Tensor) {
                  refuse(sm, "the scores' element type is unknown");
                  continue;
                }
                const std::string zero = names.value(scope + "/mask_zero"), fill = names.value(scope + "/mask_filler");
                new_inits.push_back({zero, from_doubles(st->dtype, {}, {0.0})});
                new_inits.push_back({fill, from_doubles(st->dtype, {}, {std::max(f->mask.where_filler, -3.4028234663852886e38)})});
                std::string bias = names.value(scope + "/mask_bias");
                nodes.push_back(make_node("Where", "", {f->mask.where_cond, f->mask.where_keeps ? zero : fill, f->mask.where_keeps ? fill : zero},
                                          {bias}, {}, names.node(scope + "/MaskBias")));
                const size_t rank = index.dims(f->mask.where_cond)->size();
                if (rank < 4) {
                  const std::string axes = names.value(scope + "/mask_axes"), b4 = names.value(scope + "/mask_bias_4d");
                  std::vector<int64_t> ax;
                  for (size_t i = 0; i < 4 - rank; ++i) ax.push_back(int64_t(i));
                  new_inits.push_back({axes, Tensor::from_vector<int64_t>({int64_t(ax.size())}, ax)});
                  nodes.push_back(make_node("Unsqueeze", "", {bias, axes}, {b4}, {}, names.node(scope + "/MaskBias4d")));
                  bias = b4;
                }
                f->mask.bias = bias;
              } else if (!f->mask.bias.empty() && index.dims(f->mask.bias) && index.dims(f->mask.bias)->size() < 4) {
                const size_t rank = index.dims(f->mask.bias)->size();
                const std::string axes = names.value(scope + "/mask_axes"), b4 = names.value(scope + "/mask_bias_4d");
                std::vector<int64_t> ax;
                for (size_t i = 0; i < 4 - rank; ++i) ax.push_back(int64_t(i));
                if (rank == 3) ax = {1};  // (B, S, T) -> (B, 1, S, T)
                new_inits.push_back({axes, Tensor::from_vector<int64_t>({int64_t(ax.size())}, ax)});
                nodes.push_back(make_node("Unsqueeze", "", {f->mask.bias, axes}, {b4}, {}, names.node(scope + "/MaskBias4d")));
                f->mask.bias = b4;
              }
              const std::string y = g.nodes[size_t(f->output)].outputs[0];
              std::set<int> used = f->used;
              std::set<std::string> kept;  // values of used nodes that stay read outside
              const std::optional<Packed> packed = packed_qkv(index, *f);
              const std::optional<StackedPresent> present = stacked_present(index, *f);
              if (packed && f->k.past.empty() && f->k.repeated.empty() && !f->q.rotary_node && !f->k.rotary_node) {
                used.insert({packed->split, packed->add, packed->matmul});
                nodes.push_back(make_node("Attention", "com.microsoft", {packed->x, packed->w, packed->b, mask_index, "", f->mask.bias}, {y},
                                          attrs, scope));
              } else if (packed && present && f->k.repeated.empty() && !f->q.rotary_node && !f->k.rotary_node) {
                // ORT's GPT-2 with past: Attention(x, W, b, mask_index, past) -> (y, present).
                used.insert({packed->split, packed->add, packed->matmul, present->unsqueeze_k, present->unsqueeze_v, present->stack});
                kept.insert(present->value);
                nodes.push_back(make_node("Attention", "com.microsoft",
                                          {packed->x, packed->w, packed->b, mask_index, f->k.stacked_past, f->mask.bias}, {y, present->value},
                                          attrs, scope));
              } else {
                // MultiHeadAttention on 3-D Q (rotated here in its 3-D form), K and V.
                auto three_d = [&](const Source& s, int64_t heads) -> std::string {
                  if (!s.rotary_node) return s.heads.x;
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
                if (!f->k.repeated.empty()) {
                  // Grouped-query: the repeated (B, N, T, h) keys and values; everything that
                  // computes them (past Concats read as presents, rotation, repeats) stays, and
                  // what only fed the product goes with dead-code removal.
                  inputs[1] = f->k.repeated, inputs[2] = f->v.repeated;
                  for (int i : f->kv_nodes) used.erase(i);
                } else {
                  inputs[1] = three_d(f->k, f->k.heads.N), inputs[2] = f->v.heads.x;
                  if (!f->k.past.empty()) {
                    if (!graph_input(index, f->k.past) || !graph_input(index, f->v.past)) {
                      refuse(sm, "the past keys and values are not graph inputs (ORT's stacked past is not supported here)");
                      continue;
                    }
                    inputs[6] = f->k.past, inputs[7] = f->v.past;
                    outputs = {y, f->k.present, f->v.present};
                  }
                }
                nodes.push_back(make_node("MultiHeadAttention", "com.microsoft", inputs, outputs, attrs, scope));
              }
              for (const Source* s : {&f->q, &f->k, &f->v})
                if (s->concat && used.count(int(s->concat - g.nodes.data()))) kept.insert(s->present);
              kept.insert(y);
              absorb_dead_readers(index, used, kept);
              keep_what_new_nodes_read(index, nodes, used);
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
