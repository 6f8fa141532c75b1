#include "scopes.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "aggregate.h"
#include "dot_format.h"

namespace refeval::show {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t from = 0;
  while (from <= path.size()) {
    size_t slash = path.find('/', from);
    if (slash == std::string::npos) slash = path.size();
    if (slash > from) parts.push_back(path.substr(from, slash - from));
    from = slash + 1;
  }
  return parts;
}

// "layers.1".."layers.11" -> "layers.1–11"; other names -> "a, b, c" (at most 3, then "…").
std::string range_name(const std::vector<std::string>& names) {
  auto split_number = [](const std::string& s) {
    size_t k = s.size();
    while (k > 0 && std::isdigit(static_cast<unsigned char>(s[k - 1]))) --k;
    return std::make_pair(s.substr(0, k), s.substr(k));
  };
  const auto first = split_number(names.front()), last = split_number(names.back());
  bool numbered = !first.second.empty();
  for (const std::string& n : names) numbered = numbered && split_number(n).first == first.first && !split_number(n).second.empty();
  if (numbered) return fmt::format("{}{}\u2013{}", first.first, first.second, last.second);
  std::vector<std::string> shown(names.begin(), names.begin() + std::min<size_t>(3, names.size()));
  return fmt::format("{}{}", fmt::join(shown, ", "), names.size() > 3 ? ", \u2026" : "");
}

struct Builder {
  struct Raw {
    std::string name;
    int parent = -1;
    std::vector<size_t> nodes;     // direct
    std::vector<int> groups;       // direct (raw indices)
    bool alive = true;
  };
  std::vector<Raw> raw{Raw{}};
  std::map<std::pair<int, std::string>, int> child;  // (parent, name) -> raw index

  int group_for(const std::vector<std::string>& parts) {
    int at = 0;
    for (const std::string& p : parts) {
      auto [it, fresh] = child.try_emplace({at, p}, int(raw.size()));
      if (fresh) {
        raw.push_back(Raw{p, at, {}, {}, true});
        raw[at].groups.push_back(it->second);
      }
      at = it->second;
    }
    return at;
  }
};

}  // namespace


std::string op_summary(const Scope& s) {
  std::vector<std::string> parts;
  for (const auto& [op, n] : s.top_ops) parts.push_back(fmt::format("{} {}", op, n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// A namespace as scopes: torch's dynamo exporter writes "model: LlamaModel/layers.0: LlamaDecoderLayer",
// whose ": Class" parts are dropped.
static std::vector<std::string> namespace_scopes(const std::string& ns) {
  std::vector<std::string> parts = split_path(ns);
  for (std::string& p : parts)
    if (const size_t colon = p.find(": "); colon != std::string::npos) p.resize(colon);
  std::erase_if(parts, [](const std::string& p) { return p.empty(); });
  return parts;
}

Scopes build_scopes(const Graph& g, const ScopeOptions& o) {
  const size_t n = g.nodes.size();
  std::vector<std::vector<std::string>> scope(n);
  for (size_t i = 0; i < n; ++i)
    scope[i] = o.namespaces && i < o.namespaces->size() && !(*o.namespaces)[i].empty() ? namespace_scopes((*o.namespaces)[i])
                                                                                       : profile::name_scopes(g.nodes[i].name);
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < n; ++i)
    for (const std::string& in : g.nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
  // Scope-less nodes without inputs (constants) join their consumers' common scope.
  for (size_t i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    if (!scope[i].empty() || std::any_of(node.inputs.begin(), node.inputs.end(), [](const std::string& s) { return !s.empty(); }))
      continue;
    std::optional<std::vector<std::string>> common;
    for (const std::string& out : node.outputs) {
      auto it = consumers.find(out);
      if (it == consumers.end()) continue;
      for (size_t c : it->second) {
        if (!common) { common = scope[c]; continue; }
        size_t k = 0;
        while (k < common->size() && k < scope[c].size() && (*common)[k] == scope[c][k]) ++k;
        common->resize(k);
      }
    }
    if (common) scope[i] = *common;
  }

  Builder b;
  for (size_t i = 0; i < n; ++i) b.raw[b.group_for(scope[i])].nodes.push_back(i);
  // Single-node groups dissolve into their parent; children come after parents, so a reverse
  // pass lets a dissolved child leave its parent with one node, which dissolves in turn.
  for (size_t r = b.raw.size(); r-- > 1;) {
    Builder::Raw& x = b.raw[r];
    const bool has_groups = std::any_of(x.groups.begin(), x.groups.end(), [&](int c) { return b.raw[c].alive; });
    if (!has_groups && x.nodes.size() == 1) {
      x.alive = false;
      b.raw[x.parent].nodes.push_back(x.nodes[0]);
    }
  }

  Scopes s;
  std::vector<int> index(b.raw.size(), -1);
  for (size_t r = 0; r < b.raw.size(); ++r)
    if (b.raw[r].alive) {
      index[r] = int(s.groups.size());
      Scope sc;
      sc.name = b.raw[r].name;
      sc.parent = r == 0 ? -1 : index[b.raw[r].parent];
      s.groups.push_back(std::move(sc));
    }
  // Nodes under each group (children follow parents, so accumulate in reverse).
  std::vector<std::vector<size_t>> direct(s.groups.size());
  for (size_t r = 0; r < b.raw.size(); ++r)
    if (b.raw[r].alive) direct[index[r]] = b.raw[r].nodes;
  for (size_t k = s.groups.size(); k-- > 0;) {
    Scope& sc = s.groups[k];
    sc.nodes.insert(sc.nodes.end(), direct[k].begin(), direct[k].end());
    std::sort(sc.nodes.begin(), sc.nodes.end());
    if (sc.parent >= 0) {
      auto& pn = s.groups[sc.parent].nodes;
      pn.insert(pn.end(), sc.nodes.begin(), sc.nodes.end());
    }
  }
  // Items in topological order: a group sits where its first node does.
  for (size_t k = 0; k < s.groups.size(); ++k) {
    for (size_t node : direct[k]) s.groups[k].items.push_back(int(node));
    if (s.groups[k].parent >= 0) s.groups[s.groups[k].parent].items.push_back(~int(k));
  }
  auto first_node = [&](int item) { return is_group_item(item) ? s.groups[group_of_item(item)].nodes.front() : size_t(item); };
  for (Scope& sc : s.groups)
    std::sort(sc.items.begin(), sc.items.end(), [&](int a, int c) { return first_node(a) < first_node(c); });

  // Sections. A group with subgroups wraps each long run of consecutive scope-less nodes (torch's
  // mask and rotary preparation at the root) into a "section", so that its subgroups (the layers)
  // stay in view; if it still has too many children, they are cut into "part"s of consecutive
  // children, again and again above limit² children.
  const size_t limit = std::max<size_t>(o.max_children, 2);
  auto wrap = [&](size_t k, const std::vector<int>& items, size_t from, size_t to, std::string name) {
    Scope sec;
    sec.section = true;
    sec.name = std::move(name);
    sec.parent = int(k);
    const int id = int(s.groups.size());
    for (size_t j = from; j < to; ++j) {
      sec.items.push_back(items[j]);
      if (is_group_item(items[j])) {
        s.groups[group_of_item(items[j])].parent = id;
        const auto& gn = s.groups[group_of_item(items[j])].nodes;
        sec.nodes.insert(sec.nodes.end(), gn.begin(), gn.end());
      } else {
        sec.nodes.push_back(size_t(items[j]));
      }
    }
    std::sort(sec.nodes.begin(), sec.nodes.end());
    s.groups.push_back(std::move(sec));
    return ~id;
  };
  for (size_t k = 0; k < s.groups.size(); ++k) {
    const bool over = s.groups[k].items.size() > limit;
    // Runs long enough to fill a screen are wrapped anyway, so that the layers are in the first view.
    const size_t min_run = over ? 8 : 32;
    if (std::any_of(s.groups[k].items.begin(), s.groups[k].items.end(), is_group_item)) {
      const std::vector<int> items = std::move(s.groups[k].items);
      std::vector<std::pair<size_t, size_t>> runs;
      for (size_t j = 0; j < items.size();) {
        size_t e = j;
        while (e < items.size() && !is_group_item(items[e])) ++e;
        if (e - j >= min_run) runs.push_back({j, e});
        j = e == j ? j + 1 : e;
      }
      std::vector<int> out;  // not a reference into s.groups: wrap() appends to it
      size_t at = 0;
      for (size_t r = 0; r < runs.size(); ++r) {
        out.insert(out.end(), items.begin() + at, items.begin() + runs[r].first);
        out.push_back(wrap(k, items, runs[r].first, runs[r].second, fmt::format("section_{}_of_{}", r + 1, runs.size())));
        at = runs[r].second;
      }
      out.insert(out.end(), items.begin() + at, items.end());
      s.groups[k].items = std::move(out);
    }
    while (s.groups[k].items.size() > limit) {
      const std::vector<int> items = std::move(s.groups[k].items);
      const size_t count = (items.size() + limit - 1) / limit;
      std::vector<int> parts;
      for (size_t c = 0; c < count; ++c)
        parts.push_back(wrap(k, items, items.size() * c / count, items.size() * (c + 1) / count, fmt::format("part_{}_of_{}", c + 1, count)));
      s.groups[k].items = std::move(parts);
    }
  }
  // Paths, depths and each node's innermost group, from the root down.
  s.node_group.assign(n, 0);
  std::function<void(int)> walk = [&](int k) {
    Scope& sc = s.groups[k];
    if (sc.parent >= 0) {
      const Scope& p = s.groups[sc.parent];
      sc.depth = p.depth + 1;
      sc.path = p.path.empty() ? sc.name : p.path + "/" + sc.name;
    }
    for (int item : s.groups[k].items) {
      if (is_group_item(item)) walk(group_of_item(item));
      else s.node_group[size_t(item)] = k;
    }
  };
  walk(0);
  for (Scope& sc : s.groups) {
    std::map<std::string, size_t> ops;
    for (size_t node : sc.nodes) ++ops[g.nodes[node].op_type];
    if (ops.size() > 1) ops.erase("Constant");  // torch writes one per scalar: it says nothing about the layer
    std::vector<std::pair<std::string, size_t>> ranked(ops.begin(), ops.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& c) { return a.second > c.second; });
    if (ranked.size() > 3) ranked.resize(3);
    sc.top_ops = ranked;
  }

  // Identical siblings: the same nesting, op types and internal edges in order, names ignored.
  std::unordered_map<std::string, std::pair<size_t, size_t>> producer;  // value -> (node, output slot)
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < g.nodes[i].outputs.size(); ++k) producer[g.nodes[i].outputs[k]] = {i, k};
  auto signature = [&](int k) {
    const std::vector<size_t>& under = s.groups[k].nodes;
    std::string sig;
    std::function<void(int)> emit = [&](int gk) {
      sig += '(';
      for (int item : s.groups[gk].items) {
        if (is_group_item(item)) {
          emit(group_of_item(item));
          continue;
        }
        const Node& node = g.nodes[size_t(item)];
        sig += node.domain + ':' + node.op_type + '[';
        for (const std::string& in : node.inputs) {
          auto it = in.empty() ? producer.end() : producer.find(in);
          auto pos = it == producer.end() ? under.end() : std::lower_bound(under.begin(), under.end(), it->second.first);
          if (in.empty()) sig += '-';
          else if (pos != under.end() && *pos == it->second.first) sig += fmt::format("{}.{}", pos - under.begin(), it->second.second);
          else sig += 'x';
          sig += ',';
        }
        sig += fmt::format("]{};", node.outputs.size());
      }
      sig += ')';
    };
    emit(k);
    return sig;
  };
  for (size_t k = 0; k < s.groups.size(); ++k) {
    if (s.groups[k].section) continue;
    std::map<std::string, std::vector<int>> classes;
    std::function<void(int)> children = [&](int parent) {  // sections are looked through
      for (int item : s.groups[parent].items) {
        if (!is_group_item(item)) continue;
        if (s.groups[group_of_item(item)].section) children(group_of_item(item));
        else classes[signature(group_of_item(item))].push_back(group_of_item(item));
      }
    };
    children(int(k));
    std::vector<std::vector<int>> found;
    for (auto& [sig, members] : classes)
      if (members.size() > 1) found.push_back(members);
    std::sort(found.begin(), found.end());
    for (const std::vector<int>& members : found) {
      IdenticalBlocks blocks;
      blocks.groups = members;
      std::vector<std::string> names;
      for (int m : members) names.push_back(s.groups[m].name), s.groups[m].identical = int(s.identical.size());
      blocks.summary = fmt::format("{}: {} identical blocks", range_name(names), members.size());
      s.identical.push_back(std::move(blocks));
    }
  }
  return s;
}

CollapsedGraph collapse(const Graph& g, const Scopes& s, int depth) {
  CollapsedGraph c;
  std::vector<int> box_of_node(g.nodes.size(), -1);
  std::map<int, int> box_of_group;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int k = s.node_group[i];
    while (k >= 0 && s.groups[k].depth > depth) k = s.groups[k].parent;
    if (k > 0 && s.groups[k].depth == depth) {
      auto [it, fresh] = box_of_group.try_emplace(k, int(c.boxes.size()));
      if (fresh) c.boxes.push_back({k, 0});
      box_of_node[i] = it->second;
    } else {
      box_of_node[i] = int(c.boxes.size());
      c.boxes.push_back({-1, i});
    }
  }
  std::unordered_map<std::string, int> producer;  // value -> box; graph inputs are -1
  for (const ValueInfo& v : g.inputs)
    if (!g.find_initializer(v.name)) producer[v.name] = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& out : g.nodes[i].outputs)
      if (!out.empty()) producer[out] = box_of_node[i];
  std::map<std::pair<int, int>, size_t> index;
  std::set<std::tuple<int, int, std::string>> seen;  // a value is counted once per pair of boxes
  auto add = [&](int from, int to, const std::string& value) {
    if (!seen.insert({from, to, value}).second) return;
    auto [it, fresh] = index.try_emplace({from, to}, c.edges.size());
    if (fresh) c.edges.push_back({from, to, value, 0});
    ++c.edges[it->second].count;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it == producer.end() || it->second == box_of_node[i]) continue;
      add(it->second, box_of_node[i], in);
    }
  }
  for (const ValueInfo& v : g.outputs)
    if (auto it = producer.find(v.name); it != producer.end()) add(it->second, -1, v.name);
  return c;
}

namespace {

std::string box_name(const Graph& g, const Scopes& s, const CollapsedGraph::Box& b) {
  if (b.group >= 0) return s.groups[b.group].path;
  const Node& n = g.nodes[b.node];
  return n.name.empty() ? fmt::format("{}_{}", n.op_type, b.node) : n.name;
}

std::string edge_label(const CollapsedGraph::Edge& e) { return e.count == 1 ? e.value : fmt::format("{} values", e.count); }

}  // namespace

std::string collapsed_text(const Graph& g, const Scopes& s, const CollapsedGraph& c) {
  std::string out = fmt::format("# graph '{}': {} nodes as {} boxes\n", g.name, g.nodes.size(), c.boxes.size());
  for (size_t k = 0; k < c.boxes.size(); ++k) {
    const auto& b = c.boxes[k];
    if (b.group >= 0) {
      const Scope& sc = s.groups[b.group];
      out += fmt::format("[{}] {} nodes: {}", sc.path, sc.nodes.size(), op_summary(sc));
      if (sc.identical >= 0) out += fmt::format("  (\u2261 {})", s.identical[sc.identical].summary);
      out += '\n';
    } else {
      out += fmt::format("{} {}\n", box_name(g, s, b), g.nodes[b.node].op_type);
    }
  }
  for (const auto& e : c.edges)
    out += fmt::format("{} -> {}  {}\n", e.from < 0 ? "(input)" : box_name(g, s, c.boxes[e.from]),
                       e.to < 0 ? "(output)" : box_name(g, s, c.boxes[e.to]), edge_label(e));
  return out;
}

std::string collapsed_dot(const Graph& g, const Scopes& s, const CollapsedGraph& c) {
  std::string out = dot_header(g.name, ", fontname=\"Helvetica\", fontsize=8") +
                    "  in [shape=ellipse, fillcolor=\"#e8f5e9\", label=\"inputs\"];\n  out [shape=ellipse, fillcolor=\"#e8f5e9\", label=\"outputs\"];\n";
  for (size_t k = 0; k < c.boxes.size(); ++k) {
    const auto& b = c.boxes[k];
    if (b.group >= 0) {
      const Scope& sc = s.groups[b.group];
      out += fmt::format("  b{} [id=\"g{}\", shape=box3d, style=filled, fillcolor=\"#dbe6f7\", label=\"{}\\n{} nodes\\n{}{}\"];\n", k, b.group,
                         dot_escape(sc.path), sc.nodes.size(), dot_escape(op_summary(sc)),
                         sc.identical >= 0 ? "\\n(repeated block)" : "");
    } else {
      out += fmt::format("  b{} [id=\"n{}\", label=\"{}\\n{}\"];\n", k, b.node, dot_escape(g.nodes[b.node].op_type),
                         dot_escape(box_name(g, s, b)));
    }
  }
  for (const auto& e : c.edges)
    out += fmt::format("  {} -> {} [label=\"{}\"];\n", e.from < 0 ? "in" : fmt::format("b{}", e.from), e.to < 0 ? "out" : fmt::format("b{}", e.to),
                       dot_escape(edge_label(e)));
  return out + "}\n";
}

std::vector<std::string> node_namespaces(const std::string& model_path) {
  constexpr int kNodeMetadataProps = 9;
  std::ifstream in(model_path, std::ios::binary);
  onnx::ModelProto m;
  if (!in || !m.ParseFromIstream(&in)) return {};
  std::vector<std::string> out(size_t(m.graph().node_size()));
  bool any = false;
  for (int i = 0; i < m.graph().node_size(); ++i) {
    const auto& unknown = m.graph().node(i).GetReflection()->GetUnknownFields(m.graph().node(i));
    for (int f = 0; f < unknown.field_count(); ++f) {
      if (unknown.field(f).number() != kNodeMetadataProps || unknown.field(f).type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
        continue;
      onnx::StringStringEntryProto kv;
      if (kv.ParseFromString(unknown.field(f).length_delimited()) && kv.key() == "namespace") out[size_t(i)] = kv.value(), any = true;
    }
  }
  return any ? out : std::vector<std::string>{};
}

}  // namespace refeval::show
