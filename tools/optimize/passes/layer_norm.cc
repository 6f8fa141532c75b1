// LayerNormalization from its decomposition (exports before opset 17, ORT's LayerNormFusion):
//   d = x - ReduceMean(x); y = d / Sqrt(ReduceMean(d^2) + eps) * gamma + beta   (d^2 as Pow or d*d)
// and SimplifiedLayerNormalization (RMSNorm): y = x / Sqrt(ReduceMean(x^2) + eps) * gamma.
// Fused only when both ReduceMeans reduce the last axis alone with keepdims, the exponent is 2,
// epsilon sits inside the square root and is positive, and gamma (and beta) are 1-D constants.
#include "../pass.h"
#include "refeval/builder.h"

namespace refeval::optimize {
namespace {

// ReduceMean over the last axis only, keeping it: axes as attribute (< 18) or constant input.
bool last_axis_mean(const Node& n, const GraphIndex& g) {
  if (int_attr(n, "keepdims", 1) != 1) return false;
  std::vector<int64_t> axes = ints_attr(n, "axes");
  if (n.inputs.size() > 1) axes = g.ints(n.inputs[1]).value_or(std::vector<int64_t>{});
  if (axes.size() != 1) return false;
  if (axes[0] == -1) return true;
  const std::vector<Dim>* dims = g.dims(n.inputs[0]);
  return dims && axes[0] == int64_t(dims->size()) - 1;
}

bool one_d(const GraphIndex& g, const std::string& v) {
  const Tensor* t = g.constant(v);
  return t && t->rank() == 1;
}

std::optional<float> epsilon(const Match& m, const GraphIndex& g) {
  const auto eps = g.scalar(m.value("eps"));
  if (!eps || !(*eps > 0) || *eps > 1e-2) return std::nullopt;
  return float(*eps);
}

}  // namespace

Pass layer_norm_pass() {
  std::vector<Pattern> patterns;
  for (const PatternNode& square : {PatternNode{"sq", "Pow", {node("d"), val(2.0)}}, PatternNode{"sq", "Mul", {node("d"), node("d")}}})
    patterns.push_back(Pattern{{{"mean", "ReduceMean", {cap("x"), opt()}},
                                {"d", "Sub", {cap("x"), node("mean")}},
                                square,
                                {"var", "ReduceMean", {node("sq"), opt()}},
                                {"ve", "Add", {node("var"), konst("eps")}},
                                {"std", "Sqrt", {node("ve")}},
                                {"n", "Div", {node("d"), node("std")}},
                                {"g", "Mul", {node("n"), konst("gamma")}},
                                {"y", "Add", {node("g"), konst("beta")}}}});
  Rewrite r{"LayerNormalization", patterns, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              const auto eps = epsilon(m, g);
              if (!eps || !last_axis_mean(m.node(g, "mean"), g) || !last_axis_mean(m.node(g, "var"), g)) return std::nullopt;
              if (!one_d(g, m.value("gamma")) || !one_d(g, m.value("beta"))) return std::nullopt;
              const Node& y = m.node(g, "y");
              return Replacement{{make_node("LayerNormalization", "", {m.value("x"), m.value("gamma"), m.value("beta")}, {y.outputs[0]},
                                            {build::attr("axis", int64_t(-1)), build::attr("epsilon", *eps)},
                                            ctx.fused_name(m, "LayerNormalization"))},
                                 {}};
            }};
  return rewrite_pass("layer-norm", Level::Extended, std::move(r));
}

Pass simplified_layer_norm_pass() {
  Pattern p{{{"sq", "Pow", {cap("x"), val(2.0)}},
             {"ms", "ReduceMean", {node("sq"), opt()}},
             {"ve", "Add", {node("ms"), konst("eps")}},
             {"rms", "Sqrt", {node("ve")}},
             {"n", "Div", {cap("x"), node("rms")}},
             {"y", "Mul", {node("n"), konst("gamma")}}}};
  Rewrite r{"SimplifiedLayerNormalization", {p}, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              const auto eps = epsilon(m, g);
              if (!eps || !last_axis_mean(m.node(g, "ms"), g) || !one_d(g, m.value("gamma"))) return std::nullopt;
              const Node& y = m.node(g, "y");
              return Replacement{{make_node("SimplifiedLayerNormalization", "", {m.value("x"), m.value("gamma")}, {y.outputs[0]},
                                            {build::attr("axis", int64_t(-1)), build::attr("epsilon", *eps)},
                                            ctx.fused_name(m, "SimplifiedLayerNormalization"))},
                                 {}};
            }};
  return rewrite_pass("simplified-layer-norm", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
