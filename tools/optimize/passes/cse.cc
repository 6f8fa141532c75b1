// Common subexpressions (ORT's CommonSubexpressionElimination): a node with the same operator,
// attributes and inputs as an earlier one is dropped and its readers read the earlier outputs.
// Nodes with bodies and operators that are not deterministic are never merged.
#include <string_view>

#include <fmt/format.h>

#include "../graph_edit.h"
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

// Equal constants (ORT's ConstantSharing): initializers of the same type, shape and bytes are one,
// so a weight several layers share (ALBERT), and what passes make from it per layer (a packed
// q/k/v weight, a transposed weight, rotary tables), is stored once. An initializer that is also a
// graph input (it may be overridden) or a graph output keeps its own name.
Pass constant_sharing_pass() {
  return {"constant-sharing", "Shared equal initializer", Level::Basic, [](Model& m, PassContext&) {
            Graph& g = m.graph;
            std::set<std::string> fixed;
            for (const ValueInfo& v : g.inputs) fixed.insert(v.name);
            for (const ValueInfo& v : g.outputs) fixed.insert(v.name);
            std::multimap<size_t, size_t> by_hash;  // hash of the bytes -> index of the first with them
            std::vector<std::pair<std::string, std::string>> renames;
            for (size_t i = 0; i < g.initializers.size(); ++i) {
              const Tensor& t = g.initializers[i].value;
              if (t.dtype() == DType::String || fixed.count(g.initializers[i].name)) continue;
              const std::string_view bytes(static_cast<const char*>(t.raw_data()), t.nbytes());
              const size_t h = std::hash<std::string_view>{}(bytes) ^ std::hash<std::string>{}(fmt::format("{}:{}", int(t.dtype()), fmt::join(t.shape(), "x")));
              bool merged = false;
              for (auto [it, end] = by_hash.equal_range(h); it != end && !merged; ++it) {
                const Tensor& u = g.initializers[it->second].value;
                if (u.dtype() != t.dtype() || u.shape() != t.shape() ||
                    std::string_view(static_cast<const char*>(u.raw_data()), u.nbytes()) != bytes)
                  continue;
                renames.emplace_back(g.initializers[i].name, g.initializers[it->second].name);
                merged = true;
              }
              if (!merged) by_hash.emplace(h, i);
            }
            for (const auto& [from, to] : renames) rename_uses(g, from, to);
            if (!renames.empty()) remove_dead(g);
            return int(renames.size());
          }};
}

Pass dead_code_pass() {
  return {"dead-code", "Removed unused node", Level::Basic, [](Model& m, PassContext&) { return remove_dead(m.graph); }};
}

}  // namespace refeval::optimize
