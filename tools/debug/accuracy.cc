#include "accuracy.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/evaluator.h"
#include "refeval/observer.h"

namespace refeval::accuracy {
namespace {

// The spacing of the model's type at |x|: 2^(e - p) with x = m·2^e, m in [0.5, 1), the exponent
// held at the smallest normal's so subnormals share its spacing.
double ulp_at(DType t, double x) {
  int p = 24, emin = -125;  // float32 (and bfloat16's exponent range)
  if (t == DType::Float16) p = 11, emin = -13;
  else if (t == DType::BFloat16) p = 8;
  else if (t == DType::Double) p = 53, emin = -1021;
  int e = emin;
  if (x != 0 && std::isfinite(x)) std::frexp(std::fabs(x), &e);
  return std::ldexp(1.0, std::max(e, emin) - p);
}

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

bool is_float_tensor(const Value& v) { return v.is_tensor() && is_float_dtype(v.tensor().dtype()); }

Tensor widen_tensor(const Tensor& t) {
  return is_widened(t.dtype()) ? from_doubles(DType::Double, t.shape(), to_doubles(t)) : t;
}

void widen_graph(Graph& g);

void widen_type(ValueType& t) {
  if (is_widened(t.dtype)) t.dtype = DType::Double;
  if (t.elem) {
    auto elem = std::make_shared<ValueType>(*t.elem);
    widen_type(*elem);
    t.elem = elem;
  }
}

void widen_nodes(std::vector<Node>& nodes) {
  for (Node& n : nodes) {
    const bool plain = n.domain.empty();
    for (Attribute& a : n.attributes) {
      if (a.type == AttrType::Tensor) a.t = widen_tensor(a.t);
      for (Tensor& t : a.tensors) t = widen_tensor(t);
      // Cast's `to`, EyeLike's and the Random* ops' `dtype`: a float target becomes double.
      if (plain && a.type == AttrType::Int && (a.name == "to" || a.name == "dtype") && is_valid_dtype(int32_t(a.i)) &&
          is_widened(DType(a.i)))
        a.i = int64_t(DType::Double);
      // Constant's float attributes would make a float32 tensor: make them a double tensor.
      if (plain && n.op_type == "Constant" && (a.name == "value_float" || a.name == "value_floats")) {
        a.t = a.name == "value_float" ? Tensor::scalar<double>(a.f)
                                      : Tensor::from_vector<double>({int64_t(a.floats.size())},
                                                                    std::vector<double>(a.floats.begin(), a.floats.end()));
        a.name = "value";
        a.type = AttrType::Tensor;
      }
      if (a.g) {
        auto g = std::make_shared<Graph>(*a.g);
        widen_graph(*g);
        a.g = g;
      }
      for (auto& body : a.graphs) {
        auto g = std::make_shared<Graph>(*body);
        widen_graph(*g);
        body = g;
      }
    }
  }
}

void widen_graph(Graph& g) {
  for (Initializer& i : g.initializers) i.value = widen_tensor(i.value);
  for (auto* infos : {&g.inputs, &g.outputs, &g.value_info})
    for (ValueInfo& vi : *infos) widen_type(vi.type);
  widen_nodes(g.nodes);
}

// The oracle's input rounded to the type the model run saw there.
Value round_to(const Value& oracle, const Value& model) {
  if (is_float_tensor(oracle) && is_float_tensor(model) && oracle.tensor().dtype() != model.tensor().dtype())
    return from_doubles(model.tensor().dtype(), oracle.tensor().shape(), to_doubles(oracle.tensor()));
  return oracle;
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

void ErrorAccumulator::add(const Tensor& model, const Tensor& oracle, const std::string& what, DType ulp_type) {
  if (ulp_type == DType::Undefined) ulp_type = model.dtype();
  if (model.shape() != oracle.shape())
    fail_runtime(fmt::format("'{}': shape {} in the model run but {} in the oracle", what, shape_to_string(model.shape()),
                             shape_to_string(oracle.shape())));
  const std::vector<double> m = to_doubles(model), o = to_doubles(oracle);
  for (size_t i = 0; i < m.size(); ++i) {
    if (!std::isfinite(m[i]) || !std::isfinite(o[i])) {
      const bool same = (std::isnan(m[i]) && std::isnan(o[i])) || m[i] == o[i];
      if (!same) ++nonfinite_;
      continue;
    }
    const double d = std::fabs(m[i] - o[i]);
    if (d > max_abs_ || count_ == 0) {
      max_abs_ = d;
      ulps_ = d / ulp_at(ulp_type, o[i]);
    }
    if (o[i] != 0) max_rel_ = std::max(max_rel_, d / std::fabs(o[i]));
    else if (d != 0) max_rel_ = std::numeric_limits<double>::infinity();
    sum_d2_ += d * d;
    sum_o2_ += o[i] * o[i];
    ++count_;
  }
}

Error ErrorAccumulator::result() const {
  Error e;
  e.count = count_;
  e.nonfinite = nonfinite_;
  if (count_ == 0) return e;
  e.max_abs = max_abs_;
  e.max_rel = max_rel_;
  e.ulps = ulps_;
  e.rms = std::sqrt(sum_d2_ / double(count_));
  e.rel_rms = sum_d2_ == 0 ? 0 : sum_o2_ == 0 ? std::numeric_limits<double>::infinity() : std::sqrt(sum_d2_ / sum_o2_);
  if (sum_d2_ > 0) e.sqnr_db = sum_o2_ == 0 ? -std::numeric_limits<double>::infinity() : 10 * std::log10(sum_o2_ / sum_d2_);
  return e;
}

bool is_widened(DType t) { return t == DType::Float || t == DType::Float16 || t == DType::BFloat16; }

Model widen_model(const Model& model) {
  Model m = model;
  widen_graph(m.graph);
  for (Function& f : m.functions) {
    widen_nodes(f.nodes);
    for (ValueInfo& vi : f.value_info) widen_type(vi.type);
  }
  return m;
}

Value widen_value(const Value& v) {
  if (v.is_tensor()) return widen_tensor(v.tensor());
  if (v.is_sequence()) {
    Sequence s = v.sequence();
    if (is_widened(s.elem_dtype)) s.elem_dtype = DType::Double;
    for (Value& item : s.items) item = widen_value(item);
    return s;
  }
  return v;
}

double NodeError::rank_key() const {
  if (contribution) return contribution->rms;
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

  // Operators whose declared element types leave out double, among the nodes that touch floats.
  const auto opset_of = [&](const Node& n) {
    auto it = model.opsets.find(n.domain);
    return it == model.opsets.end() ? int64_t(1) : it->second;
  };
  for (const NodeRun& r : low_rec.runs) {
    const bool touches_float = std::any_of(r.inputs.begin(), r.inputs.end(), is_float_tensor) ||
                               std::any_of(r.outputs.begin(), r.outputs.end(), is_float_tensor);
    const OpRegistration* op = reg.resolve(r.node.domain, r.node.op_type, opset_of(r.node));
    if (touches_float && op && !op->factory.types.empty() &&
        std::find(op->factory.types.begin(), op->factory.types.end(), DType::Double) == op->factory.types.end())
      report.refused.push_back(fmt::format("{} ({})", r.id, r.node.op_type));
  }

  ReferenceEvaluator oracle(widen_model(model), EvaluatorOptions{&reg});
  std::map<std::string, Value> wide_feeds;
  for (const auto& [name, v] : feeds) wide_feeds.emplace(name, widen_value(v));
  NodeRecorder hi_rec;
  oracle.add_observer(&hi_rec);
  Values hi_out;
  try {
    hi_out = oracle.run({}, wide_feeds);
  } catch (const refeval::Error& e) {
    std::string refused;
    for (const std::string& r : report.refused) refused += (refused.empty() ? "" : ", ") + r;
    fail_runtime(fmt::format("the float64 oracle cannot run: {}{}", e.what(),
                             refused.empty() ? "" : "; operators without a double path: " + refused));
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
    NodeError ne{lo.id, lo.node.op_type, lo.index, {}, {}, {}};

    // Local error: this node's kernel in the model's precision on the oracle's inputs.
    if (options.local) {
      if (has_body(lo.node)) ne.local_note = "has a body";
      else if (model.find_function(lo.node.domain, lo.node.op_type, lo.node.overload)) ne.local_note = "a model-local function";
      else {
        try {
          ReferenceEvaluator one = ReferenceEvaluator::from_node(lo.node, model.opsets, EvaluatorOptions{&reg});
          std::map<std::string, Value> in;
          for (size_t k = 0; k < lo.node.inputs.size() && k < hi.inputs.size(); ++k)
            if (!lo.node.inputs[k].empty()) in[lo.node.inputs[k]] = round_to(hi.inputs[k], lo.inputs[k]);
          std::vector<std::string> wanted;
          for (const std::string& o : lo.node.outputs)
            if (!o.empty()) wanted.push_back(o);
          const Values got = one.run(wanted, in);
          Values full(lo.node.outputs.size());
          for (size_t k = 0, w = 0; k < lo.node.outputs.size(); ++k)
            if (!lo.node.outputs[k].empty()) full[k] = widen_value(got[w++]);
          local_out[i] = std::move(full);
        } catch (const refeval::Error& e) {
          ne.local_note = e.what();
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
      if (!local_out[i].empty() && is_float_tensor(local_out[i][k])) {
        // Rounded back to the model's type, so the error is the one the model run would carry.
        const Tensor rounded = round_to(local_out[i][k], lo.outputs[k]).tensor();
        ErrorAccumulator loc;
        loc.add(rounded, hi.outputs[k].tensor(), name);
        oe.local = loc.result();
      }
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
    if (std::any_of(ne.outputs.begin(), ne.outputs.end(), [](const OutputError& o) { return o.local && o.local->rms > 0; }))
      order.push_back(n);
  }
  const auto local_rms = [&](size_t n) {
    double worst = 0;
    for (const OutputError& o : report.nodes[n].outputs)
      if (o.local) worst = std::max(worst, o.local->rms);
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

}  // namespace refeval::accuracy
