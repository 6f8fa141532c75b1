#include "profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <fmt/format.h>

#include "refeval/dtype.h"

namespace refeval::profile {
namespace {

Event span(std::string cat, std::string name, int64_t pid, int64_t tid, int64_t start, int64_t end) {
  Event e;
  e.cat = std::move(cat), e.name = std::move(name), e.pid = pid, e.tid = tid, e.ts = start, e.dur = end - start;
  e.kind = e.cat == "Session" ? EventKind::Session : EventKind::Kernel;
  return e;
}

int64_t bytes_of(const Tensor& t) { return t.size() * int64_t(dtype_size(t.dtype())); }

}  // namespace

Profiler::Profiler(Clock::time_point origin) : origin_(origin), pid_(getpid()), tid_(syscall(SYS_gettid)) {}

int64_t Profiler::micros(Clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
}

void Profiler::add_session_event(const std::string& name, Clock::time_point start, Clock::time_point end) {
  session_events_.push_back(span("Session", name, pid_, tid_, micros(start), micros(end)));
}

void Profiler::begin_run() { run_start_ = Clock::now(); }

void Profiler::end_run(const nlohmann::ordered_json& args) {
  add_session_event("model_run", run_start_, Clock::now());
  session_events_.back().extra_args = args;
}

void Profiler::graph_begin(const GraphEvent& e) {
  std::set<std::string> names;
  if (e.initializers)
    for (const auto& [name, value] : *e.initializers) names.insert(name);
  constants_.push_back(std::move(names));
}

void Profiler::graph_end(const GraphEvent&) {
  if (!constants_.empty()) constants_.pop_back();
}

void Profiler::before_node(const NodeEvent&) { starts_.push_back(Clock::now()); }

void Profiler::add_tensor(const Tensor& t) {
  tensors_.push_back({t.dtype(), uint32_t(t.rank())});
  dims_.insert(dims_.end(), t.shape().begin(), t.shape().end());
}

void Profiler::after_node(const NodeEvent& e, Values& outputs) {
  const int64_t end = micros(Clock::now());
  NodeRecord r{&e.node, &e.id, e.depth, e.index, micros(starts_.back()), end, tensors_.size(), dims_.size(), 0, 0, 0, 0, 0};
  starts_.pop_back();
  const std::set<std::string>* constants = constants_.empty() ? nullptr : &constants_.back();
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (!e.inputs[i].is_tensor()) continue;  // ORT lists present tensors only
    const Tensor& t = e.inputs[i].tensor();
    add_tensor(t);
    ++r.inputs;
    const bool constant = constants && i < e.node.inputs.size() && constants->count(e.node.inputs[i]);
    (constant ? r.parameter_size : r.activation_size) += bytes_of(t);
  }
  for (const Value& v : outputs) {
    if (!v.is_tensor()) continue;
    add_tensor(v.tensor());
    ++r.outputs;
    r.output_size += bytes_of(v.tensor());
  }
  nodes_.push_back(r);
}

std::vector<Event> Profiler::events() const {
  std::vector<Event> out = session_events_;
  // Records are written as nodes finish (a body's before its caller's); events go in start order,
  // a caller before the body nodes that start in the same microsecond.
  std::vector<size_t> order(nodes_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return nodes_[a].start != nodes_[b].start ? nodes_[a].start < nodes_[b].start : nodes_[a].depth < nodes_[b].depth;
  });
  for (size_t i : order) {
    const NodeRecord& r = nodes_[i];
    size_t tensor = r.first_tensor, dim = r.first_dim;
    auto next_shape = [&]() {
      const TensorRecord& t = tensors_[tensor++];
      TypeShape ts{std::string(dtype_short_name(t.dtype)), {dims_.begin() + long(dim), dims_.begin() + long(dim + t.rank)}};
      dim += t.rank;
      return ts;
    };
    // ORT names a node without a name "<OpType>_<index>"; a body's nodes carry their qualified id.
    const bool unnamed_top = r.depth == 0 && r.node->name.empty();
    const std::string node = unnamed_top ? fmt::format("{}_{}", r.node->op_type, r.index) : *r.id;
    Event ev = span("Node", node + "_kernel_time", pid_, tid_, r.start, r.end);
    ev.node = node;
    ev.op_type = r.node->op_type;
    ev.provider = kProvider;
    ev.node_index = r.index;
    for (uint32_t i = 0; i < r.inputs; ++i) ev.inputs.push_back(next_shape());
    for (uint32_t i = 0; i < r.outputs; ++i) ev.outputs.push_back(next_shape());
    ev.activation_size = r.activation_size, ev.parameter_size = r.parameter_size, ev.output_size = r.output_size;
    if (r.depth > 0) ev.extra_args["depth"] = r.depth;  // refeval's: a body's node, inside its caller's time
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace refeval::profile
