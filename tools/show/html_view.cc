#include "html_view.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "html.h"
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
      if (top >= 0) {
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

constexpr const char* kScript = R"JS(
(function () {
  const D = JSON.parse(document.getElementById('model-data').textContent);
  const panel = document.getElementById('panel');
  const esc = s => String(s).replace(/[&<>"]/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'})[c]);
  const ctx = document.createElement('canvas').getContext('2d');
  const widths = new Map();
  function textW(s, bold) {  // px at the SVG's 11px font
    const k = (bold ? 'b' : '') + s;
    let w = widths.get(k);
    if (w === undefined) { ctx.font = (bold ? 'bold ' : '') + '11px system-ui, sans-serif'; w = ctx.measureText(s).width; widths.set(k, w); }
    return w;
  }
  const cut = (s, n) => s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
  const shortName = s => { const k = s.lastIndexOf('/'); return k < 0 ? s : s.slice(k + 1); };
  const PAD = 14, HEAD = 24, LINE = 14;

  // One graph in one pane: groups, lazily laid-out with dagre, drawn as SVG.
  function View(pane, G, side, prefix) {
    const N = G.nn.length, groups = G.groups;
    const gparent = groups.map(g => g[1]), gdepth = groups.map(g => g[2]);
    const ngroup = new Int32Array(N);
    groups.forEach((g, k) => { for (const it of g[6]) if (it >= 0) ngroup[it] = k; });
    // Item keys: n<node>, g<group>, i<graph input>, o<graph output>. A graph input sits in the
    // deepest group holding all its consumers (a layer's KV cache in that layer), an output in
    // its producer's group.
    const lcaGroup = (a, b) => {
      while (gdepth[a] > gdepth[b]) a = gparent[a];
      while (gdepth[b] > gdepth[a]) b = gparent[b];
      while (a !== b) { a = gparent[a]; b = gparent[b]; }
      return a;
    };
    const ioGroup = new Map(), ioOf = new Map();
    {
      const inputOf = new Map();
      G.gi.forEach((v, k) => inputOf.set(v, k));
      G.ni.forEach((ins, i) => ins.forEach(v => {
        const k = inputOf.get(v);
        if (k === undefined) return;
        const g = ioGroup.get('i' + k);
        ioGroup.set('i' + k, g === undefined ? ngroup[i] : lcaGroup(g, ngroup[i]));
      }));
      const producerNode = new Map();
      G.nq.forEach((outs, i) => outs.forEach(v => producerNode.set(v, i)));
      G.go.forEach((v, k) => { const p = producerNode.get(v); ioGroup.set('o' + k, p === undefined ? 0 : ngroup[p]); });
      G.gi.forEach((v, k) => { if (!ioGroup.has('i' + k)) ioGroup.set('i' + k, 0); });
      for (const [key, g] of ioGroup) { if (!ioOf.has(g)) ioOf.set(g, []); ioOf.get(g).push(key); }
    }
    const parentOf = key => { const c = key[0], x = +key.slice(1); return c === 'n' ? 'g' + ngroup[x] : c === 'g' ? (gparent[x] < 0 ? null : 'g' + gparent[x]) : 'g' + ioGroup.get(key); };
    const depthOf = key => { const c = key[0], x = +key.slice(1); return c === 'n' ? gdepth[ngroup[x]] + 1 : c === 'g' ? gdepth[x] : gdepth[ioGroup.get(key)] + 1; };
    // Every edge lifted to the two children of the lowest common group (Model Explorer's rule).
    const producer = new Map(), E = new Map();
    G.gi.forEach((v, k) => producer.set(v, 'i' + k));
    G.nq.forEach((outs, i) => outs.forEach(v => { if (v >= 0) producer.set(v, 'n' + i); }));
    // Ports: a value entering (leaving) a group from outside is a small box at the top (bottom)
    // of the group's own layout, wired to the children that use (make) it.
    const portsIn = new Map(), portsOut = new Map();
    function port(ports, g, v, child) {
      let m = ports.get(g);
      if (!m) ports.set(g, m = new Map());
      let kids = m.get(v);
      if (!kids) m.set(v, kids = new Set());
      kids.add(child);
    }
    function lift(a, b, v) {
      const a0 = a, b0 = b;
      let da = depthOf(a), db = depthOf(b);
      while (da > db) { a = parentOf(a); --da; }
      while (db > da) { b = parentOf(b); --db; }
      if (a === b) return;
      let pa = parentOf(a), pb = parentOf(b);
      while (pa !== pb) { a = pa; b = pb; pa = parentOf(a); pb = parentOf(b); }
      for (let child = b0, x = parentOf(b0); x !== pa; child = x, x = parentOf(x)) port(portsIn, +x.slice(1), v, child);
      for (let child = a0, x = parentOf(a0); x !== pa; child = x, x = parentOf(x)) port(portsOut, +x.slice(1), v, child);
      const g = +pa.slice(1);
      let m = E.get(g);
      if (!m) E.set(g, m = new Map());
      const k = a + '>' + b;
      const e = m.get(k);
      if (!e) m.set(k, {a, b, vals: [v]});
      else if (e.vals[e.vals.length - 1] !== v && !e.vals.includes(v)) e.vals.push(v);
    }
    G.ni.forEach((ins, i) => ins.forEach(v => { const p = v >= 0 && producer.get(v); if (p) lift(p, 'n' + i, v); }));
    G.go.forEach((v, k) => { const p = producer.get(v); if (p) lift(p, 'o' + k, v); });

    const open = new Set([0]), cache = new Map();
    let selected = -1, hits = new Set(), hitGroups = new Set(), abs = new Map();
    const opOf = i => G.ops[G.no[i]][0];
    function nodeLines(i) {
      const name = shortName(G.nn[i]), l = [opOf(i)];
      if (name !== opOf(i)) l.push(cut(name || '(no name)', 30));
      if (G.note[i]) l.push(G.note[i]);
      return l;
    }
    function groupLines(g) {
      const x = groups[g], id = x[5];
      const l = [cut(x[0], 40) + (id >= 0 ? '  \u2261 ' + G.ident[id][1] + ' identical' : ''), x[3] + ' nodes \u00b7 ' + x[4]];
      if (x[8]) l.splice(1, 0, cut(x[8], 60));
      if (G.gnote[g]) l.push(...G.gnote[g]);
      return l;
    }
    function boxSize(key) {
      const c = key[0], x = +key.slice(1);
      if (c === 'g' && open.has(x)) {
        const L = layout(x);
        return [Math.max(L.w + 2 * PAD, textW(groups[x][0], true) + 60), L.h + HEAD + PAD];
      }
      if (c === 'p') return [Math.max(40, textW(cut(G.vn[+key.slice(2)], 32)) + 14), 20];
      const lines = c === 'n' ? nodeLines(x) : c === 'g' ? groupLines(x) : [G.vn[c === 'i' ? G.gi[x] : G.go[x]]];
      const w = Math.max(...lines.map((s, k) => textW(s, k === 0)));
      return [Math.max(70, w + 18), lines.length * LINE + 12];
    }
    const itemKey = it => it >= 0 ? 'n' + it : 'g' + ~it;
    function layout(g) {  // one group's direct children, cached until one of them opens or closes
      let L = cache.get(g);
      if (L) return L;
      const dg = new dagre.graphlib.Graph();
      dg.setGraph({rankdir: 'TB', nodesep: 20, ranksep: 36, edgesep: 10, marginx: 0, marginy: 0});
      dg.setDefaultEdgeLabel(() => ({}));
      const keys = groups[g][6].map(itemKey);
      for (const k of ioOf.get(g) || []) k[0] === 'i' ? keys.unshift(k) : keys.push(k);
      for (const k of keys) { const [w, h] = boxSize(k); dg.setNode(k, {width: w, height: h}); }
      const es = [...(E.get(g) || new Map()).values()];
      // Past 16 ports, or for a value used by more than 3 children (position ids in every layer of
      // a section: long edges that dagre would route through every rank), the edges at the
      // parent's level say enough.
      const MAX_PORTS = 16, MAX_FANOUT = 3;
      for (const [ports, kind] of [[portsIn, 'pi'], [portsOut, 'po']]) {
        const m = g === 0 ? null : ports.get(g);
        if (!m || m.size > MAX_PORTS) continue;
        for (const [v, kids] of m) {
          if (kids.size > MAX_FANOUT) continue;
          const k = kind + v, [w, h] = boxSize(k);
          dg.setNode(k, {width: w, height: h});
          keys.push(k);
          for (const kid of kids) es.push(kind === 'pi' ? {a: k, b: kid, vals: []} : {a: kid, b: k, vals: []});
        }
      }
      // A child feeding more than 3 others (position ids, the attention mask, layer 0's rotary
      // tables into every layer) keeps its first edge in the layout; the others are drawn
      // straight afterwards. Routed, each would cross every rank between its ends as dummy
      // nodes: the top level of a 12-layer Llama took 350 ms in dagre, 30 ms without them.
      const fanout = new Map();
      for (const e of es) fanout.set(e.a, (fanout.get(e.a) || 0) + 1);
      const seen = new Set(), straight = new Set();
      for (const e of es) {
        if (fanout.get(e.a) > 3 && seen.has(e.a)) straight.add(e);
        else dg.setEdge(e.a, e.b);
        seen.add(e.a);
      }
      dagre.layout(dg);
      const pos = new Map();
      for (const k of keys) { const n = dg.node(k); pos.set(k, {x: n.x - n.width / 2, y: n.y - n.height / 2, w: n.width, h: n.height}); }
      const edges = es.map(e => {
        if (!straight.has(e)) return {e, pts: dg.edge(e.a, e.b).points};
        const a = pos.get(e.a), b = pos.get(e.b), down = b.y > a.y;
        return {e, far: true, pts: [{x: a.x + a.w / 2, y: down ? a.y + a.h : a.y}, {x: b.x + b.w / 2, y: down ? b.y : b.y + b.h}]};
      });
      const gr = dg.graph();
      L = {w: gr.width || 0, h: gr.height || 0, pos, edges};
      cache.set(g, L);
      return L;
    }
    const ancestors = g => { const a = []; for (let x = g; x >= 0; x = gparent[x]) a.push(x); return a; };
    function setOpen(g, on) {
      if (open.has(g) === on || g === 0) return;
      on ? open.add(g) : open.delete(g);
      for (let x = gparent[g]; x >= 0; x = gparent[x]) cache.delete(x);  // its size changed: re-lay out the ancestors only
    }
    const openPath = g => ancestors(g).reverse().forEach(x => setOpen(x, true));

    const svg = pane.querySelector('svg');
    let vb = [0, 0, 100, 100];
    const applyVb = () => svg.setAttribute('viewBox', vb.join(' '));
    function render() {
      const frames = [], edges = [], boxes = [];
      abs = new Map();
      function draw(g, ox, oy) {
        const L = layout(g);
        for (const {e, pts, far} of L.edges) {
          const d = pts.map((p, k) => (k ? 'L' : 'M') + (p.x + ox).toFixed(1) + ',' + (p.y + oy).toFixed(1)).join('');
          edges.push('<path class="edge' + (far ? ' far' : '') + '" d="' + d + '" marker-end="url(#arrow)"/>');
          if (!e.vals.length || far) continue;  // a port names its value; a fan-out is labelled once
          const m = pts[pts.length >> 1], label = e.vals.length === 1 ? cut(G.vn[e.vals[0]], 28) : e.vals.length + ' values';
          edges.push('<text class="elabel" x="' + (m.x + ox + 4).toFixed(1) + '" y="' + (m.y + oy).toFixed(1) + '">' + esc(label) + '</text>');
        }
        for (const [k, p] of L.pos) {
          const X = ox + p.x, Y = oy + p.y, c = k[0], x = +k.slice(1);
          abs.set(k, {x: X, y: Y, w: p.w, h: p.h});
          const rect = (cls, fill) => '<rect class="' + cls + '" x="' + X.toFixed(1) + '" y="' + Y.toFixed(1) + '" width="' + p.w.toFixed(1) + '" height="' + p.h.toFixed(1) + '" rx="5" fill="' + fill + '"/>';
          const text = lines => lines.map((s, j) => '<text x="' + (X + 9).toFixed(1) + '" y="' + (Y + 17 + j * LINE).toFixed(1) + '"' + (j ? '' : ' class="t"') + '>' + esc(s) + '</text>').join('');
          if (c === 'g' && open.has(x)) {
            frames.push('<g class="frame" data-g="' + x + '" data-path="' + esc(groups[x][7]) + '">' + rect('fr', G.gfill[x] ? G.gfill[x] + '55' : '#f7f9fc') +
              '<text class="t head" x="' + (X + 9).toFixed(1) + '" y="' + (Y + 16).toFixed(1) + '">\u2212 ' + esc(groups[x][0]) + '  (' + groups[x][3] + ' nodes' +
              (G.gnote[x] ? ', ' + esc(G.gnote[x][0]) : '') + ')</text></g>');
            draw(x, X + PAD, Y + HEAD);
          } else if (c === 'g') {
            const cls = 'group' + (hitGroups.has(x) ? ' hit' : '') + (groups[x][5] >= 0 ? ' same' : '');
            boxes.push('<g class="' + cls + '" id="' + prefix + 'g' + x + '" data-g="' + x + '" data-path="' + esc(groups[x][7]) + '">' + rect('gb', G.gfill[x] || '#e3ecfa') + text(groupLines(x)) + '</g>');
          } else if (c === 'n') {
            const cls = 'node' + (x === selected ? ' selected' : '') + (hits.has(x) ? ' hit' : '');
            boxes.push('<g class="' + cls + '" id="' + prefix + 'n' + x + '" data-n="' + x + '">' + rect('nb', G.fill[x] || '#ffffff') + text(nodeLines(x)) + '</g>');
          } else if (c === 'p') {
            boxes.push('<g class="port">' + rect('pb', '#f1f3f6') + '<text x="' + (X + 7).toFixed(1) + '" y="' + (Y + 14).toFixed(1) + '">' +
              esc(cut(G.vn[+k.slice(2)], 32)) + '</text></g>');
          } else {
            boxes.push('<g class="io">' + rect('iob', '#e8f5e9') + text([G.vn[c === 'i' ? G.gi[x] : G.go[x]]]) + '</g>');
          }
        }
      }
      draw(0, 0, 0);
      svg.innerHTML = '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">' +
        '<path d="M0,0L10,5L0,10z" fill="#8899aa"/></marker></defs>' + frames.join('') + edges.join('') + boxes.join('');
      applyVb();
    }
    function fit() {
      const L = layout(0), r = svg.getBoundingClientRect();
      const w = Math.max(L.w, 10) + 40, h = Math.max(L.h, 10) + 40;
      // The whole graph when its 11px labels stay readable (at most 1.6 units per pixel); else
      // its top, as wide as that allows.
      const rw = Math.max(r.width, 1), rh = Math.max(r.height, 1), s = Math.max(w / rw, h / rh);
      if (s <= 1.6) vb = [-20 - (rw * Math.max(s, 1) - w) / 2, -20, rw * Math.max(s, 1), rh * Math.max(s, 1)];
      else { const k = Math.min(1.6, Math.max(1, w / rw)); vb = [L.w / 2 - rw * k / 2, -20, rw * k, rh * k]; }
      applyVb();
    }
    function focus(key) {
      const b = abs.get(key);
      if (!b) return;
      const r = svg.getBoundingClientRect(), w = Math.max(r.width, 300) * 1.2, h = w * (r.height / Math.max(r.width, 1));
      vb = [b.x + b.w / 2 - w / 2, b.y + b.h / 2 - h / 2, w, h];
      applyVb();
    }
    // Pan and zoom.
    let drag = null, moved = false;
    svg.addEventListener('wheel', e => {
      e.preventDefault();
      const r = svg.getBoundingClientRect(), k = e.deltaY < 0 ? 0.8 : 1.25;
      const px = vb[0] + (e.clientX - r.left) / r.width * vb[2], py = vb[1] + (e.clientY - r.top) / r.height * vb[3];
      vb = [px - (px - vb[0]) * k, py - (py - vb[1]) * k, vb[2] * k, vb[3] * k];
      applyVb();
    }, {passive: false});
    svg.addEventListener('mousedown', e => { drag = [e.clientX, e.clientY, vb[0], vb[1]]; moved = false; });
    window.addEventListener('mouseup', () => { drag = null; });
    svg.addEventListener('mousemove', e => {
      if (!drag) return;
      const r = svg.getBoundingClientRect();
      if (Math.abs(e.clientX - drag[0]) + Math.abs(e.clientY - drag[1]) > 3) moved = true;
      vb[0] = drag[2] - (e.clientX - drag[0]) / r.width * vb[2]; vb[1] = drag[3] - (e.clientY - drag[1]) / r.height * vb[3];
      applyVb();
    });
    svg.addEventListener('click', e => {
      if (moved) return;
      const n = e.target.closest('g.node'), gb = e.target.closest('g.group'), fr = e.target.closest('g.frame');
      if (n) select(+n.dataset.n);
      else if (gb) { expand(+gb.dataset.g); showGroup(+gb.dataset.g); }
      else if (fr && e.target.classList.contains('head')) { setOpen(+fr.dataset.g, false); render(); }
    });
    const fitButton = pane.querySelector('.fit');
    if (fitButton) fitButton.addEventListener('click', fit);

    function expand(g) { openPath(g); render(); focus('g' + g); }
    function select(i) {
      selected = i;
      openPath(ngroup[i]);
      render();
      focus('n' + i);
      showNode(i);
    }
    function showNode(i) {
      const op = G.ops[G.no[i]];
      let h = '<h3>' + esc(op[0]) + (op[1] ? ' <small>(' + esc(op[1]) + ')</small>' : '') + '</h3><p class="nodename">' + esc(G.nn[i] || '(no name)') + '</p>';
      const path = groups[ngroup[i]][7];
      if (path) h += '<p class="scope">in ' + esc(path) + '</p>';
      if (G.note[i]) h += '<p class="note">' + esc(G.note[i]) + '</p>';
      if (G.repl[i] && G.repl[i].length) h += '<p class="note">replaces ' + G.repl[i].map(esc).join(', ') + '</p>';
      const io = (title, list) => '<h4>' + title + '</h4><table>' + list.map(v => '<tr><td>' + (v < 0 ? '(omitted)' : esc(G.vn[v])) + '</td><td>' +
        (v >= 0 && G.vt[v] >= 0 ? esc(G.types[G.vt[v]]) : '') + '</td></tr>').join('') + '</table>';
      h += io('Inputs', G.ni[i]) + io('Outputs', G.nq[i]);
      const attrs = G.na[i] || [];
      if (attrs.length) h += '<h4>Attributes</h4><table>' + attrs.map(([k, v]) => '<tr><td>' + esc(k) + '</td><td>' + esc(v) + '</td></tr>').join('') + '</table>';
      const inits = G.ni[i].filter(v => v >= 0 && G.init[v]);
      if (inits.length) h += '<h4>Initializers</h4><table>' + inits.map(v => { const s = G.init[v]; return '<tr><td>' + esc(G.vn[v]) + '</td><td>' + esc(s[0]) + '[' + s[1] + ']' +
        (s.length > 3 ? ' min ' + s[3].toPrecision(4) + ' max ' + s[4].toPrecision(4) + ' mean ' + s[5].toPrecision(4) : '') + '</td></tr>'; }).join('') + '</table>';
      panel.innerHTML = h;
      panel.dataset.node = prefix + 'n' + i;
      delete panel.dataset.group;
    }
    function showGroup(g) {
      const x = groups[g];
      let h = '<h3>' + esc(x[0]) + '</h3><p class="nodename">' + esc(x[7]) + '</p><p>' + x[3] + ' nodes: ' + esc(x[4]) + '</p>';
      if (x[5] >= 0) h += '<p class="note">' + esc(G.ident[x[5]][0]) + '</p>';
      if (G.gnote[g]) h += G.gnote[g].map(s => '<p class="note">' + esc(s) + '</p>').join('');
      panel.innerHTML = h;
      panel.dataset.group = x[7];
      delete panel.dataset.node;
    }
    function search(q) {
      const found = [];
      hits = new Set(); hitGroups = new Set();
      if (q) for (let i = 0; i < N; ++i) if (G.nn[i].toLowerCase().includes(q) || opOf(i).toLowerCase().includes(q)) { found.push(i); hits.add(i); }
      for (const i of found.slice(0, 2000)) for (let x = ngroup[i]; x > 0; x = gparent[x]) hitGroups.add(x);
      render();
      return found;
    }
    function findGroup(p) {
      for (let k = 1; k < groups.length; ++k) if (groups[k][7] === p) return k;
      for (let k = 1; k < groups.length; ++k) if (groups[k][7].endsWith('/' + p) || groups[k][0] === p) return k;
      return -1;
    }
    function findNode(id) {
      if (id.startsWith(prefix + 'n') && /^\d+$/.test(id.slice(prefix.length + 1))) return +id.slice(prefix.length + 1);
      return G.nn.indexOf(id);
    }
    // The first view: a group holding most of the graph (a "trunk" like `model`) is opened.
    for (let g = 0;;) {
      const sub = groups[g][6].filter(it => it < 0).map(it => ~it).find(c => groups[c][3] >= 0.75 * N && groups[c][3] > 1);
      if (sub === undefined) break;
      setOpen(sub, true);
      g = sub;
    }
    render();
    fit();
    return {select, expand, showGroup, search, findGroup, findNode, G, side, fit};
  }

  const views = [];
  document.querySelectorAll('.pane[data-side]').forEach(pane => views.push(View(pane, D.sides[+pane.dataset.side].graph, +pane.dataset.side, '')));
  // A body's graph is laid out when its <details> is first opened.
  document.querySelectorAll('details.body').forEach(d => {
    const open = () => {
      if (!d.open || d.view) return;
      const b = D.sides[+d.dataset.side].bodies[+d.dataset.index];
      d.view = View(d.querySelector('.pane'), b.graph, +d.dataset.side, d.dataset.prefix + ':');
    };
    d.addEventListener('toggle', open);
    open();
  });

  const box = document.getElementById('search'), found = document.getElementById('found');
  let hits = [], at = 0;
  function runSearch(text) {
    const q = text.trim().toLowerCase();
    hits = [];
    views.forEach(v => v.search(q).forEach(i => hits.push([v, i])));
    at = 0;
    found.textContent = q ? hits.length + ' found' : '';
  }
  function next() { if (!hits.length) return; const [v, i] = hits[at++ % hits.length]; v.select(i); }
  box.addEventListener('input', () => runSearch(box.value));
  box.addEventListener('keydown', e => { if (e.key === 'Enter') next(); });

  for (const cmd of location.hash.slice(1).split('&')) {
    const eq = cmd.indexOf('='), key = cmd.slice(0, eq), arg = decodeURIComponent(cmd.slice(eq + 1));
    if (key === 'select') {
      for (const v of views) { const i = v.findNode(arg); if (i >= 0) { v.select(i); break; } }
    } else if (key === 'search') {
      box.value = arg;
      runSearch(arg);
      next();
    } else if (key === 'expand') {
      const t = performance.now();
      for (const v of views) { const g = v.findGroup(arg); if (g >= 0) { v.expand(g); v.showGroup(g); document.body.dataset.expanded = v.G.groups[g][7]; break; } }
      document.body.getBoundingClientRect();  // the layout the expansion causes, counted in its time
      document.body.dataset.expandMs = (performance.now() - t).toFixed(1);
    }
  }
  document.body.getBoundingClientRect();  // load time includes the first layout (benchmarks/show/scale.sh)
  document.body.dataset.loadMs = Math.round(performance.now());
})();
)JS";

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
<style>
body {{ font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fff; }}
header {{ padding: 8px 14px; border-bottom: 1px solid #ddd; display: flex; gap: 12px; align-items: center; }}
header h1 {{ font-size: 16px; margin: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }}
#search {{ width: 260px; padding: 3px 6px; }}
main {{ display: flex; height: calc(100vh - 48px); }}
.panes {{ flex: 1; display: flex; min-width: 0; }}
.pane {{ flex: 1; display: flex; flex-direction: column; border-right: 1px solid #ddd; min-width: 0; }}
.panebar {{ padding: 4px 8px; background: #f6f8fa; white-space: nowrap; overflow: hidden; }}
.pane svg {{ flex: 1; width: 100%; height: 100%; cursor: grab; font: 11px system-ui, sans-serif; user-select: none; }}
.bodypane {{ height: 480px; border: 1px solid #ddd; }}
#panel {{ width: 340px; overflow: auto; padding: 8px 12px; border-left: 1px solid #ddd; }}
#panel table {{ border-collapse: collapse; width: 100%; }} #panel td {{ border-bottom: 1px solid #eee; padding: 2px 4px; vertical-align: top; word-break: break-all; }}
svg text {{ fill: #222; }} svg text.t {{ font-weight: bold; }} svg .elabel {{ fill: #778; font-size: 9px; }}
svg .edge {{ fill: none; stroke: #8899aa; stroke-width: 1.2; }} svg .edge.far {{ stroke: #b4bfcc; stroke-dasharray: 5 3; }}
svg .nb {{ stroke: #6b7f99; }} svg .pb {{ stroke: #b0b8c4; stroke-dasharray: 3 2; }} svg g.port text {{ fill: #556; font-size: 10px; }} svg .gb {{ stroke: #3d5a80; stroke-width: 1.5; }} svg .iob {{ stroke: #5b8c5a; }}
svg g.same .gb {{ stroke-dasharray: 6 3; }}
svg .fr {{ stroke: #9fb3cf; stroke-width: 1.2; }} svg .head {{ cursor: pointer; fill: #3d5a80; }}
g.node, g.group {{ cursor: pointer; }} g.hit rect {{ stroke: #e6a700; stroke-width: 4px; }}
g.selected rect {{ stroke: #d62728; stroke-width: 4px; }}
.note {{ color: #8a4b08; }} .nodename {{ word-break: break-all; color: #555; }} .scope {{ color: #3d5a80; }}
section {{ padding: 8px 14px; }}
.legend span {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 10px; vertical-align: middle; border: 1px solid #999; }}
table.counts td, table.counts th {{ border: 1px solid #ddd; padding: 2px 6px; }}
</style></head>
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
                     script_safe(data.dump(-1, ' ', false, json::error_handler_t::replace)), kDagreJs, kScript);
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
    marks.fill = dot.fill, marks.note = dot.note, marks.total_ms = times->total_ms;
    for (const auto& [ms, i] : ranked) marks.time_ms[i] = ms;
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
