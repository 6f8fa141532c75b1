// NodeContext attribute access: typed, checked, and recorded so unknown attributes are reported.
#include "refeval/op_run.h"

#include <fmt/format.h>

#include "refeval/dispatch.h"

namespace refeval {
namespace {

[[noreturn]] void wrong_type(const NodeContext& ctx, const Attribute& a, const char* wanted) {
  ctx.fail(fmt::format("attribute '{}' is {} but {} was expected", a.name, attr_type_name(a.type), wanted));
}

template <class T> T convert(const NodeContext& ctx, const Attribute& a);

template <> int64_t convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::Int) wrong_type(ctx, a, "INT");
  return a.i;
}
template <> int convert(const NodeContext& ctx, const Attribute& a) {
  const int64_t v = convert<int64_t>(ctx, a);
  if (v < INT32_MIN || v > INT32_MAX) ctx.fail(fmt::format("attribute '{}' = {} is out of range", a.name, v));
  return int(v);
}
template <> bool convert(const NodeContext& ctx, const Attribute& a) { return convert<int64_t>(ctx, a) != 0; }
template <> float convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type == AttrType::Int) return float(a.i);  // some exporters write 1 for 1.0
  if (a.type != AttrType::Float) wrong_type(ctx, a, "FLOAT");
  return a.f;
}
template <> double convert(const NodeContext& ctx, const Attribute& a) { return double(convert<float>(ctx, a)); }
template <> std::string convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::String) wrong_type(ctx, a, "STRING");
  return a.s;
}
template <> std::vector<int64_t> convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::Ints) wrong_type(ctx, a, "INTS");
  return a.ints;
}
template <> std::vector<float> convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::Floats) wrong_type(ctx, a, "FLOATS");
  return a.floats;
}
template <> std::vector<std::string> convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::Strings) wrong_type(ctx, a, "STRINGS");
  return a.strings;
}
template <> Tensor convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::Tensor && a.type != AttrType::SparseTensor) wrong_type(ctx, a, "TENSOR");
  return a.t;
}
template <> std::vector<Tensor> convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::Tensors && a.type != AttrType::SparseTensors) wrong_type(ctx, a, "TENSORS");
  return a.tensors;
}
template <> ValueType convert(const NodeContext& ctx, const Attribute& a) {
  if (a.type != AttrType::TypeProto) wrong_type(ctx, a, "TYPE_PROTO");
  return a.tp;
}

}  // namespace

bool NodeContext::has_attr(const std::string& name) const { return node().find_attribute(name) != nullptr; }

const Initializer* NodeContext::constant_input(size_t i) const {
  if (!has_input(i)) return nullptr;
  const std::string& name = node().inputs[i];
  return graph().find_input(name) ? nullptr : graph().find_initializer(name);
}

const Initializer* NodeContext::transposed_constant_input(size_t i) const {
  return has_input(i) ? graph().transposed_initializer(node().inputs[i]) : nullptr;
}

const Attribute& NodeContext::get(const std::string& name) const {
  read_.insert(name);
  return *node().find_attribute(name);
}

template <class T>
T NodeContext::attr(const std::string& name, const T& default_value) const {
  if (!has_attr(name)) { read_.insert(name); return default_value; }
  return convert<T>(*this, get(name));
}

template <class T>
T NodeContext::required(const std::string& name) const {
  if (!has_attr(name)) fail(fmt::format("required attribute '{}' is missing", name));
  return convert<T>(*this, get(name));
}

template <class T>
std::optional<T> NodeContext::optional_attr(const std::string& name) const {
  if (!has_attr(name)) { read_.insert(name); return std::nullopt; }
  return convert<T>(*this, get(name));
}

#define REFEVAL_INSTANTIATE_ATTR(T)                                              \
  template T NodeContext::attr<T>(const std::string&, const T&) const;           \
  template T NodeContext::required<T>(const std::string&) const;                 \
  template std::optional<T> NodeContext::optional_attr<T>(const std::string&) const;
REFEVAL_INSTANTIATE_ATTR(int64_t)
REFEVAL_INSTANTIATE_ATTR(int)
REFEVAL_INSTANTIATE_ATTR(bool)
REFEVAL_INSTANTIATE_ATTR(float)
REFEVAL_INSTANTIATE_ATTR(double)
REFEVAL_INSTANTIATE_ATTR(std::string)
REFEVAL_INSTANTIATE_ATTR(std::vector<int64_t>)
REFEVAL_INSTANTIATE_ATTR(std::vector<float>)
REFEVAL_INSTANTIATE_ATTR(std::vector<std::string>)
REFEVAL_INSTANTIATE_ATTR(Tensor)
REFEVAL_INSTANTIATE_ATTR(std::vector<Tensor>)
REFEVAL_INSTANTIATE_ATTR(ValueType)
#undef REFEVAL_INSTANTIATE_ATTR

void NodeContext::fail(const std::string& message) const {
  throw Error(ErrorKind::Model, fmt::format("{}: {}", node().describe(), message));
}

std::vector<std::string> NodeContext::unread_attributes() const {
  std::vector<std::string> out;
  for (const auto& a : node().attributes)
    if (!read_.count(a.name)) out.push_back(a.name);
  return out;
}

const Tensor& input_tensor(const Values& inputs, size_t i) {
  if (i >= inputs.size() || inputs[i].is_absent()) fail_runtime(fmt::format("input {} is required but missing", i));
  if (!inputs[i].is_tensor()) fail_runtime(fmt::format("input {} must be a tensor but is a {}", i, inputs[i].kind_name()));
  return inputs[i].tensor();
}

void fail_unsupported_dtype(DType t, const std::vector<DType>& supported) {
  std::vector<std::string_view> names;
  for (DType d : supported) names.push_back(dtype_short_name(d));
  if (names.empty()) fail_runtime(fmt::format("element type {} is not supported", dtype_short_name(t)));
  fail_runtime(fmt::format("element type {} is not supported (supported: {})", dtype_short_name(t), fmt::join(names, ", ")));
}

}  // namespace refeval
