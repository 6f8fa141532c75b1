// GELU after a bias add (ORT's BiasGeluFusion): Gelu(x + bias) -> BiasGelu(x, bias) and
// FastGelu(x + bias) -> FastGelu(x, bias), for a 1-D constant bias over x's last axis.
// MatMul(Transpose(a), b) and MatMul(a, Transpose(b)), the Transpose swapping the last two axes,
// -> FusedMatMul with transA / transB (ORT's MatmulTransposeFusion); the Transpose of a constant
// (a tied embedding read transposed) is absorbed instead of copied.
#include <numeric>

#include <fmt/format.h>

#include "../pass.h"
#include "refeval/builder.h"

namespace refeval::optimize {
namespace {

bool bias_fits(const GraphIndex& g, const std::string& x, const std::string& bias) {
  const Tensor* b = g.constant(bias);
  const std::vector<Dim>* dx = g.dims(x);
  return b && b->rank() == 1 && dx && !dx->empty() && dx->back().fixed() && dx->back().value == b->dim(0) && !g.constant(x);
}

bool swaps_last_two(const Node& n) {
  const std::vector<int64_t> p = ints_attr(n, "perm");
  if (p.size() < 2) return false;
  std::vector<int64_t> want(p.size());
  std::iota(want.begin(), want.end(), 0);
  std::swap(want[want.size() - 1], want[want.size() - 2]);
  return p == want;
}

}  // namespace

Pass bias_gelu_pass() {
  std::vector<Pattern> patterns;
  for (const char* op : {"Gelu", "FastGelu"})
    patterns.push_back(Pattern{{{"add", "Add", {cap("x"), konst("bias")}}, {"gelu", op, {node("add")}, nullptr, "com.microsoft"}}});
  for (Pattern& p : patterns) p.anchor = "gelu";
  Rewrite r{"BiasGelu", patterns, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              if (!bias_fits(ctx.index, m.value("x"), m.value("bias")))
                return ctx.refuse(fmt::format("the added '{}' is not a 1-D constant over the last axis of '{}' (or that shape is unknown)",
                                              m.value("bias"), m.value("x")));
              const Node& gelu = m.node(ctx.index, "gelu");
              const std::string op = gelu.op_type == "Gelu" ? "BiasGelu" : "FastGelu";
              return Replacement{{make_node(op, "com.microsoft", {m.value("x"), m.value("bias")}, gelu.outputs, {},
                                            ctx.fused_name(m, op))},
                                 {}};
            }};
  return rewrite_pass("bias-gelu", Level::Extended, std::move(r));
}

Pass fused_matmul_pass() {
  std::vector<Pattern> patterns = {
      Pattern{{{"t", "Transpose", {cap("a")}, swaps_last_two}, {"mm", "MatMul", {node("t"), cap("b")}}}, {}, "t"},
      Pattern{{{"t", "Transpose", {cap("b")}, swaps_last_two}, {"mm", "MatMul", {cap("a"), node("t")}}}, {}, "t"},
  };
  Rewrite r{"FusedMatMul", patterns, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const Node& t = m.node(ctx.index, "t");
              const Node& mm = m.node(ctx.index, "mm");
              const bool trans_a = mm.inputs[0] == t.outputs[0];
              const std::vector<Dim>* da = ctx.index.dims(m.value("a"));
              const std::vector<Dim>* db = ctx.index.dims(m.value("b"));
              // FusedMatMul transposes the last two axes of an operand of rank 2 or more.
              if (!da || !db || da->size() < 2 || db->size() < 2) return std::nullopt;
              return Replacement{{make_node("FusedMatMul", "com.microsoft", {m.value("a"), m.value("b")}, mm.outputs,
                                            {build::attr("transA", int64_t(trans_a ? 1 : 0)), build::attr("transB", int64_t(trans_a ? 0 : 1))},
                                            ctx.fused_name(m, "FusedMatMul"))},
                                 {}};
            }};
  return rewrite_pass("fused-matmul", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
