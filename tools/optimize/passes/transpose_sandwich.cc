// A product between a Transpose and its inverse: Transpose(x, p) -> MatMul(., W) [-> Add(., b)]
// -> Transpose(., p^-1) is MatMul(x, W) [+ b] when p keeps the last axis last. A product with a
// 2-D W and a bias over the last axis act on each row alone, so the order of the rows does not
// matter. torch's nn.MultiheadAttention leaves one around every out-projection (its
// sequence-first layout, undone for batch_first; ViT, nn.TransformerEncoder) once the attention is
// fused and gemm-reshape has turned the 2-D Gemm back into a MatMul on the 3-D rows.
#include <fmt/format.h>

#include "../pass.h"

namespace refeval::optimize {
namespace {

bool keeps_last_axis(const Node& n) {
  const std::vector<int64_t> p = ints_attr(n, "perm");
  return !p.empty() && p.back() == int64_t(p.size()) - 1;
}

std::optional<Replacement> unwrap(const Match& m, RewriteContext& ctx, bool with_bias) {
  const GraphIndex& g = ctx.index;
  const std::vector<int64_t> p = ints_attr(m.node(g, "in"), "perm"), q = ints_attr(m.node(g, "out"), "perm");
  if (p.size() != q.size()) return ctx.refuse("the two Transposes have different ranks");
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] < 0 || size_t(q[i]) >= p.size() || p[size_t(q[i])] != int64_t(i)) return ctx.refuse("the second Transpose does not undo the first");
  const Tensor* w = g.constant(m.value("w"));
  if (!w || w->rank() != 2) return ctx.refuse("the product's right operand is not a 2-D constant");
  if (with_bias) {
    const Tensor* b = g.constant(m.value("b"));
    if (!b || b->rank() != 1 || b->dim(0) != w->dim(1)) return ctx.refuse(fmt::format("the added value is not a 1-D bias of {}", w->dim(1)));
  }
  Replacement rep;
  const Node& out = m.node(g, "out");
  if (!with_bias) {
    rep.nodes.push_back(make_node("MatMul", "", {m.value("x"), m.value("w")}, out.outputs, {}, ctx.fused_name(m, "MatMul")));
    return rep;
  }
  const std::string product = ctx.names.value(m.node(g, "mm").outputs[0] + "_rows");
  rep.nodes.push_back(make_node("MatMul", "", {m.value("x"), m.value("w")}, {product}, {}, ctx.fused_name(m, "MatMul")));
  rep.nodes.push_back(make_node("Add", "", {product, m.value("b")}, out.outputs, {}, ctx.fused_name(m, "Add")));
  return rep;
}

}  // namespace

Pass transpose_sandwich_pass() {
  const char* why = "Transpose keeping the last axis last";
  Pattern biased{{{"in", "Transpose", {cap("x")}, keeps_last_axis, "", why},
                  {"mm", "MatMul", {node("in"), konst("w")}},
                  {"add", "Add", {node("mm"), konst("b")}},
                  {"out", "Transpose", {node("add")}, keeps_last_axis, "", why}}};
  Pattern plain{{{"in", "Transpose", {cap("x")}, keeps_last_axis, "", why},
                 {"mm", "MatMul", {node("in"), konst("w")}},
                 {"out", "Transpose", {node("mm")}, keeps_last_axis, "", why}}};
  Rewrite with_bias{"Transpose pair around MatMul+Add", {biased}, [](const Match& m, RewriteContext& ctx) { return unwrap(m, ctx, true); }};
  Rewrite without{"Transpose pair around MatMul", {plain}, [](const Match& m, RewriteContext& ctx) { return unwrap(m, ctx, false); }};
  return {"transpose-sandwich", "Removed Transpose pair around a product", Level::Extended, [=](Model& m, PassContext& ctx) {
            return apply(with_bias, m, ctx.inference, ctx.explain, "transpose-sandwich") + apply(without, m, ctx.inference, ctx.explain, "transpose-sandwich");
          }};
}

}  // namespace refeval::optimize
