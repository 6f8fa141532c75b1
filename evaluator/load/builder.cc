#include "refeval/builder.h"

namespace refeval::build {
namespace {
Attribute base(const std::string& name, AttrType t) {
  Attribute a;
  a.name = name;
  a.type = t;
  return a;
}
}  // namespace

Attribute attr(const std::string& name, float v) { auto a = base(name, AttrType::Float); a.f = v; return a; }
Attribute attr(const std::string& name, double v) { return attr(name, float(v)); }
Attribute attr(const std::string& name, int64_t v) { auto a = base(name, AttrType::Int); a.i = v; return a; }
Attribute attr(const std::string& name, int v) { return attr(name, int64_t(v)); }
Attribute attr(const std::string& name, const std::string& v) { auto a = base(name, AttrType::String); a.s = v; return a; }
Attribute attr(const std::string& name, const char* v) { return attr(name, std::string(v)); }
Attribute attr(const std::string& name, const std::vector<float>& v) { auto a = base(name, AttrType::Floats); a.floats = v; return a; }
Attribute attr(const std::string& name, const std::vector<int64_t>& v) { auto a = base(name, AttrType::Ints); a.ints = v; return a; }
Attribute attr(const std::string& name, const std::vector<std::string>& v) { auto a = base(name, AttrType::Strings); a.strings = v; return a; }
Attribute attr(const std::string& name, const Tensor& v) { auto a = base(name, AttrType::Tensor); a.t = v; return a; }
Attribute attr(const std::string& name, const Graph& v) { auto a = base(name, AttrType::Graph); a.g = std::make_shared<Graph>(v); return a; }
Attribute attr_ref(const std::string& name, const std::string& ref, AttrType type) {
  auto a = base(name, type);
  a.ref_attr_name = ref;
  return a;
}

Node node(const std::string& op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
          std::vector<Attribute> attributes, const std::string& name, const std::string& domain) {
  Node n;
  n.op_type = op_type;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  n.name = name;
  n.domain = normalize_domain(domain);
  return n;
}

ValueInfo tensor_info(const std::string& name, DType dtype, std::vector<DimSpec> dims) {
  std::vector<Dim> d(dims.begin(), dims.end());
  return {name, ValueType::tensor(dtype, std::move(d))};
}
ValueInfo tensor_info_unknown_rank(const std::string& name, DType dtype) {
  return {name, ValueType::tensor_of_unknown_rank(dtype)};
}
ValueInfo untyped_info(const std::string& name) { return {name, {}}; }

Graph graph(const std::string& name, std::vector<Node> nodes, std::vector<ValueInfo> inputs,
            std::vector<ValueInfo> outputs, std::vector<Initializer> initializers) {
  Graph g;
  g.name = name;
  g.nodes = std::move(nodes);
  g.inputs = std::move(inputs);
  g.outputs = std::move(outputs);
  g.initializers = std::move(initializers);
  return g;
}

Model model(Graph g, OpsetMap opsets, int64_t ir_version, std::vector<Function> functions) {
  Model m;
  m.graph = std::move(g);
  m.opsets = std::move(opsets);
  m.ir_version = ir_version;
  m.functions = std::move(functions);
  return m;
}

}  // namespace refeval::build
