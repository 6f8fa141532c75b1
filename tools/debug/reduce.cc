#include "reduce.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <csignal>
#include <filesystem>
#include <queue>
#include <regex>
#include <unordered_map>

#include <fmt/format.h>

#include "refeval/error.h"
#include "refeval/evaluator.h"
#include "refeval/model_io.h"
#include "refeval/node_extract.h"
#include "refeval/stats.h"

namespace refeval::reduce {
namespace {
namespace fs = std::filesystem;

EvaluatorOptions evaluator_options(const Registry* registry) { return EvaluatorOptions{registry}; }

// ---------------------------------------------------------------------------------------------
// Predicates

struct NonFiniteFlags {
  bool nan = false, inf = false;
};

NonFiniteFlags flags_of(const Value& v) {
  NonFiniteFlags f;
  if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    if (!is_float_dtype(t.dtype())) return f;
    const TensorStats s = tensor_stats(t, 0);
    f.nan = s.nan > 0;
    f.inf = s.inf > 0;
  } else if (v.is_sequence()) {
    for (const Value& item : v.sequence().items) {
      const NonFiniteFlags g = flags_of(item);
      f.nan |= g.nan;
      f.inf |= g.inf;
    }
  } else if (v.is_optional() && v.optional().has_value()) {
    return flags_of(*v.optional().value);
  }
  return f;
}

struct NewNonFiniteFound {};

// Stops at the first node whose output holds a NaN none of its inputs holds, or an Inf while its
// inputs are all finite: where non-finite values are born, not where they propagate.
class NewNonFiniteObserver : public Observer {
 public:
  void after_node(const NodeEvent& e, Values& outputs) override {
    for (size_t k = 0; k < outputs.size(); ++k) {
      const NonFiniteFlags out = flags_of(outputs[k]);
      if (!out.nan && !out.inf) continue;
      NonFiniteFlags in;
      for (const Value& v : e.inputs) {
        const NonFiniteFlags f = flags_of(v);
        in.nan |= f.nan;
        in.inf |= f.inf;
      }
      if ((out.nan && !in.nan) || (out.inf && !in.nan && !in.inf)) {
        const std::string name = k < e.node.outputs.size() ? e.node.outputs[k] : std::to_string(k);
        found = fmt::format("new {} in '{}' from node '{}' ({})", out.nan && !in.nan ? "NaN" : "Inf", name, e.id,
                            e.node.op_type);
        throw NewNonFiniteFound{};
      }
    }
  }
  std::string found;
};

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

class NanPredicate : public Predicate {
 public:
  explicit NanPredicate(const Registry* r) : registry_(r) {}
  std::string name() const override { return "--nan"; }
  Verdict test(const Candidate& c) override {
    for (const Initializer& init : c.model.graph.initializers) {
      if (c.cut.count(init.name)) continue;
      const NonFiniteFlags f = flags_of(Value(init.value));
      if (f.nan || f.inf) return {true, fmt::format("initializer '{}' holds {}", init.name, f.nan ? "NaN" : "Inf")};
    }
    ReferenceEvaluator ev(c.model, evaluator_options(registry_));
    NewNonFiniteObserver obs;
    ev.add_observer(&obs);
    try {
      ev.run({}, c.feeds);
    } catch (const NewNonFiniteFound&) {
      return {true, obs.found};
    } catch (const std::exception& e) {
      return {false, "run failed: " + first_line(e.what())};
    }
    return {false, "no new NaN or Inf"};
  }

 private:
  const Registry* registry_;
};

class ComparePredicate : public Predicate {
 public:
  ComparePredicate(std::vector<ValueRecord> dump, Tolerance tol, const Registry* r)
      : dump_(std::move(dump)), tol_(tol), registry_(r) {
    for (size_t i = 0; i < dump_.size(); ++i) by_name_.emplace(dump_[i].name, i);
  }
  std::string name() const override { return "--compare-with"; }
  const Value* reference(const std::string& name) const override {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &dump_[it->second].value;
  }
  Verdict test(const Candidate& c) override {
    ReferenceEvaluator ev(c.model, evaluator_options(registry_));
    RecordObserver record;
    ev.add_observer(&record);
    try {
      ev.run({}, c.feeds);
    } catch (const std::exception& e) {
      return {false, "run failed: " + first_line(e.what())};
    }
    for (const ValueRecord& r : record.records()) {
      if (r.source != ValueRecord::Source::Node) continue;
      const Value* expected = reference(r.name);
      if (!expected) continue;
      const Comparison cmp = compare_values(r.value, *expected, tol_);
      if (!cmp.equal) return {true, fmt::format("'{}' from node '{}' ({}) differs: {}", r.name, r.node, r.op_type, cmp.reason)};
    }
    return {false, "every value matches the dump"};
  }

 private:
  std::vector<ValueRecord> dump_;
  std::map<std::string, size_t> by_name_;
  Tolerance tol_;
  const Registry* registry_;
};

class ErrorPredicate : public Predicate {
 public:
  ErrorPredicate(const std::string& regex, const Registry* r) : text_(regex), registry_(r) {
    try {
      re_ = std::regex(regex);
    } catch (const std::regex_error& e) {
      fail_usage(fmt::format("--error '{}': not a regular expression ({})", regex, e.what()));
    }
  }
  std::string name() const override { return fmt::format("--error '{}'", text_); }
  Verdict test(const Candidate& c) override {
    try {
      ReferenceEvaluator ev(c.model, evaluator_options(registry_));
      ev.run({}, c.feeds);
    } catch (const std::exception& e) {
      const std::string message = first_line(e.what());
      return {std::regex_search(message, re_), message};
    }
    return {false, "the run succeeds"};
  }

 private:
  std::string text_;
  std::regex re_;
  const Registry* registry_;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

class CheckPredicate : public Predicate {
 public:
  CheckPredicate(std::string command, std::string work_dir) : command_(std::move(command)), dir_(std::move(work_dir)) {
    if (command_.find_first_not_of(" \t") == std::string::npos) fail_usage("--check: the command is empty");
  }
  std::string name() const override { return fmt::format("--check '{}'", command_); }
  Verdict test(const Candidate& c) override {
    const fs::path dir = fs::path(dir_), data = dir / "test_data_set_0", model = dir / "model.onnx";
    std::error_code ec;
    fs::remove_all(data, ec);
    fs::create_directories(data, ec);
    if (ec) fail_input(fmt::format("--check: cannot create '{}' ({})", data.string(), ec.message()));
    save_model(c.model, model.string());
    size_t k = 0;
    for (const ValueInfo* vi : c.model.graph.feed_inputs())
      write_value_pb((data / fmt::format("input_{}.pb", k++)).string(), vi->name, c.feeds.at(vi->name));
    const std::string cmd = replace_all(replace_all(command_, "{model}", model.string()), "{inputs}", data.string());
    const int status = std::system(cmd.c_str());
    if (status == -1) fail_usage(fmt::format("--check: cannot run '{}'", cmd));
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) throw Interrupted{};
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) fail_usage(fmt::format("--check: '{}' exits 127 (command not found)", cmd));
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return {code != 0, fmt::format("exit {}", code)};
  }

 private:
  std::string command_;
  std::string dir_;
};

// ---------------------------------------------------------------------------------------------
// The search

// A subgraph: node positions in topological order (sorted) and the values it outputs.
struct Sub {
  std::vector<size_t> nodes;
  std::vector<std::string> outputs;
};

struct StopSearch {};
struct MissingValue {
  std::string name;
};

// The declared type shared by every set's value: dimensions that differ become unknown.
ValueType merged_type(const std::vector<const Value*>& values) {
  if (values.empty() || !values[0]) return {};
  ValueType t = type_of_value(*values[0]);
  if (t.kind != ValueType::Kind::Tensor) return t;
  for (const Value* v : values) {
    if (!v || !v->is_tensor()) continue;
    const Shape& s = v->tensor().shape();
    if (s.size() != t.dims.size()) return ValueType::tensor_of_unknown_rank(t.dtype);
    for (size_t d = 0; d < s.size(); ++d)
      if (t.dims[d].value != s[d]) t.dims[d] = Dim{};
  }
  return t;
}


class Reducer {
 public:
  Reducer(const Model& model, const std::vector<Feeds>& sets, Predicate& p, const Options& o, const Registry* r)
      : model_(model), g_(model.graph), sets_(sets), pred_(p), opt_(o), registry_(r) {
    order();
    record();
  }

  Result run() {
    Sub full;
    for (size_t i = 0; i < nodes_.size(); ++i) full.nodes.push_back(i);
    for (const ValueInfo& vi : g_.outputs)
      if (producer_.count(vi.name)) full.outputs.push_back(vi.name);
    if (full.outputs.empty()) full = prefix(full, full.nodes.size());
    const bool holds = evaluate(full, "full model", /*counted=*/false);
    if (!holds)
      fail_usage(fmt::format("{} does not hold on the full model ({}): nothing to reduce", pred_.name(), last_detail_));
    Result res;
    res.original_nodes = nodes_.size();
    Sub cur = full;
    try {
      cur = phases(cur, opt_.mode == Mode::Linear);
      const size_t before = cur.nodes.size();
      cur = branches(cur);
      if (opt_.mode == Mode::Both && cur.nodes.size() < before) cur = phases(cur, true);
    } catch (const StopSearch&) {
      res.stopped = true;
    } catch (const Interrupted&) {
      res.stopped = true;
    }
    const Built b = build(best_);
    res.model = b.model;
    for (size_t k = 0; k < sets_.size(); ++k) res.feeds.push_back(feeds_for(b, k));
    if (opt_.freeze == Freeze::Constants) res.model = with_constants(b, 0);
    for (size_t i : best_.nodes) res.kept.push_back(label(i));
    res.steps = steps_;
    res.detail = best_detail_;
    return res;
  }

 private:
  struct Built {
    Model model;
    std::vector<std::string> inputs;     // every graph input, in order
    std::vector<std::string> constants;  // cut values frozen to initializers
    std::set<std::string> cut;
  };

  // Stable topological order (stored order where it is valid) over node_reads, so a node with
  // bodies follows everything its bodies capture.
  void order() {
    std::unordered_map<std::string, size_t> stored_producer;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      for (const auto& o : g_.nodes[i].outputs)
        if (!o.empty()) stored_producer[o] = i;
    std::vector<std::vector<size_t>> users(g_.nodes.size());
    std::vector<size_t> pending(g_.nodes.size(), 0);
    std::vector<std::vector<std::string>> reads(g_.nodes.size());
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      reads[i] = node_reads(g_.nodes[i]);
      std::set<size_t> deps;
      for (const auto& name : reads[i])
        if (auto it = stored_producer.find(name); it != stored_producer.end() && it->second != i) deps.insert(it->second);
      pending[i] = deps.size();
      for (size_t d : deps) users[d].push_back(i);
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (pending[i] == 0) ready.push(i);
    while (!ready.empty()) {
      const size_t i = ready.top();
      ready.pop();
      stored_index_.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.push(u);
    }
    if (stored_index_.size() != g_.nodes.size()) fail_model("the graph has a cycle: it cannot be reduced");
    for (size_t t = 0; t < stored_index_.size(); ++t) {
      const Node& n = g_.nodes[stored_index_[t]];
      nodes_.push_back(&n);
      reads_.push_back(reads[stored_index_[t]]);
      for (const auto& o : n.outputs)
        if (!o.empty()) producer_[o] = t;
    }
    for (size_t t = 0; t < nodes_.size(); ++t)
      for (const auto& name : reads_[t]) consumers_[name].push_back(t);
    for (const ValueInfo& vi : g_.outputs) graph_outputs_.insert(vi.name);
    for (const Initializer& init : g_.initializers) initializers_[init.name] = &init;
  }

  // Every main-graph value of each set's run; a run that fails keeps what it made before.
  void record() {
    ReferenceEvaluator ev(model_, evaluator_options(registry_));
    for (const Feeds& feeds : sets_) {
      RecordObserver rec;
      ev.add_observer(&rec);
      try {
        ev.run({}, feeds);
      } catch (const std::exception&) {
        // The failure is the predicate's business (--error); the values before it are recorded.
      }
      ev.remove_observer(&rec);
      auto& values = recorded_.emplace_back();
      for (const ValueRecord& r : rec.records()) values[r.name] = r.value;
    }
    for (const auto& [name, v] : sets_[0]) feed_names_.insert(name);
  }

  std::string label(size_t t) const {
    const Node& n = *nodes_[t];
    return n.name.empty() ? fmt::format("#{} ({})", stored_index_[t], n.op_type) : fmt::format("'{}' ({})", n.name, n.op_type);
  }

  const Value* value_of(const std::string& name, size_t set) const {
    if (const Value* v = pred_.reference(name)) return v;
    auto it = recorded_[set].find(name);
    return it == recorded_[set].end() ? nullptr : &it->second;
  }

  Built build(const Sub& s) const {
    Built b;
    Model& m = b.model;
    m.ir_version = model_.ir_version;
    m.opsets = model_.opsets;
    m.producer_name = "refeval reduce";
    m.graph.name = g_.name.empty() ? "reduced" : g_.name + "_reduced";
    std::vector<bool> in(nodes_.size(), false);
    for (size_t t : s.nodes) in[t] = true;
    std::set<std::string> declared;
    for (size_t t : s.nodes) {
      m.graph.nodes.push_back(*nodes_[t]);
      for (const auto& name : reads_[t]) {
        auto p = producer_.find(name);
        if ((p != producer_.end() && in[p->second]) || !declared.insert(name).second) continue;
        if (p == producer_.end()) {
          if (feed_names_.count(name)) {
            const ValueInfo* vi = g_.find_input(name);
            m.graph.inputs.push_back({name, vi && vi->type.kind != ValueType::Kind::Unknown ? vi->type : all_types(name, false)});
            b.inputs.push_back(name);
          } else if (auto it = initializers_.find(name); it != initializers_.end()) {
            m.graph.initializers.push_back(*it->second);
          }
          continue;
        }
        b.cut.insert(name);
        const Value* v0 = value_of(name, 0);
        if (frozen_.count(p->second) && opt_.freeze == Freeze::Constants && v0 && v0->is_tensor()) {
          b.constants.push_back(name);
        } else {
          m.graph.inputs.push_back({name, all_types(name, true)});
          b.inputs.push_back(name);
        }
      }
    }
    for (const auto& o : s.outputs) m.graph.outputs.push_back({o, all_types(o, true)});
    std::vector<const Function*> functions;
    collect_functions(m.graph.nodes, model_, functions);
    for (const Function* f : functions) m.functions.push_back(*f);
    return b;
  }

  ValueType all_types(const std::string& name, bool use_reference) const {
    std::vector<const Value*> vs;
    for (size_t k = 0; k < sets_.size(); ++k) {
      const Value* v = use_reference ? value_of(name, k) : nullptr;
      if (!v) {
        auto it = sets_[k].find(name);
        if (it != sets_[k].end()) v = &it->second;
        else if (auto r = recorded_[k].find(name); r != recorded_[k].end()) v = &r->second;
      }
      if (v) vs.push_back(v);
    }
    return merged_type(vs);
  }

  Feeds feeds_for(const Built& b, size_t set) const {
    Feeds f;
    for (const auto& name : b.inputs) {
      if (!b.cut.count(name)) {
        f[name] = sets_[set].at(name);
        continue;
      }
      const Value* v = value_of(name, set);
      if (!v) throw MissingValue{name};
      f[name] = *v;
    }
    return f;
  }

  Model with_constants(const Built& b, size_t set) const {
    Model m = b.model;
    for (const auto& name : b.constants) {
      const Value* v = value_of(name, set);
      if (!v) throw MissingValue{name};
      m.graph.initializers.push_back({name, v->tensor()});
    }
    return m;
  }

  bool evaluate(const Sub& s, const std::string& phase, bool counted = true) {
    if (counted) {
      if ((opt_.stop && opt_.stop->load()) || (opt_.max_steps > 0 && steps_ - 1 >= opt_.max_steps)) throw StopSearch{};
    }
    ++steps_;
    const Built b = build(s);
    bool all = true, any = false;
    std::string detail;
    for (size_t k = 0; k < sets_.size(); ++k) {
      Verdict v;
      try {
        const Feeds feeds = feeds_for(b, k);
        const Model m = b.constants.empty() ? b.model : with_constants(b, k);
        v = pred_.test(Candidate{m, feeds, b.cut, k});
      } catch (const MissingValue& mv) {
        v = {false, fmt::format("no recorded value for '{}'", mv.name)};
      }
      all &= v.holds;
      any |= v.holds;
      if (detail.empty() || v.holds != all) detail = sets_.size() > 1 ? fmt::format("set {}: {}", k, v.detail) : v.detail;
      if (opt_.all_sets ? !v.holds : v.holds) break;
    }
    const bool holds = opt_.all_sets ? all : any;
    last_detail_ = detail;
    if (opt_.on_step) opt_.on_step(Step{steps_, phase, s.nodes.size(), holds, detail});
    if (holds && (best_.nodes.empty() || s.nodes.size() <= best_.nodes.size())) {
      best_ = s;
      best_detail_ = detail;
    }
    return holds;
  }

  // The first k nodes of `cur`, with every value they make that the rest of `cur` (or its
  // outputs) reads, or that nothing among them reads, as outputs.
  Sub prefix(const Sub& cur, size_t k) const {
    Sub s;
    s.nodes.assign(cur.nodes.begin(), cur.nodes.begin() + long(k));
    std::vector<int> where(nodes_.size(), 0);  // 1 in the prefix, 2 in the rest of cur
    for (size_t i = 0; i < cur.nodes.size(); ++i) where[cur.nodes[i]] = i < k ? 1 : 2;
    const std::set<std::string> cur_outputs(cur.outputs.begin(), cur.outputs.end());
    for (size_t t : s.nodes)
      for (const auto& o : nodes_[t]->outputs) {
        if (o.empty()) continue;
        bool inside = false, after = cur_outputs.count(o) > 0;
        if (auto it = consumers_.find(o); it != consumers_.end())
          for (size_t c : it->second) {
            inside |= where[c] == 1;
            after |= where[c] == 2;
          }
        if (after || !inside) s.outputs.push_back(o);
      }
    return s;
  }

  // The nodes among `allowed` that `outputs` depend on, sorted.
  std::vector<size_t> ancestors(const std::vector<std::string>& outputs, const std::vector<size_t>& allowed) const {
    std::vector<bool> ok(nodes_.size(), false), seen(nodes_.size(), false);
    for (size_t t : allowed) ok[t] = true;
    std::vector<std::string> stack(outputs.begin(), outputs.end());
    std::vector<size_t> out;
    while (!stack.empty()) {
      const std::string name = stack.back();
      stack.pop_back();
      auto p = producer_.find(name);
      if (p == producer_.end() || !ok[p->second] || seen[p->second]) continue;
      seen[p->second] = true;
      out.push_back(p->second);
      for (const auto& r : reads_[p->second]) stack.push_back(r);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Sub phases(Sub cur, bool linear) {
    cur = outputs_phase(cur, linear);
    return inputs_phase(cur, linear);
  }

  Sub outputs_phase(const Sub& cur, bool linear) {
    const size_t n = cur.nodes.size();
    if (n <= 1) return cur;
    size_t k = n;  // the shortest prefix that holds
    if (linear) {
      for (size_t i = 1; i < n; ++i)
        if (evaluate(prefix(cur, i), "outputs")) {
          k = i;
          break;
        }
    } else {
      size_t bad = 0, good = n;
      while (good - bad > 1) {
        const size_t mid = bad + (good - bad) / 2;
        if (evaluate(prefix(cur, mid), "outputs")) good = mid;
        else bad = mid;
      }
      k = good;
    }
    // The culprit's own outputs, with only their ancestors, usually suffice.
    const size_t culprit = cur.nodes[k - 1];
    Sub own;
    for (const auto& o : nodes_[culprit]->outputs)
      if (!o.empty()) own.outputs.push_back(o);
    const std::vector<size_t> before(cur.nodes.begin(), cur.nodes.begin() + long(k));
    own.nodes = ancestors(own.outputs, before);
    const Sub whole = prefix(cur, k);
    if (own.nodes.size() < whole.nodes.size() || own.outputs != whole.outputs)
      if (evaluate(own, "outputs")) return own;
    return whole;
  }

  Sub inputs_phase(const Sub& cur, bool linear) {
    // The suffix may start at most at the first node producing an output.
    size_t limit = cur.nodes.size() - 1;
    for (size_t i = 0; i < cur.nodes.size(); ++i)
      for (const auto& o : nodes_[cur.nodes[i]]->outputs)
        if (std::find(cur.outputs.begin(), cur.outputs.end(), o) != cur.outputs.end()) limit = std::min(limit, i);
    auto suffix = [&](size_t j) {
      Sub s;
      s.nodes.assign(cur.nodes.begin() + long(j), cur.nodes.end());
      s.outputs = cur.outputs;
      return s;
    };
    size_t good = 0;
    if (linear) {
      while (good < limit && evaluate(suffix(good + 1), "inputs")) ++good;
    } else {
      size_t bad = limit + 1;
      while (bad - good > 1) {
        const size_t mid = good + (bad - good) / 2;
        if (evaluate(suffix(mid), "inputs")) good = mid;
        else bad = mid;
      }
    }
    return suffix(good);
  }

  // Cuts each node that makes no output, latest first, with the nodes only it needed.
  Sub branches(Sub cur) {
    if (cur.nodes.size() <= 1) return cur;
    std::set<size_t> makers;
    for (const auto& o : cur.outputs)
      if (auto p = producer_.find(o); p != producer_.end()) makers.insert(p->second);
    const std::vector<size_t> candidates(cur.nodes.rbegin(), cur.nodes.rend());
    for (size_t t : candidates) {
      if (makers.count(t) || !std::binary_search(cur.nodes.begin(), cur.nodes.end(), t)) continue;
      std::vector<size_t> allowed;
      for (size_t u : cur.nodes)
        if (u != t) allowed.push_back(u);
      Sub s{ancestors(cur.outputs, allowed), cur.outputs};
      frozen_.insert(t);
      if (evaluate(s, "branches")) cur = s;
      else frozen_.erase(t);
    }
    return cur;
  }

  const Model& model_;
  const Graph& g_;
  const std::vector<Feeds>& sets_;
  Predicate& pred_;
  const Options& opt_;
  const Registry* registry_;

  std::vector<const Node*> nodes_;                // topological order
  std::vector<size_t> stored_index_;              // position of nodes_[t] in g_.nodes
  std::vector<std::vector<std::string>> reads_;   // node_reads of nodes_[t]
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_map<std::string, std::vector<size_t>> consumers_;
  std::set<std::string> graph_outputs_;
  std::map<std::string, const Initializer*> initializers_;
  std::set<std::string> feed_names_;
  std::vector<std::unordered_map<std::string, Value>> recorded_;
  std::set<size_t> frozen_;  // nodes cut as branches: their values follow Options::freeze

  int steps_ = 0;
  Sub best_;
  std::string best_detail_, last_detail_;
};

}  // namespace

std::unique_ptr<Predicate> nan_predicate(const Registry* r) { return std::make_unique<NanPredicate>(r); }
std::unique_ptr<Predicate> compare_predicate(std::vector<ValueRecord> dump, Tolerance tol, const Registry* r) {
  return std::make_unique<ComparePredicate>(std::move(dump), tol, r);
}
std::unique_ptr<Predicate> error_predicate(const std::string& regex, const Registry* r) {
  return std::make_unique<ErrorPredicate>(regex, r);
}
std::unique_ptr<Predicate> check_predicate(std::string command, std::string work_dir) {
  return std::make_unique<CheckPredicate>(std::move(command), std::move(work_dir));
}

std::string node_label(const Node& n, size_t index) {
  return n.name.empty() ? fmt::format("#{} ({})", index, n.op_type) : fmt::format("'{}' ({})", n.name, n.op_type);
}

Result reduce(const Model& model, const std::vector<Feeds>& sets, Predicate& predicate, const Options& options,
              const Registry* registry) {
  if (sets.empty()) fail_usage("reduce: no input set");
  if (options.freeze == Freeze::Constants && sets.size() > 1)
    fail_usage("--freeze constants needs a single input set (each set would freeze different values); use --freeze inputs");
  if (model.graph.nodes.empty()) fail_usage("the model has no nodes: nothing to reduce");
  Reducer r(model, sets, predicate, options, registry);
  return r.run();
}

std::vector<std::string> differing_initializers(const Model& model, const std::vector<ValueRecord>& dump, Tolerance tol) {
  std::map<std::string, const Value*> in_dump;
  for (const ValueRecord& r : dump) in_dump.emplace(r.name, &r.value);
  std::vector<std::string> out;
  for (const Initializer& init : model.graph.initializers)
    if (auto it = in_dump.find(init.name); it != in_dump.end()) {
      const Comparison c = compare_values(Value(init.value), *it->second, tol);
      if (!c.equal) out.push_back(fmt::format("'{}': {}", init.name, c.reason));
    }
  return out;
}

std::string write_result(const Result& r, const std::string& model_path, const Registry* registry) {
  const fs::path dir = fs::path(model_path).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) fail_input(fmt::format("{}: cannot create the folder ({})", dir.string(), ec.message()));
  save_model(r.model, model_path);
  std::string problem;
  for (size_t k = 0; k < r.feeds.size(); ++k) {
    const fs::path data = dir / fmt::format("test_data_set_{}", k);
    fs::remove_all(data, ec);
    fs::create_directories(data, ec);
    if (ec) fail_input(fmt::format("{}: cannot create the folder ({})", data.string(), ec.message()));
    size_t i = 0;
    for (const ValueInfo* vi : r.model.graph.feed_inputs())
      write_value_pb((data / fmt::format("input_{}.pb", i++)).string(), vi->name, r.feeds[k].at(vi->name));
    try {
      ReferenceEvaluator ev(r.model, EvaluatorOptions{registry});
      const Values outs = ev.run({}, r.feeds[k]);
      const auto names = ev.output_names();
      for (size_t o = 0; o < outs.size(); ++o)
        write_value_pb((data / fmt::format("output_{}.pb", o)).string(), names[o], outs[o]);
    } catch (const std::exception& e) {
      if (problem.empty()) problem = first_line(e.what());
    }
  }
  return problem;
}

}  // namespace refeval::reduce
