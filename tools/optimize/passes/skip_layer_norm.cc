// SkipLayerNormalization and SkipSimplifiedLayerNormalization (ORT's SkipLayerNormFusion, and its
// bias variant), com.microsoft:
//   LayerNormalization(a + b)           -> SkipLayerNormalization(a, b, gamma, beta?)
//   SimplifiedLayerNormalization(a + b) -> SkipSimplifiedLayerNormalization(a, b, gamma)   (Llama)
// when a and b are activations (not constants), a has rank 3 and b a's shape, (1, S, H) or (S, H)
// (the skip shapes the operators broadcast), normalising over the last axis with 1-D gamma (and
// beta) of H and a's type, the statistics outputs unread. A sum that other nodes read too (the
// residual stream) becomes output 3.
//   SkipLayerNormalization(Add(x, bias), skip, ...) -> SkipLayerNormalization(x, skip, ..., bias)
// for a 1-D constant bias and x of the sum's shape.
#include <fmt/format.h>

#include "../pass.h"
#include "norm_common.h"
#include "refeval/builder.h"

namespace refeval::optimize {
namespace {

bool is_skip_shape(const std::vector<Dim>& input, const std::vector<Dim>& skip) {
  if (input.size() != 3) return false;
  if (same_shape(input, skip)) return true;
  const std::vector<Dim> tail(input.begin() + 1, input.end());
  if (skip.size() == 2) return same_shape(tail, skip);
  return skip.size() == 3 && skip[0].fixed() && skip[0].value == 1 && same_shape(tail, {skip.begin() + 1, skip.end()});
}

bool only_first_output(const Node& n) {
  return std::all_of(n.outputs.begin() + 1, n.outputs.end(), [](const std::string& o) { return o.empty(); });
}

// Add(a, b) then a (Simplified)LayerNormalization over the last axis -> Skip(Simplified)LayerNormalization.
std::optional<Replacement> build_skip(const Match& m, RewriteContext& ctx, bool rms) {
  const GraphIndex& g = ctx.index;
  const Node& ln = m.node(g, "ln");
  std::string a = m.value("a"), b = m.value("b");
  // A constant of the skip's shape (position embeddings folded for fixed shapes) is a skip too; a
  // 1-D constant is a bias, and two constants are not an activation.
  if (g.constant(a) && g.constant(b)) return ctx.refuse(fmt::format("the Add {} adds two constants", node_label(m.node(g, "sum"))));
  for (const std::string& v : {a, b})
    if (const Tensor* t = g.constant(v); t && t->rank() < 2)
      return ctx.refuse(fmt::format("the Add {} adds the {}-D constant '{}', a bias, not a residual", node_label(m.node(g, "sum")), t->rank(), v));
  if (g.constant(a)) std::swap(a, b);
  const std::vector<Dim>*da = g.dims(a), *db = g.dims(b);
  if (!da || !db) return ctx.refuse(fmt::format("the shape of '{}' is not known", da ? b : a));
  if (!is_skip_shape(*da, *db)) {
    if (!is_skip_shape(*db, *da))
      return ctx.refuse(fmt::format("'{}' and '{}' are not (B, S, H) and a skip of that shape, (1, S, H) or (S, H)", a, b));
    std::swap(a, b);
  }
  if (const int64_t axis = int_attr(ln, "axis", -1); axis != -1 && axis != int64_t(da->size()) - 1)
    return ctx.refuse(fmt::format("{} normalises from axis {}, not the last axis", node_label(ln), axis));
  if (!only_first_output(ln)) return ctx.refuse(fmt::format("the statistics outputs of {} are read", node_label(ln)));
  std::vector<std::string> inputs = {a, b, m.value("gamma")};
  std::vector<std::string> roles = {"gamma"};
  if (!rms && ln.inputs.size() > 2 && !ln.inputs[2].empty()) inputs.push_back(ln.inputs[2]), roles.push_back("beta");
  for (size_t i = 0; i < roles.size(); ++i)
    if (std::string problem = channel_vector_problem(roles[i], inputs[i + 2], a, g); !problem.empty()) return ctx.refuse(problem);
  const std::string& sum = m.node(g, "sum").outputs[0];
  std::vector<std::string> outputs = {ln.outputs[0]};
  if (g.is_graph_output(sum) || g.consumers(sum) != std::vector<int>{m.nodes.at("ln")}) outputs = {ln.outputs[0], "", "", sum};
  const std::string op = rms ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization";
  // The Skip ops' epsilon defaults to 1e-12, the plain ones' to 1e-5: always written.
  return Replacement{{make_node(op, "com.microsoft", inputs, outputs, {build::attr("epsilon", float_attr(ln, "epsilon", 1e-5f))},
                                ctx.fused_name(m, op))},
                     {}};
}

}  // namespace

Pass skip_layer_norm_pass() {
  Pattern p{{{"sum", "Add", {cap("a"), cap("b")}}, {"ln", "LayerNormalization", {node("sum"), cap("gamma"), opt()}}}, {"sum"}};
  Rewrite r{"SkipLayerNormalization", {p}, [](const Match& m, RewriteContext& ctx) { return build_skip(m, ctx, false); }};
  return rewrite_pass("skip-layer-norm", Level::Extended, std::move(r));
}

Pass skip_simplified_layer_norm_pass() {
  Pattern p{{{"sum", "Add", {cap("a"), cap("b")}}, {"ln", "SimplifiedLayerNormalization", {node("sum"), cap("gamma")}}}, {"sum"}};
  Rewrite r{"SkipSimplifiedLayerNormalization", {p}, [](const Match& m, RewriteContext& ctx) { return build_skip(m, ctx, true); }};
  return rewrite_pass("skip-simplified-layer-norm", Level::Extended, std::move(r));
}

Pass bias_skip_layer_norm_pass() {
  auto four_inputs = [](const Node& n) { return n.domain == "com.microsoft"; };
  std::vector<Pattern> patterns;
  for (int side = 0; side < 2; ++side) {
    std::vector<Operand> inputs = {cap("skip"), cap("skip"), cap("gamma"), cap("beta")};
    inputs[size_t(side)] = node("add");
    inputs[size_t(1 - side)] = cap("skip");
    patterns.push_back(Pattern{{{"add", "Add", {cap("x"), konst("bias")}},
                                {"sln", "SkipLayerNormalization", inputs, four_inputs, "com.microsoft"}}});
  }
  Rewrite r{"SkipLayerNormalization (bias)", patterns, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              const Tensor* bias = g.constant(m.value("bias"));
              const std::vector<Dim>* dx = g.dims(m.value("x"));
              const std::vector<Dim>* dsum = g.dims(m.node(g, "add").outputs[0]);
              if (g.constant(m.value("x")) || bias->rank() != 1 || !dx || !dsum || !same_shape(*dx, *dsum)) return std::nullopt;
              if (dx->size() != 3 || !(*dx)[2].fixed() || bias->dim(0) != (*dx)[2].value) return std::nullopt;
              Node sln = m.node(g, "sln");
              const bool add_first = sln.inputs[0] == m.node(g, "add").outputs[0];
              sln.inputs = {m.value("x"), add_first ? sln.inputs[1] : sln.inputs[0], m.value("gamma"), m.value("beta"), m.value("bias")};
              if (!add_first) {  // x becomes the input; the old input must then be a valid skip
                const std::vector<Dim>* ds = g.dims(sln.inputs[1]);
                if (!ds || !same_shape(*ds, *dx)) return std::nullopt;
              }
              sln.name = ctx.fused_name(m, "SkipLayerNormalization");
              return Replacement{{sln}, {}};
            }};
  return rewrite_pass("bias-skip-layer-norm", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
