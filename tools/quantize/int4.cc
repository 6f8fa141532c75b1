#include "int4.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "refeval/builder.h"
#include "refeval/error.h"
#include "gptq.h"
#include "hqq.h"
#include "rtn.h"
#include "weights.h"

namespace refeval::quantize {
namespace {

// Why Gather node n's table cannot become GatherBlockQuantized, or "" when it can.
std::string table_refusal(const Graph& g, const Node& n, int64_t block_size) {
  const Tensor& t = g.find_initializer(n.inputs[0])->value;
  if (t.dtype() != DType::Float) return fmt::format("table '{}' is {}, not float", n.inputs[0], dtype_short_name(t.dtype()));
  if (t.rank() != 2) return fmt::format("table '{}' has rank {}, not [vocab, hidden]", n.inputs[0], t.rank());
  const Attribute* a = n.find_attribute("axis");
  const int64_t axis = a ? a->i : 0;
  if (axis != 0 && axis != -2) return fmt::format("it gathers along axis {}, not the rows", axis);
  if (t.dim(1) % block_size)
    return fmt::format("the table's width {} is not a multiple of --block-size {} (GatherBlockQuantized reads whole blocks)", t.dim(1), block_size);
  return "";
}

// Gather node n (a table that passed table_refusal) as GatherBlockQuantized over new initializers.
Node quantized_gather(Graph& g, const Node& n, const Int4Options& o) {
  const Tensor& t = g.find_initializer(n.inputs[0])->value;
  const int64_t vocab = t.dim(0), hidden = t.dim(1);
  const std::vector<float> columns = transposed(t);  // each row a MatMul column
  const Int4Blocks q = quantize_int4_rtn(columns.data(), hidden, vocab, o.block_size, o.symmetric);
  const std::string base = n.inputs[0] + "_gather";
  Tensor data(DType::UInt8, {vocab, hidden / 2});
  std::copy(q.data.begin(), q.data.end(), data.data<uint8_t>());
  g.initializers.push_back({base + "_Q4", data});
  g.initializers.push_back({base + "_scales", Tensor::from_vector<float>({vocab, q.blocks}, q.scales)});
  std::vector<std::string> inputs = {base + "_Q4", n.inputs[1], base + "_scales"};
  if (!o.symmetric) {
    g.initializers.push_back({base + "_zero_points", Tensor::from_vector<uint8_t>({vocab, (q.blocks + 1) / 2}, q.zero_points)});
    inputs.push_back(base + "_zero_points");
  }
  return build::node("GatherBlockQuantized", inputs, n.outputs,
                     {build::attr("gather_axis", int64_t(0)), build::attr("quantize_axis", int64_t(1)),
                      build::attr("block_size", o.block_size), build::attr("bits", int64_t(4))},
                     n.name.empty() ? "" : n.name + "_Q4", "com.microsoft");
}

}  // namespace

QuantizeResult quantize_int4(const Model& model, const Int4Options& o) {
  if (o.block_size < 16 || (o.block_size & (o.block_size - 1)))
    fail_usage(fmt::format("--block-size {}: MatMulNBits takes a power of 2, at least 16", o.block_size));
  if (o.accuracy_level < 0 || o.accuracy_level > 4) fail_usage(fmt::format("--accuracy-level {}: 0 to 4", o.accuracy_level));
  if (o.hqq && o.symmetric) fail_usage("--algo hqq has float zero points: --symmetric goes with --algo rtn");
  if (o.hqq && o.embeddings) fail_usage("--embeddings writes RTN blocks: --algo hqq quantizes MatMul weights only");
  QuantizeResult r{model, {}, {}};
  Graph& g = r.model.graph;
  std::map<std::string, std::vector<std::string>> made;  // B -> the MatMulNBits inputs 1.. written for it
  std::set<std::string> tables;  // the float tables rewritten, dropped below when nothing else reads them
  std::set<std::string> tied;    // tables a tied LM head read through a Transpose, likewise
  std::set<std::string> stored_transposed;  // Gemm weights read with transB, likewise
  auto is_table = [&](const Node& n) {
    return o.embeddings && n.op_type == "Gather" && n.domain.empty() && n.inputs.size() == 2 && g.find_initializer(n.inputs[0]) &&
           !g.find_input(n.inputs[0]) && !o.exclude.count(n.name) && !o.exclude.count(n.op_type);
  };
  // The token table is the one with the most rows (the vocabulary); smaller ones are positions or
  // rotary caches, whose values 4 bits would not keep.
  int64_t vocab = 0;
  std::string vocab_table;
  for (const Node& n : g.nodes)
    if (is_table(n) && table_refusal(g, n, o.block_size).empty() && g.find_initializer(n.inputs[0])->value.dim(0) > vocab)
      vocab = g.find_initializer(n.inputs[0])->value.dim(0), vocab_table = n.inputs[0];
  for (Node& n : g.nodes) {
    if (is_table(n)) {
      std::string why = table_refusal(g, n, o.block_size);
      if (why.empty() && g.find_initializer(n.inputs[0])->value.dim(0) < vocab)
        why = fmt::format("{} rows, fewer than the token table '{}' ({}): a position or rotary table, kept in float",
                          g.find_initializer(n.inputs[0])->value.dim(0), vocab_table, vocab);
      if (!why.empty()) {
        r.tables_skipped.emplace_back(n.name, why);
        continue;
      }
      r.tables.push_back(n.name);
      tables.insert(n.inputs[0]);
      n = quantized_gather(g, n, o);
    }
  }
  // [K, N] float weight w quantized (HQQ, GPTQ with A's statistics, or RTN) as initializers
  // named from `base`: MatMulNBits' inputs 1...
  auto quantize_weight = [&](const float* w, int64_t K, int64_t N, const std::string& a, const std::string& base) {
    std::vector<std::string> names;
    if (o.hqq) {
      const HqqBlocks q = quantize_int4_hqq(w, K, N, o.block_size);
      names = {base + "_Q4", base + "_scales", base + "_zero_points"};
      Tensor data(DType::UInt8, {N, q.blocks, o.block_size / 2});
      std::copy(q.data.begin(), q.data.end(), data.data<uint8_t>());
      g.initializers.push_back({names[0], data});
      g.initializers.push_back({names[1], Tensor::from_vector<float>({int64_t(q.scales.size())}, q.scales)});
      g.initializers.push_back({names[2], Tensor::from_vector<float>({N, q.blocks}, q.zero_points)});
      return names;
    }
    // GPTQ's weight, quantized and dequantized with its error spread, is then quantized with RTN
    // as ONNX Runtime's GPTQ path does (its blocks land on the same levels).
    std::vector<float> gptq;
    if (const auto h = o.hessians.find(a); h != o.hessians.end()) gptq = gptq_dequantized(w, K, N, h->second, o.block_size);
    const Int4Blocks q = quantize_int4_rtn(gptq.empty() ? w : gptq.data(), K, N, o.block_size, o.symmetric);
    names = {base + "_Q4", base + "_scales"};
    Tensor data(DType::UInt8, {N, q.blocks, o.block_size / 2});
    std::copy(q.data.begin(), q.data.end(), data.data<uint8_t>());
    g.initializers.push_back({names[0], data});
    g.initializers.push_back({names[1], Tensor::from_vector<float>({int64_t(q.scales.size())}, q.scales)});
    if (!o.symmetric) {
      names.push_back(base + "_zero_points");
      g.initializers.push_back({names[2], Tensor::from_vector<uint8_t>({int64_t(q.zero_points.size())}, q.zero_points)});
    }
    return names;
  };
  // bias: a Gemm's C, MatMulNBits' input 5 (after zero points and g_idx, which may be absent).
  auto nbits = [&](const Node& n, const std::vector<std::string>& names, int64_t K, int64_t N, const std::string& bias = "") {
    Node q;
    q.name = n.name.empty() ? "" : n.name + "_Q4";
    q.op_type = "MatMulNBits";
    q.domain = "com.microsoft";
    q.inputs = {n.inputs[0]};
    q.inputs.insert(q.inputs.end(), names.begin(), names.end());
    if (!bias.empty()) {
      q.inputs.resize(5);
      q.inputs.push_back(bias);
    }
    q.outputs = n.outputs;
    q.attributes = {build::attr("K", K), build::attr("N", N), build::attr("bits", int64_t(4)),
                    build::attr("block_size", o.block_size)};
    if (o.accuracy_level) q.attributes.push_back(build::attr("accuracy_level", o.accuracy_level));
    return q;
  };
  std::vector<Node> views;  // Reshapes of shared tables, written first (they read initializers only)
  for (Node& n : g.nodes) {
    if ((n.op_type != "MatMul" && n.op_type != "Gemm") || !n.domain.empty()) continue;
    if (o.exclude.count(n.name) || o.exclude.count(n.op_type)) {
      r.skipped.emplace_back(n.name, "excluded by --exclude");
      continue;
    }
    if (n.op_type == "Gemm") {  // Hugging Face's Conv1D (GPT-2): x · W + b, W [K, N], or W stored [N, K] with transB
      if (std::string why = gemm_refusal(g, n); !why.empty()) {
        r.skipped.emplace_back(n.name, why);
        continue;
      }
      const Tensor& b = g.find_initializer(n.inputs[1])->value;
      const Attribute* t = n.find_attribute("transB");
      const bool trans_b = t && t->i != 0;
      const int64_t K = trans_b ? b.dim(1) : b.dim(0), N = trans_b ? b.dim(0) : b.dim(1);
      const std::string base = n.inputs[1] + (trans_b ? "_T" : "");
      auto& names = made[base];
      if (names.empty()) names = quantize_weight(trans_b ? transposed(b).data() : b.data<float>(), K, N, n.inputs[0], base);
      if (trans_b) stored_transposed.insert(n.inputs[1]);
      r.quantized.push_back(n.name);
      n = nbits(n, names, K, N, n.inputs.size() > 2 ? n.inputs[2] : "");
      continue;
    }
    if (const Initializer* e = tied_table(g, n)) {
      // A tied LM head, A · Eᵀ with E [vocab, hidden]: MatMulNBits' B is E's rows in blocks along
      // hidden, the blocks GatherBlockQuantized reads; shared when RTN wrote both.
      const int64_t N = e->value.dim(0), K = e->value.dim(1);
      const std::string base = e->name + "_gather";
      tied.insert(e->name);
      const bool shared = tables.count(e->name) && !o.hqq && !o.hessians.count(n.inputs[0]);
      auto& names = made[shared ? base + "_Q4_as_B" : e->name + "_T"];
      if (names.empty() && shared) {
        const int64_t blocks = K / o.block_size;  // the table passed table_refusal: whole blocks
        g.initializers.push_back({base + "_Q4_as_B_shape", Tensor::from_vector<int64_t>({3}, {N, blocks, o.block_size / 2})});
        views.push_back(build::node("Reshape", {base + "_Q4", base + "_Q4_as_B_shape"}, {base + "_Q4_as_B"}, {}, base + "_Q4_as_B"));
        names = {base + "_Q4_as_B", base + "_scales"};
        if (!o.symmetric) names.push_back(base + "_zero_points");
      } else if (names.empty()) {
        const std::string base_t = e->name + "_T";
        names = quantize_weight(transposed(e->value).data(), K, N, n.inputs[0], base_t);  // Eᵀ
      }
      (shared ? r.tied_shared : r.tied_copied).push_back(n.name);
      r.quantized.push_back(n.name);
      n = nbits(n, names, K, N);
      continue;
    }
    if (multiplies_computed_values(g, n)) {
      ++r.computed_products;
      continue;
    }
    if (std::string why = weight_refusal(g, n); !why.empty()) {
      r.skipped.emplace_back(n.name, why);
      continue;
    }
    const Tensor& b = g.find_initializer(n.inputs[1])->value;
    const int64_t K = b.dim(0), N = b.dim(1);
    auto& names = made[n.inputs[1]];
    if (names.empty()) names = quantize_weight(b.data<float>(), K, N, n.inputs[0], n.inputs[1]);
    r.quantized.push_back(n.name);
    n = nbits(n, names, K, N);
  }
  g.nodes.insert(g.nodes.begin(), views.begin(), views.end());
  if (!r.quantized.empty() || !r.tables.empty()) {
    // Transposes of tables no MatMul reads any more, then the floats nothing reads
    std::set<std::string> reads = values_read(g);
    std::erase_if(g.nodes, [&](const Node& t) {
      return t.op_type == "Transpose" && t.domain.empty() && t.outputs.size() == 1 && !reads.count(t.outputs[0]) &&
             t.inputs.size() == 1 && g.find_initializer(t.inputs[0]);
    });
    reads = values_read(g);
    std::erase_if(g.initializers, [&](const Initializer& i) { return (made.count(i.name) || tables.count(i.name) || tied.count(i.name) || stored_transposed.count(i.name)) &&
                                                      !reads.count(i.name); });
    r.model.opsets.emplace("com.microsoft", 1);
  }
  return r;
}

}  // namespace refeval::quantize
