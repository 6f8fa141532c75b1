// SkipLayerNormalization (ORT's SkipLayerNormFusion and its bias variant), com.microsoft:
//   LayerNormalization(a + b) -> SkipLayerNormalization(a, b, gamma, beta)
// when a and b are activations (not constants), a has rank 3 and b a's shape, (1, S, H) or (S, H)
// (the skip shapes the operator broadcasts), normalising over the last axis with 1-D gamma and
// beta. A sum that other nodes read too (the residual stream) becomes output 3.
//   SkipLayerNormalization(Add(x, bias), skip, ...) -> SkipLayerNormalization(x, skip, ..., bias)
// for a 1-D constant bias and x of the sum's shape.
#include "../pass.h"
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

bool ln_last_axis(const Node& n) {
  return int_attr(n, "axis", -1) == -1 && (n.outputs.size() == 1 || std::all_of(n.outputs.begin() + 1, n.outputs.end(), [](const std::string& o) { return o.empty(); }));
}

}  // namespace

Pass skip_layer_norm_pass() {
  Pattern p{{{"sum", "Add", {cap("a"), cap("b")}},
             {"ln", "LayerNormalization", {node("sum"), konst("gamma"), konst("beta")}, ln_last_axis}},
            {"sum"}};
  Rewrite r{"SkipLayerNormalization", {p}, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              std::string a = m.value("a"), b = m.value("b");
              if (g.constant(a) || g.constant(b)) return std::nullopt;
              const std::vector<Dim>*da = g.dims(a), *db = g.dims(b);
              if (!da || !db) return std::nullopt;
              if (!is_skip_shape(*da, *db)) {
                if (!is_skip_shape(*db, *da)) return std::nullopt;
                std::swap(a, b);
              }
              const Tensor* gamma = g.constant(m.value("gamma"));
              const Tensor* beta = g.constant(m.value("beta"));
              const std::vector<Dim>& in = *g.dims(a);
              if (gamma->rank() != 1 || beta->rank() != 1 || !in[2].fixed() || gamma->dim(0) != in[2].value || beta->dim(0) != in[2].value)
                return std::nullopt;
              const Node& ln = m.node(g, "ln");
              const std::string& sum = m.node(g, "sum").outputs[0];
              std::vector<std::string> outputs = {ln.outputs[0]};
              if (g.is_used(sum) && g.consumers(sum) != std::vector<int>{m.nodes.at("ln")}) outputs = {ln.outputs[0], "", "", sum};
              if (g.is_graph_output(sum)) outputs = {ln.outputs[0], "", "", sum};
              return Replacement{{make_node("SkipLayerNormalization", "com.microsoft", {a, b, m.value("gamma"), m.value("beta")}, outputs,
                                            {build::attr("epsilon", float_attr(ln, "epsilon", 1e-5f))},
                                            ctx.fused_name(m, "SkipLayerNormalization"))},
                                 {}};
            }};
  return rewrite_pass("skip-layer-norm", Level::Extended, std::move(r));
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
