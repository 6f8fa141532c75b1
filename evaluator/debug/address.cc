#include "refeval/address.h"

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval {

std::string node_id(const std::string& prefix, const Node& node, size_t index) {
  return prefix + (node.name.empty() ? fmt::format("#{}", index) : node.name);
}

namespace {

bool is_index(const std::string& s, const Graph& g, size_t& index) {
  if (s.size() < 2 || s[0] != '#' || s.find_first_not_of("0123456789", 1) != std::string::npos) return false;
  if (s.size() > 12) return false;
  index = std::stoull(s.substr(1));
  return index < g.nodes.size();
}

// op:TYPE or op:DOMAIN:TYPE, in this graph and every body below it.
void find_by_op(const Graph& g, const std::string& prefix, int depth, const std::string& domain, bool any_domain,
                const std::string& type, std::vector<NodeMatch>& out) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const std::string id = node_id(prefix, n, i);
    if (n.op_type == type && (any_domain || n.domain == domain)) out.push_back({id, &n, &g, i, depth});
    for (const Attribute& a : n.attributes) {
      if (a.g) find_by_op(*a.g, id + "/" + a.name + "/", depth + 1, domain, any_domain, type, out);
      for (const auto& body : a.graphs) find_by_op(*body, id + "/" + a.name + "/", depth + 1, domain, any_domain, type, out);
    }
  }
}

// A single node by name, #I or PARENT/ATTR/SUB path; empty when nothing matches.
std::vector<NodeMatch> find_one(const Graph& g, const std::string& prefix, int depth, const std::string& address) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].name.empty() && g.nodes[i].name == address) return {{prefix + address, &g.nodes[i], &g, i, depth}};
  size_t index = 0;
  if (is_index(address, g, index)) return {{node_id(prefix, g.nodes[index], index), &g.nodes[index], &g, index, depth}};
  // PARENT/ATTR/rest: any node whose own address is a prefix, then one of its graph attributes.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const std::string self = n.name.empty() ? fmt::format("#{}", i) : n.name;
    for (const std::string& head : {self, fmt::format("#{}", i)}) {
      if (address.size() <= head.size() + 1 || address.compare(0, head.size(), head) != 0 || address[head.size()] != '/')
        continue;
      const std::string rest = address.substr(head.size() + 1);
      for (const Attribute& a : n.attributes) {
        if (!a.g || rest.size() <= a.name.size() + 1 || rest.compare(0, a.name.size(), a.name) != 0 ||
            rest[a.name.size()] != '/')
          continue;
        auto found = find_one(*a.g, prefix + self + "/" + a.name + "/", depth + 1, rest.substr(a.name.size() + 1));
        if (!found.empty()) return found;
      }
    }
  }
  return {};
}

}  // namespace

std::vector<NodeMatch> find_nodes(const Graph& graph, const std::string& address) {
  auto found = find_one(graph, "", 0, address);
  if (found.empty() && address.rfind("op:", 0) == 0) {
    const std::string spec = address.substr(3);
    const size_t colon = spec.rfind(':');
    if (colon == std::string::npos)
      find_by_op(graph, "", 0, "", true, spec, found);
    else
      find_by_op(graph, "", 0, normalize_domain(spec.substr(0, colon)), false, spec.substr(colon + 1), found);
  }
  if (found.empty())
    fail_usage(fmt::format("no node matches '{}' (a node name, #INDEX, op:TYPE or PARENT/ATTRIBUTE/NODE)", address));
  return found;
}

}  // namespace refeval
