// Basic removals (ORT's EliminateIdentity, EliminateDropout, CastElimination, ExpandElimination,
// a Concat with empty parts, a Slice of everything, and friends): a node that passes its input through unchanged is dropped and its readers read
// the input. A node whose output is a graph output stays (the output keeps its name).
#include <map>
#include <set>
#include <numeric>

#include "../pass.h"
#include "refeval/compute_vector.h"

namespace refeval::optimize {
namespace {

// Drops node i, its readers reading `input` instead of its single output.
bool bypass(Graph& g, const GraphIndex& index, size_t i, const std::string& input, std::vector<bool>& drop) {
  const Node& n = g.nodes[i];
  if (n.outputs.empty() || n.outputs[0].empty() || index.is_graph_output(n.outputs[0]) || input.empty()) return false;
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (!n.outputs[k].empty() && index.is_used(n.outputs[k])) return false;
  drop[i] = true;
  return true;
}

// A no-op writing a graph output (Phi's `present.0.key`, a Cast to float of a float Concat):
// its input, a value only it reads, takes the output's name, so what computes it is seen whole.
// The node producing the input is renamed in place; returns whether node i was taken out so.
bool hand_over_output(Graph& g, const GraphIndex& index, size_t i, const std::string& input, std::vector<bool>& drop) {
  const Node& n = g.nodes[i];
  const int p = index.producer(input);
  if (n.outputs.size() != 1 || !index.is_graph_output(n.outputs[0]) || p < 0 || drop[size_t(p)] || index.is_graph_output(input) ||
      index.consumers(input).size() != 1)
    return false;
  for (std::string& out : g.nodes[size_t(p)].outputs)
    if (out == input) out = n.outputs[0];
  drop[i] = true;
  return true;
}

int bypass_all(Model& m, const Inference* inference, const std::function<std::string(const Node&, const GraphIndex&)>& passes_through) {
  Graph& g = m.graph;
  const GraphIndex index(g, inference);
  std::vector<bool> drop(g.nodes.size(), false);
  std::vector<std::pair<std::string, std::string>> renames;
  std::map<std::string, std::string> alias;  // a dropped output -> the value its readers read now
  std::set<std::string> handed;               // inputs renamed to a graph output
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::string input = passes_through(g.nodes[i], index);
    if (auto it = alias.find(input); it != alias.end()) input = it->second;  // chains, in graph order
    if (input.empty()) continue;
    if (bypass(g, index, i, input, drop)) {
      renames.emplace_back(g.nodes[i].outputs[0], input);
      alias[g.nodes[i].outputs[0]] = input;
    } else if (input == passes_through(g.nodes[i], index) && !handed.count(input) && hand_over_output(g, index, i, input, drop)) {
      handed.insert(input);
    }
  }
  return drop_nodes(g, drop, renames);
}

bool standard(const Node& n) { return n.domain.empty(); }

}  // namespace

Pass identity_elimination_pass() {
  return {"identity", "Removed Identity", Level::Basic, [](Model& m, PassContext& ctx) {
            return bypass_all(m, ctx.inference, [](const Node& n, const GraphIndex&) {
              return standard(n) && n.op_type == "Identity" && n.inputs.size() == 1 ? n.inputs[0] : std::string();
            });
          }};
}

Pass dropout_elimination_pass() {
  // Dropout from opset 7 is the identity outside training; from 12 only when training_mode is
  // absent or a constant false. Its mask output must be unused.
  return {"dropout", "Removed Dropout", Level::Basic, [](Model& m, PassContext& ctx) {
            const int64_t opset = m.opsets.count("") ? m.opsets.at("") : 0;
            return bypass_all(m, ctx.inference, [opset](const Node& n, const GraphIndex& g) {
              if (!standard(n) || n.op_type != "Dropout" || opset < 7 || n.inputs.empty()) return std::string();
              if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
                const auto training = g.scalar(n.inputs[2]);
                if (!training || *training != 0) return std::string();
              }
              return n.inputs[0];
            });
          }};
}

// Every element of the floating or integer constant `c` equals v.
bool all_equal(const GraphIndex& g, const std::string& c, double v) {
  const Tensor* t = g.constant(c);
  if (!t || t->size() == 0 || t->size() > 4096) return false;
  std::vector<double> d;
  if (is_integer_dtype(t->dtype())) {
    const auto ints = g.ints(c);
    if (!ints) return false;
    d.assign(ints->begin(), ints->end());
  } else if (t->dtype() == DType::Float || t->dtype() == DType::Double || t->dtype() == DType::Float16 || t->dtype() == DType::BFloat16) {
    d = to_doubles(*t);
  } else {
    return false;
  }
  return std::all_of(d.begin(), d.end(), [v](double x) { return x == v; });
}

Pass noop_elimination_pass() {
  return {"noop", "Removed no-op node", Level::Basic, [](Model& m, PassContext& ctx) {
            return bypass_all(m, ctx.inference, [](const Node& n, const GraphIndex& g) -> std::string {
              if (!standard(n) || n.inputs.empty() || n.outputs.empty()) return "";
              const std::string& x = n.inputs[0];
              if (n.op_type == "Cast") {
                const ValueType* t = g.type(x);
                const int64_t to = int_attr(n, "to", -1);
                return t && t->kind == ValueType::Kind::Tensor && int64_t(t->dtype) == to ? x : "";
              }
              if (n.op_type == "Reshape" || n.op_type == "Expand" || n.op_type == "Squeeze" || n.op_type == "Unsqueeze" ||
                  n.op_type == "Flatten") {
                const auto* in = g.dims(x);
                const auto* out = g.dims(n.outputs[0]);
                return in && out && same_shape(*in, *out) ? x : "";
              }
              // x + zeros, zeros a ConstantOfShape of 0 no larger than x (GPT-NeoX's baddbmm of a
              // zeros tensor with beta 1).
              if ((n.op_type == "Add" || n.op_type == "Sub") && n.inputs.size() == 2) {
                for (int side = 1; side >= (n.op_type == "Add" ? 0 : 1); --side) {
                  const int p = g.producer(n.inputs[size_t(side)]);
                  if (p < 0 || g.graph().nodes[size_t(p)].op_type != "ConstantOfShape") continue;
                  const Node& c = g.graph().nodes[size_t(p)];
                  const Attribute* value = c.find_attribute("value");
                  if (value && scalar_of(value->t) != 0.0) continue;
                  const std::string& other = n.inputs[size_t(1 - side)];
                  const auto* in = g.dims(other);
                  const auto* out = g.dims(n.outputs[0]);
                  const ValueType* ti = g.type(other);
                  const ValueType* to = g.type(n.outputs[0]);
                  if (in && out && same_shape(*in, *out) && ti && to && ti->dtype == to->dtype) return other;
                }
              }
              // x * 1, x / 1, x + 0, x - 0 (torch writes `1.0 / t` as Reciprocal then Mul by 1.0):
              // the constant must not broadcast x to a larger shape.
              if ((n.op_type == "Mul" || n.op_type == "Div" || n.op_type == "Add" || n.op_type == "Sub") && n.inputs.size() == 2) {
                const double identity = n.op_type == "Mul" || n.op_type == "Div" ? 1.0 : 0.0;
                const bool commutes = n.op_type == "Mul" || n.op_type == "Add";
                for (int side = 1; side >= (commutes ? 0 : 1); --side) {
                  const std::string& c = n.inputs[size_t(side)];
                  const std::string& other = n.inputs[size_t(1 - side)];
                  // Only a scalar: a vector of ones is a LayerNorm's gamma (Hugging Face's default
                  // init), which the fusions must still see.
                  const Tensor* t = g.constant(c);
                  if (!t || t->size() != 1 || g.constant(other) || !all_equal(g, c, identity)) continue;
                  const auto* in = g.dims(other);
                  const auto* out = g.dims(n.outputs[0]);
                  const bool keeps_shape = (in && out && same_shape(*in, *out)) ||
                                           (in && size_t(t->rank()) <= in->size() &&
                                            std::all_of(t->shape().begin(), t->shape().end(), [](int64_t d) { return d == 1; }));
                  if (keeps_shape) return other;
                }
                return "";
              }
              // A Concat of one value and empty ones (Phi's `cat((rotated, q[..., rot:]))` with
              // every dim rotated) is that value: the others have size 0 on the axis.
              if (n.op_type == "Concat" && n.inputs.size() >= 2) {
                std::string kept;
                for (const std::string& in : n.inputs) {
                  const auto* d = in.empty() ? nullptr : g.dims(in);
                  if (!d || d->empty()) return "";
                  const int64_t rank = int64_t(d->size()), a = int_attr(n, "axis", 0);
                  if (a < -rank || a >= rank) return "";  // the evaluator refuses it when it runs
                  const Dim& along = (*d)[size_t(a < 0 ? a + rank : a)];
                  if (along.fixed() && along.value == 0) continue;
                  if (!kept.empty()) return "";
                  kept = in;
                }
                return kept;
              }
              // A Slice with unit steps that keeps the shape (q[..., :rot] with rot the whole axis).
              if (n.op_type == "Slice" && n.inputs.size() >= 3) {
                if (n.inputs.size() > 4 && !n.inputs[4].empty() && !all_equal(g, n.inputs[4], 1.0)) return "";
                const auto* in = g.dims(x);
                const auto* out = g.dims(n.outputs[0]);
                return in && out && same_shape(*in, *out) ? x : "";
              }
              if (n.op_type == "Transpose") {
                const std::vector<int64_t> perm = ints_attr(n, "perm");
                std::vector<int64_t> id(perm.size());
                std::iota(id.begin(), id.end(), 0);
                return !perm.empty() && perm == id ? x : "";
              }
              return "";
            });
          }};
}

}  // namespace refeval::optimize
