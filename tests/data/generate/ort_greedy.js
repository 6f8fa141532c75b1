// The greedy loop of benchmarks/ort/generate_ort.js (ONNX Runtime CPU, one thread, graph
// optimizations disabled), for the expected values of tests/cli/generate_test.sh: the same feeds
// step by step (present.* fed back as past.*, the mask grown by a 1 per step, position ids
// cumsum(mask) - 1 (1 on padding), cache_position the write position of a static cache), plus
//   --eos ID       a row that produces ID stops and is fed ID from then on, its ids padded with
//                  ID; the loop ends when every row has stopped (as `refeval generate --eos`);
//   --logits FILE  the logits each step's argmax read, float32 (steps, batch, vocab), raw little
//                  endian (make_expected.py saves them as .npy);
//   a stacked past (2, B, N, P, H) (ORT's gpt2_helper layout): the batch is axis 1.
//   node ort_greedy.js MODEL --prompt "1 2 3;4 5 6" [--prompt-mask FILE.npy] [--new-tokens 16]
//                     [--max-length L] [--eos ID] [--logits FILE]
// Prints each row's ids, then "steps N" (the model runs). make_expected.py checks that the ids
// equal generate_ort.js's on every case that script can run (no --eos, no stacked past).
const fs = require('fs');
const ort = require('onnxruntime-node');
const {readNpy} = require('../../../benchmarks/ort/npy');
const {stepFeeds} = require('../../../benchmarks/ort/step_feeds');

function option(args, name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
}

function zeros(type, dims) {
  const n = dims.reduce((a, b) => a * b, 1);
  const arrays = {float32: Float32Array, float16: Uint16Array};
  return new ort.Tensor(type, new arrays[type](n), dims);
}

(async () => {
  const args = process.argv.slice(2);
  const model = args[0];
  const rows = option(args, '--prompt').split(';').map(r => r.trim().split(/\s+/).map(Number));
  const B = rows.length, L = rows[0].length;
  const newTokens = Number(option(args, '--new-tokens', '16'));
  const maxLength = option(args, '--max-length') ? Number(option(args, '--max-length')) : undefined;
  const eos = option(args, '--eos') !== undefined ? Number(option(args, '--eos')) : undefined;
  const logitsFile = option(args, '--logits');
  let mask = [];
  const maskFile = option(args, '--prompt-mask');
  const m0 = maskFile ? Array.from(readNpy(maskFile).data, Number) : new Array(B * L).fill(1);
  for (let b = 0; b < B; ++b) mask.push(m0.slice(b * L, (b + 1) * L));

  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled', logSeverityLevel: 3});
  const meta = session.inputMetadata;
  const info = name => (Array.isArray(meta) ? meta.find(m => m.name === name) : meta[name]);
  const pasts = session.inputNames.filter(n => n.includes('past'));
  const presentOf = n => n.replace(/past_key_values|past/, 'present');

  // the empty cache: batch B, the symbolic length axis 0 (or the static length)
  const cache = {};
  for (const name of pasts) {
    const shape = info(name).shape;
    const stacked = shape.length === 5, batchAxis = stacked ? 1 : 0, lengthAxis = stacked ? 3 : 2;
    const dims = shape.map((d, a) => (a === batchAxis ? B : typeof d === 'number' ? d : (maxLength !== undefined ? maxLength : 0)));
    if (typeof shape[lengthAxis] === 'number' && maxLength !== undefined) dims[lengthAxis] = maxLength;
    cache[name] = zeros(info(name).type || 'float32', dims);
  }
  const lastValid = mask.map(r => r.lastIndexOf(1));
  let ids = rows.flat(), T = L, past = 0;
  const tokens = rows.map(() => []), finished = rows.map(() => false), picked = [];
  let steps = 0;
  for (let step = 0; step < newTokens; ++step) {
    const S = step === 0 ? L : 1;
    const feeds = stepFeeds(session, info, cache, {ids, mask, B, S, T, past, step});
    const out = await session.run(feeds);
    steps += 1;
    const logits = out.logits, V = logits.dims[logits.dims.length - 1], R = logits.dims.length === 3 ? logits.dims[1] : 1;
    ids = [];
    for (let b = 0; b < B; ++b) {
      const p = step === 0 ? Math.min(lastValid[b], R - 1) : R - 1;
      const base = (b * R + p) * V;
      picked.push(logits.data.slice(base, base + V));
      let best = 0;
      for (let v = 1; v < V; ++v) if (logits.data[base + v] > logits.data[base + best]) best = v;
      if (finished[b]) best = eos;
      if (eos !== undefined && best === eos) finished[b] = true;
      tokens[b].push(best);
      ids.push(best);
    }
    for (const name of pasts) cache[name] = out[presentOf(name)];
    if (finished.every(f => f)) break;
    mask = mask.map(r => [...r, 1]);
    past = T, T += 1;
  }
  for (const row of tokens) console.log(row.join(' '));
  console.log('steps', steps);
  if (logitsFile) {
    const all = new Float32Array(picked.reduce((n, a) => n + a.length, 0));
    let at = 0;
    for (const a of picked) all.set(a, at), at += a.length;
    fs.writeFileSync(logitsFile, Buffer.from(all.buffer));
  }
})().catch(e => { console.error(`ort_greedy.js: ${e.message}`); process.exit(1); });
