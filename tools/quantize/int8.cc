#include "int8.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "refeval/builder.h"
#include "refeval/error.h"
#include "weights.h"

namespace refeval::quantize {
namespace {

// ORT's compute_scale_zp for a symmetric range [-rmax, rmax] onto [qmin, qmax]: the scale in
// double, stored as float; a range below float's smallest normal gets scale 1.
float symmetric_scale(float rmax, int qmin, int qmax) {
  const double scale = (double(rmax) - double(-rmax)) / double(qmax - qmin);
  return scale < double(std::numeric_limits<float>::min()) ? 1.0f : float(scale);
}

// ORT's compute_scale_zp for an activation's calibrated range onto int8 [-128, 127], asymmetric:
// the range widened to 0, scale = (rmax - rmin) / 255 in double stored as float (1 and zero
// point 0 below float's smallest normal), zero point = round(qmin - rmin / scale), half to even.
struct ActivationScale {
  float scale = 1;
  int8_t zero_point = 0;
};
ActivationScale activation_scale(float lo, float hi) {
  const double rmin = std::min(double(lo), 0.0), rmax = std::max(double(hi), 0.0), scale = (rmax - rmin) / 255.0;
  if (scale < double(std::numeric_limits<float>::min())) return {};
  return {float(scale), int8_t(std::clamp(std::nearbyint(-128.0 - rmin / scale), -128.0, 127.0))};
}

// A node's name with a suffix, or "" for an unnamed node (ONNX allows those).
std::string derived(const std::string& name, const char* suffix) { return name.empty() ? "" : name + suffix; }

}  // namespace

Int8Weight quantize_int8_symmetric(const float* b, int64_t K, int64_t N, bool per_channel, bool reduce_range) {
  const int qmin = reduce_range ? -64 : -127, qmax = -qmin;
  Int8Weight w;
  w.data.resize(size_t(K * N));
  const int64_t groups = per_channel ? N : 1;
  for (int64_t c = 0; c < groups; ++c) {
    // The columns this scale covers: column c alone, or all of them.
    const int64_t first = per_channel ? c : 0, last = per_channel ? c + 1 : N;
    float rmax = 0;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = first; n < last; ++n) rmax = std::max(rmax, std::fabs(b[k * N + n]));
    const float scale = symmetric_scale(rmax, qmin, qmax);
    w.scales.push_back(scale);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = first; n < last; ++n) {
        const float q = std::nearbyint(b[k * N + n] / scale);  // numpy's round: half to even
        w.data[size_t(k * N + n)] = int8_t(std::clamp(q, float(qmin), float(qmax)));
      }
  }
  return w;
}

namespace {
constexpr const char* kComputed = "a product of two computed values";
// "" when quantize_int8 rewrites MatMul n, else why not (kComputed: counted, not listed).
std::string int8_refusal(const Graph& g, const Node& n, const Int8Options& o) {
  if (o.exclude.count(n.name) || o.exclude.count(n.op_type)) return "excluded by --exclude";
  if (multiplies_computed_values(g, n)) return kComputed;
  return weight_refusal(g, n);
}
bool rewritten_matmul(const Node& n) { return n.op_type == "MatMul" && n.domain.empty(); }
}  // namespace

std::set<std::string> int8_activations(const Graph& g, const Int8Options& o) {
  std::set<std::string> names;
  for (const Node& n : g.nodes)
    if (rewritten_matmul(n) && int8_refusal(g, n, o).empty()) names.insert(n.inputs[0]);
  return names;
}

QuantizeResult quantize_int8(const Model& model, const Int8Options& o) {
  if (const auto it = model.opsets.find(""); it != model.opsets.end() && it->second < (o.calibrated && o.per_channel ? 13 : 11))
    fail_usage(o.calibrated && o.per_channel
                   ? fmt::format("--int8 --calibrate --per-channel writes DequantizeLinear's axis (opset 13); the model imports opset {}", it->second)
                   : fmt::format("--int8 writes DynamicQuantizeLinear (opset 11); the model imports opset {}", it->second));
  QuantizeResult r{model, {}, {}};
  Graph& g = r.model.graph;
  std::map<std::string, std::vector<std::string>> weights;  // B -> B_q, B_scale, B_zero_point
  std::map<std::string, std::vector<std::string>> activations;  // A -> A_q, A_scale, A_zero_point (or its QDQ names)
  std::map<std::string, std::string> dequantized;                // B -> its DequantizeLinear output (QDQ)
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  for (Node& n : g.nodes) {
    if (!rewritten_matmul(n)) {
      out.push_back(std::move(n));
      continue;
    }
    const std::string why = int8_refusal(g, n, o);
    if (why == kComputed) {
      ++r.computed_products;
      out.push_back(std::move(n));
      continue;
    }
    if (!why.empty()) {
      r.skipped.emplace_back(n.name, why);
      out.push_back(std::move(n));
      continue;
    }
    const std::string &a = n.inputs[0], &b = n.inputs[1], &y = n.outputs[0];
    auto& bq = weights[b];
    if (bq.empty()) {
      const Tensor& w = g.find_initializer(b)->value;
      const int64_t K = w.dim(0), N = w.dim(1);
      const Int8Weight q = quantize_int8_symmetric(w.data<float>(), K, N, o.per_channel, o.reduce_range);
      bq = {b + "_quantized", b + "_scale", b + "_zero_point"};
      Tensor data(DType::Int8, {K, N});
      std::copy(q.data.begin(), q.data.end(), data.data<int8_t>());
      const Shape per = o.per_channel ? Shape{N} : Shape{};
      g.initializers.push_back({bq[0], data});
      g.initializers.push_back({bq[1], Tensor::from_vector<float>(per, q.scales)});
      g.initializers.push_back({bq[2], Tensor::from_vector<int8_t>(per, std::vector<int8_t>(q.scales.size(), 0))});
    }
    if (o.calibrated) {
      // QDQ: A through QuantizeLinear and DequantizeLinear with its calibrated scale, W through
      // DequantizeLinear, and the MatMul in float between them (ORT fuses the units at level 2).
      auto& aq = activations[a];
      if (aq.empty()) {
        const auto range = o.ranges.find(a);
        if (range == o.ranges.end()) fail_runtime(fmt::format("--calibrate: no range was measured for '{}'", a));
        const ActivationScale s = activation_scale(range->second.first, range->second.second);
        aq = {a + "_scale", a + "_zero_point", a + "_QuantizeLinear_Output", a + "_DequantizeLinear_Output"};
        g.initializers.push_back({aq[0], Tensor::scalar<float>(s.scale)});
        g.initializers.push_back({aq[1], Tensor::scalar<int8_t>(s.zero_point)});
        out.push_back(build::node("QuantizeLinear", {a, aq[0], aq[1]}, {aq[2]}, {}, derived(a, "_QuantizeLinear")));
        out.push_back(build::node("DequantizeLinear", {aq[2], aq[0], aq[1]}, {aq[3]}, {}, derived(a, "_DequantizeLinear")));
      }
      auto& bd = dequantized[b];
      if (bd.empty()) {
        bd = b + "_DequantizeLinear_Output";
        std::vector<Attribute> axis;
        if (o.per_channel) axis.push_back(build::attr("axis", int64_t(1)));
        out.push_back(build::node("DequantizeLinear", {bq[0], bq[1], bq[2]}, {bd}, axis, derived(b, "_DequantizeLinear")));
      }
      out.push_back(build::node("MatMul", {aq[3], bd}, {y}, {}, n.name));
      r.quantized.push_back(n.name);
      continue;
    }
    auto& aq = activations[a];
    if (aq.empty()) {
      aq = {a + "_quantized", a + "_scale", a + "_zero_point"};
      out.push_back(build::node("DynamicQuantizeLinear", {a}, aq, {}, derived(a, "_QuantizeLinear")));
    }
    const std::string product = y + "_output_quantized", scale = y + "_scale_product", cast = y + "_output_float";
    out.push_back(build::node("MatMulInteger", {aq[0], bq[0], aq[2], bq[2]}, {product}, {}, derived(n.name, "_quant")));
    out.push_back(build::node("Mul", {aq[1], bq[1]}, {scale}, {}, derived(n.name, "_scales_mul")));
    out.push_back(build::node("Cast", {product}, {cast}, {build::attr("to", int64_t(DType::Float))}, derived(n.name, "_output_cast")));
    out.push_back(build::node("Mul", {cast, scale}, {y}, {}, derived(n.name, "_output_scale_mul")));
    r.quantized.push_back(n.name);
  }
  g.nodes = std::move(out);
  if (!r.quantized.empty()) {
    const std::set<std::string> reads = values_read(g);
    std::erase_if(g.initializers, [&](const Initializer& i) { return weights.count(i.name) && !reads.count(i.name); });
  }
  return r;
}

}  // namespace refeval::quantize
