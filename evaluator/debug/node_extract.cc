#include "refeval/node_extract.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace refeval {
namespace {

void add_unique(std::vector<std::string>& list, const std::string& name) {
  if (!name.empty() && std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

std::vector<const Graph*> bodies_of(const Node& n) {
  std::vector<const Graph*> out;
  for (const Attribute& a : n.attributes) {
    if (a.g) out.push_back(a.g.get());
    for (const auto& g : a.graphs) out.push_back(g.get());
  }
  return out;
}

// Names a graph reads but does not define (its own inputs, initializers and node outputs),
// nested bodies included.
std::vector<std::string> free_names(const Graph& g) {
  std::set<std::string> defined;
  for (const auto& i : g.inputs) defined.insert(i.name);
  for (const auto& i : g.initializers) defined.insert(i.name);
  std::vector<std::string> free;
  for (const Node& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (!defined.count(in)) add_unique(free, in);
    for (const Graph* body : bodies_of(n))
      for (const auto& name : free_names(*body))
        if (!defined.count(name)) add_unique(free, name);
    for (const auto& out : n.outputs) defined.insert(out);
  }
  return free;
}

const Value& value_for(const std::map<std::string, Value>& values, const std::string& name, const Node& node) {
  auto it = values.find(name);
  if (it == values.end() || it->second.is_absent())
    fail_usage(fmt::format("{}: no value for '{}' to build the one-node model from", node.describe(), name));
  return it->second;
}

}  // namespace

void collect_functions(const std::vector<Node>& nodes, const Model& m, std::vector<const Function*>& out) {
  for (const Node& n : nodes) {
    if (const Function* f = m.find_function(n.domain, n.op_type, n.overload);
        f && std::find(out.begin(), out.end(), f) == out.end()) {
      out.push_back(f);
      collect_functions(f->nodes, m, out);
    }
    for (const Graph* body : bodies_of(n)) collect_functions(body->nodes, m, out);
  }
}

std::vector<std::string> node_reads(const Node& node) {
  std::vector<std::string> reads;
  for (const auto& in : node.inputs) add_unique(reads, in);
  for (const Graph* body : bodies_of(node))
    for (const auto& name : free_names(*body)) add_unique(reads, name);
  return reads;
}

ValueType type_of_value(const Value& v) {
  ValueType t;
  if (v.is_tensor()) {
    std::vector<Dim> dims;
    for (int64_t d : v.tensor().shape()) dims.push_back(Dim{d, ""});
    return ValueType::tensor(v.tensor().dtype(), dims);
  }
  if (v.is_sequence()) {
    const Sequence& s = v.sequence();
    t.kind = ValueType::Kind::Sequence;
    // Items may differ in shape, so a sequence of tensors declares only their element type.
    if (!s.items.empty() && !s.items[0].is_tensor()) t.elem = std::make_shared<ValueType>(type_of_value(s.items[0]));
    else t.elem = std::make_shared<ValueType>(ValueType::tensor_of_unknown_rank(s.items.empty() ? s.elem_dtype : s.items[0].tensor().dtype()));
  } else if (v.is_optional()) {
    const Optional& o = v.optional();
    t.kind = ValueType::Kind::Optional;
    if (o.type) t.elem = std::make_shared<ValueType>(*o.type);
    else if (o.has_value()) t.elem = std::make_shared<ValueType>(type_of_value(*o.value));
  } else if (v.is_map()) {
    t.kind = ValueType::Kind::Map;
    t.key_dtype = v.map().keys.dtype();
    t.dtype = v.map().values.dtype();
    t.elem = std::make_shared<ValueType>(ValueType::tensor_of_unknown_rank(t.dtype));
  }
  return t;
}

Model single_node_model(const Model& source, const Node& node, const std::map<std::string, Value>& values) {
  Model m;
  m.ir_version = source.ir_version;
  m.opsets = source.opsets;
  m.producer_name = "refeval node --extract";
  m.graph.name = "node_" + (node.name.empty() ? node.op_type : node.name);
  m.graph.nodes.push_back(node);
  for (const auto& name : node_reads(node)) m.graph.inputs.push_back({name, type_of_value(value_for(values, name, node))});
  for (const auto& name : node.outputs) {
    if (name.empty()) continue;
    auto it = values.find(name);
    m.graph.outputs.push_back({name, it != values.end() ? type_of_value(it->second) : ValueType{}});
  }
  std::vector<const Function*> functions;
  collect_functions(m.graph.nodes, source, functions);
  for (const Function* f : functions) m.functions.push_back(*f);
  return m;
}

}  // namespace refeval
