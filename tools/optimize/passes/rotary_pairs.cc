// Rotary position embedding written pair by pair, into com.microsoft RotaryEmbedding:
//   a' = a * cos - b * sin,  b' = a * sin + b * cos
// for each pair (a, b) of x with one cos and sin value per pair (tables of h/2 columns):
//   - neighbours, interleaved = 1 (Meta's llama model.py with real arithmetic instead of complex
//     numbers): pairs = Reshape(x, (.., h/2, 2)), a = pairs[..., 0], b = pairs[..., 1] (Gathers of
//     index 0 and 1 on the last axis, or Squeezes of a Split or of Slices there), and
//     y = Reshape(stack([a', b'], -1), x's shape) with stack as Unsqueeze + Concat;
//   - halves, interleaved = 0 (MixFormer's Phi, flash-attn's apply_rotary): a = x[..., :h/2],
//     b = x[..., h/2:] (two Slices or a Split) and y = Concat(a', b') on the last axis.
// cos and sin are (B, S, 1, h/2) or (B, 1, S, h/2), gathered from a (max_pos, h/2) table or
// computed from the positions (rotary_common.cc). A rotation of the first columns only then joins
// the rest as a partial rotation (rotary.cc's build_partial). Refused with their reason: pairs
// read in the other order (b first: the rotation by the negative angle), a Reshape that does not
// end in (h/2, 2). Not handled: GPT-J's Hugging Face form (x * repeat_interleave(cos) +
// rotate_every_two(x) * repeat_interleave(sin)).
#include <algorithm>

#include <fmt/format.h>

#include "../pass.h"
#include "rotary_common.h"

namespace refeval::optimize::rotary {
namespace {

// Where one element of a pair comes from: `pairs[..., index]`.
struct PairPart {
  std::string pairs;
  int64_t index = -1;
};

bool last_axis(int64_t axis, size_t rank) { return axis == -1 || axis == int64_t(rank) - 1; }

// `v` as Gather(pairs, k, last axis) with a scalar k, or Squeeze(last axis) of Split(pairs, last
// axis)[k] or of Slice(pairs, k:k+1, last axis); nullopt otherwise.
std::optional<PairPart> pair_part(const GraphIndex& g, const std::string& v) {
  const Node* n = g.producer_node(v);
  if (!n || !n->domain.empty()) return std::nullopt;
  const std::vector<Dim>* d = n->inputs.empty() ? nullptr : g.dims(n->inputs[0]);
  if (!d) return std::nullopt;
  if (n->op_type == "Gather") {
    const auto k = g.ints(n->inputs[1]);
    const std::vector<Dim>* kd = g.dims(n->inputs[1]);
    if (!k || k->size() != 1 || !kd || !kd->empty() || !last_axis(int_attr(*n, "axis", 0), d->size())) return std::nullopt;
    return PairPart{n->inputs[0], (*k)[0] < 0 ? (*k)[0] + 2 : (*k)[0]};
  }
  if (n->op_type != "Squeeze") return std::nullopt;
  const auto axes = axes_of(*n, g);
  if (!axes || axes->size() != 1 || !last_axis((*axes)[0], d->size())) return std::nullopt;
  const Node* p = g.producer_node(n->inputs[0]);
  if (!p || !p->domain.empty()) return std::nullopt;
  const std::vector<Dim>* pd = g.dims(p->inputs[0]);
  if (!pd) return std::nullopt;
  if (p->op_type == "Split" && p->outputs.size() == 2 && last_axis(int_attr(*p, "axis", 0), pd->size()))
    return PairPart{p->inputs[0], n->inputs[0] == p->outputs[0] ? 0 : 1};
  if (p->op_type == "Slice" && p->inputs.size() >= 4) {
    const auto starts = g.ints(p->inputs[1]), ends = g.ints(p->inputs[2]), slice_axes = g.ints(p->inputs[3]);
    const auto steps = p->inputs.size() > 4 && !p->inputs[4].empty() ? g.ints(p->inputs[4]) : std::optional(std::vector<int64_t>{1});
    // One element of the pair axis (size 2), however the bounds are written: [1:2], [-1:], [1:] ...
    const bool pair_axis = !pd->empty() && pd->back().fixed() && pd->back().value == 2;
    const auto bound = [](int64_t v) { return std::clamp(v < 0 ? v + 2 : v, int64_t(0), int64_t(2)); };
    if (starts && ends && slice_axes && steps && starts->size() == 1 && ends->size() == 1 && slice_axes->size() == 1 &&
        last_axis((*slice_axes)[0], pd->size()) && *steps == std::vector<int64_t>{1}) {
      const int64_t s0 = (*starts)[0], e0 = (*ends)[0];
      if ((s0 == 0 || s0 == 1) && e0 == s0 + 1) return PairPart{p->inputs[0], s0};
      if (pair_axis && bound(e0) == bound(s0) + 1) return PairPart{p->inputs[0], bound(s0)};
    }
  }
  return std::nullopt;
}

// a * cos - b * sin and a * sin + b * cos, then stacked on a new last axis and flattened
// (`neighbours`) or concatenated (halves).
Pattern pairs_pattern(bool neighbours) {
  std::vector<PatternNode> nodes = {
      {"x0c", "Mul", {cap("e0"), cap("c")}}, {"x1s", "Mul", {cap("e1"), cap("s")}}, {"even", "Sub", {node("x0c"), node("x1s")}},
      {"x0s", "Mul", {cap("e0"), cap("s")}}, {"x1c", "Mul", {cap("e1"), cap("c")}}, {"odd", "Add", {node("x0s"), node("x1c")}},
  };
  if (neighbours) {
    nodes.push_back({"ue", "Unsqueeze", {node("even"), opt()}});
    nodes.push_back({"uo", "Unsqueeze", {node("odd"), opt()}});
    nodes.push_back({"stack", "Concat", {node("ue"), node("uo")}});
    nodes.push_back({"y", "Reshape", {node("stack"), any()}});
  } else {
    nodes.push_back({"y", "Concat", {node("even"), node("odd"), opt()}});  // a third part: the columns not rotated
  }
  return Pattern{nodes, {}, "even"};
}

// The halves a = x[..., :h/2] and b = x[..., h/2:] of one 4-D x (two Slices or one Split): x, or
// empty with `why`.
std::string halves_source(const GraphIndex& g, const std::string& a, const std::string& b, std::string& why) {
  const Node* na = g.producer_node(a);
  const Node* nb = g.producer_node(b);
  if (!na || !nb || na->inputs.empty() || nb->inputs.empty() || na->inputs[0] != nb->inputs[0]) {
    why = "the products do not read two parts of one value";
    return "";
  }
  const std::string& x = na->inputs[0];
  const std::vector<Dim>* d = g.dims(x);
  if (!d || d->size() != 4 || !d->back().fixed() || d->back().value % 2 != 0) {
    why = fmt::format("'{}' is not 4-D with a known even head size", x);
    return "";
  }
  const int64_t h = d->back().value;
  const auto part = [&](const Node& n, const std::string& v) -> std::optional<std::pair<int64_t, int64_t>> {
    const std::vector<Dim>* pd = g.dims(v);
    if (!pd || pd->size() != 4 || !pd->back().fixed()) return std::nullopt;
    if (n.op_type == "Split") {
      if (n.outputs.size() != 2 || !last_axis(int_attr(n, "axis", 0), 4)) return std::nullopt;
      const int64_t w = pd->back().value;
      return v == n.outputs[0] ? std::pair{int64_t(0), w} : std::pair{h - w, h};
    }
    if (n.op_type != "Slice" || n.inputs.size() < 4) return std::nullopt;
    const auto starts = known_ints(g, n.inputs[1]), axes = known_ints(g, n.inputs[3]);
    const auto steps = n.inputs.size() > 4 && !n.inputs[4].empty() ? known_ints(g, n.inputs[4]) : std::optional(std::vector<int64_t>{1});
    if (!starts || !axes || !steps || starts->size() != 1 || axes->size() != 1 || !last_axis((*axes)[0], 4) || *steps != std::vector<int64_t>{1})
      return std::nullopt;
    const int64_t begin = std::clamp((*starts)[0] < 0 ? (*starts)[0] + h : (*starts)[0], int64_t(0), h);
    return std::pair{begin, begin + pd->back().value};
  };
  const auto ra = part(*na, a), rb = part(*nb, b);
  if (!ra || !rb || *ra != std::pair{int64_t(0), h / 2} || *rb != std::pair{h / 2, h}) {
    why = fmt::format("the products read {} and {} of the last axis of '{}', not its halves [0, {}) and [{}, {})",
                      ra ? fmt::format("[{}, {})", ra->first, ra->second) : "an unknown part", rb ? fmt::format("[{}, {})", rb->first, rb->second) : "an unknown part",
                      x, h / 2, h / 2, h);
    return "";
  }
  return x;
}

// `head` = q[..., :rd] and `tail` = q[..., rd:], cut by two Slices of q's last axis or by one Split
// (torch.split(q, [rd, h - rd], -1)): (q, rd).
std::optional<std::pair<std::string, int64_t>> split_at(const GraphIndex& g, const std::string& head, const std::string& tail) {
  const Node* a = g.producer_node(head);
  const Node* b = g.producer_node(tail);
  if (!a || !b || a->inputs.empty() || a->inputs[0] != b->inputs[0]) return std::nullopt;
  const std::vector<Dim>* q = g.dims(a->inputs[0]);
  const std::vector<Dim>* hd = g.dims(head);
  if (!q || q->size() != 4 || !q->back().fixed() || !hd || hd->size() != 4 || !hd->back().fixed()) return std::nullopt;
  const int64_t h = q->back().value, rd = hd->back().value;
  if (a == b && a->op_type == "Split")  // the two parts, in order, of the whole last axis
    return a->outputs.size() == 2 && a->outputs[0] == head && a->outputs[1] == tail && last_axis(int_attr(*a, "axis", 0), 4)
               ? std::optional(std::pair{a->inputs[0], rd})
               : std::nullopt;
  if (a->op_type != "Slice" || b->op_type != "Slice" || a->inputs.size() < 4 || b->inputs.size() < 4) return std::nullopt;
  if (last_axis_range(g, *a, h) != std::pair{int64_t(0), rd} || last_axis_range(g, *b, h) != std::pair{rd, h}) return std::nullopt;
  return std::pair{a->inputs[0], rd};
}

std::optional<Replacement> build_neighbours(const Match& m, RewriteContext& ctx, CacheMap& caches, const std::string& e0, const std::string& e1,
                                            const std::string& c, const std::string& s) {
  const GraphIndex& g = ctx.index;
  const auto p0 = pair_part(g, e0), p1 = pair_part(g, e1);
  if (!p0 || !p1 || p0->pairs != p1->pairs)
    return ctx.refuse("the products do not read the two elements of one pairs value (pairs[..., 0] and pairs[..., 1] on its last axis)");
  if (p0->index == p1->index)
    return ctx.refuse(fmt::format("the products read one element of each pair of '{}' twice (pairs[..., {}])", p0->pairs, p0->index));
  if (p0->index != 0 || p1->index != 1)
    return ctx.refuse(fmt::format("the pairs of '{}' are read as (x[2i + 1], x[2i]): the rotation by the negative angle", p0->pairs));
  const Node* reshape = g.producer_node(p0->pairs);
  const std::vector<Dim>* pd = g.dims(p0->pairs);
  const std::vector<Dim>* xd = reshape && reshape->op_type == "Reshape" ? g.dims(reshape->inputs[0]) : nullptr;
  if (!xd || !pd || xd->size() != 4 || pd->size() != 5 || !xd->back().fixed())
    return ctx.refuse(fmt::format("'{}' is not a Reshape of a 4-D value with a known head size into pairs", p0->pairs));
  const int64_t h = xd->back().value;
  if (!(*pd)[4].fixed() || (*pd)[4].value != 2 || !(*pd)[3].fixed() || (*pd)[3].value * 2 != h)
    return ctx.refuse(fmt::format("'{}' does not cut the last axis of {} into {} pairs (.., {}, 2)", reshape->name, h, h / 2, h / 2));
  for (size_t k = 0; k < 3; ++k)
    if (!same_dim((*xd)[k], (*pd)[k])) return ctx.refuse(fmt::format("'{}' changes more than the last axis", reshape->name));
  for (const char* id : {"ue", "uo"}) {
    const Node& u = m.node(g, id);
    const auto axes = axes_of(u, g);
    if (!axes || axes->size() != 1 || !last_axis((*axes)[0], 5))
      return ctx.refuse(fmt::format("'{}' does not add the last axis the pairs are stacked on", u.name));
  }
  if (!last_axis(int_attr(m.node(g, "stack"), "axis", 0), 5))
    return ctx.refuse(fmt::format("'{}' does not stack the pair on the last axis", m.node(g, "stack").name));
  return fuse(m, ctx, caches, {reshape->inputs[0], c, s, m.node(g, "y").outputs[0], true, true});
}

std::optional<Replacement> build(const Match& m, RewriteContext& ctx, CacheMap& caches) {
  const GraphIndex& g = ctx.index;
  const bool neighbours = m.nodes.count("stack") > 0;
  // a * cos - b * sin reads the same with the roles of (a, b) and (cos, sin) exchanged: the pair
  // parts are the operands cut from x.
  std::string e0 = m.value("e0"), e1 = m.value("e1"), c = m.value("c"), s = m.value("s");
  const auto cut = [&](const std::string& v) {
    const Node* n = g.producer_node(v);
    return n && (neighbours ? pair_part(g, v).has_value() : (n->op_type == "Slice" || n->op_type == "Split"));
  };
  if (!cut(e0) || !cut(e1)) std::swap(e0, c), std::swap(e1, s);
  if (neighbours) return build_neighbours(m, ctx, caches, e0, e1, c, s);
  if (!last_axis(int_attr(m.node(g, "y"), "axis", 0), 4))
    return ctx.refuse(fmt::format("'{}' does not join the rotated halves on the last axis", m.node(g, "y").name));
  std::string why, why_reversed;
  const std::string x = halves_source(g, e0, e1, why);
  if (x.empty() && !halves_source(g, e1, e0, why_reversed).empty())
    return ctx.refuse("the halves are read as (x[h/2:], x[:h/2]): the rotation by the negative angle");
  if (x.empty()) return ctx.refuse(why);
  const Node& y = m.node(g, "y");
  if (y.inputs.size() == 2) return fuse(m, ctx, caches, {x, c, s, y.outputs[0], false, true});
  // Concat(a', b', q[..., rd:]) of x = q[..., :rd]: a partial rotation of q.
  const auto q = split_at(g, x, y.inputs[2]);
  if (!q) return ctx.refuse(fmt::format("'{}' joins '{}' to the rotated columns, not the rest of the value they were cut from", y.name, y.inputs[2]));
  Rotation r{q->first, c, s, y.outputs[0], false, true};
  r.rotary_dim = q->second;
  return fuse(m, ctx, caches, r);
}

}  // namespace

int fuse_pairwise_rotary(Model& model, PassContext& ctx, CacheMap& caches) {
  Rewrite r{"RotaryEmbedding (pair by pair)", {pairs_pattern(true), pairs_pattern(false)},
            [&caches](const Match& m, RewriteContext& rc) { return build(m, rc, caches); }};
  return apply(r, model, ctx.inference, ctx.explain, kPass);
}

}  // namespace refeval::optimize::rotary
