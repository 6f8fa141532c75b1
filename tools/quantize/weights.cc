#include "weights.h"

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::quantize {
namespace {

void collect_reads(const Graph& g, std::set<std::string>& reads) {
  for (const Node& n : g.nodes) {
    reads.insert(n.inputs.begin(), n.inputs.end());
    for (const Attribute& a : n.attributes) {
      if (a.g) collect_reads(*a.g, reads);
      for (const auto& body : a.graphs) collect_reads(*body, reads);
    }
  }
}

}  // namespace

std::string weight_refusal(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return "not a two-input MatMul";
  const Initializer* b = g.find_initializer(n.inputs[1]);
  if (g.find_input(n.inputs[1])) return fmt::format("B '{}' is a graph input that a feed can replace", n.inputs[1]);
  if (!b) return fmt::format("B '{}' is computed, not a weight", n.inputs[1]);
  if (b->value.dtype() != DType::Float) return fmt::format("B '{}' is {}, not float", b->name, dtype_short_name(b->value.dtype()));
  if (b->value.rank() != 2) return fmt::format("B '{}' has rank {}, not a 2-D weight", b->name, b->value.rank());
  if (b->value.size() == 0) return fmt::format("B '{}' is empty", b->name);
  return "";
}

bool multiplies_computed_values(const Graph& g, const Node& n) {
  return n.inputs.size() == 2 && !g.find_initializer(n.inputs[1]) && !g.find_input(n.inputs[1]);
}

const Initializer* tied_table(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || g.find_initializer(n.inputs[1]) || g.find_input(n.inputs[1])) return nullptr;
  const Initializer* e = g.transposed_initializer(n.inputs[1]);
  return e && e->value.dtype() == DType::Float && e->value.size() > 0 ? e : nullptr;
}

std::vector<float> transposed(const Tensor& t) {
  const int64_t rows = t.dim(0), cols = t.dim(1);
  std::vector<float> out(size_t(rows * cols));
  const float* in = t.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[size_t(c * rows + r)] = in[r * cols + c];
  return out;
}

void require_quantized(const QuantizeResult& r, const std::string& path) {
  if (!r.quantized.empty() || !r.tables.empty()) return;
  fail_usage(fmt::format("{}: no MatMul to quantize{}", path,
                         r.skipped.empty() ? " (the main graph has none)" : fmt::format(" ('{}': {})", r.skipped[0].first, r.skipped[0].second)));
}

std::set<std::string> values_read(const Graph& g) {
  std::set<std::string> reads;
  collect_reads(g, reads);
  for (const ValueInfo& out : g.outputs) reads.insert(out.name);
  return reads;
}

}  // namespace refeval::quantize
