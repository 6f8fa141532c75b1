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

  // (B, S, N*h) -> Reshape (B, S, N, h) -> Transpose perm.
  std::optional<Heads> heads(const std::string& v, bool k_transposed, std::string& why) {
    const Node* t = producer(v, "Transpose");
    if (!t) return why = fmt::format("'{}' is not the Transpose of a head split", v), std::nullopt;
    const bool plain = perm_is(*t, {0, 2, 1, 3}), kt = perm_is(*t, {0, 2, 3, 1});
    if (!(plain && !k_transposed) && !(kt && k_transposed)) return why = fmt::format("'{}' has perm {} for a head split", t->name, fmt::join(ints_attr(*t, "perm"), " ")), std::nullopt;
    const Node* r = t->inputs.empty() ? nullptr : producer(t->inputs[0], "Reshape");
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
    if (n.inputs.size() < 3) return false;
    const auto starts = g.shape_values(n.inputs[1]), ends = g.shape_values(n.inputs[2]);
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
  buffer = cond, sliced = r0 || c0;
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

}  // namespace

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
  const auto target = y ? g.shape_values(y->inputs[1]) : std::nullopt;
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
      std::string buffer;
      bool sliced = false;
      if (!f.mask.causal && is_causal_keep(g, n.inputs[0], S, T, flip, mask_nodes, buffer, sliced) && !flip) {
        f.mask.causal = true, f.mask.filler = std::min(f.mask.filler, filler);
        f.mask.causal_buffer = buffer, f.mask.causal_buffer_sliced = sliced;
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

}  // namespace refeval::optimize::attention
