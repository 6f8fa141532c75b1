// LayerNormalization from its decomposition (exports before opset 17, ORT's LayerNormFusion):
//   d = x - ReduceMean(x); y = d / Sqrt(ReduceMean(d^2) + eps) * gamma (+ beta)
// and SimplifiedLayerNormalization, RMSNorm (ORT's SimplifiedLayerNormFusion; ai.onnx domain as
// ORT registers it):
//   y = x / Sqrt(ReduceMean(x^2) + eps) * gamma
// in every form the exporters write: the square as Pow(v, 2) or v * v; the division as Div(v, s),
// v * Div(1, s) or v * Reciprocal(s) (torch's rsqrt); gamma and beta on either side; LayerNorm
// without beta; the statistics computed in float between a Cast of x and a Cast back to x's type
// (HF Llama's RMSNorm in fp16: Cast, normalise, Cast back, then the weight; with the weight
// before the Cast back, the Casts stay around the fused node). Fused only when both ReduceMeans reduce the last axis alone keeping it,
// epsilon is inside the square root and in (0, 0.01], gamma (and beta) are 1-D constants of x's
// last dim and x's type, and a Cast in widens x to float. The fused node reads x itself.
// Look-alikes (never fused, named under --explain): epsilon added outside the square root, and
// for RMSNorm the square root of the mean of x rather than of its square.
#include <fmt/format.h>

#include "../pass.h"
#include "norm_common.h"
#include "refeval/builder.h"

namespace refeval::optimize {
namespace {

using Nodes = std::vector<PatternNode>;

Nodes cat(std::initializer_list<Nodes> parts) {
  Nodes all;
  for (const Nodes& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// The square "sq" of v: Pow(v, 2) or v * v.
std::vector<Nodes> squares(const Operand& v) { return {{{"sq", "Pow", {v, val(2.0)}}}, {{"sq", "Mul", {v, v}}}}; }

// "n" = num / the output of pattern node `root`: Div, or a Mul by Div(1, root) or Reciprocal(root).
std::vector<Nodes> divisions(const Operand& num, const std::string& root) {
  return {{{"n", "Div", {num, node(root)}}},
          {{"inv", "Div", {val(1.0), node(root)}}, {"n", "Mul", {num, node("inv")}}},
          {{"inv", "Reciprocal", {node(root)}}, {"n", "Mul", {num, node("inv")}}}};
}

// Where the statistics read x: x itself, or a Cast "cin" of it (paired with a Cast back in the tail).
struct Head {
  Nodes nodes;
  Operand xf;
  bool cast;
};
std::vector<Head> heads() { return {{{}, cap("x"), false}, {{{"cin", "Cast", {cap("x")}}}, node("cin"), true}}; }

// gamma (and beta) applied to "n"; with a Cast head, after the Cast "cout" back to x's type. With
// gamma before the Cast back (Gemma), gamma is float and x narrower, which the fused operator does
// not take: the pattern without Cast head then fuses the normalisation between the two Casts.
Nodes tail(bool cast, bool beta) {
  Nodes t = {{"g", "Mul", {node(cast ? "cout" : "n"), cap("gamma")}}};
  if (beta) t.push_back({"b", "Add", {node("g"), cap("beta")}});
  if (cast) t.insert(t.begin(), {"cout", "Cast", {node("n")}});
  return t;
}

const std::string& root_output(const Match& m, const GraphIndex& g) { return m.node(g, m.pattern->root().id).outputs[0]; }

// The checks both fusions share; "" when the match may fuse.
std::string common_problem(const Match& m, const GraphIndex& g, const std::vector<std::string>& means, std::optional<float>& eps) {
  std::string problem;
  eps = norm_epsilon(m.value("eps"), g, problem);
  if (!eps) return problem;
  for (const std::string& id : means)
    if (problem = last_axis_mean_problem(m.node(g, id), g); !problem.empty()) return problem;
  const std::string& x = m.value("x");
  const Node* cast_in = m.nodes.count("cin") ? &m.node(g, "cin") : nullptr;
  if (problem = norm_types_problem(x, cast_in, root_output(m, g), g); !problem.empty()) return problem;
  return channel_vector_problem("gamma", m.value("gamma"), x, g);
}

// A LayerNorm without beta whose only reader adds a beta: the match with that Add fuses at the
// Add, which comes later in the graph (fusing here would leave the Add outside).
std::string bias_after(const Match& m, const GraphIndex& g) {
  const std::string& y = root_output(m, g);
  const std::vector<int>& readers = g.consumers(y);
  if (readers.size() != 1 || g.is_graph_output(y)) return "";
  const Node& add = g.graph().nodes[size_t(readers[0])];
  if (add.op_type != "Add" || add.inputs.size() != 2) return "";
  const std::string& beta = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
  if (!channel_vector_problem("beta", beta, m.value("x"), g).empty()) return "";
  return fmt::format("the Add {} after it adds beta '{}', fused with it", node_label(add), beta);
}

}  // namespace

Pass layer_norm_pass() {
  std::vector<Pattern> patterns;
  for (const Head& head : heads())
    for (const Nodes& square : squares(node("d")))
      for (const Nodes& division : divisions(node("d"), "std"))
        for (bool beta : {true, false})
          patterns.push_back(Pattern{cat({head.nodes,
                                          {{"mean", "ReduceMean", {head.xf, opt()}}, {"d", "Sub", {head.xf, node("mean")}}},
                                          square,
                                          {{"var", "ReduceMean", {node("sq"), opt()}},
                                           {"ve", "Add", {node("var"), konst("eps")}},
                                           {"std", "Sqrt", {node("ve")}}},
                                          division, tail(head.cast, beta)}),
                                     {}, "std"});
  for (const Nodes& square : squares(node("d")))
    patterns.push_back(Pattern{cat({{{"mean", "ReduceMean", {cap("x"), opt()}}, {"d", "Sub", {cap("x"), node("mean")}}},
                                    square,
                                    {{"var", "ReduceMean", {node("sq"), opt()}},
                                     {"std", "Sqrt", {node("var")}},
                                     {"se", "Add", {node("std"), konst("eps")}}}}),
                               {}, "std", "epsilon is added outside the square root"});
  Rewrite r{"LayerNormalization", patterns, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              std::optional<float> eps;
              if (std::string problem = common_problem(m, g, {"mean", "var"}, eps); !problem.empty()) return ctx.refuse(problem);
              std::vector<std::string> inputs = {m.value("x"), m.value("gamma")};
              if (!m.captures.count("beta")) {
                if (std::string bias = bias_after(m, g); !bias.empty()) return ctx.refuse(bias);
              } else {
                if (std::string problem = channel_vector_problem("beta", m.value("beta"), m.value("x"), g); !problem.empty())
                  return ctx.refuse(problem);
                inputs.push_back(m.value("beta"));
              }
              return Replacement{{make_node("LayerNormalization", "", inputs, {root_output(m, g)},
                                            {build::attr("axis", int64_t(-1)), build::attr("epsilon", *eps)},
                                            ctx.fused_name(m, "LayerNormalization"))},
                                 {}};
            }};
  return rewrite_pass("layer-norm", Level::Extended, std::move(r));
}

Pass simplified_layer_norm_pass() {
  std::vector<Pattern> patterns;
  for (const Head& head : heads())
    for (const Nodes& square : squares(head.xf))
      for (const Nodes& division : divisions(head.xf, "rms"))
        patterns.push_back(Pattern{cat({head.nodes, square,
                                        {{"ms", "ReduceMean", {node("sq"), opt()}},
                                         {"ve", "Add", {node("ms"), konst("eps")}},
                                         {"rms", "Sqrt", {node("ve")}}},
                                        division, tail(head.cast, false)}),
                                   {}, "rms"});
  for (const Nodes& square : squares(cap("x")))
    patterns.push_back(Pattern{cat({square,
                                    {{"ms", "ReduceMean", {node("sq"), opt()}},
                                     {"rms", "Sqrt", {node("ms")}},
                                     {"re", "Add", {node("rms"), konst("eps")}}}}),
                               {}, "rms", "epsilon is added outside the square root"});
  for (const Nodes& division : divisions(cap("x"), "rms"))
    patterns.push_back(Pattern{cat({{{"ms", "ReduceMean", {cap("x"), opt()}},
                                     {"ve", "Add", {node("ms"), konst("eps")}},
                                     {"rms", "Sqrt", {node("ve")}}},
                                    division}),
                               {}, "rms", "the square root is of the mean of x, not of the mean of its square"});
  Rewrite r{"SimplifiedLayerNormalization", patterns, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              std::optional<float> eps;
              if (std::string problem = common_problem(m, g, {"ms"}, eps); !problem.empty()) return ctx.refuse(problem);
              // x - mean(x) over the same axis: this is the variance of a LayerNorm, which the
              // layer-norm pass fuses whole (whichever of the two runs first).
              if (const int p = g.producer(m.value("x")); p >= 0 && g.graph().nodes[size_t(p)].op_type == "Sub") {
                const Node& sub = g.graph().nodes[size_t(p)];
                const int q = sub.inputs.size() == 2 ? g.producer(sub.inputs[1]) : -1;
                if (q >= 0 && g.graph().nodes[size_t(q)].op_type == "ReduceMean" && g.graph().nodes[size_t(q)].inputs[0] == sub.inputs[0])
                  return ctx.refuse(fmt::format("'{}' subtracts the mean first: a LayerNorm, for the layer-norm pass", sub.name));
              }
              return Replacement{{make_node("SimplifiedLayerNormalization", "", {m.value("x"), m.value("gamma")}, {root_output(m, g)},
                                            {build::attr("axis", int64_t(-1)), build::attr("epsilon", *eps)},
                                            ctx.fused_name(m, "SimplifiedLayerNormalization"))},
                                 {}};
            }};
  return rewrite_pass("simplified-layer-norm", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
