#include "refeval/trace.h"

#include <fmt/format.h>

#include "refeval/format.h"

namespace refeval {

void TraceObserver::line(int depth, const std::string& text) {
  fmt::print(out_, "{:{}}{}\n", "", 2 * depth, text);
}

void TraceObserver::graph_begin(const GraphEvent& e) {
  const int level = level_at(e.depth);
  if (e.depth > 0 && level >= 2) line(e.depth, fmt::format("-- {} '{}': {}", e.caller->op_type, e.caller->name, e.label));
  if (level < 3) return;
  for (const auto& [name, v] : *e.initializers) line(e.depth, fmt::format(" +C {}: {}", name, describe(v, level)));
  for (const auto& [name, v] : *e.inputs) line(e.depth, fmt::format(" +I {}: {}", name, describe(v, level)));
}

void TraceObserver::before_node(const NodeEvent& e) {
  if (level_at(e.depth) < 2) return;
  line(e.depth, fmt::format("{}({}) -> {}", e.node.op_type, fmt::join(e.node.inputs, ", "), fmt::join(e.node.outputs, ", ")));
}

void TraceObserver::after_node(const NodeEvent& e, Values& outputs) {
  const int level = level_at(e.depth);
  if (level < 3) return;
  for (size_t k = 0; k < outputs.size() && k < e.node.outputs.size(); ++k)
    if (!e.node.outputs[k].empty()) line(e.depth, fmt::format(" + {}: {}", e.node.outputs[k], describe(outputs[k], level)));
}

}  // namespace refeval
