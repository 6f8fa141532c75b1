// Times the forms of each case of forms.py's manifest in ONNX Runtime (onnxruntime-node, CPU, graph
// optimization level all) and checks their outputs against the unfused form's:
//   node time_forms.js MANIFEST RESULTS.jsonl     (THREADS="1 2", ROUNDS=3, REPEAT=15, WARMUP=3,
//                                                  CASES=regex on case ids such as "attention-2/mask")
// Per case and thread count: one session per form (intraOpNumThreads = T, interOpNumThreads = 1, and
// session.force_spinning_stop: each session's intra-op workers spin within a Run but stop when it returns;
// with ORT's default, the idle sessions' spinning workers took one of the 2 cores from the timed one at
// random, and identical graphs measured 0.5x or 2x apart at 2 threads. The cost: each 2-thread run starts
// by waking its worker, 0 to 0.03 ms here on a lone session of a 0.13 ms model); one
// run fetching the real outputs, compared with unfused's (largest |difference| over all outputs, at most
// 1e-4 · max(1, largest |unfused value|), else the form fails and is not timed); WARMUP runs each; then
// ROUNDS rounds, each running every form REPEAT times in a rotated order, fetching the probes only (see
// forms.py). A form's time is the median over rounds of its round medians, its ratio the median over
// rounds of (its round median / unfused's). A form's "bind" pre-allocates outputs: "new" a zero tensor
// of the output's shape, an input name that input's own tensor (the same memory, for GQA's shared past
// and present). Writes one JSON line per case and thread count, with the CPU time other processes took
// while the forms were timed ("other", in cores: a neighbour's load makes the ratios noisier, at 2 threads
// on a 2-core machine most); progress on stderr.
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('../ort/node_modules/onnxruntime-node');
const {readNpy} = require('../ort/npy');
const {countNodes} = require('../ort/onnx_pb');

const threadCounts = (process.env.THREADS || '1 2').split(/[ ,]+/).map(Number);
const rounds = Number(process.env.ROUNDS || 3);
const repeat = Number(process.env.REPEAT || 15);
const warmup = Number(process.env.WARMUP || 3);
const casesRe = new RegExp(process.env.CASES || '');

const median = xs => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

function maxAbs(a) {
  let m = 0;
  for (const x of a) m = Math.max(m, Math.abs(Number(x)));
  return m;
}

function maxDiff(a, b) {
  if (a.dims.join() !== b.dims.join()) return Infinity;
  let m = 0;
  for (let i = 0; i < a.data.length; ++i) m = Math.max(m, Math.abs(Number(a.data[i]) - Number(b.data[i])));
  return m;
}

// The ops of ORT's optimized graph for a model, "Op:count,..." (most frequent first), without the probe Slices.
function optimizedOps(file, outputs) {
  const {ops} = countNodes(file);
  ops.Slice -= outputs.length;
  if (!ops.Slice) delete ops.Slice;
  return Object.entries(ops).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([op, n]) => `${op}:${n}`).join(',');
}

// CPU time the rest of the machine used, in cores: /proc/stat's busy time minus this process's own.
function cpuMark() {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]
    .trim().split(/\s+/).slice(1).map(Number);
  const own = process.cpuUsage();
  return {busyMs: (user + nice + system + irq + softirq + steal) * 10, ownMs: (own.user + own.system) / 1e3, at: Date.now()};
}

function otherCores(from, to) {
  return Math.max(0, (to.busyMs - from.busyMs - (to.ownMs - from.ownMs)) / Math.max(1, to.at - from.at));
}

function firstLine(e) {
  return String(e.message || e).split('\n').find(l => l.trim()).trim().slice(0, 400);
}

async function runCase(c, threads) {
  const feeds = Object.fromEntries(Object.entries(c.feeds).map(([name, file]) => [name, readNpy(path.join(c.dir, file))]));
  const result = {id: c.id, pattern: c.pattern, variant: c.variant, shape: c.shape, threads, other: null,
                  forms: [], failures: [], ops: {}};
  const live = [];
  let reference = null;
  for (const f of c.forms) {
    const optimized = c.list_ops && threads === threadCounts[0] ? path.join(os.tmpdir(), `ort_forms_${process.pid}.onnx`) : null;
    let session = null;
    try {
      session = await ort.InferenceSession.create(path.join(c.dir, f.model), {
        intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', logSeverityLevel: 3,
        extra: {session: {force_spinning_stop: '1'}}, ...(optimized ? {optimizedModelFilePath: optimized} : {})});
      if (optimized) {
        result.ops[f.name] = optimizedOps(optimized, c.outputs);
        fs.unlinkSync(optimized);
      }
      const formFeeds = {...feeds};
      for (const [name, file] of Object.entries(f.feeds || {})) formFeeds[name] = readNpy(path.join(c.dir, file));
      const bound = Object.entries(f.bind || {}).map(([out, what]) => [out, what === 'new'  // (unfused binds none)
        ? new ort.Tensor('float32', new Float32Array(reference[out].size), reference[out].dims) : formFeeds[what]]);
      const fetches = names => Object.fromEntries(names.map(n => [n, null]).concat(bound));
      const real = await session.run(formFeeds, fetches(c.outputs));
      if (!reference) reference = real;  // unfused comes first
      const diff = Math.max(...c.outputs.map(o => maxDiff(real[o], reference[o])));
      const tolerance = 1e-4 * Math.max(1, ...c.outputs.map(o => maxAbs(reference[o].data)));
      if (!(diff <= tolerance)) throw new Error(`outputs differ from unfused: max |diff| ${diff.toExponential(2)} > ${tolerance.toExponential(2)}`);
      const probes = fetches(c.outputs.map(o => `${o}_probe`));
      live.push({name: f.name, diff, session, run: () => session.run(formFeeds, probes), medians: []});
    } catch (e) {
      if (session) await session.release();
      if (optimized && fs.existsSync(optimized)) fs.unlinkSync(optimized);
      result.failures.push({form: f.name, error: firstLine(e)});
      if (!reference) break;  // without unfused there is nothing to compare with
    }
  }
  if (live.length) {
    const mark = cpuMark();
    for (const f of live) for (let i = 0; i < warmup; ++i) await f.run();
    for (let r = 0; r < rounds; ++r) {
      for (let j = 0; j < live.length; ++j) {
        const f = live[(j + r) % live.length];
        const times = [];
        for (let i = 0; i < repeat; ++i) {
          const t0 = process.hrtime.bigint();
          await f.run();
          times.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        f.medians.push(median(times));
      }
    }
    result.other = otherCores(mark, cpuMark());
    const base = live[0].medians;
    for (const f of live) {
      result.forms.push({name: f.name, ms: median(f.medians), ratio: median(f.medians.map((m, r) => m / base[r])),
                         rounds: f.medians, diff: f.diff});
    }
  }
  for (const f of live) await f.session.release();
  return result;
}

(async () => {
  const [manifest, out] = process.argv.slice(2);
  const cases = JSON.parse(fs.readFileSync(manifest, 'utf8')).filter(c => casesRe.test(c.id));
  fs.writeFileSync(out, '');
  for (const c of cases) {
    for (const threads of threadCounts) {
      const t0 = Date.now();
      const r = await runCase(c, threads);
      fs.appendFileSync(out, JSON.stringify(r) + '\n');
      const summary = r.forms.slice(1).map(f => `${f.name} ${f.ratio.toFixed(2)}`).join(', ');
      console.error(`time_forms.js: ${c.id} ${JSON.stringify(c.shape)} T=${threads}: unfused ${r.forms.length ? r.forms[0].ms.toFixed(3) : '-'} ms; ` +
                    `${summary}${r.failures.length ? `; failed: ${r.failures.map(f => f.form).join(', ')}` : ''} (${((Date.now() - t0) / 1e3).toFixed(1)} s, other processes ${(r.other ?? 0).toFixed(2)} cores)`);
    }
  }
})().catch(e => { console.error(`time_forms.js: ${e.stack}`); process.exit(2); });
