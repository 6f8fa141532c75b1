#include "float16.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "refeval/builder.h"
#include "refeval/compute_vector.h"
#include "refeval/error.h"
#include "refeval/narrow_types.h"

namespace refeval::quantize {
namespace {

// ORT's clamping bounds (float16.py: min_positive_val, max_finite_val).
constexpr float kMinPositive = 5.96e-08f, kMaxFinite = 65504.0f;

Tensor to_float16(const Tensor& t, int64_t& clamped) {
  Tensor h(DType::Float16, t.shape());
  const float* src = t.data<float>();
  uint16_t* dst = static_cast<uint16_t*>(h.raw_data());
  for (int64_t i = 0; i < t.size(); ++i) {
    float v = src[i];
    if (std::isfinite(v) && v != 0) {
      const float a = std::fabs(v);
      if (a < kMinPositive || a > kMaxFinite) v = std::copysign(a < kMinPositive ? kMinPositive : kMaxFinite, v), ++clamped;
    }
    dst[i] = float16(v).bits;
  }
  return h;
}

bool has_body(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

// A converted node's attributes that make or name float: Cast's target, the random ops' and
// EyeLike's dtype, Constant's and ConstantOfShape's values.
void convert_attributes(Node& n, int64_t& converted, int64_t& clamped) {
  const int64_t kFloat = int64_t(DType::Float), kHalf = int64_t(DType::Float16);
  const bool dtype_op = n.op_type == "RandomNormal" || n.op_type == "RandomUniform" || n.op_type == "RandomNormalLike" ||
                        n.op_type == "EyeLike" || n.op_type == "Multinomial";
  bool has_value = false, has_dtype = false;
  for (Attribute& a : n.attributes) {
    if (n.op_type == "Cast" && a.name == "to" && a.i == kFloat) a.i = kHalf;
    if (dtype_op && a.name == "dtype") {
      has_dtype = true;
      if (a.i == kFloat) a.i = kHalf;
    }
    if ((n.op_type == "Constant" || n.op_type == "ConstantOfShape") && a.name == "value") {
      has_value = true;
      if (a.type == AttrType::Tensor && a.t.dtype() == DType::Float) a = build::attr("value", to_float16(a.t, clamped)), ++converted;
    }
    if (n.op_type == "Constant" && (a.name == "value_float" || a.name == "value_floats")) {
      const std::vector<float> v = a.name == "value_float" ? std::vector<float>{a.f} : a.floats;
      const Tensor t = a.name == "value_float" ? Tensor::scalar<float>(a.f) : Tensor::from_vector<float>({int64_t(v.size())}, v);
      a = build::attr("value", to_float16(t, clamped)), ++converted;
    }
  }
  // The defaults are float: ConstantOfShape's zero, RandomNormal's and RandomUniform's dtype.
  if (n.op_type == "ConstantOfShape" && !has_value)
    n.attributes.push_back(build::attr("value", to_float16(Tensor::from_vector<float>({1}, {0.0f}), clamped)));
  if ((n.op_type == "RandomNormal" || n.op_type == "RandomUniform") && !has_dtype) n.attributes.push_back(build::attr("dtype", kHalf));
}

}  // namespace

const std::set<std::string>& default_float16_block_list() {
  static const std::set<std::string> ops = {
      "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer", "Imputer",
      "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder", "RandomUniformLike",
      "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap",
      "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum", "Min", "Max", "Upsample"};
  return ops;
}

Float16Result convert_float16(const Model& model, const Float16Options& o, const std::map<std::string, DType>& value_types,
                              const std::map<std::string, std::string>& overflow) {
  for (const Node& n : model.graph.nodes)
    if (has_body(n))
      fail_usage(fmt::format("--float16: node '{}' ({}) has a body graph; graphs with If, Loop or Scan bodies are not converted", n.name,
                             n.op_type));
  Float16Result r{model};
  Graph& g = r.model.graph;
  auto is_float = [&](const std::string& v) {
    const auto it = value_types.find(v);
    return !v.empty() && it != value_types.end() && it->second == DType::Float;
  };
  // Where each float value's float16 form is read: under its own name, or for a graph input or
  // output kept in float, under a name of its own.
  std::map<std::string, std::string> half;
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    ValueInfo& in = g.inputs[i];
    if (!is_float(in.name) || g.find_initializer(in.name)) continue;
    if (!o.keep_io_types) {
      in.type.dtype = DType::Float16;
      continue;
    }
    half[in.name] = in.name + "_float16";
    nodes.push_back(build::node("Cast", {in.name}, {half[in.name]}, {build::attr("to", int64_t(DType::Float16))},
                                fmt::format("graph_input_cast{}", i)));
  }
  std::vector<Node> output_casts;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    ValueInfo& out = g.outputs[i];
    if (!is_float(out.name)) continue;
    const bool produced = std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
      return std::find(n.outputs.begin(), n.outputs.end(), out.name) != n.outputs.end();
    });
    if (!o.keep_io_types || !produced) {
      if (!(o.keep_io_types && g.find_input(out.name))) out.type.dtype = DType::Float16;
      continue;
    }
    half[out.name] = out.name + "_float16";
    output_casts.push_back(build::node("Cast", {half[out.name]}, {out.name}, {build::attr("to", int64_t(DType::Float))},
                                       fmt::format("graph_output_cast{}", i)));
  }
  auto half_name = [&](const std::string& v) { return half.count(v) ? half[v] : v; };
  auto blocked_why = [&](const Node& n) -> std::string {
    if (o.node_block.count(n.name)) return "named in --float16-block";
    if ((n.domain.empty() || n.domain == "ai.onnx.ml") && o.op_block.count(n.op_type)) return fmt::format("{} is in the block list", n.op_type);
    const auto it = overflow.find(n.name);
    return it == overflow.end() ? "" : it->second;
  };
  // An initializer becomes float16 when a converted node reads it; one that only blocked nodes
  // read stays float (as ORT's converter does), read by them as it is.
  std::set<std::string> read_converted;
  for (const Node& n : g.nodes)
    if (blocked_why(n).empty()) read_converted.insert(n.inputs.begin(), n.inputs.end());
  std::set<std::string> float_initializers;
  std::map<std::string, std::string> in_float;  // a blocked node's float output -> its name in float
  std::set<std::string> direct_outputs;           // graph outputs kept in float that a blocked node writes
  auto is_output = [&](const std::string& v) {
    return std::any_of(g.outputs.begin(), g.outputs.end(), [&](const ValueInfo& out) { return out.name == v; });
  };
  for (Initializer& init : g.initializers) {
    if (init.value.dtype() != DType::Float) continue;
    if (read_converted.count(init.name)) init.value = to_float16(init.value, r.clamped_values), ++r.converted_tensors;
    else float_initializers.insert(init.name);
  }
  for (const Node& original : g.nodes) {
    Node n = original;
    const std::string why = blocked_why(n);
    if (why.empty()) {
      for (std::string& in : n.inputs)
        if (is_float(in)) in = half_name(in);
      for (std::string& out : n.outputs)
        if (is_float(out)) out = half_name(out);
      convert_attributes(n, r.converted_tensors, r.clamped_values);
      // A Cast to float of a float value (Llama's norms write x.to(float32)) now casts float16 to
      // float16, which ONNX Runtime's CPU provider mis-types when it wraps the node for its float
      // kernel: it is an Identity (ORT's converter removes such Casts too).
      if (n.op_type == "Cast" && n.domain.empty() && is_float(original.inputs[0])) n.op_type = "Identity", n.attributes.clear();
      nodes.push_back(std::move(n));
      ++r.converted_nodes;
      continue;
    }
    r.blocked.emplace_back(n.name, why);
    // A graph input kept in float, a float initializer and another blocked node's output are read
    // as they are (a value out of float16's range passes between blocked nodes in float); every
    // other float input is float16 now.
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      std::string& in = n.inputs[i];
      if (const auto it = in_float.find(in); it != in_float.end()) {
        in = it->second;
        continue;
      }
      if (!is_float(in) || float_initializers.count(in) || (o.keep_io_types && g.find_input(in) && !g.find_initializer(in))) continue;
      const std::string as_float = fmt::format("{}_input_cast{}", n.name.empty() ? in : n.name, i);
      nodes.push_back(build::node("Cast", {half_name(in)}, {as_float}, {build::attr("to", int64_t(DType::Float))}, as_float));
      in = as_float;
    }
    std::vector<Node> after;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      std::string& out = n.outputs[i];
      if (!is_float(out)) continue;
      // A graph output kept in float is written in float, as it is; other values under a name of
      // their own, with a Cast to float16 for the converted nodes and float16 outputs that read them.
      const bool kept_output = half.count(out) && is_output(out);
      const std::string as_float = kept_output ? out : fmt::format("{}_output_cast{}_float", n.name.empty() ? out : n.name, i);
      if (kept_output) direct_outputs.insert(out);
      if (read_converted.count(out) || (is_output(out) && !kept_output))
        after.push_back(build::node("Cast", {as_float}, {half_name(out)}, {build::attr("to", int64_t(DType::Float16))},
                                    fmt::format("{}_output_cast{}", n.name.empty() ? out : n.name, i)));
      in_float[out] = as_float;
      out = as_float;
    }
    nodes.push_back(std::move(n));
    nodes.insert(nodes.end(), after.begin(), after.end());
  }
  for (const Node& cast : output_casts)
    if (!direct_outputs.count(cast.outputs[0])) nodes.push_back(cast);
  g.nodes = std::move(nodes);
  g.value_info.clear();  // the types of values changed; runtimes infer them again
  return r;
}

// The element type of every value of the float model over the input sets, and the nodes kept in
// float because a value they make or read leaves float16's range there (65504 < |v| < 1e30), with
// the reason: the region in float reaches from the first value out of range to the nodes that
// bring it back. Magnitudes of 1e30 and more are masks' fillers (float's lowest), which become
// -65504 in float16 as ONNX Runtime's converter clamps them, and still hide what they hide.
std::pair<std::map<std::string, DType>, std::map<std::string, std::string>> calibrate_float16(
    ReferenceEvaluator& ev, const std::vector<std::map<std::string, Value>>& sets) {
  std::map<std::string, DType> types;
  std::map<std::string, std::string> too_large;  // value -> why
  for (size_t s = 0; s < sets.size(); ++s)
    for (const auto& [name, v] : ev.run_all(sets[s])) {
      if (!v.is_tensor()) continue;
      types[name] = v.tensor().dtype();
      if (v.tensor().dtype() != DType::Float || too_large.count(name)) continue;
      float top = 0;
      for (float x : to_compute<float>(v.tensor()))
        if (std::isfinite(x) && std::fabs(x) < 1e30f) top = std::max(top, std::fabs(x));
      if (top > 65504.0f) too_large[name] = fmt::format("'{}' reaches {:.4g} on input set {}, beyond float16's 65504", name, top, s);
    }
  std::map<std::string, std::string> overflow;
  for (const Node& n : ev.model().graph.nodes) {
    for (const std::string& o : n.outputs)
      if (too_large.count(o)) overflow.emplace(n.name, "its output " + too_large[o]);
    for (const std::string& i : n.inputs)
      if (too_large.count(i)) overflow.emplace(n.name, "its input " + too_large[i]);
  }
  return {types, overflow};
}

}  // namespace refeval::quantize
