#include "refeval/finite_check.h"

#include <fmt/format.h>

#include "refeval/format.h"

namespace refeval {

void FiniteCheckObserver::graph_begin(const GraphEvent& e) {
  if (e.depth > 0) {
    bodies_.push_back(fmt::format("{} '{}': {}", e.caller->op_type, e.caller->name, e.label));
    return;
  }
  finding_.reset();
  bodies_.clear();  // a previous run may have stopped inside a body
  checked_ = 0;
  for (const auto& [name, v] : *e.initializers) check(name, v, NonFinite::Source::Initializer, nullptr);
  for (const auto& [name, v] : *e.inputs) check(name, v, NonFinite::Source::Input, nullptr);
}

void FiniteCheckObserver::graph_end(const GraphEvent& e) {
  if (e.depth > 0 && !bodies_.empty()) bodies_.pop_back();
}

void FiniteCheckObserver::after_node(const NodeEvent& e, Values& outputs) {
  for (size_t k = 0; k < outputs.size() && k < e.node.outputs.size(); ++k)
    if (!e.node.outputs[k].empty()) check(e.node.outputs[k], outputs[k], NonFinite::Source::Node, &e);
}

void FiniteCheckObserver::check(const std::string& name, const Value& v, NonFinite::Source source, const NodeEvent* e) {
  if (v.is_sequence()) {
    const auto& items = v.sequence().items;
    for (size_t i = 0; i < items.size(); ++i) check(fmt::format("{}[{}]", name, i), items[i], source, e);
    return;
  }
  if (v.is_optional()) {
    if (v.optional().has_value()) check(name, *v.optional().value, source, e);
    return;
  }
  if (v.is_map()) return check(name, Value(v.map().values), source, e);
  if (!v.is_tensor()) return;
  ++checked_;
  TensorStats stats = tensor_stats(v.tensor(), positions_);
  if (stats.nan == 0 && stats.inf == 0) return;
  NonFinite f;
  f.source = source;
  f.value = name;
  f.tensor = v.tensor();
  f.stats = std::move(stats);
  if (e) {
    f.node_id = e->id;
    f.node = &e->node;
    f.bodies = bodies_;
    for (size_t i = 0; i < e->inputs.size(); ++i)
      f.inputs.emplace_back(i < e->node.inputs.size() ? e->node.inputs[i] : std::string(), e->inputs[i]);
  }
  finding_ = std::move(f);
  throw NonFiniteFound{};
}

std::string format_stats(const Value& v) {
  if (!v.is_tensor()) return describe(v, 3);
  const Tensor& t = v.tensor();
  const TensorStats s = tensor_stats(t, 0);
  const std::string head = fmt::format("{}:{}", dtype_numpy_name(t.dtype()), shape_to_string(t.shape()));
  if (!s.numeric) return describe(v, 3);
  if (s.count == s.nan + s.inf) return fmt::format("{} no finite element, {} NaN, {} Inf", head, s.nan, s.inf);
  return fmt::format("{} min {} max {} mean {}, {} NaN, {} Inf", head, python_float(s.min), python_float(s.max),
                     python_float(s.mean), s.nan, s.inf);
}

std::string format_finding(const NonFinite& f) {
  std::string out;
  if (f.source != NonFinite::Source::Node) {
    out += fmt::format("{} '{}' holds NaN or Inf before any node runs\n",
                       f.source == NonFinite::Source::Initializer ? "initializer" : "input", f.value);
  } else {
    // An unnamed node is known by its id alone ("#3", "loop/body/#1").
    if (f.node->name.empty()) out += fmt::format("first NaN or Inf: node {} ({})\n", f.node_id, f.node->op_type);
    else out += fmt::format("first NaN or Inf: node '{}' ({}), id {}\n", f.node->name, f.node->op_type, f.node_id);
    for (const auto& body : f.bodies) out += fmt::format("  inside {}\n", body);
  }
  out += fmt::format("  {} '{}': {}\n", f.source == NonFinite::Source::Node ? "output" : "value", f.value, format_stats(f.tensor));
  std::vector<std::string> positions;
  for (int64_t flat : f.stats.first_nonfinite)
    positions.push_back(fmt::format("[{}]", fmt::join(unravel_index(flat, f.tensor.shape()), ", ")));
  out += fmt::format("  first at {}\n", fmt::join(positions, " "));
  for (const auto& [name, v] : f.inputs) {
    if (name.empty() || v.is_absent()) continue;
    out += fmt::format("  input '{}': {}\n", name, format_stats(v));
  }
  return out;
}

}  // namespace refeval
