#include "html_view.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "html.h"
#include "memory_report.h"
#include <nlohmann/json.hpp>

#include "aggregate.h"
#include "dot_format.h"
#include "refeval/error.h"
#include "refeval/stats.h"
#include "rewrite.h"
#include "scopes.h"

namespace refeval::show {
namespace {

using json = nlohmann::json;

std::string escape(std::string_view s) { return html_escape(s); }

// Text inside <script>: "</" must not close the element.
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') out += "<\\";
    else out += s[i];
  }
  return out;
}

std::string attribute_text(const Attribute& a) {
  switch (a.type) {
    case AttrType::Float: return fmt::format("{}", a.f);
    case AttrType::Int: return std::to_string(a.i);
    case AttrType::String: return a.s;
    case AttrType::Floats: return fmt::format("[{}]", fmt::join(a.floats, ", "));
    case AttrType::Ints: return fmt::format("[{}]", fmt::join(a.ints, ", "));
    case AttrType::Strings: return fmt::format("[{}]", fmt::join(a.strings, ", "));
    case AttrType::Tensor: return fmt::format("tensor {}[{}]", dtype_short_name(a.t.dtype()), fmt::join(a.t.shape(), ","));
    case AttrType::Graph: return a.g ? fmt::format("graph '{}' ({} nodes, below)", a.g->name, a.g->nodes.size()) : "graph (empty)";
    case AttrType::Graphs: return fmt::format("{} graphs", a.graphs.size());
    default: return std::string(attr_type_name(a.type));
  }
}

std::string heat(double share) {  // white to red by the square root of the share
  const double t = std::sqrt(std::clamp(share, 0.0, 1.0));
  const int g = int(255 - t * (255 - 39)), b = int(255 - t * (255 - 40));
  return fmt::format("#ff{:02x}{:02x}", g, b);
}

std::string node_key(const Node& n, size_t i) { return n.name.empty() ? fmt::format("{}_{}", n.op_type, i) : n.name; }

std::string short_name(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

// A node's name below a group ("/layers.0/self_attn/MatMul" in layers.0 -> "self_attn/MatMul").
std::string name_in(const std::string& name, const std::string& group) {
  const size_t at = name.find("/" + group + "/");
  return at == std::string::npos ? short_name(name) : name.substr(at + group.size() + 2);
}

// What the page colours and notes on one graph, by node index; groups get their aggregates.
struct Marks {
  std::map<size_t, std::string> fill, note;
  std::map<size_t, std::vector<std::string>> replaces;
  std::map<size_t, double> time_ms;    // profile
  double total_ms = 0;
  bool memory = false;  // time_ms holds live MiB and total_ms the peak: a group shows its largest
  std::map<size_t, double> error;      // accuracy overlay: local RMS
  std::map<size_t, int> diff;          // 1 removed (left) / added (right), 2 changed
  std::vector<std::string> namespaces;  // main graph: the nodes' metadata_props["namespace"]
  bool right = false;                  // the diff's after side
};

// One graph as the script reads it: parallel arrays and integer ids (values, op types, types,
// groups) so that 28k nodes stay a few MB; attributes and initializer statistics only where
// present.
json graph_json(const Graph& g, const std::map<std::string, std::string>& shapes, const Marks& m) {
  ScopeOptions scope_options;
  if (!m.namespaces.empty()) scope_options.namespaces = &m.namespaces;
  const Scopes scopes = build_scopes(g, scope_options);
  std::unordered_map<std::string, int> value_id, op_id, type_id;
  json vn = json::array(), vt = json::array(), types = json::array(), ops = json::array();
  auto value = [&](const std::string& v) -> int {
    if (v.empty()) return -1;
    auto [it, fresh] = value_id.try_emplace(v, int(vn.size()));
    if (fresh) {
      vn.push_back(v);
      auto s = shapes.find(v);
      if (s == shapes.end()) vt.push_back(-1);
      else {
        auto [t, fresh_type] = type_id.try_emplace(s->second, int(types.size()));
        if (fresh_type) types.push_back(s->second);
        vt.push_back(t->second);
      }
    }
    return it->second;
  };
  json nn = json::array(), no = json::array(), ni = json::array(), nq = json::array(), na = json::object();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    auto [op, fresh] = op_id.try_emplace(n.domain + "\n" + n.op_type, int(ops.size()));
    if (fresh) ops.push_back({n.op_type, n.domain});
    nn.push_back(n.name);
    no.push_back(op->second);
    json in = json::array(), out = json::array();
    for (const std::string& v : n.inputs) in.push_back(value(v));
    for (const std::string& v : n.outputs) out.push_back(value(v));
    ni.push_back(std::move(in));
    nq.push_back(std::move(out));
    if (!n.attributes.empty()) {
      json attrs = json::array();
      for (const Attribute& a : n.attributes) attrs.push_back({a.name, attribute_text(a)});
      na[std::to_string(i)] = attrs;
    }
  }
  json gi = json::array(), go = json::array(), init = json::object();
  for (const ValueInfo& v : g.inputs)
    if (!g.find_initializer(v.name)) gi.push_back(value(v.name));
  for (const ValueInfo& v : g.outputs) go.push_back(value(v.name));
  for (const Initializer& i : g.initializers) {
    auto it = value_id.find(i.name);
    if (it == value_id.end()) continue;  // unused
    const TensorStats s = tensor_stats(i.value);
    json j = {std::string(dtype_short_name(i.value.dtype())), fmt::format("{}", fmt::join(i.value.shape(), ",")), s.count};
    if (s.numeric) j.push_back(s.min), j.push_back(s.max), j.push_back(s.mean);
    init[std::to_string(it->second)] = j;
  }

  // Per-group aggregates of the marks.
  json groups = json::array(), gfill = json::object(), gnote = json::object();
  double worst_error = 0;
  for (const auto& [i, e] : m.error) worst_error = std::max(worst_error, e);
  for (size_t k = 0; k < scopes.groups.size(); ++k) {
    const Scope& s = scopes.groups[k];
    json items = json::array();
    for (int item : s.items) items.push_back(item);
    // A section is named by its first and last child ("layers.0 … layers.75").
    std::string span;
    if (s.section && !s.items.empty()) {
      auto item_name = [&](int item) {
        return is_group_item(item) ? scopes.groups[group_of_item(item)].name : short_name(node_key(g.nodes[size_t(item)], size_t(item)));
      };
      span = item_name(s.items.front()) + " \u2026 " + item_name(s.items.back());
    }
    groups.push_back({s.name, s.parent, s.depth, s.nodes.size(), op_summary(s), s.identical, items, s.path, span});
    if (k == 0) continue;
    std::vector<std::string> notes;
    std::string fill;
    if (!m.time_ms.empty()) {
      double sum = 0, top = -1;
      size_t top_node = 0;
      for (size_t node : s.nodes)
        if (auto it = m.time_ms.find(node); it != m.time_ms.end()) {
          sum += it->second;
          if (it->second > top) top = it->second, top_node = node;
        }
      if (top >= 0 && m.memory) {
        fill = heat(m.total_ms > 0 ? top / m.total_ms : 0);
        notes.push_back(fmt::format("{:.2f} MiB live at most", top));
        notes.push_back(fmt::format("at {}", name_in(node_key(g.nodes[top_node], top_node), s.name)));
      } else if (top >= 0) {
        const double share = m.total_ms > 0 ? sum / m.total_ms : 0;
        fill = heat(share);
        notes.push_back(fmt::format("{:.1f}% {:.3f} ms", 100 * share, sum));
        notes.push_back(fmt::format("max {} {:.3f} ms", name_in(node_key(g.nodes[top_node], top_node), s.name), top));
      }
    }
    if (!m.error.empty()) {
      double top = -1;
      size_t top_node = 0;
      for (size_t node : s.nodes)
        if (auto it = m.error.find(node); it != m.error.end() && it->second > top) top = it->second, top_node = node;
      if (top >= 0) {
        fill = heat(worst_error > 0 ? top / worst_error : 0);
        notes.push_back(fmt::format("worst local rms {:.3g}", top));
        notes.push_back(fmt::format("at {}", name_in(node_key(g.nodes[top_node], top_node), s.name)));
      }
    }
    if (!m.diff.empty()) {
      int changed[3] = {0, 0, 0};
      for (size_t node : s.nodes)
        if (auto it = m.diff.find(node); it != m.diff.end()) ++changed[it->second];
      if (changed[1] || changed[2]) {
        notes.push_back(fmt::format("{} {}, {} changed", changed[1], m.right ? "added" : "removed", changed[2]));
        fill = changed[1] ? (m.right ? "#c8e6c9" : "#f8c9c9") : "#ffe0b2";
      }
    }
    if (!fill.empty()) gfill[std::to_string(k)] = fill;
    if (!notes.empty()) gnote[std::to_string(k)] = notes;
  }
  json ident = json::array();
  for (const IdenticalBlocks& b : scopes.identical) ident.push_back({b.summary, b.groups.size()});
  json fill = json::object(), note = json::object(), repl = json::object();
  for (const auto& [i, f] : m.fill) fill[std::to_string(i)] = f;
  for (const auto& [i, t] : m.note) note[std::to_string(i)] = t;
  for (const auto& [i, r] : m.replaces) repl[std::to_string(i)] = r;
  return {{"name", g.name}, {"ops", ops}, {"nn", nn}, {"no", no}, {"ni", ni}, {"nq", nq}, {"na", na}, {"vn", vn}, {"vt", vt},
          {"types", types}, {"gi", gi}, {"go", go}, {"init", init}, {"groups", groups}, {"ident", ident}, {"fill", fill},
          {"note", note}, {"repl", repl}, {"gfill", gfill}, {"gnote", gnote}};
}

struct Side {
  std::string title;
  json graph;
  std::vector<std::pair<std::string, json>> bodies;  // caption, graph
};

// Bodies of If/Loop/Scan (nested at any depth) and model-local functions, each its own graph.
void collect_bodies(const Graph& g, const std::map<std::string, std::string>& shapes, const std::string& prefix, Side& side) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (const Attribute& a : n.attributes) {
      const std::string where = fmt::format("{}{}/{}", prefix.empty() ? "" : prefix + "/", n.name.empty() ? fmt::format("#{}", i) : n.name, a.name);
      if (a.g) {
        side.bodies.emplace_back(where, graph_json(*a.g, shapes, {}));
        collect_bodies(*a.g, shapes, where, side);
      }
      for (size_t k = 0; k < a.graphs.size(); ++k) {
        const std::string w = fmt::format("{}[{}]", where, k);
        side.bodies.emplace_back(w, graph_json(*a.graphs[k], shapes, {}));
        collect_bodies(*a.graphs[k], shapes, w, side);
      }
    }
  }
}

void collect_functions(const Model& m, const std::map<std::string, std::string>& shapes, Side& side) {
  for (const Function& f : m.functions) {
    Graph g;
    g.name = f.name;
    g.nodes = f.nodes;
    for (const std::string& i : f.inputs) g.inputs.push_back({i, {}});
    for (const std::string& o : f.outputs) g.outputs.push_back({o, {}});
    const std::string caption = fmt::format("function {}.{}", f.domain, f.name);
    side.bodies.emplace_back(caption, graph_json(g, shapes, {}));
    collect_bodies(g, shapes, caption, side);
  }
}


std::string page(const std::string& title, const std::vector<Side>& sides, const std::string& extra) {
  json data = {{"sides", json::array()}};
  std::string panes, bodies;
  for (size_t s = 0; s < sides.size(); ++s) {
    json bs = json::array();
    for (size_t k = 0; k < sides[s].bodies.size(); ++k) {
      const auto& [caption, graph] = sides[s].bodies[k];
      bs.push_back({{"caption", caption}, {"graph", graph}});
      bodies += fmt::format("<details class=\"body\" data-side=\"{}\" data-index=\"{}\" data-prefix=\"{}\"><summary>{}</summary>"
                            "<div class=\"pane bodypane\"><svg></svg></div></details>\n",
                            s, k, escape(caption), escape(caption));
    }
    data["sides"].push_back({{"title", sides[s].title}, {"graph", sides[s].graph}, {"bodies", bs}});
    panes += fmt::format("<div class=\"pane\" id=\"pane{0}\" data-side=\"{0}\"><div class=\"panebar\"><b>{1}</b> "
                         "<button class=\"fit\">fit</button> <small>click a group to open it, its header to close it</small></div><svg></svg></div>\n",
                         s, escape(sides[s].title));
  }
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{0}</title>
<style>{7}</style></head>
<body>
<header><h1>{0}</h1><input id="search" placeholder="search node name or op type, Enter to jump"><span id="found"></span></header>
<main><div class="panes">{1}</div><aside id="panel"><p>Click a group to open it, a node for its attributes, inputs, outputs and initializers.</p></aside></main>
<section>{2}{3}</section>
<script type="application/json" id="model-data">{4}</script>
<script>{5}</script>
<script>{6}</script>
</body></html>
)",
                     escape(title), panes, extra, bodies.empty() ? "" : "<h2>Bodies and functions</h2>" + bodies,
                     script_safe(data.dump(-1, ' ', false, json::error_handler_t::replace)), kDagreJs, kViewerJs, kViewerCss);
}

std::string op_counts_table(const Model& a, const Model* b) {
  std::map<std::string, std::pair<int, int>> counts;
  for (const Node& n : a.graph.nodes) ++counts[n.op_type].first;
  if (b)
    for (const Node& n : b->graph.nodes) ++counts[n.op_type].second;
  std::string h = fmt::format("<h2>Operators</h2><table class=\"counts\"><tr><th>op type</th><th>{}</th>{}</tr>", b ? "before" : "count",
                              b ? "<th>after</th>" : "");
  for (const auto& [op, c] : counts)
    h += fmt::format("<tr><td>{}</td><td>{}</td>{}</tr>", escape(op), c.first, b ? fmt::format("<td>{}</td>", c.second) : "");
  return h + "</table>";
}

std::string identical_list(const Side& side) {
  std::vector<std::pair<std::string, int>> seen;  // a block repeated in every layer is listed once
  for (const auto& b : side.graph["ident"]) {
    const std::string summary = b[0].get<std::string>();
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& x) { return x.first == summary; });
    if (it == seen.end()) seen.push_back({summary, 1});
    else ++it->second;
  }
  std::string h;
  for (const auto& [summary, times] : seen) h += fmt::format("<li>{}{}</li>", escape(summary), times > 1 ? fmt::format(" (in {} groups)", times) : "");
  return h.empty() ? "" : "<h2>Repeated blocks</h2><ul class=\"identical\">" + h + "</ul>";
}

}  // namespace

std::vector<std::pair<double, size_t>> add_heat(const Graph& g, const NodeTimes& times, DotOptions& dot) {
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto it = times.ms.find(node_key(g.nodes[i], i));
    if (it == times.ms.end()) continue;
    const double share = times.total_ms > 0 ? it->second / times.total_ms : 0;
    dot.fill[i] = heat(share);
    dot.note[i] = times.memory ? fmt::format("{:.2f} MiB live", it->second) : fmt::format("{:.1f}% {:.3f} ms", 100 * share, it->second);
    ranked.push_back({it->second, i});
  }
  std::sort(ranked.rbegin(), ranked.rend());
  return ranked;
}

NodeTimes node_times(const std::string& profile_path) {
  const profile::LoadedProfiles p = profile::load_profiles({profile_path}, {});
  const profile::Table t = profile::aggregate(p.label, p.runs_in_files, p.runs, profile::GroupBy::Node);
  NodeTimes out;
  out.source = profile_path;
  for (const profile::Row& r : t.rows) out.ms[r.key] += r.total_ms, out.total_ms += r.total_ms;
  return out;
}

NodeTimes node_memory(const std::string& profile_path) {
  const profile::LoadedProfiles p = profile::load_profiles({profile_path}, {});
  const profile::MemoryReport m = profile::memory_report(p.runs, p.label);
  NodeTimes out;
  out.source = profile_path, out.memory = true;
  for (const auto& point : m.peak_run().timeline) {
    double& mib = out.ms[point.node];
    mib = std::max(mib, double(point.live_bytes) / (1 << 20));
  }
  out.total_ms = double(m.peak_run().peak_bytes) / (1 << 20);
  return out;
}

NodeErrors node_errors(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_input(fmt::format("--overlay: cannot read '{}'", path));
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    fail_input(fmt::format("--overlay: '{}' is not JSON: {}", path, e.what()));
  }
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array())
    fail_input(fmt::format("--overlay: '{}' has no \"nodes\" list (write it with refeval accuracy --json)", path));
  NodeErrors out;
  out.source = path;
  auto rms = [](const json& e) { return e.is_object() && e.contains("rms") && e["rms"].is_number() ? e["rms"].get<double>() : -1.0; };
  for (const json& n : j["nodes"]) {
    if (!n.contains("node") || !n["node"].is_string()) continue;
    NodeErrors::Entry& e = out.nodes[n["node"].get<std::string>()];
    std::vector<std::string> lines;
    for (const json& o : n.value("outputs", json::array())) {
      const double local = rms(o.value("local", json())), acc = rms(o.value("accumulated", json()));
      e.local_rms = std::max(e.local_rms, local);
      lines.push_back(fmt::format("{}: local rms {}, accumulated rms {}", o.value("name", std::string("?")),
                                  local < 0 ? "-" : fmt::format("{:.3g}", local), acc < 0 ? "-" : fmt::format("{:.3g}", acc)));
    }
    e.text = fmt::format("{}", fmt::join(lines, "; "));
  }
  return out;
}

std::string html_view(const Model& model, const std::map<std::string, std::string>& shapes, const NodeTimes* times, const NodeErrors* errors) {
  Side side;
  side.title = model.path.empty() ? model.graph.name : model.path;
  std::string extra = op_counts_table(model, nullptr);
  Marks marks;
  marks.namespaces = node_namespaces(model.path);
  if (times) {
    DotOptions dot;
    const std::vector<std::pair<double, size_t>> ranked = add_heat(model.graph, *times, dot);
    marks.fill = dot.fill, marks.note = dot.note, marks.total_ms = times->total_ms, marks.memory = times->memory;
    for (const auto& [ms, i] : ranked) marks.time_ms[i] = ms;
    if (times->memory)
      extra += fmt::format("<h2>Most memory alive ({})</h2><p class=\"legend\">live bytes / peak ({:.2f} MiB)<span style=\"background:{}\">"
                           "</span>0%<span style=\"background:{}\"></span>10%<span style=\"background:{}\"></span>50%</p>"
                           "<table class=\"counts\" id=\"top\"><tr><th>node</th><th>op</th><th>MiB</th><th>% of peak</th></tr>",
                           escape(times->source), times->total_ms, heat(0), heat(0.1), heat(0.5));
    else
      extra += fmt::format("<h2>Costliest nodes ({})</h2><p class=\"legend\">time share<span style=\"background:{}\"></span>0%"
                           "<span style=\"background:{}\"></span>10%<span style=\"background:{}\"></span>50%</p><table class=\"counts\" id=\"top\">"
                           "<tr><th>node</th><th>op</th><th>ms</th><th>%</th></tr>",
                           escape(times->source), heat(0), heat(0.1), heat(0.5));
    for (size_t k = 0; k < ranked.size() && k < 20; ++k) {
      const Node& n = model.graph.nodes[ranked[k].second];
      extra += fmt::format("<tr><td><a href=\"#select=n{}\" onclick=\"location.hash=this.getAttribute('href');location.reload()\">{}</a></td>"
                           "<td>{}</td><td>{:.3f}</td><td>{:.1f}</td></tr>",
                           ranked[k].second, escape(node_key(n, ranked[k].second)), escape(n.op_type), ranked[k].first,
                           100 * ranked[k].first / times->total_ms);
    }
    extra += "</table>";
  }
  if (errors) {
    double worst = 0;
    for (const auto& [name, e] : errors->nodes) worst = std::max(worst, e.local_rms);
    for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
      auto it = errors->nodes.find(node_key(model.graph.nodes[i], i));
      if (it == errors->nodes.end()) continue;
      if (it->second.local_rms >= 0) {
        marks.error[i] = it->second.local_rms;
        marks.fill[i] = heat(worst > 0 ? it->second.local_rms / worst : 0);
      }
      const std::string& prev = marks.note[i];
      marks.note[i] = prev.empty() ? it->second.text : prev + "; " + it->second.text;
    }
    extra += fmt::format("<h2>Accuracy overlay ({})</h2><p class=\"legend\">local RMS error / largest ({:.3g})<span style=\"background:{}\"></span>0"
                         "<span style=\"background:{}\"></span>0.1<span style=\"background:{}\"></span>0.5</p>",
                         escape(errors->source), worst, heat(0), heat(0.1), heat(0.5));
  }
  side.graph = graph_json(model.graph, shapes, marks);
  collect_bodies(model.graph, shapes, "", side);
  collect_functions(model, shapes, side);
  return page("refeval show: " + side.title, {side}, identical_list(side) + extra);
}

std::string html_diff(const Model& before, const std::map<std::string, std::string>& before_shapes, const Model& after,
                      const std::map<std::string, std::string>& after_shapes) {
  // Nodes are matched by name (unnamed ones by op type and outputs).
  auto key = [](const Node& n) { return n.name.empty() ? n.op_type + ":" + fmt::format("{}", fmt::join(n.outputs, ",")) : n.name; };
  auto same = [](const Node& a, const Node& b) {
    if (a.op_type != b.op_type || a.domain != b.domain || a.inputs != b.inputs || a.outputs != b.outputs || a.attributes.size() != b.attributes.size())
      return false;
    for (size_t i = 0; i < a.attributes.size(); ++i)
      if (a.attributes[i].name != b.attributes[i].name || attribute_text(a.attributes[i]) != attribute_text(b.attributes[i])) return false;
    return true;
  };
  std::unordered_map<std::string, size_t> in_before, in_after;
  for (size_t i = 0; i < before.graph.nodes.size(); ++i) in_before[key(before.graph.nodes[i])] = i;
  for (size_t i = 0; i < after.graph.nodes.size(); ++i) in_after[key(after.graph.nodes[i])] = i;
  Marks left, right;
  right.right = true;
  left.namespaces = node_namespaces(before.path), right.namespaces = node_namespaces(after.path);
  int removed = 0, added = 0, changed = 0;
  std::vector<std::string> removed_names;
  for (size_t i = 0; i < before.graph.nodes.size(); ++i) {
    auto it = in_after.find(key(before.graph.nodes[i]));
    if (it == in_after.end()) {
      left.fill[i] = "#f8c9c9", left.note[i] = "removed", left.diff[i] = 1, ++removed;
      removed_names.push_back(before.graph.nodes[i].name);
    } else if (!same(before.graph.nodes[i], after.graph.nodes[it->second])) {
      left.fill[i] = "#ffe0b2", left.note[i] = "changed", left.diff[i] = 2, ++changed;
    }
  }
  const std::set<std::string> removed_set(removed_names.begin(), removed_names.end());
  std::unordered_map<std::string, const std::string*> fused_from;
  for (const auto& [k, v] : after.metadata)
    if (k.rfind(optimize::kFusedFromKey, 0) == 0) fused_from[k.substr(std::string(optimize::kFusedFromKey).size())] = &v;
  for (size_t i = 0; i < after.graph.nodes.size(); ++i) {
    const Node& n = after.graph.nodes[i];
    auto it = in_before.find(key(n));
    if (it == in_before.end()) {
      right.fill[i] = "#c8e6c9", right.diff[i] = 1, ++added;
      // What a fused node replaced: exactly, from the provenance `refeval optimize` records in the
      // model's metadata; else, for a node named after the scope it replaced ("/blocks.0/FastGelu"),
      // the removed nodes of that scope.
      const size_t slash = n.name.rfind('/');
      std::vector<std::string> r;
      if (auto rec = fused_from.find(n.name); rec != fused_from.end()) {
        const std::string& list = *rec->second;
        size_t from = 0;
        while (from <= list.size()) {
          size_t comma = list.find(',', from);
          if (comma == std::string::npos) comma = list.size();
          if (const std::string name = list.substr(from, comma - from); removed_set.count(name)) r.push_back(name);
          from = comma + 1;
        }
      } else if (slash != std::string::npos && slash > 0) {
        for (const std::string& name : removed_names)
          if (name.compare(0, slash + 1, n.name, 0, slash + 1) == 0 && name.find('/', slash + 1) == std::string::npos) r.push_back(name);
      }
      right.note[i] = r.empty() ? "added" : fmt::format("added, replaces {} nodes", r.size());
      if (!r.empty()) right.replaces[i] = r;
    } else if (!same(n, before.graph.nodes[it->second])) {
      right.fill[i] = "#ffe0b2", right.note[i] = "changed", right.diff[i] = 2;
    }
  }
  Side a, b;
  a.title = "before: " + before.path, b.title = "after: " + after.path;
  a.graph = graph_json(before.graph, before_shapes, left);
  b.graph = graph_json(after.graph, after_shapes, right);
  const std::string extra = fmt::format(
      "<p class=\"legend\">{} nodes -> {} nodes: {} removed<span style=\"background:#f8c9c9\"></span> {} added"
      "<span style=\"background:#c8e6c9\"></span> {} changed<span style=\"background:#ffe0b2\"></span></p>{}",
      before.graph.nodes.size(), after.graph.nodes.size(), removed, added, changed, op_counts_table(before, &after));
  return page(fmt::format("refeval show: {} vs {}", before.path, after.path), {a, b}, extra);
}

}  // namespace refeval::show
