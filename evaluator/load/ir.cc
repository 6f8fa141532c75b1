#include "refeval/ir.h"

#include <algorithm>

#include <fmt/format.h>

namespace refeval {

ValueType ValueType::tensor(DType dtype, std::vector<Dim> dims) {
  ValueType t;
  t.kind = Kind::Tensor;
  t.dtype = dtype;
  t.has_shape = true;
  t.dims = std::move(dims);
  return t;
}

ValueType ValueType::tensor_of_unknown_rank(DType dtype) {
  ValueType t;
  t.kind = Kind::Tensor;
  t.dtype = dtype;
  return t;
}

std::string ValueType::to_string() const {
  auto shape = [&]() -> std::string {
    if (!has_shape) return "";
    std::vector<std::string> parts;
    for (const Dim& d : dims) parts.push_back(d.fixed() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param));
    return fmt::format("[{}]", fmt::join(parts, ","));
  };
  auto inner = [&]() { return elem ? elem->to_string() : std::string("?"); };
  switch (kind) {
    case Kind::Tensor: return fmt::format("tensor({}){}", dtype_short_name(dtype), shape());
    case Kind::SparseTensor: return fmt::format("sparse_tensor({}){}", dtype_short_name(dtype), shape());
    case Kind::Sequence: return fmt::format("seq({})", inner());
    case Kind::Optional: return fmt::format("optional({})", inner());
    case Kind::Map: return fmt::format("map({}, {})", dtype_short_name(key_dtype), inner());
    case Kind::Unknown: break;
  }
  return "unknown";
}

std::string_view attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Float: return "FLOAT";
    case AttrType::Int: return "INT";
    case AttrType::String: return "STRING";
    case AttrType::Tensor: return "TENSOR";
    case AttrType::Graph: return "GRAPH";
    case AttrType::SparseTensor: return "SPARSE_TENSOR";
    case AttrType::TypeProto: return "TYPE_PROTO";
    case AttrType::Floats: return "FLOATS";
    case AttrType::Ints: return "INTS";
    case AttrType::Strings: return "STRINGS";
    case AttrType::Tensors: return "TENSORS";
    case AttrType::Graphs: return "GRAPHS";
    case AttrType::SparseTensors: return "SPARSE_TENSORS";
    case AttrType::TypeProtos: return "TYPE_PROTOS";
    case AttrType::Undefined: break;
  }
  return "UNDEFINED";
}

const Attribute* Node::find_attribute(const std::string& attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

std::string Node::describe() const {
  const std::string qualified = domain.empty() ? op_type : domain + ":" + op_type;
  return fmt::format("node '{}' ({})", name, qualified);
}

const Initializer* Graph::find_initializer(const std::string& n) const {
  for (const auto& i : initializers)
    if (i.name == n) return &i;
  return nullptr;
}

const ValueInfo* Graph::find_input(const std::string& n) const {
  for (const auto& i : inputs)
    if (i.name == n) return &i;
  return nullptr;
}

const Initializer* Graph::transposed_initializer(const std::string& n) const {
  for (const Node& t : nodes) {
    if (std::find(t.outputs.begin(), t.outputs.end(), n) == t.outputs.end()) continue;
    if (t.op_type != "Transpose" || !t.domain.empty() || t.inputs.size() != 1 || find_input(t.inputs[0])) return nullptr;
    const Attribute* perm = t.find_attribute("perm");
    if (perm && perm->ints != std::vector<int64_t>{1, 0}) return nullptr;
    const Initializer* w = find_initializer(t.inputs[0]);
    return w && w->value.rank() == 2 ? w : nullptr;
  }
  return nullptr;
}

std::vector<const ValueInfo*> Graph::feed_inputs() const {
  std::vector<const ValueInfo*> out;
  for (const auto& i : inputs)
    if (!find_initializer(i.name)) out.push_back(&i);
  return out;
}

const Function* Model::find_function(const std::string& d, const std::string& n,
                                     const std::string& overload) const {
  const std::string nd = normalize_domain(d);
  for (const auto& f : functions)
    if (normalize_domain(f.domain) == nd && f.name == n && f.overload == overload) return &f;
  return nullptr;
}

std::string normalize_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

}  // namespace refeval
