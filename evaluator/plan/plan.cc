// Stage 2, plan: resolve every node to an OpRun (attributes parsed once), give every value a
// slot, find the last use of each value, and plan bodies and model-local functions recursively.
#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "plan/plan.h"
#include "refeval/address.h"

namespace refeval {
namespace {

constexpr int kMaxFunctionDepth = 64;

class PlanNodeContext final : public NodeContext {
 public:
  PlanNodeContext(const Node& node, const Graph& graph, int64_t opset, const OpRegistration& reg, const PlanEnv& env,
                  Scope& scope, std::string id, std::vector<bool> folded)
      : node_(node), graph_(graph), opset_(opset), reg_(reg), env_(env), scope_(scope), id_(std::move(id)),
        folded_(std::move(folded)) {}
  bool folded_input(size_t i) const override { return i < folded_.size() && folded_[i]; }
  void absorb_input(size_t i) const override {
    if (absorbed_.size() <= i) absorbed_.resize(i + 1, false);
    absorbed_[i] = true;
  }
  std::vector<bool> absorbed() const { return absorbed_; }
  const Node& node() const override { return node_; }
  const Graph& graph() const override { return graph_; }
  const OpsetMap& opsets() const override { return env_.opsets; }
  int64_t opset() const override { return opset_; }
  int since_version() const override { return reg_.since_version; }
  Determinism determinism() const override { return reg_.determinism; }
  std::shared_ptr<const Plan> subgraph(const std::string& attr_name) const override {
    ignore(attr_name);
    const Attribute* a = node_.find_attribute(attr_name);
    if (!a || a->type != AttrType::Graph || !a->g) fail(fmt::format("attribute '{}' must be a graph", attr_name));
    return plan_graph(a->g, env_, &scope_, id_ + "/" + attr_name + "/");
  }

 private:
  const Node& node_;
  const Graph& graph_;
  int64_t opset_;
  const OpRegistration& reg_;
  const PlanEnv& env_;
  Scope& scope_;
  std::string id_;
  std::vector<bool> folded_;
  mutable std::vector<bool> absorbed_;
};

// A call of a model-local function: its body planned once for this call site.
class FunctionCall final : public OpRun {
 public:
  FunctionCall(const Function& f, const Node& caller, const PlanEnv& env, const std::string& id) : name_(f.name) {
    if (env.function_depth >= kMaxFunctionDepth)
      fail_model(fmt::format("{}: functions nest deeper than {} (a function that calls itself?)", caller.describe(), kMaxFunctionDepth));
    if (caller.inputs.size() > f.inputs.size() || caller.outputs.size() > f.outputs.size())
      fail_model(fmt::format("{}: {} inputs and {} outputs, but function '{}' has {} and {}", caller.describe(),
                             caller.inputs.size(), caller.outputs.size(), f.name, f.inputs.size(), f.outputs.size()));
    std::map<std::string, Attribute> values;
    for (const Attribute& a : f.attribute_defaults) values[a.name] = a;
    for (const Attribute& a : caller.attributes) values[a.name] = a;
    auto body = std::make_shared<Graph>();
    body->name = f.name;
    body->nodes = f.nodes;
    bind_attribute_refs(body->nodes, values);
    for (const auto& i : f.inputs) body->inputs.push_back({i, {}});
    for (const auto& o : f.outputs) body->outputs.push_back({o, {}});
    PlanEnv inner = env;
    for (const auto& [d, v] : f.opsets) inner.opsets[d] = v;
    inner.function_depth = env.function_depth + 1;
    inner.release_initializer = nullptr;  // the main graph's alone
    body_ = plan_graph(body, inner, nullptr, id + "/" + f.name + "/");
  }
  Values run(const Values& inputs, RunContext& ctx) override {
    Values padded = inputs;
    padded.resize(plan_input_names(*body_).size());
    return ctx.run_body(*body_, padded, "function " + name_);
  }

 private:
  std::string name_;
  std::shared_ptr<const Plan> body_;
};

// Stable topological order: stored order wherever the stored order is valid.
std::vector<size_t> execution_order(const Graph& g) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<size_t>> users(g.nodes.size());
  std::vector<size_t> pending(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::set<size_t> deps;
    for (const auto& in : g.nodes[i].inputs) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end() && it->second != i) deps.insert(it->second);
    }
    pending[i] = deps.size();
    for (size_t d : deps) users[d].push_back(i);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!pending[i]) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (pending[i]) fail_model(fmt::format("graph '{}' has a cycle through {}", g.name, g.nodes[i].describe()));
  }
  return order;
}

// A folded step whose outputs every reader absorbed (NodeContext::absorb_input) need not run: a
// weight's Transpose that each MatMul reading it packs from the weight itself.
void mark_skippable_folds(Plan& plan) {
  std::vector<int> plain(plan.num_slots(), 0), absorbed(plan.num_slots(), 0);
  for (int s : plan.output_slots) ++plain[size_t(s)];
  for (const Step& step : plan.steps) {
    for (size_t k = 0; k < step.inputs.size(); ++k)
      if (step.inputs[k] >= 0) ++(step.absorbed[k] ? absorbed : plain)[size_t(step.inputs[k])];
    for (int s : step.implicit) ++plain[size_t(s)];
  }
  for (Step& step : plan.steps)
    step.skippable = step.fold && std::all_of(step.outputs.begin(), step.outputs.end(), [&](int s) {
                       return s < 0 || (plain[size_t(s)] == 0 && absorbed[size_t(s)] > 0);
                     }) && std::any_of(step.outputs.begin(), step.outputs.end(), [](int s) { return s >= 0; });
}

bool has_bodies(const Graph& g) {
  for (const Node& n : g.nodes)
    for (const Attribute& a : n.attributes)
      if (a.g || !a.graphs.empty()) return true;
  return false;
}

// A node folds when its registration is Deterministic and it has no bodies (which may hold
// anything).
bool may_fold(const Node& node, const OpRegistration* reg) {
  if (!reg || reg->determinism != Determinism::Deterministic) return false;
  for (const Attribute& a : node.attributes)
    if (a.g || !a.graphs.empty()) return false;
  return true;
}

std::unique_ptr<OpRun> make_op(const Node& node, const Graph& graph, const PlanEnv& env, Scope& scope,
                               const std::string& id, bool& deterministic, std::vector<bool> folded_inputs,
                               std::vector<bool>& absorbed) {
  deterministic = false;
  const auto opset_it = env.opsets.find(node.domain);
  const Function* fn = env.model ? env.model->find_function(node.domain, node.op_type, node.overload) : nullptr;
  if (opset_it == env.opsets.end()) {
    if (fn) return std::make_unique<FunctionCall>(*fn, node, env, id);
    fail_model(fmt::format("{}: domain '{}' is not imported by the model (opset_import)", node.describe(), node.domain));
  }
  const OpRegistration* reg = env.registry->resolve(node.domain, node.op_type, opset_it->second);
  if (!reg) {
    if (fn) return std::make_unique<FunctionCall>(*fn, node, env, id);
    const auto versions = env.registry->versions_of(node.domain, node.op_type);
    if (versions.empty())
      fail_model(fmt::format("{}: unknown operator (no implementation and no model-local function)", node.describe()));
    fail_model(fmt::format("{}: no implementation for opset {} (refeval implements since-versions {})", node.describe(),
                           opset_it->second, fmt::join(versions, ", ")));
  }
  deterministic = may_fold(node, reg);
  PlanNodeContext ctx(node, graph, opset_it->second, *reg, env, scope, id, std::move(folded_inputs));
  std::unique_ptr<OpRun> op;
  try {
    op = reg->factory.create(ctx);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Model) throw;
    fail_model(fmt::format("{}: {}", node.describe(), e.what()));
  }
  absorbed = ctx.absorbed();
  const auto unread = ctx.unread_attributes();
  if (!unread.empty())
    fail_model(fmt::format("{}: unknown attribute{} {} for {} at opset {}", node.describe(), unread.size() > 1 ? "s" : "",
                           fmt::join(unread, ", "), node.op_type, opset_it->second));
  return op;
}

}  // namespace

int Scope::define(const std::string& name) {
  auto [it, inserted] = slots_.emplace(name, int(plan_.slot_names.size()));
  if (inserted) plan_.slot_names.push_back(name);
  return it->second;
}

int Scope::lookup(const std::string& name) {
  if (auto it = slots_.find(name); it != slots_.end()) return it->second;
  if (!parent_) return -1;
  const int outer = parent_->lookup(name);
  if (outer < 0) return -1;
  parent_->current_implicit_.push_back(outer);
  const int own = define(name);
  plan_.captures.emplace_back(own, outer);
  return own;
}

std::shared_ptr<Plan> plan_graph(std::shared_ptr<const Graph> graph, const PlanEnv& env, Scope* parent, const std::string& path) {
  auto plan = std::make_shared<Plan>();
  plan->graph = graph;
  plan->path = path;
  const Graph& g = *graph;
  Scope scope(*plan, parent);
  for (const auto& in : g.inputs) {
    plan->input_names.push_back(in.name);
    plan->input_slots.push_back(scope.define(in.name));
  }
  for (const auto& init : g.initializers) plan->initializer_slots.emplace_back(scope.define(init.name), init.value);
  // Values that are the same on every run: initializers a feed cannot replace, and folded outputs.
  std::set<int> constant, folded;
  for (const auto& init : g.initializers)
    if (!g.find_input(init.name)) constant.insert(scope.lookup(init.name));

  // Initializers the nodes absorb (env.release_initializer): the readers each has left to plan,
  // and those some reader keeps. A graph with bodies (If, Loop, Scan) keeps them all: a body may
  // name them.
  std::map<int, int> unplanned_readers;
  std::set<int> kept;
  const bool releasing = env.release_initializer && !parent && !has_bodies(g);
  if (releasing) {
    for (const Node& n : g.nodes)
      for (const auto& in : n.inputs)
        if (!in.empty() && constant.count(scope.lookup(in))) ++unplanned_readers[scope.lookup(in)];
    for (const auto& out : g.outputs)
      if (constant.count(scope.lookup(out.name))) kept.insert(scope.lookup(out.name));
  }
  auto release_absorbed = [&](const Step& step) {
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const auto it = unplanned_readers.find(step.inputs[k]);
      if (it == unplanned_readers.end()) continue;
      if (!step.absorbed[k]) kept.insert(it->first);
      if (--it->second > 0 || kept.count(it->first)) continue;
      auto& slots = plan->initializer_slots;
      slots.erase(std::remove_if(slots.begin(), slots.end(), [&](const auto& e) { return e.first == it->first; }), slots.end());
      env.release_initializer(plan->slot_names[size_t(it->first)]);
    }
  };

  std::vector<int> last_use;
  auto use = [&](int slot, int step) {
    if (slot < 0) return;
    if (last_use.size() <= size_t(slot)) last_use.resize(size_t(slot) + 1, -1);
    last_use[size_t(slot)] = step;
  };
  for (size_t i : execution_order(g)) {
    const Node& node = g.nodes[i];
    Step step;
    step.node = &node;
    step.index = int(plan->steps.size());
    step.id = node_id(path, node, i);
    for (const auto& in : node.inputs) {
      if (in.empty()) { step.inputs.push_back(-1); continue; }
      const int slot = scope.lookup(in);
      if (slot < 0)
        fail_model(fmt::format("{}: input '{}' is not a graph input, an initializer or an earlier node's output",
                               node.describe(), in));
      step.inputs.push_back(slot);
    }
    scope.captured_by_current_node().clear();
    bool deterministic = false;
    std::vector<bool> folded_inputs;  // outputs of nodes folded above (initializers are constant_input's)
    for (int s : step.inputs) folded_inputs.push_back(s >= 0 && folded.count(s) > 0);
    step.op = make_op(node, g, env, scope, step.id, deterministic, std::move(folded_inputs), step.absorbed);
    step.absorbed.resize(step.inputs.size(), false);
    if (releasing) release_absorbed(step);
    step.implicit = scope.captured_by_current_node();
    for (const auto& out : node.outputs) step.outputs.push_back(out.empty() ? -1 : scope.define(out));
    step.fold = deterministic && step.implicit.empty() &&
                std::all_of(step.inputs.begin(), step.inputs.end(), [&](int s) { return s < 0 || constant.count(s); });
    if (step.fold)
      for (int s : step.outputs)
        if (s >= 0) constant.insert(s), folded.insert(s);
    for (int s : step.inputs) use(s, step.index);
    for (int s : step.implicit) use(s, step.index);
    plan->steps.push_back(std::move(step));
  }
  for (const auto& out : g.outputs) {
    const int slot = scope.lookup(out.name);
    if (slot < 0) fail_model(fmt::format("graph '{}': output '{}' is not produced by any node, input or initializer", g.name, out.name));
    plan->output_names.push_back(out.name);
    plan->output_slots.push_back(slot);
  }
  // Free each value after its last use, except graph outputs, initializers and inputs a body
  // receives (which its caller still holds).
  mark_skippable_folds(*plan);
  std::vector<bool> pinned(plan->num_slots(), false);
  for (int s : plan->output_slots) pinned[size_t(s)] = true;
  for (auto& [s, t] : plan->initializer_slots) pinned[size_t(s)] = true;
  last_use.resize(plan->num_slots(), -1);
  for (size_t s = 0; s < plan->num_slots(); ++s)
    if (!pinned[s] && last_use[s] >= 0) plan->steps[size_t(last_use[s])].release.push_back(int(s));
  for (Step& step : plan->steps) {
    step.last_read.assign(step.inputs.size(), false);
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const int s = step.inputs[k];
      auto named = [s](const std::vector<int>& v) { return std::find(v.begin(), v.end(), s) != v.end(); };
      step.last_read[k] = s >= 0 && named(step.release) && !named(step.implicit) &&
                          std::find(step.inputs.begin() + std::ptrdiff_t(k) + 1, step.inputs.end(), s) == step.inputs.end();
    }
  }
  return plan;
}

// Replaces attributes that refer to the caller's (ref_attr_name) with the caller's values,
// in the nodes and in every nested body. Unresolved references are dropped: the op's default
// applies, as ONNX specifies.
void bind_attribute_refs(std::vector<Node>& nodes, const std::map<std::string, Attribute>& values) {
  for (Node& n : nodes) {
    std::vector<Attribute> bound;
    for (Attribute a : n.attributes) {
      if (!a.ref_attr_name.empty()) {
        auto it = values.find(a.ref_attr_name);
        if (it == values.end()) continue;
        const std::string name = a.name;
        a = it->second;
        a.name = name;
        a.ref_attr_name.clear();
      }
      if (a.g) {
        a.g = std::make_shared<Graph>(*a.g);
        bind_attribute_refs(a.g->nodes, values);
      }
      for (auto& g : a.graphs) {
        g = std::make_shared<Graph>(*g);
        bind_attribute_refs(g->nodes, values);
      }
      bound.push_back(std::move(a));
    }
    n.attributes = std::move(bound);
  }
}
const std::vector<std::string>& plan_input_names
(const Plan& p) { return p.input_names; }
const std::vector<std::string>& plan_output_names(const Plan& p) { return p.output_names; }

}  // namespace refeval
