#include "graph_index.h"

#include "refeval/dispatch.h"

namespace refeval::optimize {
namespace {

// A Constant node's value from whichever attribute it uses; nullopt for sparse or unknown forms.
std::optional<Tensor> constant_value(const Node& n) {
  if (n.attributes.size() != 1) return std::nullopt;
  const Attribute& a = n.attributes[0];
  if (a.name == "value" && a.type == AttrType::Tensor) return a.t;
  if (a.name == "value_float") return Tensor::from_vector<float>({}, {a.f});
  if (a.name == "value_int") return Tensor::from_vector<int64_t>({}, {a.i});
  if (a.name == "value_floats") return Tensor::from_vector<float>({int64_t(a.floats.size())}, a.floats);
  if (a.name == "value_ints") return Tensor::from_vector<int64_t>({int64_t(a.ints.size())}, a.ints);
  return std::nullopt;
}

const std::vector<int> kNone;

}  // namespace

GraphIndex::GraphIndex(const Graph& g, const Inference* inference) : g_(g), inference_(inference) {
  std::set<std::string> feedable;
  for (const ValueInfo& in : g.inputs) feedable.insert(in.name);
  for (const Initializer& init : g.initializers)
    if (!feedable.count(init.name)) constants_[init.name] = &init.value;
  for (const ValueInfo& out : g.outputs) outputs_.insert(out.name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (const std::string& out : n.outputs)
      if (!out.empty()) producer_[out] = int(i);
    std::set<std::string> seen;
    for (const std::string& in : n.inputs)
      if (!in.empty() && seen.insert(in).second) consumers_[in].push_back(int(i));
    if (n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1)
      if (auto v = constant_value(n)) constant_nodes_.emplace(n.outputs[0], *v);
  }
  for (auto& [name, t] : constant_nodes_) constants_[name] = &t;
}

int GraphIndex::producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? -1 : it->second;
}

const Node* GraphIndex::producer_node(const std::string& value) const {
  const int p = producer(value);
  return p < 0 ? nullptr : &graph().nodes[size_t(p)];
}

const std::vector<int>& GraphIndex::consumers(const std::string& value) const {
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNone : it->second;
}

const Tensor* GraphIndex::constant(const std::string& value) const {
  auto it = constants_.find(value);
  return it == constants_.end() ? nullptr : it->second;
}

std::optional<double> scalar_of(const Tensor& t) {
  if (t.size() != 1) return std::nullopt;
  using Scalars = Concat<Floats, TypeList<bool, int8_t, uint8_t, int16_t, uint16_t, int32_t, int64_t, uint32_t, uint64_t>>;
  if (!Scalars::contains(t.dtype())) return std::nullopt;
  return visit<Scalars>(t.dtype(), [&]<class T>() { return double(compute_t<T>(t.data<T>()[0])); });
}

std::optional<double> GraphIndex::scalar(const std::string& value) const {
  const Tensor* t = constant(value);
  return t ? scalar_of(*t) : std::nullopt;
}

std::optional<std::vector<int64_t>> GraphIndex::ints(const std::string& value) const {
  const Tensor* t = constant(value);
  if (!t || (t->dtype() != DType::Int64 && t->dtype() != DType::Int32)) return std::nullopt;
  return visit<TypeList<int32_t, int64_t>>(t->dtype(), [&]<class T>() {
    std::vector<int64_t> v(size_t(t->size()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(t->data<T>()[i]);
    return v;
  });
}

const ValueType* GraphIndex::type(const std::string& value) const {
  if (const Tensor* t = constant(value)) {
    auto [it, fresh] = constant_types_.try_emplace(value);
    if (fresh) {
      std::vector<Dim> dims;
      for (int64_t d : t->shape()) dims.push_back(Dim{d, ""});
      it->second = ValueType::tensor(t->dtype(), dims);
    }
    return &it->second;
  }
  if (!inference_) return nullptr;
  auto it = inference_->types.find(value);
  return it == inference_->types.end() ? nullptr : &it->second;
}

std::optional<std::vector<Dim>> GraphIndex::shape_values(const std::string& value) const {
  if (const auto c = ints(value)) {
    std::vector<Dim> d;
    for (int64_t x : *c) d.push_back(Dim{x, ""});
    return d;
  }
  if (const std::vector<Dim>* d = shape_data(value)) return *d;
  return std::nullopt;
}

const std::vector<Dim>* GraphIndex::shape_data(const std::string& value) const {
  if (!inference_) return nullptr;
  auto it = inference_->shape_data.find(value);
  return it == inference_->shape_data.end() ? nullptr : &it->second;
}

const std::vector<Dim>* GraphIndex::dims(const std::string& value) const {
  const ValueType* t = type(value);
  return t && t->kind == ValueType::Kind::Tensor && t->has_shape ? &t->dims : nullptr;
}

bool same_dim(const Dim& a, const Dim& b) {
  if (a.fixed() || b.fixed()) return a.fixed() && b.fixed() && a.value == b.value;
  return !a.param.empty() && a.param == b.param;
}

bool same_shape(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_dim(a[i], b[i])) return false;
  return true;
}

}  // namespace refeval::optimize
