#include "opset_convert.h"

#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "refeval/builder.h"
#include "refeval/error.h"

namespace refeval::optimize {
namespace {

// Operators whose versions between 13 and 25 only add element types, or optional inputs and
// attributes whose defaults keep the earlier meaning (ONNX docs/Changelog.md). A node of these
// is raised by changing nothing but the model's opset.
const std::set<std::string>& pure_extensions() {
  static const std::set<std::string> ops = {
      // bfloat16 (and float16) added at 22, nothing else.
      "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cos", "Cosh", "Sin", "Sinh", "Tan", "Elu", "Selu",
      "HardSigmoid", "HardSwish", "Mish", "Softplus", "Softsign", "ThresholdedRelu", "Round", "Det", "EyeLike",
      "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "InstanceNormalization", "LpNormalization", "MaxPool",
      "MaxRoiPool", "MaxUnpool", "Conv", "ConvTranspose", "DeformConv", "Dropout", "Bernoulli", "Multinomial",
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "NegativeLogLikelihoodLoss",
      // 14: int8/int16/uint8/uint16 for arithmetic and Relu; 15/16: bfloat16 for Pow, Where, PRelu,
      // LeakyRelu, GreaterOrEqual, LessOrEqual; 14: CumSum float16/bfloat16; 19: Equal on strings.
      "Add", "Sub", "Mul", "Div", "Relu", "Pow", "Where", "PRelu", "LeakyRelu", "GreaterOrEqual", "LessOrEqual",
      "CumSum", "Equal", "IsNaN", "IsInf",
      // New optional attributes with backward-compatible defaults: AveragePool-19 dilations,
      // LpPool-18 ceil_mode, GRU/LSTM/RNN-14 layout (0 = the old layout), Reshape-14 allowzero (0),
      // Shape-15 start/end (the whole shape), ScatterElements/ScatterND-16/18 reduction ("none"),
      // Resize-18/19 antialias, axes, keep_aspect_ratio_policy and half_pixel_symmetric (defaults:
      // the Resize-13 computation), Pad-18/19 the axes input and the "wrap" mode, Cast-19 and
      // QuantizeLinear-19 saturate (float8 only), DequantizeLinear / QuantizeLinear-21 block
      // quantization and output_dtype (defaults: per-tensor / per-axis as before).
      "AveragePool", "LpPool", "GRU", "LSTM", "RNN", "Reshape", "Shape", "ScatterElements", "ScatterND", "Resize",
      "Pad", "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
      // Only new element types (float8, int4, float4, optional and sequence types) from 13 to 25.
      "Constant", "ConstantOfShape", "Flatten", "Identity", "If", "Loop", "Scan", "Size", "Squeeze", "Unsqueeze",
      "Transpose", "OptionalGetElement", "OptionalHasElement",
      // ONNX Runtime's LayerNormalization registered in the default domain at version 1 has the
      // inputs, attributes and outputs of ONNX's LayerNormalization-17.
      "LayerNormalization",
  };
  return ops;
}

const std::set<std::string> kReduceAxesTo18 = {"ReduceL1",  "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                               "ReduceMean", "ReduceMin", "ReduceProd",   "ReduceSumSquare"};

// Every value name of a graph and its bodies, so new names collide with none.
void collect_names(const Graph& g, std::set<std::string>& out) {
  for (const ValueInfo& v : g.inputs) out.insert(v.name);
  for (const Initializer& i : g.initializers) out.insert(i.name);
  for (const Node& n : g.nodes) {
    for (const std::string& o : n.outputs) out.insert(o);
    for (const Attribute& a : n.attributes) {
      if (a.g) collect_names(*a.g, out);
      for (const auto& b : a.graphs)
        if (b) collect_names(*b, out);
    }
  }
}

struct Converter {
  const Registry& registry;
  int64_t from, to;
  std::set<std::string> names;

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; names.count(name); ++k) name = fmt::format("{}_{}", base, k);
    names.insert(name);
    return name;
  }

  [[noreturn]] void refuse(const Node& n, const std::string& why) const {
    fail_usage(fmt::format("cannot raise node '{}' ({}) from opset {} to {}: {}", n.name, n.op_type, from, to, why));
  }

  static bool crosses(int a, int b, int version) { return a < version && b >= version; }

  static void erase_attr(Node& n, const std::string& name) {
    std::erase_if(n.attributes, [&](const Attribute& a) { return a.name == name; });
  }

  void convert_node(Graph& g, Node& n) {
    for (Attribute& a : n.attributes) {  // bodies see the same opset import
      if (a.g) convert_graph(*a.g);
      for (auto& b : a.graphs)
        if (b) convert_graph(*b);
    }
    if (!n.domain.empty()) return;
    const OpRegistration* a = registry.resolve("", n.op_type, from);
    const OpRegistration* b = registry.resolve("", n.op_type, to);
    if (a == b) return;
    if (!a) refuse(n, fmt::format("no registration of {} at opset {}", n.op_type, from));
    if (!b) refuse(n, fmt::format("{} does not exist at opset {}", n.op_type, to));
    const int va = a->since_version, vb = b->since_version;
    if (kReduceAxesTo18.count(n.op_type) && crosses(va, vb, 18)) {
      const Attribute* axes = n.find_attribute("axes");
      if (axes && !axes->ints.empty()) {
        const std::string name = fresh((n.name.empty() ? n.op_type : n.name) + "_axes");
        g.initializers.push_back({name, Tensor::from_vector<int64_t>({int64_t(axes->ints.size())}, axes->ints)});
        n.inputs.resize(1);
        n.inputs.push_back(name);
      }
      erase_attr(n, "axes");  // no axes: noop_with_empty_axes (default 0) reduces everything, as before
      return;
    }
    if (n.op_type == "Split" && crosses(va, vb, 18)) {
      if (n.inputs.size() < 2 || n.inputs[1].empty())
        n.attributes.push_back(build::attr("num_outputs", int64_t(n.outputs.size())));
      return;
    }
    if (n.op_type == "GridSample" && crosses(va, vb, 20)) {
      for (Attribute& at : n.attributes)
        if (at.name == "mode") at.s = at.s == "bilinear" ? "linear" : at.s == "bicubic" ? "cubic" : at.s;
      return;  // the default mode, bilinear at 16, is linear at 20
    }
    if (n.op_type == "RoiAlign" && crosses(va, vb, 16)) {
      n.attributes.push_back(build::attr("coordinate_transformation_mode", "output_half_pixel"));
      return;
    }
    if (n.op_type == "BatchNormalization" && crosses(va, vb, 14)) {
      const bool inference = std::all_of(n.outputs.begin() + 1, n.outputs.end(), [](const std::string& o) { return o.empty(); });
      if (!inference) refuse(n, "BatchNormalization-14 changed the training outputs; only the inference form (one output) converts");
      return;  // 15 only lets scale/bias and mean/var have their own types
    }
    if (pure_extensions().count(n.op_type)) return;
    if (n.op_type == "GroupNormalization")
      refuse(n, "GroupNormalization-21 takes scale and bias per channel where 18 took them per group");
    refuse(n, fmt::format("{}-{} and {}-{} differ and no adapter is written for them", n.op_type, va, n.op_type, vb));
  }

  void convert_graph(Graph& g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) convert_node(g, g.nodes[i]);
  }
};

}  // namespace

void convert_opset(Model& m, const Registry& registry, int64_t to) {
  const int64_t from = m.opsets.count("") ? m.opsets.at("") : 0;
  if (from < 13) fail_usage(fmt::format("cannot raise a model from ai.onnx opset {}: the converter starts at opset 13", from));
  if (to < from) fail_usage(fmt::format("cannot lower a model from ai.onnx opset {} to {}", from, to));
  if (to == from) return;
  Converter c{registry, from, to, {}};
  collect_names(m.graph, c.names);
  c.convert_graph(m.graph);
  m.opsets[""] = to;
}

}  // namespace refeval::optimize
