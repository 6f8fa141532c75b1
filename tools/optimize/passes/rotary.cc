// Rotate-half rotary position embedding (GPT-NeoX / Llama RoPE, as Hugging Face writes it) into
// com.microsoft RotaryEmbedding (ORT's FusionRotaryEmbeddings):
//   y = x * cos + rotate_half(x) * sin,  rotate_half(x) = Concat(-x[..., h/2:], x[..., :h/2], last axis)
// with the halves cut by two Slices (constant or shape-computed bounds, an end past h allowed) or
// one Split, either product order and either Add order. x is (B, N, S, h) after the head
// transpose, or (B, S, N, h) (then reshaped to (B, S, N*h) around the fused node). cos and sin are
// Unsqueeze(c, 1 or 2) of a (B, S, h) value, through Casts and constant factors
// (attention_scaling), gathered from a cat(freqs, freqs) table or computed from the positions
// (rotary_common.cc). A partial rotation (rotary_dim < head size), Concat(rotated q[..., :rd],
// q[..., rd:]), then becomes one RotaryEmbedding with rotary_embedding_dim (build_partial).
// Rotations written pair by pair (Meta's llama, MixFormer) are rotary_pairs.cc's, run by the same pass.
#include <memory>

#include <fmt/format.h>

#include "../pass.h"
#include "refeval/builder.h"
#include "rotary_common.h"

namespace refeval::optimize {

using namespace rotary;

namespace {

// The halves of x the rotate-half reads: ("first", "second") Slices or one Split "halves".
// Empty when they are [0, h/2) and [h/2, h) of the last axis; the reason otherwise.
std::string check_halves(const Match& m, const GraphIndex& g, int64_t h) {
  const auto last = [](int64_t axis) { return axis == -1 || axis == 3; };
  if (m.nodes.count("halves")) {
    const Node& split = m.node(g, "halves");
    std::vector<int64_t> sizes = ints_attr(split, "split");
    if (split.inputs.size() > 1 && !split.inputs[1].empty()) sizes = known_ints(g, split.inputs[1]).value_or(std::vector<int64_t>{0});
    if (!last(int_attr(split, "axis", 0)) || split.outputs.size() != 2 || !(sizes.empty() || sizes == std::vector<int64_t>{h / 2, h / 2}))
      return fmt::format("'{}' does not split the last axis into two halves of {}", split.name, h / 2);
    return "";
  }
  const Node& first = m.node(g, "first");
  const Node& second = m.node(g, "second");
  const auto a = last_axis_range(g, first, h), b = last_axis_range(g, second, h);
  if (!a || !b) return fmt::format("'{}' is not a Slice of the last axis with known bounds", (a ? second : first).name);
  if (*a != std::pair{int64_t(0), h / 2} || *b != std::pair{h / 2, h})
    return fmt::format("the Concat reads -x[{}:{}] and x[{}:{}]; rotate_half is Concat(-x[{}:{}], x[0:{}])", b->first, b->second, a->first,
                       a->second, h / 2, h, h / 2);
  return "";
}


std::optional<Replacement> build(const Match& m, RewriteContext& ctx, CacheMap& caches) {
  const GraphIndex& g = ctx.index;
  const std::vector<Dim>* x = g.dims(m.value("x"));
  if (!x || x->size() != 4 || !x->back().fixed() || x->back().value % 2 != 0)
    return ctx.refuse(fmt::format("the rotated value '{}' is not known to be 4-D with an even head size", m.value("x")));
  const int64_t h = x->back().value;
  const int64_t concat_axis = int_attr(m.node(g, "rot"), "axis", 0);
  if (concat_axis != -1 && concat_axis != 3) return ctx.refuse(fmt::format("the rotate-half Concat joins axis {}, not the last", concat_axis));
  if (std::string why = check_halves(m, g, h); !why.empty()) return ctx.refuse(why);

  const bool x_first = m.value("xc0") == m.value("x");
  if (!x_first && m.value("xc1") != m.value("x"))
    return ctx.refuse(fmt::format("the other product '{}' does not multiply the rotated value '{}'", m.node(g, "xc").name, m.value("x")));
  return fuse(m, ctx, caches, {m.value("x"), m.value(x_first ? "xc1" : "xc0"), m.value("sin"), m.node(g, "y").outputs[0], false, false});
}

// Patterns of y = x * cos + rotate_half(x) * sin; `concat` orders the Concat's operands.
// halves: two Slices "first" and "second" of x, or one Split "halves".
Pattern rotary_pattern(bool split, bool neg_on_second, const std::string& look_alike) {
  std::vector<PatternNode> nodes;
  Operand first = node("first"), second = node("second");
  if (split) {
    nodes.push_back({"halves", "Split", {cap("x"), opt()}});
    first = node("halves", 0), second = node("halves", 1);
  } else {
    nodes.push_back({"first", "Slice", {cap("x"), any(), any(), opt(), opt()}});
    nodes.push_back({"second", "Slice", {cap("x"), any(), any(), opt(), opt()}});
  }
  if (neg_on_second) {
    nodes.push_back({"neg", "Neg", {second}});
    nodes.push_back({"rot", "Concat", {node("neg"), first}});
  } else {  // the look-alike: Concat(x2, -x1)
    nodes.push_back({"neg", "Neg", {first}});
    nodes.push_back({"rot", "Concat", {second, node("neg")}});
  }
  nodes.push_back({"rs", "Mul", {node("rot"), cap("sin")}});
  // Either operand of x * cos may be x: the builder tells (the matcher binds captures in order).
  nodes.push_back({"xc", "Mul", {cap("xc0"), cap("xc1")}});
  nodes.push_back({"y", "Add", {node("rs"), node("xc")}});
  return Pattern{nodes, {}, "neg", look_alike};
}

// Partial rotary (GPT-NeoX, Phi-2: rotary_dim < head size): the first rd columns of q rotated and
// the rest concatenated back, Concat(RotaryEmbedding(q[..., :rd]), q[..., rd:]) with the halves cut
// by two Slices or one Split, becomes RotaryEmbedding(q) with rotary_embedding_dim = rd (ORT and
// refeval pass the other columns through; both need num_heads with it, so the head count must be
// known). The rotated part was fused above: directly on a (B, N, S, rd) part, or on a (B, S, N, rd)
// part reshaped to 3-D and back ("flatten", "unflatten").
Pattern partial_pattern(bool split, bool bsnh) {
  std::vector<PatternNode> nodes;
  Operand rot = node("rot_in"), pass = node("pass");
  if (split) {
    nodes.push_back({"parts", "Split", {cap("q"), opt()}});
    rot = node("parts", 0), pass = node("parts", 1);
  } else {
    nodes.push_back({"rot_in", "Slice", {cap("q"), any(), any(), opt(), opt()}});
    nodes.push_back({"pass", "Slice", {cap("q"), any(), any(), opt(), opt()}});
  }
  const auto full_rotation = [](const Node& n) { return int_attr(n, "rotary_embedding_dim", 0) == 0; };
  if (bsnh) {
    nodes.push_back({"flatten", "Reshape", {rot, any()}});
    rot = node("flatten");
  }
  nodes.push_back({"re", "RotaryEmbedding", {rot, cap("pos"), cap("cos"), cap("sin")}, full_rotation, "com.microsoft"});
  Operand rotated = node("re");
  if (bsnh) {
    nodes.push_back({"unflatten", "Reshape", {rotated, any()}});
    rotated = node("unflatten");
  }
  nodes.push_back({"y", "Concat", {rotated, pass}});
  return Pattern{nodes};
}

std::optional<Replacement> build_partial(const Match& m, RewriteContext& ctx, bool bsnh) {
  const GraphIndex& g = ctx.index;
  const std::string& q = m.value("q");
  const std::vector<Dim>* x = g.dims(q);
  if (!x || x->size() != 4 || !(*x)[3].fixed()) return ctx.refuse(fmt::format("'{}' is not 4-D with a known head size", q));
  const int64_t h = (*x)[3].value;
  const int64_t axis = int_attr(m.node(g, "y"), "axis", 0);
  if (axis != -1 && axis != 3) return ctx.refuse(fmt::format("'{}' joins axis {}, not the last", m.node(g, "y").name, axis));
  int64_t rd = 0;
  if (m.nodes.count("parts")) {
    const Node& split = m.node(g, "parts");
    const std::vector<Dim>* a = g.dims(split.outputs[0]);
    const std::vector<Dim>* b = split.outputs.size() == 2 ? g.dims(split.outputs[1]) : nullptr;
    const int64_t split_axis = int_attr(split, "axis", 0);
    if (!a || !b || a->size() != 4 || b->size() != 4 || !a->back().fixed() || !b->back().fixed() || (split_axis != -1 && split_axis != 3) ||
        a->back().value + b->back().value != h)
      return ctx.refuse(fmt::format("'{}' does not split the last axis of '{}' into two parts of known sizes", split.name, q));
    rd = a->back().value;
  } else {
    const auto a = last_axis_range(g, m.node(g, "rot_in"), h), b = last_axis_range(g, m.node(g, "pass"), h);
    if (!a || !b || a->first != 0 || b->first != a->second || b->second != h)
      return ctx.refuse(fmt::format("the parts of '{}' are not [0, rd) and [rd, {}) of the last axis", q, h));
    rd = a->second;
  }
  if (rd <= 0 || rd >= h || rd % 2 != 0) return ctx.refuse(fmt::format("the rotated part has {} of {} columns", rd, h));
  const Dim& heads = (*x)[bsnh ? 2 : 1];
  if (!heads.fixed())
    return ctx.refuse(fmt::format("the head count of '{}' is not known; RotaryEmbedding needs num_heads with rotary_embedding_dim", q));
  const int64_t N = heads.value;
  const Node& re = m.node(g, "re");
  std::vector<Attribute> attrs = {build::attr("interleaved", int_attr(re, "interleaved", 0)), build::attr("num_heads", N),
                                  build::attr("rotary_embedding_dim", rd)};
  Replacement rep;
  const std::string name = ctx.fused_name(m, "RotaryEmbedding");
  const std::string out = m.node(g, "y").outputs[0];
  const std::vector<std::string> tables = {m.value("pos"), m.value("cos"), m.value("sin")};
  if (!bsnh) {
    rep.nodes.push_back(make_node("RotaryEmbedding", "com.microsoft", {q, tables[0], tables[1], tables[2]}, {out}, attrs, name));
    return rep;
  }
  const std::string flat_shape = ctx.names.value("rotary_flat_shape"), head_shape = ctx.names.value("rotary_head_shape");
  const std::string flat = ctx.names.value(out + "_flat"), rotated = ctx.names.value(out + "_rotated");
  rep.initializers.push_back({flat_shape, Tensor::from_vector<int64_t>({3}, {0, 0, N * h})});
  rep.initializers.push_back({head_shape, Tensor::from_vector<int64_t>({4}, {0, 0, N, h})});
  rep.nodes.push_back(make_node("Reshape", "", {q, flat_shape}, {flat}, {}, ctx.names.node(name + "/flatten")));
  rep.nodes.push_back(make_node("RotaryEmbedding", "com.microsoft", {flat, tables[0], tables[1], tables[2]}, {rotated}, attrs, name));
  rep.nodes.push_back(make_node("Reshape", "", {rotated, head_shape}, {out}, {}, ctx.names.node(name + "/unflatten")));
  return rep;
}

// --explain for a rotate-half without its Neg, Concat(x2, x1) (no Neg for the anchor to find).
void explain_missing_neg(const Model& model, const PassContext& ctx) {
  const GraphIndex g(model.graph, ctx.inference);
  const std::vector<bool> none(model.graph.nodes.size(), false);
  for (bool split : {false, true}) {
    std::vector<PatternNode> nodes;
    if (split) {
      nodes.push_back({"halves", "Split", {cap("x"), opt()}});
      nodes.push_back({"rot", "Concat", {node("halves", 1), node("halves", 0)}});
    } else {
      nodes.push_back({"first", "Slice", {cap("x"), any(), any(), opt(), opt()}});
      nodes.push_back({"second", "Slice", {cap("x"), any(), any(), opt(), opt()}});
      nodes.push_back({"rot", "Concat", {node("second"), node("first")}});
    }
    nodes.push_back({"rs", "Mul", {node("rot"), cap("sin")}});
    nodes.push_back({"xc", "Mul", {cap("xc0"), cap("xc1")}});
    nodes.push_back({"y", "Add", {node("rs"), node("xc")}});
    const Pattern p{nodes};
    for (int i = 0; i < int(model.graph.nodes.size()); ++i) {
      if (model.graph.nodes[size_t(i)].op_type != "Add") continue;
      if (const auto m = match(p, g, i, none)) {
        ctx.explain->add(kPass, m->node(g, "rot").name, "the halves are swapped without a Neg: Concat(x2, x1) is not rotate_half");
        ctx.explain->count(kPass, 1, 0);
      }
    }
  }
}

}  // namespace

Pass rotary_embedding_pass() {
  return {kPass, "Fused RotaryEmbedding", Level::Extended, [](Model& model, PassContext& ctx) {
            auto caches = std::make_shared<CacheMap>();
            const std::string sign = "rotate-half has the sign on the first half: Concat(x2, -x1) is Concat(-x2, x1) negated";
            Rewrite r{"RotaryEmbedding",
                      {rotary_pattern(false, true, ""), rotary_pattern(true, true, ""), rotary_pattern(false, false, sign),
                       rotary_pattern(true, false, sign)},
                      [caches](const Match& m, RewriteContext& rc) { return build(m, rc, *caches); }};
            const int fused = apply(r, model, ctx.inference, ctx.explain, kPass) + fuse_pairwise_rotary(model, ctx, *caches);
            if (ctx.explain) explain_missing_neg(model, ctx);
            // Partial rotations: no candidate count (every full RotaryEmbedding would be one); a
            // refused match still says why.
            Explain* explain = ctx.explain;
            for (const bool bsnh : {false, true}) {
              Rewrite partial{"RotaryEmbedding (partial)",
                              {partial_pattern(false, bsnh), partial_pattern(true, bsnh)},
                              [bsnh, explain](const Match& m, RewriteContext& rc) {
                                auto rep = build_partial(m, rc, bsnh);
                                if (!rep && explain)
                                  explain->add(kPass, m.node(rc.index, "y").name,
                                               "the partial rotation stays Slice + RotaryEmbedding + Concat: " + rc.refusal);
                                return rep;
                              }};
              apply(partial, model, ctx.inference, nullptr, kPass);
            }
            return fused;
          }};
}

}  // namespace refeval::optimize
