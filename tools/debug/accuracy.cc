#include "accuracy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
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
  using Recorded = std::function<void(size_t position, const NodeRun& run)>;
  explicit NodeRecorder(Recorded recorded = {}) : recorded_(std::move(recorded)) {}
  void after_node(const NodeEvent& e, Values& outputs) override {
    if (e.depth != 0) return;
    runs.push_back({e.id, e.node, e.index, e.inputs, outputs});
    if (recorded_) recorded_(runs.size() - 1, runs.back());
  }
  std::vector<NodeRun> runs;

 private:
  Recorded recorded_;
};

// The oracle's input rounded to the type the model run saw there; held in the oracle's type
// (float64) when `wide`, as the double side of a local error is fed.
Value round_to(const Value& oracle, const Value& model, bool wide = false) {
  if (!is_float_tensor(oracle) || !is_float_tensor(model) || oracle.tensor().dtype() == model.tensor().dtype()) return oracle;
  const Tensor& o = oracle.tensor();
  if (o.dtype() == DType::Double && model.tensor().dtype() == DType::Float) {
    Tensor out = Tensor::uninitialized(wide ? DType::Double : DType::Float, o.shape());
    const auto round = [&](auto* dst) {
      const double* src = o.data<double>();
      for (int64_t i = 0; i < o.size(); ++i) dst[i] = float(src[i]);
    };
    if (wide) round(out.data<double>());
    else round(out.data<float>());
    return out;
  }
  const Value rounded = from_doubles(model.tensor().dtype(), o.shape(), to_doubles(o));
  return wide ? widen_value(rounded) : rounded;
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

// oracle + (model - exact), in float64, element by element; the model's value where either of
// the node's runs is not finite.
Tensor add_delta(const Tensor& oracle, const Tensor& model, const Tensor& exact) {
  if (model.size() != oracle.size() || exact.size() != oracle.size()) return widen_value(model).tensor();
  Tensor out = Tensor::uninitialized(DType::Double, oracle.shape());
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


// The position of each main-graph node in the recorded runs, by its execution index.
std::vector<int> positions(const std::vector<NodeRun>& runs) {
  int last = -1;
  for (const NodeRun& r : runs) last = std::max(last, r.index);
  std::vector<int> at(size_t(last + 1), -1);
  for (size_t i = 0; i < runs.size(); ++i) at[size_t(runs[i].index)] = int(i);
  return at;
}

// The local errors' runs: one run of the whole graph in which every main-graph node is fed the
// oracle's inputs rounded to the types the model run saw (held in float64 for the double run), so
// each node's outputs are its kernel on those inputs, handed to `made`. What flows between nodes
// does not matter: every node's inputs are replaced. Nodes marked `replayed` do not run: they
// hand `recorded`.
class LocalRun : public Observer {
 public:
  using Made = std::function<void(size_t node, const Values& outputs)>;
  LocalRun(const std::vector<NodeRun>& model_runs, const std::vector<NodeRun>& oracle_runs, const std::vector<NodeRun>& recorded,
           const std::vector<char>& replayed, bool wide, Made made)
      : model_(model_runs), oracle_(oracle_runs), recorded_(recorded), replayed_(replayed), wide_(wide),
        at_(positions(model_runs)), made_(std::move(made)) {}

  void before_node(const NodeEvent& e) override {
    if (e.depth == 0) running = at(e);
  }
  void replace_inputs(const NodeEvent& e, Values& inputs) override {
    const int i = at(e);
    if (i < 0 || replayed_[size_t(i)]) return;
    const Values& hi = oracle_[size_t(i)].inputs;
    const Values& lo = model_[size_t(i)].inputs;
    for (size_t k = 0; k < inputs.size() && k < hi.size() && k < lo.size(); ++k)
      inputs[k] = round_to(hi[k], lo[k], wide_);
  }
  bool replay(const NodeEvent& e, Values& outputs) override {
    const int i = at(e);
    if (i < 0 || !replayed_[size_t(i)]) return false;
    outputs = recorded_[size_t(i)].outputs;
    return true;
  }
  void after_node(const NodeEvent& e, Values& outputs) override {
    const int i = at(e);
    if (i >= 0 && !replayed_[size_t(i)]) made_(size_t(i), outputs);
  }

  int running = -1;  // the main-graph node running (to name one whose kernel failed)

 private:
  int at(const NodeEvent& e) const { return e.depth == 0 && size_t(e.index) < at_.size() ? at_[size_t(e.index)] : -1; }
  const std::vector<NodeRun>& model_;
  const std::vector<NodeRun>& oracle_;
  const std::vector<NodeRun>& recorded_;
  const std::vector<char>& replayed_;
  bool wide_;
  std::vector<int> at_;
  Made made_;
};

// A contribution's run of the oracle: `node` hands `outputs` (itself in the model's precision),
// the nodes downstream of it (its cone) run, and every other node replays its oracle outputs.
class Ablation : public Observer {
 public:
  Ablation(const std::vector<NodeRun>& oracle_runs, const std::vector<int>& at, size_t node, const Values& outputs,
           const std::vector<char>& cone)
      : oracle_(oracle_runs), at_(at), node_(node), outputs_(outputs), cone_(cone) {}
  bool replay(const NodeEvent& e, Values& outputs) override {
    const int i = e.depth == 0 && size_t(e.index) < at_.size() ? at_[size_t(e.index)] : -1;
    if (i < 0) return false;
    if (size_t(i) == node_) outputs = outputs_;
    else if (!cone_[size_t(i)]) outputs = oracle_[size_t(i)].outputs;
    else return false;
    return true;
  }

 private:
  const std::vector<NodeRun>& oracle_;
  const std::vector<int>& at_;
  size_t node_;
  const Values& outputs_;
  const std::vector<char>& cone_;
};

// The main-graph nodes after `node` that read, directly or through others, what it makes. A
// node with a body may read any outer value, so it is in the cone of every node before it.
std::vector<char> downstream(const std::vector<NodeRun>& runs, size_t node) {
  std::vector<char> cone(runs.size(), 0);
  std::set<std::string> tainted(runs[node].node.outputs.begin(), runs[node].node.outputs.end());
  tainted.erase("");
  for (size_t i = node + 1; i < runs.size(); ++i) {
    const Node& n = runs[i].node;
    cone[i] = has_body(n) || std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return tainted.count(v) > 0; });
    if (cone[i])
      for (const std::string& o : n.outputs)
        if (!o.empty()) tainted.insert(o);
  }
  return cone;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
  auto t0 = std::chrono::steady_clock::now();

  ReferenceEvaluator low(model, EvaluatorOptions{&reg});
  NodeRecorder low_rec;
  low.add_observer(&low_rec);
  const Values low_out = low.run({}, feeds);
  low.remove_observer(&low_rec);
  report.nodes_run = low_rec.runs.size();
  report.timing.model_ms = ms_since(t0);

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

  t0 = std::chrono::steady_clock::now();
  ReferenceEvaluator oracle(widen_model(model), EvaluatorOptions{&reg});
  oracle.add_observer(&fallback);
  std::map<std::string, Value> wide_feeds;
  for (const auto& [name, v] : feeds) wide_feeds.emplace(name, widen_value(v));
  // Accumulated errors measured as the oracle makes each value (while it is in cache).
  std::vector<std::vector<std::optional<Error>>> accumulated(low_rec.runs.size());
  NodeRecorder hi_rec([&](size_t i, const NodeRun& hi) {
    if (i >= low_rec.runs.size() || low_rec.runs[i].id != hi.id) return;  // said after the run
    const NodeRun& lo = low_rec.runs[i];
    accumulated[i].resize(lo.outputs.size());
    for (size_t k = 0; k < lo.outputs.size() && k < hi.outputs.size(); ++k)
      if (is_float_tensor(lo.outputs[k]) && is_float_tensor(hi.outputs[k]))
        accumulated[i][k] = error_of(lo.outputs[k].tensor(), hi.outputs[k].tensor(), lo.node.outputs[k]);
  });
  oracle.add_observer(&hi_rec);
  Values hi_out;
  try {
    hi_out = oracle.run({}, wide_feeds);
  } catch (const refeval::Error& e) {
    fail_runtime(fmt::format("the float64 oracle cannot run: {}", e.what()));
  }
  oracle.remove_observer(&hi_rec);
  report.timing.oracle_ms = ms_since(t0);
  const std::vector<NodeRun>& lo_runs = low_rec.runs;
  const std::vector<NodeRun>& hi_runs = hi_rec.runs;
  if (hi_runs.size() != lo_runs.size())
    fail_runtime(fmt::format("the oracle ran {} nodes but the model {}", hi_runs.size(), lo_runs.size()));
  for (size_t i = 0; i < lo_runs.size(); ++i)
    if (lo_runs[i].id != hi_runs[i].id) fail_runtime(fmt::format("the oracle ran '{}' where the model ran '{}'", hi_runs[i].id, lo_runs[i].id));

  // Local error: each node's kernel in the model's precision against the same node in float64,
  // both fed the oracle's inputs rounded to the types the model run saw. The rounding of the
  // inputs is their producers' error (it is in their local error), not this node's. Two runs of
  // the whole graph (LocalRun), not one evaluator per node. Nodes that add nothing (they move or
  // select elements), have a body, or make no floats are replayed; fallback nodes' double side is
  // their model kernel widened. A kernel that fails on the rounded inputs is noted and replayed.
  const size_t n = lo_runs.size();
  std::vector<std::string> note(n);
  std::vector<char> exact(n, 0), skip(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = lo_runs[i].node;
    exact[i] = node.domain.empty() && is_exact_op(node.op_type);
    if (has_body(node)) note[i] = "has a body";
    skip[i] = exact[i] || !note[i].empty() || std::none_of(lo_runs[i].outputs.begin(), lo_runs[i].outputs.end(), is_float_tensor);
  }
  // Local errors per node and output slot, and the nodes with the largest (the contributions'
  // candidates, worst first): their double-side outputs are kept, every other node's are measured
  // as they are made and dropped.
  std::vector<std::vector<std::optional<Error>>> local(n);
  std::vector<Values> model_k(n), double_k(n);
  std::vector<std::pair<double, size_t>> candidates;  // (local RMS, node)
  const auto errors_of = [&](size_t i, const Values& model_side, const Values& double_side) {
    local[i].assign(lo_runs[i].node.outputs.size(), std::nullopt);
    double worst = 0;
    for (size_t k = 0; k < local[i].size() && k < model_side.size() && k < double_side.size(); ++k) {
      if (!is_float_tensor(model_side[k]) || !is_float_tensor(double_side[k])) continue;
      local[i][k] = error_of(model_side[k].tensor(), double_side[k].tensor(), lo_runs[i].node.outputs[k]);
      if (local[i][k]->rms > 0 || local[i][k]->nonfinite > 0)
        worst = std::max(worst, local[i][k]->nonfinite ? std::numeric_limits<double>::infinity() : local[i][k]->rms);
    }
    return worst;
  };
  // Keeps the top_k largest, the earlier node first among equals.
  const auto offer = [&](size_t i, double key, const Values& double_side) {
    if (key <= 0 || options.top_k == 0) return;
    if (candidates.size() == options.top_k) {
      const auto weakest = std::min_element(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second > b.second;
      });
      if (key <= weakest->first) return;
      double_k[weakest->second].clear();
      candidates.erase(weakest);
    }
    candidates.emplace_back(key, i);
    double_k[i] = double_side;
  };
  if (options.local) {
    t0 = std::chrono::steady_clock::now();
    const auto local_run = [&](ReferenceEvaluator& ev, const std::map<std::string, Value>& in, const std::vector<NodeRun>& recorded,
                               std::vector<char>& replayed, bool wide, const LocalRun::Made& made, const std::function<void()>& restart) {
      for (;;) {
        restart();
        LocalRun run(lo_runs, hi_runs, recorded, replayed, wide, made);
        ev.add_observer(&run);
        try {
          ev.run({}, in);
          ev.remove_observer(&run);
          return;
        } catch (const refeval::Error& e) {
          ev.remove_observer(&run);
          if (run.running < 0 || replayed[size_t(run.running)]) throw;
          note[size_t(run.running)] = e.what();
          replayed[size_t(run.running)] = skip[size_t(run.running)] = 1;
        }
      }
    };
    local_run(low, feeds, lo_runs, skip, false, [&](size_t i, const Values& out) { model_k[i] = out; }, [&] { model_k.assign(n, {}); });
    std::vector<char> double_skip = skip;
    for (size_t i = 0; i < n; ++i) double_skip[i] = double_skip[i] || fallback.model_inputs.count(lo_runs[i].id);
    local_run(
        oracle, wide_feeds, hi_runs, double_skip, true,
        [&](size_t i, const Values& out) { offer(i, errors_of(i, model_k[i], out), out); },
        [&] {
          local.assign(n, {});
          double_k.assign(n, {});
          candidates.clear();
        });
    for (size_t i = 0; i < n; ++i) {
      if (skip[i]) local[i].clear(), model_k[i].clear();  // failed in the double run after the model run
      // Fallback nodes run their model kernel in the oracle too: they add nothing there.
      else if (fallback.model_inputs.count(lo_runs[i].id)) errors_of(i, model_k[i], model_k[i]);
      if (exact[i]) errors_of(i, hi_runs[i].outputs, hi_runs[i].outputs);  // zero, with the SQNR of its values
    }
    report.timing.local_ms = ms_since(t0);
  }

  // Accumulated error of every value a node made; feeds and initializers are widened exactly.
  std::map<std::string, Error> value_error;
  std::vector<size_t> run_of_node;  // report.nodes[j] is lo_runs[run_of_node[j]]
  for (size_t i = 0; i < n; ++i) {
    const NodeRun& lo = lo_runs[i];
    NodeError ne{lo.id, lo.node.op_type, lo.index, {}, options.local ? note[i] : "", fallback.model_inputs.count(lo.id) > 0, {}};
    double in_rel = 0;
    for (const std::string& name : lo.node.inputs)
      if (auto it = value_error.find(name); it != value_error.end()) in_rel = std::max(in_rel, it->second.rel_rms);
    for (size_t k = 0; k < accumulated[i].size(); ++k) {
      if (!accumulated[i][k]) continue;
      const std::string& name = lo.node.outputs[k];
      OutputError oe{name, lo.outputs[k].tensor().dtype(), {}, {}, {}};
      oe.accumulated = *accumulated[i][k];
      value_error[name] = oe.accumulated;
      if (in_rel > 0) oe.amplification = oe.accumulated.rel_rms / in_rel;
      if (k < local[i].size()) oe.local = local[i][k];
      ne.outputs.push_back(std::move(oe));
    }
    if (ne.outputs.empty()) continue;
    report.nodes.push_back(std::move(ne));
    run_of_node.push_back(i);
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

  // Contributions: the candidates, worst local error first, each an oracle run with that node
  // alone in the model's precision (the oracle's outputs plus the error the node adds), in which
  // only its downstream cone runs; within the budget of Options::budgeted.
  t0 = std::chrono::steady_clock::now();
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<int> node_of_run(n, -1);  // report.nodes[node_of_run[i]] is lo_runs[i]
  for (size_t j = 0; j < report.nodes.size(); ++j) node_of_run[run_of_node[j]] = int(j);
  const std::vector<int> at = positions(hi_runs);
  report.candidates = candidates.size();
  std::vector<size_t> elements(n, 1);  // what each node makes (at least 1: a node has a cost)
  for (size_t i = 0; i < n; ++i)
    for (const Value& v : hi_runs[i].outputs)
      if (v.is_tensor()) elements[i] += size_t(v.tensor().size());
  for (size_t e : elements) report.timing.graph_elements += e;
  const size_t budget = std::max(report.timing.graph_elements, size_t(1) << 20);
  for (const auto& [key, i] : candidates) {
    if (node_of_run[i] < 0) continue;
    const std::vector<char> cone = downstream(hi_runs, i);
    size_t cone_nodes = 0, cone_elements = 0;
    for (size_t c = 0; c < n; ++c)
      if (cone[c]) ++cone_nodes, cone_elements += elements[c];
    if (options.budgeted && report.contributions > 0 && report.timing.cone_elements + cone_elements > budget) break;
    const Values& hi = hi_runs[i].outputs;
    Values alone(lo_runs[i].node.outputs.size());
    for (size_t k = 0; k < alone.size() && k < hi.size() && k < model_k[i].size(); ++k)
      alone[k] = is_float_tensor(model_k[i][k]) && is_float_tensor(hi[k]) && k < double_k[i].size() && is_float_tensor(double_k[i][k])
                     ? Value(add_delta(hi[k].tensor(), model_k[i][k].tensor(), double_k[i][k].tensor()))
                     : widen_value(model_k[i][k]);
    Ablation ablation(hi_runs, at, i, alone, cone);
    oracle.add_observer(&ablation);
    const Values ablated = oracle.run({}, wide_feeds);
    oracle.remove_observer(&ablation);
    report.nodes[size_t(node_of_run[i])].contribution = outputs_error(ablated, hi_out, low_out, out_names);
    report.timing.cone_nodes += cone_nodes;
    report.timing.cone_elements += cone_elements;
    ++report.contributions;
  }
  report.timing.contributions_ms = ms_since(t0);

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
  j["timing_ms"] = {{"model", r.timing.model_ms}, {"oracle", r.timing.oracle_ms}, {"local", r.timing.local_ms},
                    {"contributions", r.timing.contributions_ms}, {"cone_nodes", r.timing.cone_nodes},
                    {"cone_elements", r.timing.cone_elements}, {"graph_elements", r.timing.graph_elements}};
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
