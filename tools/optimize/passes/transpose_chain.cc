// Transpose(Transpose(x, p), q) is Transpose(x, p o q), nothing when that is the identity;
// Squeeze(Unsqueeze(x, a), a) is x (same axes, as attributes or constant inputs).
#include <numeric>

#include "../pass.h"
#include "refeval/builder.h"

namespace refeval::optimize {
namespace {

// An invalid perm (which the evaluator refuses when the node runs) must not be composed into a
// valid-looking one.
bool perm_ok(const Node& n) {
  const std::vector<int64_t> p = ints_attr(n, "perm");
  return !p.empty() && is_permutation(p);
}

}  // namespace

Pass transpose_chain_pass() {
  Rewrite transposes{
      "Transpose chain",
      {Pattern{{{"inner", "Transpose", {cap("x")}, perm_ok}, {"outer", "Transpose", {node("inner")}, perm_ok}}}},
      [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
        const std::vector<int64_t> p = ints_attr(m.node(ctx.index, "inner"), "perm");
        const std::vector<int64_t> q = ints_attr(m.node(ctx.index, "outer"), "perm");
        if (p.size() != q.size()) return std::nullopt;
        std::vector<int64_t> composed(q.size()), id(q.size());
        for (size_t i = 0; i < q.size(); ++i) composed[i] = p[size_t(q[i])];  // out[i] = inner[q[i]] = x[p[q[i]]]
        std::iota(id.begin(), id.end(), 0);
        const Node& outer = m.node(ctx.index, "outer");
        if (composed == id)
          return Replacement{{make_node("Identity", "", {m.value("x")}, outer.outputs, {}, outer.name)}, {}};
        return Replacement{{make_node("Transpose", "", {m.value("x")}, outer.outputs, {build::attr("perm", composed)}, outer.name)}, {}};
      }};
  Rewrite squeeze{
      "Unsqueeze-Squeeze",
      {Pattern{{{"u", "Unsqueeze", {cap("x"), opt()}}, {"s", "Squeeze", {node("u"), opt()}}}}},
      [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
        const Node& u = m.node(ctx.index, "u");
        const Node& s = m.node(ctx.index, "s");
        const std::vector<int64_t> a = axes_of(u, ctx.index).value_or(std::vector<int64_t>{}), b = axes_of(s, ctx.index).value_or(std::vector<int64_t>{});
        if (a.empty() || a != b || std::any_of(a.begin(), a.end(), [](int64_t v) { return v < 0; })) return std::nullopt;
        return Replacement{{make_node("Identity", "", {m.value("x")}, s.outputs, {}, s.name)}, {}};
      }};
  // The Identity nodes left behind go with the identity pass that runs after this one.
  return {"transpose-chain", "Fused Transpose/Squeeze chain", Level::Basic, [=](Model& m, PassContext& ctx) {
            return apply(transposes, m, ctx.inference) + apply(squeeze, m, ctx.inference);
          }};
}

}  // namespace refeval::optimize
