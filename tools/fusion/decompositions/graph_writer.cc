#include "decompositions/graph_writer.h"

#include <algorithm>

#include <fmt/format.h>

#include "refeval/dispatch.h"

namespace refeval::fusion {

GraphWriter::GraphWriter(const Node& fused, const Values& samples) : node_(fused), samples_(samples) {}

bool GraphWriter::has(size_t i) const { return i < node_.inputs.size() && !node_.inputs[i].empty(); }

const std::string& GraphWriter::in(size_t i) const {
  if (!has(i)) unsupported(fmt::format("input {} is required", i));
  return node_.inputs[i];
}

const Tensor& GraphWriter::sample(size_t i) const {
  if (!has(i) || i >= samples_.size() || !samples_[i].is_tensor()) unsupported(fmt::format("input {} must be a tensor", i));
  return samples_[i].tensor();
}

bool GraphWriter::wants(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }

int64_t GraphWriter::attr_int(const std::string& name, int64_t default_value) const {
  const Attribute* a = node_.find_attribute(name);
  if (!a) return default_value;
  if (a->type != AttrType::Int) unsupported(fmt::format("attribute '{}' must be an INT", name));
  return a->i;
}

float GraphWriter::attr_float(const std::string& name, float default_value) const {
  const Attribute* a = node_.find_attribute(name);
  if (!a) return default_value;
  if (a->type == AttrType::Int) return float(a->i);
  if (a->type != AttrType::Float) unsupported(fmt::format("attribute '{}' must be a FLOAT", name));
  return a->f;
}

std::string GraphWriter::fresh(const std::string& hint) { return fmt::format("_{}_{}", hint, counter_++); }

std::string GraphWriter::op(const std::string& type, std::vector<std::string> inputs, std::vector<Attribute> attrs) {
  return ops(type, std::move(inputs), 1, std::move(attrs))[0];
}

std::vector<std::string> GraphWriter::ops(const std::string& type, std::vector<std::string> inputs, size_t n,
                                          std::vector<Attribute> attrs) {
  std::vector<std::string> outs;
  for (size_t i = 0; i < n; ++i) outs.push_back(fresh(type));
  nodes_.push_back(build::node(type, std::move(inputs), outs, std::move(attrs), fresh("node")));
  return outs;
}

std::string GraphWriter::constant(const Tensor& value) {
  const std::string name = fresh("const");
  constants_.push_back({name, value});
  return name;
}

std::string GraphWriter::ints(const std::vector<int64_t>& values) {
  return constant(Tensor::from_vector<int64_t>({int64_t(values.size())}, values));
}

std::string GraphWriter::scalar(double value, DType dtype) {
  return constant(visit<Floats>(dtype, [&]<class T>() { return Tensor::scalar<T>(T(value)); }));
}

void GraphWriter::output(size_t i, const std::string& value) {
  if (wants(i)) nodes_.push_back(build::node("Identity", {value}, {node_.outputs[i]}, {}, fresh("output")));
}

Graph GraphWriter::finish() {
  std::vector<ValueInfo> inputs, outputs;
  for (const auto& name : node_.inputs)
    if (!name.empty() && std::none_of(inputs.begin(), inputs.end(), [&](const ValueInfo& v) { return v.name == name; }))
      inputs.push_back(build::untyped_info(name));
  for (size_t i = 0; i < node_.outputs.size(); ++i)
    if (wants(i)) outputs.push_back(build::untyped_info(node_.outputs[i]));
  return build::graph(fmt::format("decomposition of {}", node_.op_type), nodes_, inputs, outputs, constants_);
}

void GraphWriter::unsupported(const std::string& why) const {
  fail_usage(fmt::format("{}: no built-in decomposition for this form: {}", node_.describe(), why));
}

}  // namespace refeval::fusion
