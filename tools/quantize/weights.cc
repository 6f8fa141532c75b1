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

std::string gemm_refusal(const Graph& g, const Node& n) {
  auto attr = [&](const char* name, double otherwise) {
    const Attribute* a = n.find_attribute(name);
    return !a ? otherwise : a->type == AttrType::Float ? double(a->f) : double(a->i);
  };
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return "not a Gemm of A and B";
  if (attr("transA", 0) != 0) return "A is transposed (transA = 1)";
  if (attr("alpha", 1) != 1 || attr("beta", 1) != 1)
    return fmt::format("alpha {} and beta {} scale the product and C (MatMulNBits has neither)", attr("alpha", 1), attr("beta", 1));
  Node as_matmul = n;
  as_matmul.inputs.resize(2);
  if (std::string why = weight_refusal(g, as_matmul); !why.empty()) return why;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor& b = g.find_initializer(n.inputs[1])->value;
    const int64_t N = attr("transB", 0) != 0 ? b.dim(0) : b.dim(1);
    const Initializer* c = g.find_initializer(n.inputs[2]);
    if (!c || g.find_input(n.inputs[2]) || c->value.dtype() != DType::Float || c->value.shape() != Shape{N})
      return fmt::format("C '{}' is not a float bias [{}] (MatMulNBits' bias)", n.inputs[2], N);
  }
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
