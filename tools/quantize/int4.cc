#include "int4.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "refeval/builder.h"
#include "refeval/error.h"
#include "rtn.h"
#include "weights.h"

namespace refeval::quantize {

QuantizeResult quantize_int4(const Model& model, const Int4Options& o) {
  if (o.block_size < 16 || (o.block_size & (o.block_size - 1)))
    fail_usage(fmt::format("--block-size {}: MatMulNBits takes a power of 2, at least 16", o.block_size));
  if (o.accuracy_level < 0 || o.accuracy_level > 4) fail_usage(fmt::format("--accuracy-level {}: 0 to 4", o.accuracy_level));
  QuantizeResult r{model, {}, {}};
  Graph& g = r.model.graph;
  std::map<std::string, std::vector<std::string>> made;  // B -> the MatMulNBits inputs 1.. written for it
  for (Node& n : g.nodes) {
    if (n.op_type != "MatMul" || !n.domain.empty()) continue;
    if (o.exclude.count(n.name) || o.exclude.count(n.op_type)) {
      r.skipped.emplace_back(n.name, "excluded by --exclude");
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
    if (names.empty()) {
      const Int4Blocks q = quantize_int4_rtn(b.data<float>(), K, N, o.block_size, o.symmetric);
      const std::string base = n.inputs[1];
      names = {base + "_Q4", base + "_scales"};
      Tensor data(DType::UInt8, {N, q.blocks, o.block_size / 2});
      std::copy(q.data.begin(), q.data.end(), data.data<uint8_t>());
      g.initializers.push_back({names[0], data});
      g.initializers.push_back({names[1], Tensor::from_vector<float>({int64_t(q.scales.size())}, q.scales)});
      if (!o.symmetric) {
        names.push_back(base + "_zero_points");
        g.initializers.push_back({names[2], Tensor::from_vector<uint8_t>({int64_t(q.zero_points.size())}, q.zero_points)});
      }
    }
    r.quantized.push_back(n.name);
    Node q;
    q.name = n.name.empty() ? "" : n.name + "_Q4";
    q.op_type = "MatMulNBits";
    q.domain = "com.microsoft";
    q.inputs = {n.inputs[0]};
    q.inputs.insert(q.inputs.end(), names.begin(), names.end());
    q.outputs = n.outputs;
    q.attributes = {build::attr("K", K), build::attr("N", N), build::attr("bits", int64_t(4)),
                    build::attr("block_size", o.block_size)};
    if (o.accuracy_level) q.attributes.push_back(build::attr("accuracy_level", o.accuracy_level));
    n = std::move(q);
  }
  if (!r.quantized.empty()) {
    const std::set<std::string> reads = values_read(g);
    std::erase_if(g.initializers, [&](const Initializer& i) { return made.count(i.name) && !reads.count(i.name); });
    r.model.opsets.emplace("com.microsoft", 1);
  }
  return r;
}

}  // namespace refeval::quantize
