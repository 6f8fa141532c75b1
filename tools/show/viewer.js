// The HTML viewer's page script (`refeval show --format html`), compiled into refeval as a string
// (CMakeLists.txt, refeval_embed) beside dagre; html_view.cc writes it after the model data.
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
