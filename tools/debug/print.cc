#include "debug/print.h"

#include <algorithm>

#include <fmt/format.h>

#include "refeval/format.h"
#include "refeval/stats.h"

namespace refeval::cli {
namespace {

constexpr int64_t kSummaryValues = 10;

std::string name_list(const std::vector<std::string>& names) {
  std::vector<std::string> shown;
  for (const auto& n : names) shown.push_back(n.empty() ? "-" : n);  // an omitted optional input
  return fmt::format("{}", fmt::join(shown, ", "));
}

std::string elements(const Tensor& t, int64_t begin, int64_t end) {
  std::vector<std::string> items;
  for (int64_t i = begin; i < end; ++i) items.push_back(python_scalar(t, i, true));
  return fmt::format("{}", fmt::join(items, ", "));
}

// Every element; from rank 2 on, one line per row of the last dimension led by its index.
std::string tensor_full(const Tensor& t) {
  if (t.size() == 0) return "";
  if (t.rank() <= 1) return fmt::format("\n  [{}]", elements(t, 0, t.size()));
  const int64_t row = t.shape().back();
  std::string out;
  for (int64_t start = 0; start < t.size(); start += row) {
    std::vector<int64_t> lead = unravel_index(start, t.shape());
    lead.pop_back();
    out += fmt::format("\n  [{}, :] {}", fmt::join(lead, ", "), elements(t, start, start + row));
  }
  return out;
}

std::string tensor_summary(const Tensor& t) {
  if (t.size() == 0) return "";
  const int64_t shown = std::min(t.size(), kSummaryValues);
  const std::string more = t.size() > shown ? fmt::format(", ... ({} more)", t.size() - shown) : "";
  return fmt::format("\n  [{}{}]", elements(t, 0, shown), more);
}

std::string tensor_stats_text(const Tensor& t) {
  const TensorStats s = tensor_stats(t);
  if (!s.numeric) return fmt::format("\n  count {} (no statistics for {})", s.count, dtype_numpy_name(t.dtype()));
  std::string out = fmt::format("\n  count {}  min {}  max {}  mean {}  nan {}  inf {}", s.count, python_float(s.min),
                                python_float(s.max), python_float(s.mean), s.nan, s.inf);
  if (!s.first_nonfinite.empty()) {
    std::vector<std::string> at;
    for (int64_t flat : s.first_nonfinite) at.push_back(fmt::format("[{}]", fmt::join(unravel_index(flat, t.shape()), ", ")));
    out += fmt::format("\n  first NaN/Inf at {}", fmt::join(at, " "));
  }
  return out;
}

}  // namespace

std::string value_summary(const Value& v) {
  if (v.is_sequence()) return v.sequence().items.empty() ? "an empty sequence" : fmt::format("a sequence: {}", describe(v, 3));
  return v.is_absent() ? "absent" : describe(v, 3);
}

std::string node_line(const Node& node, const std::string& id, const Debugger& dbg) {
  const NodeLocation* where = dbg.locate(id);
  const std::string index = where ? fmt::format("#{}", where->index) : "";
  const std::string op = node.domain.empty() ? node.op_type : node.domain + ":" + node.op_type;
  return fmt::format("{}{}({})  inputs: {}  outputs: {}", index.empty() ? "" : index + " ", id == index ? "" : id + " ", op,
                     name_list(node.inputs), name_list(node.outputs));
}

std::string stop_header(const Stop& stop, const Debugger& dbg) {
  const std::string line = node_line(*stop.node, stop.id, dbg);
  std::string out;
  switch (stop.reason) {
    case StopReason::Breakpoint: out = fmt::format("Breakpoint {}, before {}", stop.breakpoint, line); break;
    case StopReason::Step: out = fmt::format("Before {}", line); break;
    case StopReason::Interrupt: out = fmt::format("Interrupted, before {}", line); break;
    case StopReason::Finish: out = fmt::format("Finished {}", line); break;
    case StopReason::Watch: out = fmt::format("NaN/Inf appeared: {}\n  after {}", stop.detail, line); break;
  }
  const auto frames = dbg.frames();
  if (!frames.empty() && frames[0].depth > 0) out += fmt::format("\n  in {}: {}", frames[0].caller, frames[0].label);
  if (stop.after)
    for (size_t k = 0; k < stop.outputs->size() && k < stop.node->outputs.size(); ++k)
      if (!stop.node->outputs[k].empty()) out += fmt::format("\n  {}: {}", stop.node->outputs[k], value_summary((*stop.outputs)[k]));
  return out;
}

std::string value_text(const std::string& name, const Value& v, ValueDetail detail) {
  if (v.is_sequence()) {
    const auto& items = v.sequence().items;
    std::string out = fmt::format("{}: a sequence of {}", name, items.size());
    for (size_t i = 0; i < items.size(); ++i) out += fmt::format("\n{}", value_text(fmt::format("{}[{}]", name, i), items[i], detail));
    return out;
  }
  if (v.is_optional()) return v.optional().has_value() ? value_text(name, *v.optional().value, detail) : name + ": None (an empty optional)";
  if (!v.is_tensor()) return fmt::format("{}: {}", name, value_summary(v));
  const Tensor& t = v.tensor();
  const std::string head = fmt::format("{}: {}", name, describe(v, 3));
  switch (detail) {
    case ValueDetail::Summary: return head + tensor_summary(t);
    case ValueDetail::Full: return head + tensor_full(t);
    case ValueDetail::Stats: return head + tensor_stats_text(t);
  }
  return head;
}

}  // namespace refeval::cli
