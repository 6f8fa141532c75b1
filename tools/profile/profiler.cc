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
// A sequence's or optional's tensors; a map counts 0.
int64_t bytes_of(const Value& v) {
  if (v.is_tensor()) return bytes_of(v.tensor());
  int64_t sum = 0;
  if (v.is_sequence())
    for (const Value& item : v.sequence().items) sum += bytes_of(item);
  if (v.is_optional() && v.optional().value) sum += bytes_of(*v.optional().value);
  return sum;
}

}  // namespace

Profiler::Profiler(Clock::time_point origin) : origin_(origin), pid_(getpid()), tid_(syscall(SYS_gettid)) {}

int64_t Profiler::micros(Clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
}

void Profiler::add_session_event(const std::string& name, Clock::time_point start, Clock::time_point end) {
  session_events_.push_back(span("Session", name, pid_, tid_, micros(start), micros(end)));
}

void Profiler::begin_run() {
  ++run_;
  if (memory_) run_memory_.resize(size_t(run_) + 1);
  run_start_ = Clock::now();
}

void Profiler::end_run(const nlohmann::ordered_json& args) {
  add_session_event("model_run", run_start_, Clock::now());
  session_events_.back().extra_args = args;
  run_events_.push_back(session_events_.size() - 1);
  if (memory_ && run_ >= 0) run_memory_[size_t(run_)].allocator = allocator_stats();
}

void Profiler::graph_begin(const GraphEvent& e) {
  std::set<std::string> names;
  if (e.initializers)
    for (const auto& [name, value] : *e.initializers) names.insert(name);
  constants_.push_back(std::move(names));
  if (memory_ && e.depth == 0 && run_ >= 0) {
    RunMemory& m = run_memory_[size_t(run_)];
    if (e.initializers)
      for (const auto& [name, value] : *e.initializers) m.weights_bytes += bytes_of(value);
    if (e.inputs)
      for (const auto& [name, value] : *e.inputs) m.feeds.emplace_back(name, bytes_of(value));
  }
}

void Profiler::graph_end(const GraphEvent& e) {
  if (!constants_.empty()) constants_.pop_back();
  if (memory_ && e.depth == 0 && run_ >= 0 && e.outputs)
    for (const auto& [name, value] : *e.outputs) run_memory_[size_t(run_)].outputs.push_back(name);
}

void Profiler::before_node(const NodeEvent&) { starts_.push_back(Clock::now()); }

void Profiler::add_tensor(const Tensor& t) {
  tensors_.push_back({t.dtype(), uint32_t(t.rank())});
  dims_.insert(dims_.end(), t.shape().begin(), t.shape().end());
}

void Profiler::after_node(const NodeEvent& e, Values& outputs) {
  const int64_t end = micros(Clock::now());
  NodeRecord r{&e.node, &e.id, e.depth, e.index, micros(starts_.back()), end, tensors_.size(), dims_.size(), 0, 0, 0, 0, 0,
               run_, writes_.size(), 0};
  if (memory_ && e.depth == 0) {
    for (const Value& v : outputs) writes_.push_back(bytes_of(v));
    r.writes = outputs.size();
  }
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
  std::vector<size_t> event_of(nodes_.size());
  for (size_t i : order) {
    event_of[i] = out.size();
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
  if (memory_) add_memory_events(out, event_of);
  return out;
}

void Profiler::add_memory_events(std::vector<Event>& out, const std::vector<size_t>& event_of) const {
  // Main-graph records per run, in the order they finished: the order the nodes ran.
  std::vector<std::vector<size_t>> records(run_memory_.size());
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].depth == 0 && nodes_[i].run >= 0 && size_t(nodes_[i].run) < records.size()) records[size_t(nodes_[i].run)].push_back(i);
  int64_t kv_before = 0;
  std::vector<Event> counters;  // appended last: `out` must not grow while events in it are referred to
  for (size_t run = 0; run < run_memory_.size() && run < run_events_.size(); ++run) {
    const RunMemory& m = run_memory_[run];
    Event& model_run = out[run_events_[run]];  // session events come first in `out`, in their order
    const auto kv = model_run.extra_args.find("kv_cache_bytes");
    const bool has_kv = kv != model_run.extra_args.end() && kv->is_number_integer();
    std::vector<MemoryNode> nodes;
    for (size_t i : records[run]) {
      const NodeRecord& r = nodes_[i];
      MemoryNode n{out[event_of[i]].node, r.node->op_type, {}, {}};
      for (const std::string& in : r.node->inputs)
        if (!in.empty()) n.reads.push_back(in);
      for (const std::string& name : outer_names(*r.node)) n.reads.push_back(name);
      for (size_t k = 0; k < r.writes; ++k)
        n.writes.emplace_back(k < r.node->outputs.size() ? r.node->outputs[k] : "", writes_[r.first_write + k]);
      nodes.push_back(std::move(n));
    }
    const MemoryTimeline t = live_memory(nodes, m.feeds, m.outputs);
    auto counter = [&](int64_t ts, int64_t activations, int64_t kv_bytes) {
      Event c;
      c.cat = "Memory", c.name = "Memory", c.pid = pid_, c.tid = tid_, c.ts = ts, c.kind = EventKind::Counter;
      c.extra_args["activations"] = activations;
      if (has_kv) c.extra_args["kv_cache"] = kv_bytes;
      return c;
    };
    for (size_t k = 0; k < records[run].size(); ++k) {
      Event& node = out[event_of[records[run][k]]];
      node.extra_args["live_bytes"] = t.live_bytes[k];
      counters.push_back(counter(node.ts, t.live_bytes[k], kv_before));
    }
    const int64_t kv_after = has_kv ? kv->get<int64_t>() : 0;
    counters.push_back(counter(model_run.ts + model_run.dur, 0, kv_after));
    nlohmann::ordered_json j = memory_json(t, nodes);
    j["weights_bytes"] = m.weights_bytes;
    j["free_list_bytes"] = m.allocator.free_list_bytes;
    j["packed_weight_bytes"] = m.allocator.packed_weight_bytes;
    j["peak_rss_bytes"] = m.allocator.peak_rss_bytes;
    model_run.extra_args["memory"] = std::move(j);
    kv_before = kv_after;
  }
  out.insert(out.end(), counters.begin(), counters.end());
}

}  // namespace refeval::profile
