// The Debugger observer: a stack of frames that records every value as it is computed, a small
// state machine for step/next/finish, and the stop callback that hands control to the client.
#include "refeval/debugger.h"

#include <algorithm>

#include <fmt/format.h>

#include "refeval/address.h"
#include "refeval/error.h"
#include "refeval/stats.h"

namespace refeval {

// One execution of a graph: what it has computed, and what set() replaced in it.
struct Debugger::Frame {
  DebugFrame info;
  std::map<std::string, Value> values;
  std::vector<std::string> order;
  std::map<std::string, Value> overrides;

  void record(const std::string& name, const Value& v) {
    if (values.insert_or_assign(name, v).second) order.push_back(name);
  }
};

namespace {

// Functions calling functions are refused by the planner beyond a few levels; the listing index
// stops at the same kind of depth so a self-calling function cannot recurse forever here.
constexpr int kMaxIndexDepth = 16;

void index_graph(const Model& model, const std::vector<Node>& nodes, const std::string& prefix, int depth,
                 std::map<std::string, NodeLocation>& out) {
  if (depth > kMaxIndexDepth) return;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const std::string id = node_id(prefix, n, i);
    out.emplace(id, NodeLocation{&nodes, i, prefix});
    for (const Attribute& a : n.attributes)
      if (a.g) index_graph(model, a.g->nodes, id + "/" + a.name + "/", depth + 1, out);
    if (const Function* f = model.find_function(n.domain, n.op_type, n.overload))
      index_graph(model, f->nodes, id + "/" + f->name + "/", depth + 1, out);
  }
}

// Whether a value holds NaN/Inf; `stats` and `shape` describe the first tensor that does.
bool nonfinite(const Value& v, TensorStats& stats, std::vector<int64_t>& shape) {
  if (v.is_tensor()) {
    if (!is_float_dtype(v.tensor().dtype())) return false;
    stats = tensor_stats(v.tensor(), 1);
    shape = v.tensor().shape();
    return stats.nan + stats.inf > 0;
  }
  if (v.is_sequence()) {
    for (const Value& item : v.sequence().items)
      if (nonfinite(item, stats, shape)) return true;
    return false;
  }
  if (v.is_optional() && v.optional().has_value()) return nonfinite(*v.optional().value, stats, shape);
  return false;
}

}  // namespace

Debugger::Debugger(const Model& model) : model_(model) { index_graph(model, model.graph.nodes, "", 0, locations_); }

Debugger::~Debugger() = default;

void Debugger::set_action(DebugAction action) {
  action_ = action;
  action_depth_ = stopped_ ? stop_.depth : frames_.empty() ? 0 : frames_.back()->info.depth;
}

int Debugger::add_breakpoint(const std::string& address) {
  Breakpoint b;
  b.address = address;
  try {
    for (const NodeMatch& m : find_nodes(model_.graph, address)) b.ids.push_back(m.id);
  } catch (const Error&) {
    if (!locations_.count(address)) throw;
    b.ids.push_back(address);  // a node inside a model-local function, by its qualified id
  }
  b.number = next_number_++;
  breakpoints_.push_back(std::move(b));
  return breakpoints_.back().number;
}

void Debugger::delete_breakpoint(int number) {
  auto it = std::find_if(breakpoints_.begin(), breakpoints_.end(), [&](const Breakpoint& b) { return b.number == number; });
  if (it == breakpoints_.end()) fail_usage(fmt::format("no breakpoint number {}", number));
  breakpoints_.erase(it);
}

void Debugger::clear_breakpoints() { breakpoints_.clear(); }

std::vector<int> Debugger::breakpoints_at(const std::string& id) const {
  std::vector<int> numbers;
  for (const Breakpoint& b : breakpoints_)
    if (std::find(b.ids.begin(), b.ids.end(), id) != b.ids.end()) numbers.push_back(b.number);
  return numbers;
}

std::vector<DebugFrame> Debugger::frames() const {
  std::vector<DebugFrame> out;
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) out.push_back((*it)->info);
  return out;
}

Debugger::Frame* Debugger::find_frame(const std::string& name) const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
    if ((*it)->values.count(name)) return it->get();
  return nullptr;
}

const Value* Debugger::value(const std::string& name) const {
  const Frame* f = find_frame(name);
  return f ? &f->values.at(name) : nullptr;
}

std::vector<std::string> Debugger::value_names() const { return frames_.empty() ? std::vector<std::string>{} : frames_.back()->order; }

void Debugger::set(const std::string& name, Value v) {
  if (stopped_ && stop_.after && stopped_outputs_) {
    const auto& outs = stop_.node->outputs;
    for (size_t k = 0; k < outs.size() && k < stopped_outputs_->size(); ++k)
      if (outs[k] == name) {
        (*stopped_outputs_)[k] = v;
        frames_.back()->record(name, v);
        return;
      }
  }
  if (Frame* f = find_frame(name)) {
    f->overrides[name] = v;
    f->record(name, v);
    return;
  }
  pending_[name] = std::move(v);
}

const NodeLocation* Debugger::locate(const std::string& id) const {
  auto it = locations_.find(id);
  return it == locations_.end() ? nullptr : &it->second;
}

void Debugger::graph_begin(const GraphEvent& e) {
  if (e.depth == 0) {
    frames_.clear();  // a new run; until then the last run's values stay readable
    interrupted_ = false;
  }
  auto f = std::make_unique<Frame>();
  f->info = {e.depth, e.path, e.label};
  for (const NamedValues* bound : {e.initializers, e.inputs})
    if (bound)
      for (const auto& [name, v] : *bound) {
        auto p = pending_.find(name);
        if (p == pending_.end()) {
          f->record(name, v);
          continue;
        }
        f->overrides[name] = p->second;
        f->record(name, p->second);
        pending_.erase(p);
      }
  frames_.push_back(std::move(f));
}

void Debugger::graph_end(const GraphEvent& e) {
  if (e.depth > 0) {
    frames_.pop_back();
    return;
  }
  pending_.clear();  // names the run never produced; the main frame stays for inspection
}

bool Debugger::breakpoint_hit(const std::string& id, int& number) {
  for (Breakpoint& b : breakpoints_)
    if (std::find(b.ids.begin(), b.ids.end(), id) != b.ids.end()) {
      ++b.hits;
      number = b.number;
      return true;
    }
  return false;
}

void Debugger::before_node(const NodeEvent& e) {
  Stop s;
  if (interrupted_.exchange(false))
    s.reason = StopReason::Interrupt;
  else if (breakpoint_hit(e.id, s.breakpoint))
    s.reason = StopReason::Breakpoint;
  else if (action_ == DebugAction::Step || (action_ == DebugAction::Next && e.depth <= action_depth_))
    s.reason = StopReason::Step;
  else
    return;
  s.node = &e.node;
  s.id = e.id;
  s.depth = e.depth;
  s.inputs = &e.inputs;
  stop_here(std::move(s));
}

void Debugger::replace_inputs(const NodeEvent& e, Values& inputs) {
  for (size_t k = 0; k < inputs.size() && k < e.node.inputs.size(); ++k) {
    const Frame* f = find_frame(e.node.inputs[k]);
    if (!f || f->overrides.empty()) continue;
    auto it = f->overrides.find(e.node.inputs[k]);
    if (it != f->overrides.end()) inputs[k] = it->second;
  }
}

std::string Debugger::nonfinite_detail(const Node& node, const Values& outputs) const {
  TensorStats stats;
  std::vector<int64_t> shape;
  for (size_t k = 0; k < outputs.size() && k < node.outputs.size(); ++k) {
    if (!nonfinite(outputs[k], stats, shape)) continue;
    const auto at = unravel_index(stats.first_nonfinite.at(0), shape);
    return fmt::format("output '{}' holds {} NaN and {} Inf, the first at [{}]", node.outputs[k], stats.nan, stats.inf,
                       fmt::join(at, ", "));
  }
  return "";
}

void Debugger::after_node(const NodeEvent& e, Values& outputs) {
  if (frames_.empty()) return;  // added in the middle of a run
  Frame& frame = *frames_.back();
  for (size_t k = 0; k < outputs.size() && k < e.node.outputs.size(); ++k) {
    const std::string& name = e.node.outputs[k];
    if (name.empty()) continue;
    if (auto p = pending_.find(name); p != pending_.end()) {
      outputs[k] = p->second;
      pending_.erase(p);
    }
    frame.record(name, outputs[k]);
  }
  Stop s;
  if (watch_nonfinite_) {
    s.detail = nonfinite_detail(e.node, outputs);
    // Only where NaN/Inf appear, not at every node they spread to.
    TensorStats stats;
    std::vector<int64_t> shape;
    if (!s.detail.empty() && std::any_of(e.inputs.begin(), e.inputs.end(), [&](const Value& v) { return nonfinite(v, stats, shape); }))
      s.detail.clear();
  }
  if (!s.detail.empty())
    s.reason = StopReason::Watch;
  else if (action_ == DebugAction::Finish && e.depth < action_depth_)
    s.reason = StopReason::Finish;
  else
    return;
  s.after = true;
  s.node = &e.node;
  s.id = e.id;
  s.depth = e.depth;
  s.inputs = &e.inputs;
  s.outputs = &outputs;
  stopped_outputs_ = &outputs;
  stop_here(std::move(s));
}

void Debugger::stop_here(Stop s) {
  stop_ = std::move(s);
  stopped_ = true;
  const DebugAction next = on_stop_ ? on_stop_(*this, stop_) : DebugAction::Continue;
  set_action(next);
  interrupted_ = false;  // a Ctrl-C typed at the stop's prompt is not meant for the resumed run
  stopped_ = false;
  stopped_outputs_ = nullptr;
  if (next == DebugAction::Quit) throw DebugQuit{};
}

}  // namespace refeval
