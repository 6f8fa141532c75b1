// Loads a profile with Chromium's own trace importer: the trace engine of DevTools' Performance
// panel (devtools://devtools/bundled/models/trace/trace.js, the code behind "Load profile"), in a
// headless Chromium started here with every network name unresolvable and stopped at the end.
//   node --experimental-websocket devtools_trace.mjs PROFILE.json
// Prints one JSON object: what the importer made of the file, per thread its entries (the complete
// events it kept) and its call tree: the roots (name, ts in microseconds, direct children,
// descendants) and the deepest nesting; plus the importer's warnings. Exits 2 when Chromium or the
// page cannot be had (the caller skips), 1 when the importer throws.
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const file = process.argv[2];
const events = JSON.parse(fs.readFileSync(file, 'utf8'));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devtools-trace-'));
const browser = ['chromium', 'chromium-browser'].map(b => process.env.PATH.split(':').map(p => path.join(p, b)))
  .flat().find(p => fs.existsSync(p));
if (!browser) { console.error('chromium not found'); process.exit(2); }
const child = spawn(browser, ['--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${dir}`,
  '--host-resolver-rules=MAP * ~NOTFOUND', '--remote-debugging-port=0', 'about:blank'], {stdio: 'ignore'});
const exited = new Promise(r => child.on('exit', r));
const done = async (code) => {  // stop the browser started here, then remove its profile folder
  child.kill();
  await Promise.race([exited, new Promise(r => setTimeout(r, 5000))]);
  try { fs.rmSync(dir, {recursive: true, force: true}); } catch {}
  process.exit(code);
};
setTimeout(async () => { console.error('devtools_trace: timed out'); await done(2); }, 120000);

let port;
for (let i = 0; i < 200 && !port; ++i) {  // Chromium writes the port it chose here
  await new Promise(r => setTimeout(r, 100));
  try { port = fs.readFileSync(path.join(dir, 'DevToolsActivePort'), 'utf8').split('\n')[0]; } catch {}
}
if (!port) { console.error('devtools_trace: Chromium did not open its debugging port'); await done(2); }
const target = await (await fetch(`http://127.0.0.1:${port}/json/new?devtools://devtools/bundled/devtools_app.html`, {method: 'PUT'})).json();
const ws = new WebSocket(target.webSocketDebuggerUrl);
let id = 0;
const pending = new Map();
ws.onmessage = (m) => { const d = JSON.parse(m.data); if (pending.has(d.id)) { pending.get(d.id)(d); pending.delete(d.id); } };
await new Promise(r => { ws.onopen = r; });
const evaluate = (expression) => new Promise(r => {
  pending.set(++id, r);
  ws.send(JSON.stringify({id, method: 'Runtime.evaluate', params: {expression, returnByValue: true, awaitPromise: true}}));
});

// the page's modules load after the document: retry the import until the engine is there
let loaded;
for (let i = 0; i < 50; ++i) {
  loaded = await evaluate(`import('./models/trace/trace.js').then(T => typeof T.TraceModel.Model.createWithAllHandlers)`);
  if (loaded.result?.result?.value === 'function') break;
  await new Promise(r => setTimeout(r, 200));
}
if (loaded.result?.result?.value !== 'function') { console.error('devtools_trace: no trace engine in', JSON.stringify(loaded)); await done(2); }

const res = await evaluate(`(async () => {
  const T = await import('./models/trace/trace.js');
  const model = T.TraceModel.Model.createWithAllHandlers();
  await model.parse(${JSON.stringify(events)}, {showAllEvents: true});
  const parsed = model.parsedTrace(0);
  const data = parsed.data ?? parsed;
  const count = (node) => { let n = 0; for (const c of node.children) n += 1 + count(c); return n; };
  const depth = (node) => { let d = 0; for (const c of node.children) d = Math.max(d, 1 + depth(c)); return d; };
  const threads = [];
  for (const [pid, process] of data.Renderer.processes)
    for (const [tid, thread] of process.threads)
      threads.push({pid, tid, entries: thread.entries.length, max_depth: Math.max(0, ...[...thread.tree.roots].map(depth)),
                    roots: [...thread.tree.roots].map(r => ({name: r.entry.name, ts: r.entry.ts, children: r.children.size ?? r.children.length,
                                                              descendants: count(r)}))});
  const warnings = {};
  for (const [k, v] of data.Warnings.perWarning ?? []) warnings[k] = v.length;
  return JSON.stringify({generic: data.Meta.traceIsGeneric, bounds: data.Meta.traceBounds, threads, warnings});
})()`);
if (res.result?.exceptionDetails) {
  console.error('devtools_trace: the importer threw:', res.result.exceptionDetails.exception?.description);
  await done(1);
}
console.log(res.result.result.value);
await done(0);
