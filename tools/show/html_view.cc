#include "html_view.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "html.h"
#include <nlohmann/json.hpp>

#include "aggregate.h"
#include "dot_format.h"
#include "refeval/stats.h"
#include "rewrite.h"
#include "text_format.h"

namespace refeval::show {
namespace {

using json = nlohmann::json;

std::string escape(std::string_view s) { return html_escape(s); }

// JSON inside <script>: "</" must not close the element.
std::string script_json(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
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

struct Side {
  std::string title;
  std::string svg;
  json nodes = json::object();  // dot id -> details
  std::vector<std::pair<std::string, std::string>> bodies;  // caption, svg
};

json initializer_json(const Initializer& i) {
  const TensorStats s = tensor_stats(i.value);
  json j = {{"dtype", std::string(dtype_short_name(i.value.dtype()))}, {"shape", i.value.shape()}, {"count", s.count}};
  if (s.numeric) j["min"] = s.min, j["max"] = s.max, j["mean"] = s.mean, j["nan"] = s.nan, j["inf"] = s.inf;
  return j;
}

// Lays out `g` and describes its nodes; bodies are added with `prefix` naming where they sit.
void describe_graph(const Graph& g, const std::map<std::string, std::string>& shapes, DotOptions dot, Side& side,
                    const std::string& prefix, bool main) {
  dot.shapes = &shapes;
  dot.graph_id = prefix.empty() ? g.name : prefix;
  const std::string svg = render_svg(graph_dot(g, dot));
  if (main) side.svg = svg;
  else side.bodies.emplace_back(prefix, svg);
  std::map<std::string, const Initializer*> inits;
  for (const Initializer& i : g.initializers) inits[i.name] = &i;
  auto typed = [&](const std::string& v) {
    auto it = shapes.find(v);
    return json{{"name", v}, {"type", it == shapes.end() ? "" : it->second}};
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    json j = {{"name", n.name}, {"op", n.op_type}, {"domain", n.domain}, {"graph", prefix}};
    json ins = json::array(), outs = json::array(), attrs = json::object(), stats = json::object();
    for (const std::string& in : n.inputs) {
      ins.push_back(typed(in));
      if (auto it = inits.find(in); it != inits.end()) stats[in] = initializer_json(*it->second);
    }
    for (const std::string& out : n.outputs) outs.push_back(typed(out));
    for (const Attribute& a : n.attributes) attrs[a.name] = attribute_text(a);
    j["inputs"] = ins, j["outputs"] = outs, j["attrs"] = attrs, j["initializers"] = stats;
    if (auto it = dot.note.find(i); it != dot.note.end()) j["note"] = it->second;
    side.nodes[(main ? "" : prefix + ":") + fmt::format("n{}", i)] = j;
    for (const Attribute& a : n.attributes) {
      const std::string where = fmt::format("{}{}/{}", prefix.empty() ? "" : prefix + "/", n.name.empty() ? fmt::format("#{}", i) : n.name, a.name);
      if (a.g) describe_graph(*a.g, shapes, {}, side, where, false);
      for (size_t k = 0; k < a.graphs.size(); ++k) describe_graph(*a.graphs[k], shapes, {}, side, fmt::format("{}[{}]", where, k), false);
    }
  }
}

void describe_functions(const Model& m, const std::map<std::string, std::string>& shapes, Side& side) {
  for (const Function& f : m.functions) {
    Graph g;
    g.name = f.name;
    g.nodes = f.nodes;
    for (const std::string& i : f.inputs) g.inputs.push_back({i, {}});
    for (const std::string& o : f.outputs) g.outputs.push_back({o, {}});
    describe_graph(g, shapes, {}, side, fmt::format("function {}.{}", f.domain, f.name), false);
  }
}

constexpr const char* kScript = R"JS(
(function () {
  const data = JSON.parse(document.getElementById('model-data').textContent);
  const panel = document.getElementById('panel');
  function esc(s) { return String(s).replace(/[&<>"]/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'})[c]); }
  document.querySelectorAll('.pane').forEach(pane => {
    const svg = pane.querySelector('svg');
    if (!svg) return;
    const vb = svg.viewBox.baseVal;
    const home = [vb.x, vb.y, vb.width, vb.height];
    svg.removeAttribute('width'); svg.removeAttribute('height');
    let drag = null;
    svg.addEventListener('wheel', e => {
      e.preventDefault();
      const r = svg.getBoundingClientRect(), k = e.deltaY < 0 ? 0.8 : 1.25;
      const px = vb.x + (e.clientX - r.left) / r.width * vb.width, py = vb.y + (e.clientY - r.top) / r.height * vb.height;
      vb.x = px - (px - vb.x) * k; vb.y = py - (py - vb.y) * k; vb.width *= k; vb.height *= k;
    }, {passive: false});
    svg.addEventListener('mousedown', e => { drag = [e.clientX, e.clientY, vb.x, vb.y]; });
    window.addEventListener('mouseup', () => { drag = null; });
    svg.addEventListener('mousemove', e => {
      if (!drag) return;
      const r = svg.getBoundingClientRect();
      vb.x = drag[2] - (e.clientX - drag[0]) / r.width * vb.width; vb.y = drag[3] - (e.clientY - drag[1]) / r.height * vb.height;
    });
    pane.querySelector('.fit').addEventListener('click', () => { [vb.x, vb.y, vb.width, vb.height] = home; });
    // Readable scale (about one SVG unit per pixel) around a node; the whole graph when it fits.
    pane.focusNode = (g, top) => {
      // The node's box in the SVG's user space (Graphviz translates its graph group).
      const r = svg.getBoundingClientRect(), l = g.getBBox(), m = svg.getScreenCTM().inverse().multiply(g.getScreenCTM());
      const p = new DOMPoint(l.x, l.y).matrixTransform(m), q = new DOMPoint(l.x + l.width, l.y + l.height).matrixTransform(m);
      const b = {x: p.x, y: p.y, width: q.x - p.x, height: q.y - p.y};
      const w = Math.max(r.width, 300), h = w * (r.height / Math.max(r.width, 1));
      vb.width = w; vb.height = h; vb.x = b.x + b.width / 2 - w / 2; vb.y = top ? b.y - 20 : b.y + b.height / 2 - h / 2;
    };
    const r = svg.getBoundingClientRect(), first = svg.querySelector('g.node');
    if (first && (home[2] > r.width * 1.5 || home[3] > r.height * 1.5)) pane.focusNode(first, true);
  });
  function show(side, id) {
    const n = data.sides[side].nodes[id];
    if (!n) return;
    document.querySelectorAll('g.node.selected').forEach(g => g.classList.remove('selected'));
    const g = document.querySelector('#pane' + side + ' g.node[id="' + id + '"]');
    if (g) { g.classList.add('selected'); const pane = g.closest('.pane'); if (pane && pane.focusNode) pane.focusNode(g, false); }
    let h = '<h3>' + esc(n.op) + (n.domain ? ' <small>(' + esc(n.domain) + ')</small>' : '') + '</h3><p class="nodename">' + esc(n.name || '(no name)') + '</p>';
    if (n.note) h += '<p class="note">' + esc(n.note) + '</p>';
    if (n.replaces && n.replaces.length) h += '<p class="note">replaces ' + n.replaces.map(esc).join(', ') + '</p>';
    const io = (title, list) => '<h4>' + title + '</h4><table>' + list.map(v => '<tr><td>' + esc(v.name || '(omitted)') + '</td><td>' + esc(v.type) + '</td></tr>').join('') + '</table>';
    h += io('Inputs', n.inputs) + io('Outputs', n.outputs);
    const attrs = Object.entries(n.attrs);
    if (attrs.length) h += '<h4>Attributes</h4><table>' + attrs.map(([k, v]) => '<tr><td>' + esc(k) + '</td><td>' + esc(v) + '</td></tr>').join('') + '</table>';
    const inits = Object.entries(n.initializers);
    if (inits.length) h += '<h4>Initializers</h4><table>' + inits.map(([k, s]) => '<tr><td>' + esc(k) + '</td><td>' + esc(s.dtype) + '[' + s.shape.join(',') + ']' +
      (s.min !== undefined ? ' min ' + s.min.toPrecision(4) + ' max ' + s.max.toPrecision(4) + ' mean ' + s.mean.toPrecision(4) : '') + '</td></tr>').join('') + '</table>';
    panel.innerHTML = h;
    panel.dataset.node = id;
  }
  document.querySelectorAll('.pane').forEach((pane, side) => {
    pane.querySelectorAll('g.node').forEach(g => g.addEventListener('click', () => show(side, g.id)));
  });
  document.querySelectorAll('details.body').forEach(d => {
    const side = Number(d.dataset.side);
    d.querySelectorAll('g.node').forEach(g => g.addEventListener('click', () => show(side, d.dataset.prefix + ':' + g.id)));
  });
  const search = document.getElementById('search'), found = document.getElementById('found');
  let hits = [], at = 0;
  search.addEventListener('input', () => {
    const q = search.value.trim().toLowerCase();
    hits = [];
    document.querySelectorAll('.pane g.node').forEach(g => {
      const side = Number(g.closest('.pane').dataset.side), n = data.sides[side].nodes[g.id];
      const hit = q && n && (n.name.toLowerCase().includes(q) || n.op.toLowerCase().includes(q));
      g.classList.toggle('hit', !!hit);
      if (hit) hits.push([side, g]);
    });
    at = 0;
    found.textContent = q ? hits.length + ' found' : '';
  });
  search.addEventListener('keydown', e => {
    if (e.key !== 'Enter' || !hits.length) return;
    const [side, g] = hits[at++ % hits.length];
    document.getElementById('pane' + side).focusNode(g);
    show(side, g.id);
  });
  const m = /select=([^&]+)/.exec(location.hash);
  if (m) {
    const id = decodeURIComponent(m[1]);
    for (let s = 0; s < data.sides.length; ++s)
      for (const [k, n] of Object.entries(data.sides[s].nodes))
        if (k === id || n.name === id) { show(s, k); s = data.sides.length; break; }
  }
  document.body.dataset.loadMs = Math.round(performance.now());
})();
)JS";

std::string page(const std::string& title, const std::vector<Side>& sides, const std::string& extra) {
  json data = {{"sides", json::array()}};
  std::string panes, bodies;
  for (size_t s = 0; s < sides.size(); ++s) {
    data["sides"].push_back({{"title", sides[s].title}, {"nodes", sides[s].nodes}});
    panes += fmt::format("<div class=\"pane\" id=\"pane{0}\" data-side=\"{0}\"><div class=\"panebar\"><b>{1}</b> "
                         "<button class=\"fit\">fit</button></div>{2}</div>\n",
                         s, escape(sides[s].title), sides[s].svg);
    for (const auto& [caption, svg] : sides[s].bodies)
      bodies += fmt::format("<details class=\"body\" data-side=\"{}\" data-prefix=\"{}\"><summary>{}</summary>{}</details>\n", s,
                            escape(caption), escape(caption), svg);
  }
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{0}</title>
<style>
body {{ font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fff; }}
header {{ padding: 8px 14px; border-bottom: 1px solid #ddd; display: flex; gap: 12px; align-items: center; }}
header h1 {{ font-size: 16px; margin: 0; }}
#search {{ width: 260px; padding: 3px 6px; }}
main {{ display: flex; height: calc(100vh - 48px); }}
.panes {{ flex: 1; display: flex; min-width: 0; }}
.pane {{ flex: 1; display: flex; flex-direction: column; border-right: 1px solid #ddd; min-width: 0; }}
.panebar {{ padding: 4px 8px; background: #f6f8fa; }}
.pane svg {{ flex: 1; width: 100%; height: 100%; cursor: grab; }}
#panel {{ width: 340px; overflow: auto; padding: 8px 12px; border-left: 1px solid #ddd; }}
#panel table {{ border-collapse: collapse; width: 100%; }} #panel td {{ border-bottom: 1px solid #eee; padding: 2px 4px; vertical-align: top; word-break: break-all; }}
g.node {{ cursor: pointer; }} g.node.hit path, g.node.hit polygon {{ stroke: #e6a700; stroke-width: 4px; }}
g.node.selected path, g.node.selected polygon {{ stroke: #d62728; stroke-width: 4px; }}
.note {{ color: #8a4b08; }} .nodename {{ word-break: break-all; color: #555; }}
section {{ padding: 8px 14px; }} details.body svg {{ max-width: 100%; height: auto; }}
.legend span {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 10px; vertical-align: middle; border: 1px solid #999; }}
table.counts td, table.counts th {{ border: 1px solid #ddd; padding: 2px 6px; }}
</style></head>
<body>
<header><h1>{0}</h1><input id="search" placeholder="search node name or op type, Enter to jump"><span id="found"></span></header>
<main><div class="panes">{1}</div><aside id="panel"><p>Click a node for its attributes, inputs, outputs and initializers.</p></aside></main>
<section>{2}{3}</section>
<script type="application/json" id="model-data">{4}</script>
<script>{5}</script>
</body></html>
)",
                     escape(title), panes, extra, bodies.empty() ? "" : "<h2>Bodies and functions</h2>" + bodies, script_json(data), kScript);
}

std::string heat(double share) {  // white to red by the square root of the share
  const double t = std::sqrt(std::clamp(share, 0.0, 1.0));
  const int g = int(255 - t * (255 - 39)), b = int(255 - t * (255 - 40));
  return fmt::format("#ff{:02x}{:02x}", g, b);
}

std::string node_key(const Node& n, size_t i) { return n.name.empty() ? fmt::format("{}_{}", n.op_type, i) : n.name; }

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

}  // namespace

std::vector<std::pair<double, size_t>> add_heat(const Graph& g, const NodeTimes& times, DotOptions& dot) {
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto it = times.ms.find(node_key(g.nodes[i], i));
    if (it == times.ms.end()) continue;
    const double share = times.total_ms > 0 ? it->second / times.total_ms : 0;
    dot.fill[i] = heat(share);
    dot.note[i] = fmt::format("{:.1f}% {:.3f} ms", 100 * share, it->second);
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

std::string html_view(const Model& model, const std::map<std::string, std::string>& shapes, const NodeTimes* times) {
  Side side;
  side.title = model.path.empty() ? model.graph.name : model.path;
  DotOptions dot;
  std::string extra = op_counts_table(model, nullptr);
  if (times) {
    const std::vector<std::pair<double, size_t>> ranked = add_heat(model.graph, *times, dot);
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
  describe_graph(model.graph, shapes, dot, side, "", true);
  describe_functions(model, shapes, side);
  return page("refeval show: " + side.title, {side}, extra);
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
  std::map<std::string, size_t> in_before, in_after;
  for (size_t i = 0; i < before.graph.nodes.size(); ++i) in_before[key(before.graph.nodes[i])] = i;
  for (size_t i = 0; i < after.graph.nodes.size(); ++i) in_after[key(after.graph.nodes[i])] = i;
  DotOptions left, right;
  int removed = 0, added = 0, changed = 0;
  std::vector<std::string> removed_names;
  for (size_t i = 0; i < before.graph.nodes.size(); ++i) {
    auto it = in_after.find(key(before.graph.nodes[i]));
    if (it == in_after.end()) left.fill[i] = "#f8c9c9", left.note[i] = "removed", ++removed, removed_names.push_back(before.graph.nodes[i].name);
    else if (!same(before.graph.nodes[i], after.graph.nodes[it->second])) left.fill[i] = "#ffe0b2", left.note[i] = "changed", ++changed;
  }
  std::map<size_t, std::vector<std::string>> replaces;
  for (size_t i = 0; i < after.graph.nodes.size(); ++i) {
    const Node& n = after.graph.nodes[i];
    auto it = in_before.find(key(n));
    if (it == in_before.end()) {
      right.fill[i] = "#c8e6c9", ++added;
      // What a fused node replaced: exactly, from the provenance `refeval optimize` records in the
      // model's metadata; else, for a node named after the scope it replaced ("/blocks.0/FastGelu"),
      // the removed nodes of that scope.
      const size_t slash = n.name.rfind('/');
      std::vector<std::string>& r = replaces[i];
      const auto recorded = std::find_if(after.metadata.begin(), after.metadata.end(),
                                         [&](const auto& kv) { return kv.first == optimize::kFusedFromKey + n.name; });
      if (recorded != after.metadata.end()) {
        std::set<std::string> removed(removed_names.begin(), removed_names.end());
        size_t from = 0;
        const std::string& list = recorded->second;
        while (from <= list.size()) {
          size_t comma = list.find(',', from);
          if (comma == std::string::npos) comma = list.size();
          if (const std::string name = list.substr(from, comma - from); removed.count(name)) r.push_back(name);
          from = comma + 1;
        }
      } else if (slash != std::string::npos && slash > 0)
        for (const std::string& name : removed_names)
          if (name.compare(0, slash + 1, n.name, 0, slash + 1) == 0 && name.find('/', slash + 1) == std::string::npos) r.push_back(name);
      right.note[i] = r.empty() ? "added" : fmt::format("added, replaces {} nodes", r.size());
    } else if (!same(n, before.graph.nodes[it->second])) {
      right.fill[i] = "#ffe0b2", right.note[i] = "changed";
    }
  }
  Side a, b;
  a.title = "before: " + before.path, b.title = "after: " + after.path;
  describe_graph(before.graph, before_shapes, left, a, "", true);
  describe_graph(after.graph, after_shapes, right, b, "", true);
  for (auto& [i, names] : replaces) b.nodes[fmt::format("n{}", i)]["replaces"] = names;
  const std::string extra = fmt::format(
      "<p class=\"legend\">{} nodes -> {} nodes: {} removed<span style=\"background:#f8c9c9\"></span> {} added"
      "<span style=\"background:#c8e6c9\"></span> {} changed<span style=\"background:#ffe0b2\"></span></p>{}",
      before.graph.nodes.size(), after.graph.nodes.size(), removed, added, changed, op_counts_table(before, &after));
  return page(fmt::format("refeval show: {} vs {}", before.path, after.path), {a, b}, extra);
}

}  // namespace refeval::show
