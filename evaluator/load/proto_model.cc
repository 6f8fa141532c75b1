// ModelProto/GraphProto/NodeProto/FunctionProto/TypeProto and the value protos <-> refeval's IR.
// Fields newer than Debian's onnx 1.12 (IR 9/10: FunctionProto.attribute_proto, overload,
// value_info; NodeProto.overload) arrive as unknown fields and are read through reflection.
#include <cstring>

#include <google/protobuf/unknown_field_set.h>

#include <fmt/format.h>

#include "load/proto_convert.h"

namespace refeval::proto {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

const UnknownFieldSet& unknown_fields(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m);
}

// Field numbers of newer ONNX protos that onnx 1.12 does not know.
constexpr int kNodeOverload = 8;
constexpr int kFunctionAttributeProto = 11;
constexpr int kFunctionValueInfo = 12;
constexpr int kFunctionOverload = 13;

std::string unknown_string(const google::protobuf::Message& m, int number) {
  const auto& u = unknown_fields(m);
  for (int i = 0; i < u.field_count(); ++i)
    if (u.field(i).number() == number && u.field(i).type() == UnknownField::TYPE_LENGTH_DELIMITED)
      return u.field(i).length_delimited();
  return {};
}

template <class Msg>
std::vector<Msg> unknown_messages(const google::protobuf::Message& m, int number, const char* what) {
  std::vector<Msg> out;
  const auto& u = unknown_fields(m);
  for (int i = 0; i < u.field_count(); ++i) {
    if (u.field(i).number() != number || u.field(i).type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    Msg msg;
    if (!msg.ParseFromString(u.field(i).length_delimited())) fail_model(fmt::format("cannot parse {}", what));
    out.push_back(std::move(msg));
  }
  return out;
}

template <class Msg>
void add_unknown_message(google::protobuf::Message* m, int number, const Msg& msg) {
  m->GetReflection()->MutableUnknownFields(m)->AddLengthDelimited(number, msg.SerializeAsString());
}

DType checked_dtype(int32_t v, const std::string& what) {
  if (v == 0) return DType::Undefined;
  if (!is_valid_dtype(v)) fail_model(fmt::format("{}: unknown element type {}", what, v));
  return DType(v);
}

ValueInfo to_value_info(const onnx::ValueInfoProto& p) { return {p.name(), to_value_type(p.type())}; }
void from_value_info(const ValueInfo& v, onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  if (v.type.kind != ValueType::Kind::Unknown) from_value_type(v.type, p->mutable_type());
}

Attribute to_attribute(onnx::AttributeProto& p, const std::string& base_dir, const std::string& where) {
  Attribute a;
  a.name = p.name();
  a.ref_attr_name = p.ref_attr_name();
  a.type = AttrType(p.type());
  const std::string what = fmt::format("attribute '{}' of {}", a.name, where);
  if (a.type == AttrType::Undefined) {  // IR 1-2 files may omit `type`: infer it from the field set
    if (p.has_f()) a.type = AttrType::Float;
    else if (p.has_i()) a.type = AttrType::Int;
    else if (p.has_s()) a.type = AttrType::String;
    else if (p.has_t()) a.type = AttrType::Tensor;
    else if (p.has_g()) a.type = AttrType::Graph;
    else if (p.floats_size()) a.type = AttrType::Floats;
    else if (p.ints_size()) a.type = AttrType::Ints;
    else if (p.strings_size()) a.type = AttrType::Strings;
    else if (p.tensors_size()) a.type = AttrType::Tensors;
    else if (p.graphs_size()) a.type = AttrType::Graphs;
  }
  a.f = p.f();
  a.i = p.i();
  a.s = p.s();
  a.floats.assign(p.floats().begin(), p.floats().end());
  a.ints.assign(p.ints().begin(), p.ints().end());
  a.strings.assign(p.strings().begin(), p.strings().end());
  if (p.has_t()) a.t = to_tensor(*p.mutable_t(), base_dir, what);
  if (p.has_sparse_tensor()) a.t = sparse_to_dense(*p.mutable_sparse_tensor(), base_dir, what);
  for (auto& t : *p.mutable_tensors()) a.tensors.push_back(to_tensor(t, base_dir, what));
  for (auto& t : *p.mutable_sparse_tensors()) a.tensors.push_back(sparse_to_dense(t, base_dir, what));
  if (p.has_g()) a.g = std::make_shared<Graph>(to_graph(*p.mutable_g(), base_dir));
  for (auto& g : *p.mutable_graphs()) a.graphs.push_back(std::make_shared<Graph>(to_graph(g, base_dir)));
  if (p.has_tp()) a.tp = to_value_type(p.tp());
  for (const auto& tp : p.type_protos()) a.type_protos.push_back(to_value_type(tp));
  return a;
}

void from_attribute(const Attribute& a, onnx::AttributeProto* p) {
  p->set_name(a.name);
  p->set_type(onnx::AttributeProto::AttributeType(int(a.type)));
  if (!a.ref_attr_name.empty()) { p->set_ref_attr_name(a.ref_attr_name); return; }
  switch (a.type) {
    case AttrType::Float: p->set_f(a.f); break;
    case AttrType::Int: p->set_i(a.i); break;
    case AttrType::String: p->set_s(a.s); break;
    case AttrType::Tensor: case AttrType::SparseTensor:
      p->set_type(onnx::AttributeProto::TENSOR);
      from_tensor(a.t, p->mutable_t());
      break;
    case AttrType::Graph: from_graph(*a.g, p->mutable_g()); break;
    case AttrType::TypeProto: from_value_type(a.tp, p->mutable_tp()); break;
    case AttrType::Floats: for (float f : a.floats) p->add_floats(f); break;
    case AttrType::Ints: for (int64_t i : a.ints) p->add_ints(i); break;
    case AttrType::Strings: for (const auto& s : a.strings) p->add_strings(s); break;
    case AttrType::Tensors: case AttrType::SparseTensors:
      p->set_type(onnx::AttributeProto::TENSORS);
      for (const auto& t : a.tensors) from_tensor(t, p->add_tensors());
      break;
    case AttrType::Graphs: for (const auto& g : a.graphs) from_graph(*g, p->add_graphs()); break;
    case AttrType::TypeProtos: for (const auto& t : a.type_protos) from_value_type(t, p->add_type_protos()); break;
    case AttrType::Undefined: break;
  }
}

OpsetMap to_opsets(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& ops, const std::string& where) {
  OpsetMap m;
  for (const auto& o : ops) {
    const std::string d = normalize_domain(o.domain());
    if (m.count(d) && m[d] != o.version())
      fail_model(fmt::format("{} imports domain '{}' twice, at versions {} and {}", where, o.domain(), m[d], o.version()));
    m[d] = o.version();
  }
  return m;
}

void from_opsets(const OpsetMap& m, google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>* ops) {
  for (const auto& [d, v] : m) {
    auto* o = ops->Add();
    o->set_domain(d);
    o->set_version(v);
  }
}

}  // namespace

ValueType to_value_type(const onnx::TypeProto& p) {
  ValueType t;
  switch (p.value_case()) {
    case onnx::TypeProto::kTensorType:
    case onnx::TypeProto::kSparseTensorType: {
      const bool sparse = p.value_case() == onnx::TypeProto::kSparseTensorType;
      const auto elem = sparse ? p.sparse_tensor_type().elem_type() : p.tensor_type().elem_type();
      const bool has_shape = sparse ? p.sparse_tensor_type().has_shape() : p.tensor_type().has_shape();
      const auto& shape = sparse ? p.sparse_tensor_type().shape() : p.tensor_type().shape();
      t.kind = sparse ? ValueType::Kind::SparseTensor : ValueType::Kind::Tensor;
      t.dtype = checked_dtype(elem, "type");
      t.has_shape = has_shape;
      for (const auto& d : shape.dim()) {
        Dim dim;
        if (d.has_dim_value()) dim.value = d.dim_value();
        else if (d.has_dim_param()) dim.param = d.dim_param();
        t.dims.push_back(dim);
      }
      break;
    }
    case onnx::TypeProto::kSequenceType:
      t.kind = ValueType::Kind::Sequence;
      t.elem = std::make_shared<ValueType>(to_value_type(p.sequence_type().elem_type()));
      break;
    case onnx::TypeProto::kOptionalType:
      t.kind = ValueType::Kind::Optional;
      t.elem = std::make_shared<ValueType>(to_value_type(p.optional_type().elem_type()));
      break;
    case onnx::TypeProto::kMapType:
      t.kind = ValueType::Kind::Map;
      t.key_dtype = checked_dtype(p.map_type().key_type(), "map key type");
      t.elem = std::make_shared<ValueType>(to_value_type(p.map_type().value_type()));
      if (t.elem->kind == ValueType::Kind::Tensor) t.dtype = t.elem->dtype;
      break;
    default:
      break;
  }
  return t;
}

void from_value_type(const ValueType& t, onnx::TypeProto* p) {
  auto fill_shape = [&](onnx::TensorShapeProto* s) {
    for (const Dim& d : t.dims) {
      auto* dim = s->add_dim();
      if (d.fixed()) dim->set_dim_value(d.value);
      else if (!d.param.empty()) dim->set_dim_param(d.param);
    }
  };
  switch (t.kind) {
    case ValueType::Kind::Tensor:
      p->mutable_tensor_type()->set_elem_type(int32_t(t.dtype));
      if (t.has_shape) fill_shape(p->mutable_tensor_type()->mutable_shape());
      break;
    case ValueType::Kind::SparseTensor:
      p->mutable_sparse_tensor_type()->set_elem_type(int32_t(t.dtype));
      if (t.has_shape) fill_shape(p->mutable_sparse_tensor_type()->mutable_shape());
      break;
    case ValueType::Kind::Sequence:
      if (t.elem) from_value_type(*t.elem, p->mutable_sequence_type()->mutable_elem_type());
      else p->mutable_sequence_type();
      break;
    case ValueType::Kind::Optional:
      if (t.elem) from_value_type(*t.elem, p->mutable_optional_type()->mutable_elem_type());
      else p->mutable_optional_type();
      break;
    case ValueType::Kind::Map:
      p->mutable_map_type()->set_key_type(int32_t(t.key_dtype));
      if (t.elem) from_value_type(*t.elem, p->mutable_map_type()->mutable_value_type());
      break;
    case ValueType::Kind::Unknown:
      break;
  }
}

// ---- values ---------------------------------------------------------------------------------

Value to_value(onnx::SequenceProto& p, const std::string& what) {
  Sequence s;
  switch (p.elem_type()) {
    case onnx::SequenceProto::TENSOR:
      for (auto& t : *p.mutable_tensor_values()) s.items.emplace_back(to_tensor(t, "", what));
      if (!s.items.empty()) s.elem_dtype = s.items[0].tensor().dtype();
      break;
    case onnx::SequenceProto::SEQUENCE:
      for (auto& q : *p.mutable_sequence_values()) s.items.push_back(to_value(q, what));
      break;
    case onnx::SequenceProto::MAP:
      for (auto& m : *p.mutable_map_values()) s.items.push_back(to_value(m, what));
      break;
    case onnx::SequenceProto::OPTIONAL:
      for (auto& o : *p.mutable_optional_values()) s.items.push_back(to_value(o, what));
      break;
    case onnx::SequenceProto::UNDEFINED:
      break;
    default:
      fail_input(fmt::format("sequence '{}': unsupported element kind {}", what, int(p.elem_type())));
  }
  return s;
}

Value to_value(onnx::OptionalProto& p, const std::string& what) {
  Optional o;
  switch (p.elem_type()) {
    case onnx::OptionalProto::TENSOR:
      o.value = std::make_shared<Value>(to_tensor(*p.mutable_tensor_value(), "", what));
      break;
    case onnx::OptionalProto::SEQUENCE:
      o.value = std::make_shared<Value>(to_value(*p.mutable_sequence_value(), what));
      break;
    case onnx::OptionalProto::MAP:
      o.value = std::make_shared<Value>(to_value(*p.mutable_map_value(), what));
      break;
    case onnx::OptionalProto::OPTIONAL:
      o.value = std::make_shared<Value>(to_value(*p.mutable_optional_value(), what));
      break;
    case onnx::OptionalProto::UNDEFINED:
      break;  // empty optional
    default:
      fail_input(fmt::format("optional '{}': unsupported element kind {}", what, int(p.elem_type())));
  }
  return o;
}

Value to_value(onnx::MapProto& p, const std::string& what) {
  Map m;
  const DType key = checked_dtype(p.key_type(), "map key type");
  if (key == DType::String) {
    m.keys = Tensor(DType::String, {int64_t(p.string_keys_size())});
    for (int i = 0; i < p.string_keys_size(); ++i) m.keys.data<std::string>()[i] = p.string_keys(i);
  } else {
    m.keys = Tensor(DType::Int64, {int64_t(p.keys_size())});
    std::copy(p.keys().begin(), p.keys().end(), m.keys.data<int64_t>());
  }
  Value values = to_value(*p.mutable_values(), what);
  const auto& items = values.sequence().items;
  if (int64_t(items.size()) != m.keys.size())
    fail_input(fmt::format("map '{}': {} keys but {} values", what, m.keys.size(), items.size()));
  if (items.empty()) {
    m.values = Tensor(DType::Float, {0});
    return m;
  }
  const DType vt = items[0].tensor().dtype();
  m.values = Tensor(vt, {int64_t(items.size())});
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i].tensor();
    if (t.size() != 1 || t.dtype() != vt) fail_input(fmt::format("map '{}': values must be scalars of one type", what));
    if (vt == DType::String) m.values.data<std::string>()[i] = t.data<std::string>()[0];
    else std::memcpy(static_cast<char*>(m.values.raw_data()) + i * dtype_size(vt), t.raw_data(), dtype_size(vt));
  }
  return m;
}

void from_value(const Value& v, onnx::SequenceProto* p) {
  const auto& s = v.sequence();
  if (s.items.empty()) {
    p->set_elem_type(onnx::SequenceProto::TENSOR);
    return;
  }
  for (const auto& item : s.items) {
    if (item.is_tensor()) { p->set_elem_type(onnx::SequenceProto::TENSOR); from_tensor(item.tensor(), p->add_tensor_values()); }
    else if (item.is_sequence()) { p->set_elem_type(onnx::SequenceProto::SEQUENCE); from_value(item, p->add_sequence_values()); }
    else if (item.is_map()) { p->set_elem_type(onnx::SequenceProto::MAP); from_value(item, p->add_map_values()); }
    else if (item.is_optional()) { p->set_elem_type(onnx::SequenceProto::OPTIONAL); from_value(item, p->add_optional_values()); }
  }
}

void from_value(const Value& v, onnx::OptionalProto* p) {
  const auto& o = v.optional();
  if (!o.has_value()) { p->set_elem_type(onnx::OptionalProto::UNDEFINED); return; }
  const Value& inner = *o.value;
  if (inner.is_tensor()) { p->set_elem_type(onnx::OptionalProto::TENSOR); from_tensor(inner.tensor(), p->mutable_tensor_value()); }
  else if (inner.is_sequence()) { p->set_elem_type(onnx::OptionalProto::SEQUENCE); from_value(inner, p->mutable_sequence_value()); }
  else if (inner.is_map()) { p->set_elem_type(onnx::OptionalProto::MAP); from_value(inner, p->mutable_map_value()); }
  else if (inner.is_optional()) { p->set_elem_type(onnx::OptionalProto::OPTIONAL); from_value(inner, p->mutable_optional_value()); }
}

void from_value(const Value& v, onnx::MapProto* p) {
  const auto& m = v.map();
  p->set_key_type(int32_t(m.keys.dtype()));
  for (int64_t i = 0; i < m.keys.size(); ++i) {
    if (m.keys.dtype() == DType::String) p->add_string_keys(m.keys.data<std::string>()[i]);
    else p->add_keys(m.keys.data<int64_t>()[i]);
  }
  auto* seq = p->mutable_values();
  seq->set_elem_type(onnx::SequenceProto::TENSOR);
  const size_t elem = dtype_size(m.values.dtype());
  for (int64_t i = 0; i < m.values.size(); ++i) {
    Tensor one(m.values.dtype(), {});
    if (one.dtype() == DType::String) one.data<std::string>()[0] = m.values.data<std::string>()[i];
    else std::memcpy(one.raw_data(), static_cast<const char*>(m.values.raw_data()) + i * elem, elem);
    from_tensor(one, seq->add_tensor_values());
  }
}

// ---- graphs, nodes, functions, models ------------------------------------------------------

Node to_node(onnx::NodeProto& p, const std::string& base_dir) {
  Node n;
  n.name = p.name();
  n.op_type = p.op_type();
  n.domain = normalize_domain(p.domain());
  n.overload = unknown_string(p, kNodeOverload);
  n.inputs.assign(p.input().begin(), p.input().end());
  n.outputs.assign(p.output().begin(), p.output().end());
  const std::string where = n.describe();
  for (auto& a : *p.mutable_attribute()) n.attributes.push_back(to_attribute(a, base_dir, where));
  return n;
}

void from_node(const Node& n, onnx::NodeProto* p) {
  p->set_name(n.name);
  p->set_op_type(n.op_type);
  if (!n.domain.empty()) p->set_domain(n.domain);
  for (const auto& i : n.inputs) p->add_input(i);
  for (const auto& o : n.outputs) p->add_output(o);
  for (const auto& a : n.attributes) from_attribute(a, p->add_attribute());
  if (!n.overload.empty()) p->GetReflection()->MutableUnknownFields(p)->AddLengthDelimited(kNodeOverload, n.overload);
}

Graph to_graph(onnx::GraphProto& p, const std::string& base_dir, const std::vector<std::optional<FileRange>>* raw_data) {
  Graph g;
  g.name = p.name();
  if (raw_data && raw_data->size() != size_t(p.initializer_size())) raw_data = nullptr;  // not this graph's
  for (int i = 0; i < p.initializer_size(); ++i) {
    onnx::TensorProto& init = *p.mutable_initializer(i);
    if (init.name().empty()) fail_model(fmt::format("graph '{}' has an initializer without a name", g.name));
    const FileRange* in_file = raw_data && (*raw_data)[size_t(i)] ? &*(*raw_data)[size_t(i)] : nullptr;
    g.initializers.push_back({init.name(), to_tensor(init, base_dir, init.name(), in_file)});
  }
  for (auto& s : *p.mutable_sparse_initializer()) {
    const std::string name = s.values().name();
    g.initializers.push_back({name, sparse_to_dense(s, base_dir, name)});
  }
  for (const auto& i : p.input()) g.inputs.push_back(to_value_info(i));
  for (const auto& o : p.output()) g.outputs.push_back(to_value_info(o));
  for (const auto& v : p.value_info()) g.value_info.push_back(to_value_info(v));
  for (auto& n : *p.mutable_node()) g.nodes.push_back(to_node(n, base_dir));
  return g;
}

void from_graph(const Graph& g, onnx::GraphProto* p) {
  p->set_name(g.name);
  for (const auto& n : g.nodes) from_node(n, p->add_node());
  for (const auto& init : g.initializers) {
    auto* t = p->add_initializer();
    from_tensor(init.value, t);
    t->set_name(init.name);
  }
  for (const auto& i : g.inputs) from_value_info(i, p->add_input());
  for (const auto& o : g.outputs) from_value_info(o, p->add_output());
  for (const auto& v : g.value_info) from_value_info(v, p->add_value_info());
}

Function to_function(onnx::FunctionProto& p, const std::string& base_dir) {
  Function f;
  f.domain = normalize_domain(p.domain());
  f.name = p.name();
  f.overload = unknown_string(p, kFunctionOverload);
  f.inputs.assign(p.input().begin(), p.input().end());
  f.outputs.assign(p.output().begin(), p.output().end());
  f.attribute_names.assign(p.attribute().begin(), p.attribute().end());
  const std::string where = fmt::format("function '{}'", f.name);
  for (auto& a : unknown_messages<onnx::AttributeProto>(p, kFunctionAttributeProto, "function attribute default"))
    f.attribute_defaults.push_back(to_attribute(a, base_dir, where));
  for (auto& v : unknown_messages<onnx::ValueInfoProto>(p, kFunctionValueInfo, "function value_info"))
    f.value_info.push_back(to_value_info(v));
  for (auto& n : *p.mutable_node()) f.nodes.push_back(to_node(n, base_dir));
  f.opsets = to_opsets(p.opset_import(), where);
  return f;
}

void from_function(const Function& f, onnx::FunctionProto* p) {
  p->set_domain(f.domain);
  p->set_name(f.name);
  for (const auto& i : f.inputs) p->add_input(i);
  for (const auto& o : f.outputs) p->add_output(o);
  for (const auto& a : f.attribute_names) p->add_attribute(a);
  for (const auto& n : f.nodes) from_node(n, p->add_node());
  from_opsets(f.opsets, p->mutable_opset_import());
  for (const auto& a : f.attribute_defaults) {
    onnx::AttributeProto ap;
    from_attribute(a, &ap);
    add_unknown_message(p, kFunctionAttributeProto, ap);
  }
  for (const auto& v : f.value_info) {
    onnx::ValueInfoProto vp;
    from_value_info(v, &vp);
    add_unknown_message(p, kFunctionValueInfo, vp);
  }
  if (!f.overload.empty()) p->GetReflection()->MutableUnknownFields(p)->AddLengthDelimited(kFunctionOverload, f.overload);
}

Model to_model(onnx::ModelProto& p, const std::string& base_dir, const std::vector<std::optional<FileRange>>* raw_data) {
  Model m;
  m.ir_version = p.ir_version();
  m.opsets = to_opsets(p.opset_import(), "the model");
  m.producer_name = p.producer_name();
  m.producer_version = p.producer_version();
  m.domain = p.domain();
  m.model_version = p.model_version();
  m.doc_string = p.doc_string();
  for (const auto& kv : p.metadata_props()) m.metadata.emplace_back(kv.key(), kv.value());
  m.base_dir = base_dir;
  m.graph = to_graph(*p.mutable_graph(), base_dir, raw_data);
  for (auto& f : *p.mutable_functions()) m.functions.push_back(to_function(f, base_dir));
  return m;
}

void from_model(const Model& m, onnx::ModelProto* p) {
  p->set_ir_version(m.ir_version);
  from_opsets(m.opsets, p->mutable_opset_import());
  if (!m.producer_name.empty()) p->set_producer_name(m.producer_name);
  if (!m.producer_version.empty()) p->set_producer_version(m.producer_version);
  if (!m.domain.empty()) p->set_domain(m.domain);
  if (m.model_version) p->set_model_version(m.model_version);
  if (!m.doc_string.empty()) p->set_doc_string(m.doc_string);
  for (const auto& [k, v] : m.metadata) {
    auto* e = p->add_metadata_props();
    e->set_key(k);
    e->set_value(v);
  }
  from_graph(m.graph, p->mutable_graph());
  for (const auto& f : m.functions) from_function(f, p->add_functions());
}

}  // namespace refeval::proto
