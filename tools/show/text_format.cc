#include "text_format.h"

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/stats.h"

namespace refeval::show {
namespace {

bool plain(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string quoted_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\\\"") : std::string(1, c);
  return out + "\"";
}

// A float literal the parser reads as a float: always with a point or an exponent; the shortest
// text that reads back as the same value of its type (float or double).
template <class F>
std::string float_literal(F v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string dims_text(const std::vector<Dim>& dims) {
  std::vector<std::string> parts;
  for (const Dim& d : dims) parts.push_back(d.fixed() ? std::to_string(d.value) : d.param.empty() ? "?" : quote_id(d.param));
  return fmt::format("[{}]", fmt::join(parts, ","));
}

std::string type_text(const ValueType& t) {
  switch (t.kind) {
    case ValueType::Kind::Tensor:
      return std::string(dtype_short_name(t.dtype)) + (t.has_shape ? dims_text(t.dims) : "");
    case ValueType::Kind::SparseTensor:
      return fmt::format("sparse_tensor({}{})", dtype_short_name(t.dtype), t.has_shape ? dims_text(t.dims) : "");
    case ValueType::Kind::Sequence: return fmt::format("seq({})", t.elem ? type_text(*t.elem) : "float");
    case ValueType::Kind::Optional: return fmt::format("optional({})", t.elem ? type_text(*t.elem) : "float");
    case ValueType::Kind::Map:
      return fmt::format("map({}, {})", dtype_short_name(t.key_dtype), t.elem ? type_text(*t.elem) : "float");
    case ValueType::Kind::Unknown: break;
  }
  return "float";  // the syntax needs a type: an undeclared one reads as float with no shape
}

// A tensor constant's type: "float[2,3]", or "float" for a scalar (the parsers read an empty
// "float[]" constant as unshaped).
std::string tensor_type(const Tensor& t) {
  if (t.rank() == 0) return std::string(dtype_short_name(t.dtype()));
  std::vector<Dim> dims;
  for (int64_t d : t.shape()) dims.push_back(Dim{d, ""});
  return std::string(dtype_short_name(t.dtype())) + dims_text(dims);
}

std::string tensor_values(const Tensor& t) {
  std::vector<std::string> v;
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.size(); ++i) v.push_back(quoted_string(t.data<std::string>()[i]));
  } else if (t.dtype() == DType::Bool) {
    for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.data<bool>()[i] ? "1" : "0");
  } else {
    using Printable = Concat<Floats, TypeList<int8_t, uint8_t, int16_t, uint16_t, int32_t, int64_t, uint32_t, uint64_t>>;
    if (!Printable::contains(t.dtype())) return "";
    visit<Printable>(t.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < t.size(); ++i) {
        if constexpr (std::is_integral_v<T>) v.push_back(std::to_string(t.data<T>()[i]));
        else v.push_back(float_literal(compute_t<T>(t.data<T>()[i])));
      }
    });
  }
  return fmt::format("{{{}}}", fmt::join(v, ", "));
}

class Printer {
 public:
  explicit Printer(const TextOptions& o) : o_(o) {}

  std::string graph(const Graph& g, int indent) {
    const std::string pad(size_t(indent), ' ');
    std::string out = fmt::format("{} ({}) => ({})\n", quote_id(g.name.empty() ? "main_graph" : g.name), value_infos(g, g.inputs),
                                  value_infos(g, g.outputs));
    std::vector<std::string> inits, elided;
    for (const Initializer& i : g.initializers) {
      if (g.find_input(i.name)) continue;  // printed with the inputs' types; its value below
      const std::string values = tensor_values(i.value);
      if ((o_.full || i.value.size() <= o_.max_elements) && !values.empty())
        inits.push_back(fmt::format("{} {} = {}", tensor_type(i.value), quote_id(i.name), values));
      else
        elided.push_back(summary(i));
    }
    if (!inits.empty() || !elided.empty()) {
      out += pad + "   <";
      for (size_t k = 0; k < inits.size(); ++k) out += (k ? ",\n" + pad + "    " : "") + inits[k];
      for (const std::string& e : elided) out += "\n" + pad + "    # " + e;
      out += (elided.empty() ? "" : "\n" + pad + "   ") + std::string(">\n");
    }
    out += pad + "{\n";
    for (const Node& n : g.nodes) out += pad + "   " + node(n, indent + 3) + "\n";
    return out + pad + "}";
  }

  std::string node(const Node& n, int indent) {
    std::vector<std::string> outs, ins, attrs;
    for (const std::string& o : n.outputs) outs.push_back(o.empty() ? "\"\"" : quote_id(o));
    for (const std::string& i : n.inputs) ins.push_back(i.empty() ? "\"\"" : quote_id(i));
    for (const Attribute& a : n.attributes) attrs.push_back(attribute(a, indent));
    const std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
    std::string line = o_.labels && !n.name.empty() ? fmt::format("[{}] ", quote_id(n.name)) : "";
    line += fmt::format("{} = {}{}({})", fmt::join(outs, ", "), op, attrs.empty() ? "" : fmt::format(" <{}> ", fmt::join(attrs, ", ")),
                        fmt::join(ins, ", "));
    if (!o_.labels && !n.name.empty()) line += "  # " + n.name;
    return line;
  }

 private:
  std::string value_infos(const Graph& g, const std::vector<ValueInfo>& list) {
    std::vector<std::string> parts;
    for (const ValueInfo& v : list) {
      std::string p = type_text(v.type) + " " + quote_id(v.name);
      if (const Initializer* i = g.find_initializer(v.name); i && (o_.full || i->value.size() <= o_.max_elements))
        p += " = " + tensor_values(i->value);
      parts.push_back(p);
    }
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  std::string summary(const Initializer& i) {
    const TensorStats s = tensor_stats(i.value);
    return s.numeric ? fmt::format("{} {}: {} values in [{:.4g}, {:.4g}], mean {:.4g} (--full prints them)", tensor_type(i.value),
                                   quote_id(i.name), s.count, s.min, s.max, s.mean)
                     : fmt::format("{} {}: {} values (--full prints them)", tensor_type(i.value), quote_id(i.name), s.count);
  }

  std::string attribute(const Attribute& a, int indent) {
    if (!a.ref_attr_name.empty()) return fmt::format("{}: {} = @{}", a.name, attr_type_name(a.type), a.ref_attr_name);
    auto list = [&](auto&& items, auto&& fmt_one) {
      std::vector<std::string> p;
      for (const auto& x : items) p.push_back(fmt_one(x));
      return p.empty() ? fmt::format("{}: {} = []", a.name, attr_type_name(a.type)) : fmt::format("{} = [{}]", a.name, fmt::join(p, ", "));
    };
    switch (a.type) {
      case AttrType::Float: return fmt::format("{} = {}", a.name, float_literal(a.f));
      case AttrType::Int: return fmt::format("{} = {}", a.name, a.i);
      case AttrType::String: return fmt::format("{} = {}", a.name, quoted_string(a.s));
      case AttrType::Tensor: return fmt::format("{} = {} {}", a.name, tensor_type(a.t), tensor_values(a.t));
      case AttrType::Graph: return a.g ? fmt::format("{} = {}", a.name, graph(*a.g, indent)) : fmt::format("{}: graph = []", a.name);
      case AttrType::Floats: return list(a.floats, [](float f) { return float_literal(f); });
      case AttrType::Ints: return list(a.ints, [](int64_t i) { return std::to_string(i); });
      case AttrType::Strings: return list(a.strings, [](const std::string& s) { return quoted_string(s); });
      case AttrType::Graphs:
        return list(a.graphs, [&](const std::shared_ptr<Graph>& g) { return g ? graph(*g, indent) : std::string("?"); });
      case AttrType::Tensors:
        return list(a.tensors, [](const Tensor& t) { return tensor_type(t) + " " + tensor_values(t); });
      default: return fmt::format("{}: {} = []", a.name, attr_type_name(a.type));  // type protos, sparse tensors: not in the syntax
    }
  }

  const TextOptions& o_;
};

}  // namespace

std::string quote_id(const std::string& name) { return plain(name) ? name : quoted_string(name); }

std::string model_text(const Model& m, const TextOptions& options) {
  std::vector<std::string> opsets;
  for (const auto& [domain, version] : m.opsets) opsets.push_back(fmt::format("{} : {}", quoted_string(domain), version));
  std::string out = fmt::format("<\n   ir_version: {},\n   opset_import: [{}]", m.ir_version, fmt::join(opsets, ", "));
  if (!m.producer_name.empty()) out += fmt::format(",\n   producer_name: {}", quoted_string(m.producer_name));
  if (!m.producer_version.empty()) out += fmt::format(",\n   producer_version: {}", quoted_string(m.producer_version));
  if (!m.domain.empty()) out += fmt::format(",\n   domain: {}", quoted_string(m.domain));
  if (m.model_version) out += fmt::format(",\n   model_version: {}", m.model_version);
  Printer p(options);
  out += "\n>\n" + p.graph(m.graph, 0) + "\n";
  for (const Function& f : m.functions) {
    std::vector<std::string> fo;
    for (const auto& [d, v] : f.opsets) fo.push_back(fmt::format("{} : {}", quoted_string(d), v));
    std::vector<std::string> ins, outs, attrs = f.attribute_names;
    for (const std::string& i : f.inputs) ins.push_back(quote_id(i));
    for (const std::string& o : f.outputs) outs.push_back(quote_id(o));
    out += fmt::format("<\n   domain: {},\n   opset_import: [{}]\n>\n{}{} ({}) => ({})\n{{\n", quoted_string(f.domain), fmt::join(fo, ", "),
                       quote_id(f.name), attrs.empty() ? "" : fmt::format(" <{}>", fmt::join(attrs, ", ")), fmt::join(ins, ", "),
                       fmt::join(outs, ", "));
    for (const Node& n : f.nodes) out += "   " + p.node(n, 3) + "\n";
    out += "}\n";
  }
  return out;
}

}  // namespace refeval::show
