// Common subexpressions (ORT's CommonSubexpressionElimination): a node with the same operator,
// attributes and inputs as an earlier one is dropped and its readers read the earlier outputs.
// Nodes with bodies and operators that are not deterministic are never merged.
#include <fmt/format.h>

#include "../pass.h"

namespace refeval::optimize {
namespace {

std::string tensor_key(const Tensor& t) {
  const auto* p = static_cast<const char*>(t.raw_data());
  return fmt::format("{}:{}:{}", int(t.dtype()), fmt::join(t.shape(), "x"),
                     t.dtype() == DType::String ? std::string("?") : std::string(p, p + t.nbytes()));
}

std::string attribute_key(const Attribute& a) {
  std::string k = fmt::format("{}#{}#", a.name, int(a.type));
  switch (a.type) {
    case AttrType::Float: return k + fmt::format("{}", a.f);
    case AttrType::Int: return k + std::to_string(a.i);
    case AttrType::String: return k + a.s;
    case AttrType::Floats: return k + fmt::format("{}", fmt::join(a.floats, ","));
    case AttrType::Ints: return k + fmt::format("{}", fmt::join(a.ints, ","));
    case AttrType::Strings: return k + fmt::format("{}", fmt::join(a.strings, "\x1f"));
    case AttrType::Tensor: return k + tensor_key(a.t);
    default: return "";  // graphs, type protos, tensor lists: never merged
  }
}

}  // namespace

Pass cse_pass() {
  return {"cse", "Merged common subexpression", Level::Basic, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g);
            std::map<std::string, size_t> seen;
            std::vector<std::pair<std::string, std::string>> renames;
            std::map<std::string, std::string> alias;
            std::vector<bool> drop(g.nodes.size(), false);
            for (size_t i = 0; i < g.nodes.size(); ++i) {
              const Node& n = g.nodes[i];
              if (n.outputs.empty()) continue;
              const int64_t opset = m.opsets.count(n.domain) ? m.opsets.at(n.domain) : 1;
              const OpRegistration* reg = ctx.registry.resolve(n.domain, n.op_type, opset);
              if (!reg || reg->determinism != Determinism::Deterministic) continue;
              std::string key = fmt::format("{}|{}|", n.domain, n.op_type);
              bool mergeable = true;
              for (const std::string& in : n.inputs) key += (alias.count(in) ? alias[in] : in) + "\x1e";
              for (const Attribute& a : n.attributes) {
                const std::string ak = attribute_key(a);
                mergeable = mergeable && !ak.empty();
                key += ak + "\x1d";
              }
              bool outputs_free = true;  // a graph output keeps its own node
              for (const std::string& o : n.outputs) outputs_free = outputs_free && !index.is_graph_output(o);
              if (!mergeable) continue;
              auto [it, fresh] = seen.emplace(key, i);
              if (fresh || !outputs_free) continue;
              const Node& first = g.nodes[it->second];
              if (first.outputs.size() != n.outputs.size()) continue;
              for (size_t k = 0; k < n.outputs.size(); ++k) {
                if (n.outputs[k].empty()) continue;
                if (first.outputs[k].empty()) { mergeable = false; break; }
              }
              if (!mergeable) continue;
              for (size_t k = 0; k < n.outputs.size(); ++k)
                if (!n.outputs[k].empty()) renames.emplace_back(n.outputs[k], first.outputs[k]), alias[n.outputs[k]] = first.outputs[k];
              drop[i] = true;
            }
            return drop_nodes(g, drop, renames);
          }};
}

Pass dead_code_pass() {
  return {"dead-code", "Removed unused node", Level::Basic, [](Model& m, PassContext&) { return remove_dead(m.graph); }};
}

}  // namespace refeval::optimize
