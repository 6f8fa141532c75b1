#include "accuracy.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/evaluator.h"
#include "optimize/rewrite.h"
#include "refeval/observer.h"

namespace refeval::accuracy {
namespace {

// One main-graph node execution: what it was fed and what it made.
struct NodeRun {
  std::string id;
  Node node;
  int index = 0;
  Values inputs, outputs;
};

class NodeRecorder : public Observer {
 public:
  void after_node(const NodeEvent& e, Values& outputs) override {
    if (e.depth != 0) return;
    runs.push_back({e.id, e.node, e.index, e.inputs, outputs});
  }
  std::vector<NodeRun> runs;
};

// Replaces one main-graph node's outputs: that node "runs" in the model's precision inside the oracle.
class Substitute : public Observer {
 public:
  Substitute(std::string id, Values outputs) : id_(std::move(id)), outputs_(std::move(outputs)) {}
  void after_node(const NodeEvent& e, Values& outputs) override {
    if (e.depth == 0 && e.id == id_) outputs = outputs_;
  }

 private:
  std::string id_;
  Values outputs_;
};

// The oracle's input rounded to the type the model run saw there.
Value round_to(const Value& oracle, const Value& model) {
  if (!is_float_tensor(oracle) || !is_float_tensor(model) || oracle.tensor().dtype() == model.tensor().dtype()) return oracle;
  const Tensor& o = oracle.tensor();
  if (o.dtype() == DType::Double && model.tensor().dtype() == DType::Float) {
    Tensor out(DType::Float, o.shape());
    const double* src = o.data<double>();
    float* dst = out.data<float>();
    for (int64_t i = 0; i < o.size(); ++i) dst[i] = float(src[i]);
    return out;
  }
  return from_doubles(model.tensor().dtype(), o.shape(), to_doubles(o));
}

// Runs the main-graph nodes without a double path in the model's precision inside the oracle:
// their inputs rounded to the types the model run saw, their outputs widened back.
class Fallback : public Observer {
 public:
  void replace_inputs(const NodeEvent& e, Values& inputs) override {
    if (e.depth != 0) return;
    auto it = model_inputs.find(e.id);
    if (it == model_inputs.end()) return;
    for (size_t k = 0; k < inputs.size() && k < it->second.size(); ++k) inputs[k] = round_to(inputs[k], it->second[k]);
  }
  void after_node(const NodeEvent& e, Values& outputs) override {
    if (e.depth == 0 && model_inputs.count(e.id))
      for (Value& v : outputs) v = widen_value(v);
  }
  std::map<std::string, Values> model_inputs;  // node id -> what the model run fed it
};

// Runs one node alone on `in`; every output slot of the node, empty names left empty.
Values run_one(const Node& node, const OpsetMap& opsets, const Registry& reg, const std::map<std::string, Value>& in) {
  ReferenceEvaluator one = ReferenceEvaluator::from_node(node, opsets, EvaluatorOptions{&reg});
  std::vector<std::string> wanted;
  for (const std::string& o : node.outputs)
    if (!o.empty()) wanted.push_back(o);
  const Values got = one.run(wanted, in);
  Values full(node.outputs.size());
  for (size_t k = 0, w = 0; k < node.outputs.size(); ++k)
    if (!node.outputs[k].empty()) full[k] = got[w++];
  return full;
}

// oracle + (model - exact), in float64, element by element; the model's value where either of
// the node's runs is not finite.
Tensor add_delta(const Tensor& oracle, const Tensor& model, const Tensor& exact) {
  if (model.size() != oracle.size() || exact.size() != oracle.size()) return widen_value(model).tensor();
  Tensor out(DType::Double, oracle.shape());
  double* r = out.data<double>();
  const auto fill = [&](const double* o, const auto* m, const double* e) {
    for (int64_t i = 0; i < out.size(); ++i) {
      const double mi = double(m[i]);
      r[i] = std::isfinite(mi) && std::isfinite(e[i]) ? o[i] + (mi - e[i]) : mi;
    }
  };
  if (oracle.dtype() == DType::Double && exact.dtype() == DType::Double && model.dtype() == DType::Float) {
    fill(oracle.data<double>(), model.data<float>(), exact.data<double>());
  } else {
    const std::vector<double> o = to_doubles(oracle), m = to_doubles(model), e = to_doubles(exact);
    fill(o.data(), m.data(), e.data());
  }
  return out;
}

// Operators whose outputs are elements of their inputs (moved, selected, negated): on inputs
// rounded to the model's types, the model's kernel and the double kernel give the same values, so
// the node adds no error and its single-node runs are skipped.
bool is_exact_op(const std::string& op) {
  static const std::set<std::string> ops = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity",
                                            "Slice", "Gather", "GatherElements", "GatherND", "Concat", "Split",
                                            "Expand", "Tile", "Where", "Relu", "Neg", "Abs", "DepthToSpace", "SpaceToDepth"};
  return ops.count(op) > 0;
}

bool has_body(const Node& n) {
  return std::any_of(n.attributes.begin(), n.attributes.end(), [](const Attribute& a) { return a.g || !a.graphs.empty(); });
}

// The error of `run` outputs against `oracle` over every floating tensor pair, ulps in the types
// of the model-precision outputs `typed`.
Error outputs_error(const Values& run, const Values& oracle, const Values& typed, const std::vector<std::string>& names) {
  ErrorAccumulator acc;
  for (size_t k = 0; k < run.size() && k < oracle.size() && k < typed.size(); ++k)
    if (is_float_tensor(run[k]) && is_float_tensor(oracle[k]) && is_float_tensor(typed[k]))
      acc.add(run[k].tensor(), oracle[k].tensor(), names[k], typed[k].tensor().dtype());
  return acc.result();
}

}  // namespace

double NodeError::rank_key() const {
  // NaN/Inf where the oracle has numbers (an overflow) outranks any finite error.
  if (contribution) return contribution->nonfinite ? std::numeric_limits<double>::infinity() : contribution->rms;
  double worst = 0;
  for (const OutputError& o : outputs) worst = std::max(worst, o.accumulated.rms);
  return worst;
}

Report profile(const Model& model, const std::map<std::string, Value>& feeds, const Options& options) {
  const Registry& reg = options.registry ? *options.registry : Registry::builtin();
  Report report;

  ReferenceEvaluator low(model, EvaluatorOptions{&reg});
  NodeRecorder low_rec;
  low.add_observer(&low_rec);
  const Values low_out = low.run({}, feeds);
  low.remove_observer(&low_rec);
  report.nodes_run = low_rec.runs.size();

  // Operators whose declared element types leave out double, among the nodes that touch floats:
  // the oracle runs their model-precision kernel.
  const auto opset_of = [&](const Node& n) {
    auto it = model.opsets.find(n.domain);
    return it == model.opsets.end() ? int64_t(1) : it->second;
  };
  Fallback fallback;
  for (const NodeRun& r : low_rec.runs) {
    const bool touches_float = std::any_of(r.inputs.begin(), r.inputs.end(), is_float_tensor) ||
                               std::any_of(r.outputs.begin(), r.outputs.end(), is_float_tensor);
    const OpRegistration* op = reg.resolve(r.node.domain, r.node.op_type, opset_of(r.node));
    if (touches_float && op && !op->factory.types.empty() &&
        std::find(op->factory.types.begin(), op->factory.types.end(), DType::Double) == op->factory.types.end()) {
      report.fallback.push_back(fmt::format("{} ({})", r.id, r.node.op_type));
      fallback.model_inputs[r.id] = r.inputs;
    }
  }

  ReferenceEvaluator oracle(widen_model(model), EvaluatorOptions{&reg});
  oracle.add_observer(&fallback);
  std::map<std::string, Value> wide_feeds;
  for (const auto& [name, v] : feeds) wide_feeds.emplace(name, widen_value(v));
  NodeRecorder hi_rec;
  oracle.add_observer(&hi_rec);
  Values hi_out;
  try {
    hi_out = oracle.run({}, wide_feeds);
  } catch (const refeval::Error& e) {
    fail_runtime(fmt::format("the float64 oracle cannot run: {}", e.what()));
  }
  oracle.remove_observer(&hi_rec);
  if (hi_rec.runs.size() != low_rec.runs.size())
    fail_runtime(fmt::format("the oracle ran {} nodes but the model {}", hi_rec.runs.size(), low_rec.runs.size()));

  // Accumulated error of every value a node made; feeds and initializers are widened exactly.
  std::map<std::string, Error> value_error;
  std::vector<Values> local_out(low_rec.runs.size());
  for (size_t i = 0; i < low_rec.runs.size(); ++i) {
    const NodeRun& lo = low_rec.runs[i];
    const NodeRun& hi = hi_rec.runs[i];
    if (lo.id != hi.id) fail_runtime(fmt::format("the oracle ran '{}' where the model ran '{}'", hi.id, lo.id));
    NodeError ne{lo.id, lo.node.op_type, lo.index, {}, {}, fallback.model_inputs.count(lo.id) > 0, {}};

    // Local error: this node's kernel in the model's precision against the same node in float64,
    // both fed the oracle's inputs rounded to the types the model run saw. The rounding of the
    // inputs is their producers' error (it is in their local error), not this node's.
    Values model_k, double_k;  // the two single-node runs, every output slot (empty names: none)
    const bool exact = lo.node.domain.empty() && is_exact_op(lo.node.op_type);
    if (options.local && exact) {
      local_out[i] = hi.outputs;  // adds nothing: the oracle's outputs stand
    } else if (options.local) {
      if (has_body(lo.node)) ne.local_note = "has a body";
      else if (model.find_function(lo.node.domain, lo.node.op_type, lo.node.overload)) ne.local_note = "a model-local function";
      else {
        try {
          std::map<std::string, Value> in;
          for (size_t k = 0; k < lo.node.inputs.size() && k < hi.inputs.size(); ++k)
            if (!lo.node.inputs[k].empty()) in[lo.node.inputs[k]] = round_to(hi.inputs[k], lo.inputs[k]);
          model_k = run_one(lo.node, model.opsets, reg, in);
          if (ne.fallback) {
            for (const Value& v : model_k) double_k.push_back(widen_value(v));
          } else {
            Graph g;
            g.nodes = {lo.node};
            widen_graph(g);
            std::map<std::string, Value> wide_in;
            for (const auto& [name, v] : in) wide_in[name] = widen_value(v);
            double_k = run_one(g.nodes[0], model.opsets, reg, wide_in);
          }
          // What the oracle runs for this node alone in the model's precision (the contribution):
          // the oracle's outputs plus the error the node adds.
          Values full(lo.node.outputs.size());
          for (size_t k = 0; k < full.size() && k < hi.outputs.size(); ++k)
            full[k] = is_float_tensor(model_k[k]) && is_float_tensor(hi.outputs[k])
                          ? Value(add_delta(hi.outputs[k].tensor(), model_k[k].tensor(), double_k[k].tensor()))
                          : widen_value(model_k[k]);
          local_out[i] = std::move(full);
        } catch (const refeval::Error& e) {
          ne.local_note = e.what();
          model_k.clear();
        }
      }
    }

    double in_rel = 0;
    for (const std::string& name : lo.node.inputs)
      if (auto it = value_error.find(name); it != value_error.end()) in_rel = std::max(in_rel, it->second.rel_rms);
    for (size_t k = 0; k < lo.outputs.size() && k < hi.outputs.size(); ++k) {
      if (!is_float_tensor(lo.outputs[k]) || !is_float_tensor(hi.outputs[k])) continue;
      const std::string& name = lo.node.outputs[k];
      OutputError oe{name, lo.outputs[k].tensor().dtype(), {}, {}, {}};
      ErrorAccumulator acc;
      acc.add(lo.outputs[k].tensor(), hi.outputs[k].tensor(), name);
      oe.accumulated = acc.result();
      value_error[name] = oe.accumulated;
      if (in_rel > 0) oe.amplification = oe.accumulated.rel_rms / in_rel;
      if (k < model_k.size() && is_float_tensor(model_k[k]) && is_float_tensor(double_k[k]))
        oe.local = error_of(model_k[k].tensor(), double_k[k].tensor(), name);
      else if (options.local && exact)
        oe.local = error_of(hi.outputs[k].tensor(), hi.outputs[k].tensor(), name);  // zero, with the SQNR of its values
      ne.outputs.push_back(std::move(oe));
    }
    if (!ne.outputs.empty()) report.nodes.push_back(std::move(ne));
  }

  const std::vector<std::string> out_names = low.output_names();
  ErrorAccumulator total;
  for (size_t k = 0; k < low_out.size() && k < hi_out.size(); ++k) {
    if (!is_float_tensor(low_out[k]) || !is_float_tensor(hi_out[k])) continue;
    ErrorAccumulator acc;
    acc.add(low_out[k].tensor(), hi_out[k].tensor(), out_names[k]);
    total.add(low_out[k].tensor(), hi_out[k].tensor(), out_names[k]);
    report.outputs.push_back({out_names[k], low_out[k].tensor().dtype(), acc.result(), {}, {}});
  }
  report.outputs_total = total.result();

  // Contributions: the nodes with the largest local RMS error, one oracle run each with that node
  // alone in the model's precision.
  std::vector<size_t> order;
  for (size_t n = 0; n < report.nodes.size(); ++n) {
    const NodeError& ne = report.nodes[n];
    if (std::any_of(ne.outputs.begin(), ne.outputs.end(),
                    [](const OutputError& o) { return o.local && (o.local->rms > 0 || o.local->nonfinite > 0); }))
      order.push_back(n);
  }
  const auto local_rms = [&](size_t n) {
    double worst = 0;
    for (const OutputError& o : report.nodes[n].outputs)
      if (o.local) worst = std::max(worst, o.local->nonfinite ? std::numeric_limits<double>::infinity() : o.local->rms);
    return worst;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return local_rms(a) > local_rms(b); });
  if (order.size() > options.top_k) order.resize(options.top_k);
  std::map<std::string, size_t> run_of;
  for (size_t i = 0; i < low_rec.runs.size(); ++i) run_of[low_rec.runs[i].id] = i;
  for (size_t n : order) {
    NodeError& ne = report.nodes[n];
    Substitute sub(ne.node, local_out[run_of.at(ne.node)]);
    oracle.add_observer(&sub);
    const Values ablated = oracle.run({}, wide_feeds);
    oracle.remove_observer(&sub);
    ne.contribution = outputs_error(ablated, hi_out, low_out, out_names);
    ++report.contributions;
  }

  std::stable_sort(report.nodes.begin(), report.nodes.end(), [](const NodeError& a, const NodeError& b) {
    if (a.contribution.has_value() != b.contribution.has_value()) return a.contribution.has_value();
    return a.rank_key() > b.rank_key();
  });
  return report;
}


namespace {

// Every named value of one main-graph run: feeds, initializers, node outputs; and the producer
// of each node output, in execution order.
struct Run {
  std::map<std::string, Value> values;
  std::vector<std::pair<std::string, std::string>> made;  // (value, producing node id) in order
  Values outputs;
  std::vector<std::string> output_names;
  size_t nodes = 0;
};

Run run_all(const Model& model, const std::map<std::string, Value>& feeds, const Registry& reg) {
  ReferenceEvaluator ev(model, EvaluatorOptions{&reg});
  NodeRecorder rec;
  ev.add_observer(&rec);
  Run r;
  r.outputs = ev.run({}, feeds);
  r.output_names = ev.output_names();
  r.nodes = rec.runs.size();
  for (const Initializer& i : model.graph.initializers) r.values[i.name] = i.value;
  for (const auto& [name, v] : feeds) r.values[name] = v;
  for (const NodeRun& n : rec.runs)
    for (size_t k = 0; k < n.node.outputs.size() && k < n.outputs.size(); ++k)
      if (!n.node.outputs[k].empty()) {
        r.values[n.node.outputs[k]] = n.outputs[k];
        r.made.emplace_back(n.node.outputs[k], n.id);
      }
  return r;
}

// "X" for ONNX Runtime's QDQ names of X (quant_utils' suffixes), "" otherwise.
std::string qdq_base(const std::string& name) {
  for (const char* suffix : {"_DequantizeLinear_Output", "_QuantizeLinear_Input"}) {
    const size_t at = name.rfind(suffix);
    if (at == std::string::npos || at == 0) continue;
    const std::string rest = name.substr(at + std::string(suffix).size());
    // "_DequantizeLinear_Output_1": a second DequantizeLinear of the same value.
    if (rest.empty() || (rest.size() > 1 && rest[0] == '_' && std::all_of(rest.begin() + 1, rest.end(), ::isdigit)))
      return name.substr(0, at);
  }
  return "";
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The values a set of nodes (by name) hands outside itself: their outputs read by another node or
// being graph outputs, in the graph's node order.
std::vector<std::string> external_outputs(const Model& model, const std::vector<std::string>& nodes) {
  const std::set<std::string> inside(nodes.begin(), nodes.end());
  std::set<std::string> read_outside;
  for (const Node& n : model.graph.nodes)
    if (!inside.count(n.name))
      for (const std::string& i : n.inputs) read_outside.insert(i);
  for (const ValueInfo& o : model.graph.outputs) read_outside.insert(o.name);
  std::vector<std::string> out;
  for (const Node& n : model.graph.nodes)
    if (inside.count(n.name))
      for (const std::string& o : n.outputs)
        if (!o.empty() && read_outside.count(o)) out.push_back(o);
  return out;
}

}  // namespace

ReferenceReport against_reference(const Model& model, const Model& reference, const std::map<std::string, Value>& feeds,
                                  const std::map<std::string, Value>& reference_feeds, const Registry* registry) {
  const Registry& reg = registry ? *registry : Registry::builtin();
  // The reference's feeds: the model's values of the same names, in the reference's declared types.
  std::map<std::string, Value> ref_feeds = reference_feeds;
  for (const ValueInfo& in : reference.graph.inputs) {
    auto it = feeds.find(in.name);
    if (it == feeds.end()) continue;
    Value v = it->second;
    if (is_float_tensor(v) && is_float_dtype(in.type.dtype) && in.type.dtype != v.tensor().dtype())
      v = from_doubles(in.type.dtype, v.tensor().shape(), to_doubles(v.tensor()));
    ref_feeds[in.name] = v;
  }
  const Run m = run_all(model, feeds, reg);
  const Run r = run_all(reference, ref_feeds, reg);

  ReferenceReport report;
  report.nodes_run = m.nodes;
  // Fused values: the nodes one fusion created (those sharing a "fused_from" list) stand for the
  // nodes it replaced; the values the created nodes hand outside themselves match, in order, the
  // values the replaced nodes handed outside themselves, when the two counts agree and no other
  // fusion claims one of the replaced nodes.
  std::map<std::string, std::string> fused_target;  // model value -> reference value
  {
    std::map<std::string, std::vector<std::string>> created;  // fused_from list -> created node names
    for (const auto& [key, value] : model.metadata)
      if (key.rfind(optimize::kFusedFromKey, 0) == 0) created[value].push_back(key.substr(std::string(optimize::kFusedFromKey).size()));
    // An original node in two groups (a fusion whose output a later fusion took in) leaves neither
    // group a whole subgraph to match.
    std::map<std::string, int> groups_of;
    for (const auto& [list, nodes] : created) {
      const std::vector<std::string> originals = split_commas(list);
      for (const std::string& o : std::set<std::string>(originals.begin(), originals.end())) ++groups_of[o];
    }
    for (const auto& [list, nodes] : created) {
      const std::vector<std::string> originals = split_commas(list);
      if (std::any_of(originals.begin(), originals.end(), [&](const std::string& o) { return groups_of[o] > 1; })) continue;
      std::vector<std::string> mine;
      for (const std::string& o : external_outputs(model, nodes))
        if (m.values.count(o) && is_float_tensor(m.values.at(o))) mine.push_back(o);
      std::vector<std::string> theirs;
      for (const std::string& o : external_outputs(reference, originals))
        if (r.values.count(o) && is_float_tensor(r.values.at(o))) theirs.push_back(o);
      if (mine.size() == theirs.size())
        for (size_t k = 0; k < mine.size(); ++k) fused_target[mine[k]] = theirs[k];
    }
  }

  // Initializers without a counterpart (QDQ scales, say) are parameters, not values the model lost.
  const auto match = [&](const std::string& name, const std::string& producer, const Value& v) {
    if (!is_float_tensor(v)) return;
    const bool weight = producer.empty();
    std::string target, how;
    if (auto it = r.values.find(name); it != r.values.end() && is_float_tensor(it->second)) target = name, how = "name";
    if (target.empty()) {
      const std::string base = qdq_base(name);
      if (!base.empty() && r.values.count(base) && is_float_tensor(r.values.at(base))) target = base, how = "qdq";
    }
    if (target.empty())
      if (auto it = fused_target.find(name); it != fused_target.end()) target = it->second, how = "fused_from";
    if (target.empty()) {
      if (!weight) report.unmatched.push_back(name);
      return;
    }
    const Tensor& ref = r.values.at(target).tensor();
    if (ref.shape() != v.tensor().shape()) {
      if (!weight) report.unmatched.push_back(name);  // same name, another value (a reshaped weight, say)
      return;
    }
    report.tensors.push_back({name, target, how, producer, v.tensor().dtype(), error_of(v.tensor(), ref, name)});
  };
  // Weights first (an initializer read through a DequantizeLinear is matched by its DQ output).
  for (const Initializer& i : model.graph.initializers) match(i.name, "", m.values.at(i.name));
  for (const auto& [name, id] : m.made) match(name, id, m.values.at(name));

  ErrorAccumulator total;
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    const std::string& name = m.output_names[k];
    const auto it = std::find(r.output_names.begin(), r.output_names.end(), name);
    if (it == r.output_names.end() || !is_float_tensor(m.outputs[k])) continue;
    const Value& ref = r.outputs[size_t(it - r.output_names.begin())];
    if (!is_float_tensor(ref)) continue;
    total.add(m.outputs[k].tensor(), ref.tensor(), name);
    report.outputs.push_back({name, m.outputs[k].tensor().dtype(), error_of(m.outputs[k].tensor(), ref.tensor(), name), {}, {}});
  }
  report.outputs_total = total.result();
  return report;
}

namespace {
nlohmann::json finite(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json error_json(const Error& e) {
  nlohmann::json j = {{"max_abs", e.max_abs}, {"max_rel", finite(e.max_rel)}, {"rms", e.rms},
                      {"sqnr_db", finite(e.sqnr_db)}, {"ulps", e.ulps}, {"count", e.count}};
  if (e.nonfinite) j["nonfinite"] = e.nonfinite;
  return j;
}

nlohmann::json to_json(const Report& r, const std::string& model) {
  using json = nlohmann::json;
  json j = {{"oracle", "float64"}, {"model", model}, {"contributions_computed", r.contributions},
            {"nodes", json::array()}, {"outputs", json::array()}, {"fallback", r.fallback}};
  for (const NodeError& n : r.nodes) {
    json jn = {{"node", n.node}, {"op_type", n.op_type}, {"index", n.index}, {"outputs", json::array()}};
    jn["contribution"] = n.contribution ? error_json(*n.contribution) : json(nullptr);
    if (n.fallback) jn["fallback"] = true;
    if (!n.local_note.empty()) jn["local_note"] = n.local_note;
    for (const OutputError& o : n.outputs) {
      json jo = {{"name", o.name}, {"dtype", dtype_numpy_name(o.dtype)}, {"accumulated", error_json(o.accumulated)}};
      jo["local"] = o.local ? error_json(*o.local) : json(nullptr);
      jo["amplification"] = o.amplification ? finite(*o.amplification) : json(nullptr);
      jn["outputs"].push_back(jo);
    }
    j["nodes"].push_back(jn);
  }
  for (const OutputError& o : r.outputs)
    j["outputs"].push_back({{"name", o.name}, {"dtype", dtype_numpy_name(o.dtype)}, {"accumulated", error_json(o.accumulated)}});
  return j;
}

nlohmann::json to_json(const ReferenceReport& r, const std::string& model, const std::string& reference) {
  using json = nlohmann::json;
  json j = {{"oracle", "reference"}, {"reference", reference}, {"model", model}, {"nodes", json::array()},
            {"outputs", json::array()}, {"tensors", json::array()}, {"unmatched", r.unmatched}};
  for (const OutputError& o : r.outputs)
    j["outputs"].push_back({{"name", o.name}, {"dtype", dtype_numpy_name(o.dtype)}, {"accumulated", error_json(o.accumulated)}});
  for (const TensorMatch& t : r.tensors) {
    json jt = {{"name", t.name}, {"reference", t.reference}, {"match", t.how}, {"producer", t.producer},
               {"dtype", dtype_numpy_name(t.dtype)}};
    jt.update(error_json(t.error));
    j["tensors"].push_back(jt);
  }
  return j;
}

}  // namespace refeval::accuracy
