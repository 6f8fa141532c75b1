// The generation loop of `refeval generate` driven step by step in ONNX Runtime (CPU, one thread,
// graph optimizations as ORT_LEVEL says, default disabled): greedy decoding from a prompt, each
// step's present.* fed back as past_key_values.*, the mask grown by a 1 per step, position ids
// cumsum(mask) - 1 (1 on padding), cache_position the write position for a static cache.
//   node generate_ort.js MODEL --prompt "1 2 3;4 5 6" [--prompt-mask FILE.npy] [--new-tokens 16]
//                        [--max-length L] [--profile OUT.json] [--json OUT.json]
// Prints each row's ids, then "prefill_ms X" and "decode_ms a b c ...". With --profile, ORT's own
// profile of the loop, each model_run tagged args.phase / args.step as refeval tags its runs, so
// `refeval report --by phase` reads both the same way. Used by the generate tests' fixtures and
// by benchmarks/llm/generate.sh.
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');
const {stepFeeds} = require('./step_feeds');

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
  const profile = option(args, '--profile');
  let mask = [];
  const maskFile = option(args, '--prompt-mask');
  const m0 = maskFile ? Array.from(readNpy(maskFile).data, Number) : new Array(B * L).fill(1);
  for (let b = 0; b < B; ++b) mask.push(m0.slice(b * L, (b + 1) * L));

  const prefix = path.join(os.tmpdir(), `refeval_ort_generate_${process.pid}`);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(process.env.ORT_THREADS || 1), interOpNumThreads: 1, graphOptimizationLevel: process.env.ORT_LEVEL || 'disabled',
    enableProfiling: !!profile, profileFilePrefix: prefix, logSeverityLevel: 3});
  const meta = session.inputMetadata;  // name -> {type, shape} (onnxruntime-node >= 1.22)
  const info = name => (Array.isArray(meta) ? meta.find(m => m.name === name) : meta[name]);
  const pasts = session.inputNames.filter(n => n.includes('past'));
  const presentOf = n => n.replace(/past_key_values|past/, 'present');

  // the empty cache: the symbolic length axis is 0 (or the static length), batch B
  const cache = {};
  for (const name of pasts) {
    const shape = info(name).shape;
    const dims = shape.map((d, a) => (a === 0 ? B : typeof d === 'number' ? d : (maxLength !== undefined ? maxLength : 0)));
    if (typeof shape[2] === 'number' && maxLength !== undefined) dims[2] = maxLength;
    cache[name] = zeros(info(name).type || 'float32', dims);
  }
  const lastValid = mask.map(r => r.lastIndexOf(1));
  let ids = rows.flat(), T = L, past = 0;
  const tokens = rows.map(() => []), times = [];
  for (let step = 0; step < newTokens; ++step) {
    const S = step === 0 ? L : 1;
    const feeds = stepFeeds(session, info, cache, {ids, mask, B, S, T, past, step});
    const t0 = process.hrtime.bigint();
    const out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const logits = out.logits, V = logits.dims[logits.dims.length - 1], R = logits.dims.length === 3 ? logits.dims[1] : 1;
    ids = [];
    for (let b = 0; b < B; ++b) {
      const p = step === 0 ? Math.min(lastValid[b], R - 1) : R - 1;
      const base = (b * R + p) * V;
      let best = 0;
      for (let v = 1; v < V; ++v) if (logits.data[base + v] > logits.data[base + best]) best = v;
      tokens[b].push(best);
      ids.push(best);
    }
    for (const name of pasts) cache[name] = out[presentOf(name)];
    mask = mask.map(r => [...r, 1]);
    past = T, T += 1;
  }
  for (const row of tokens) console.log(row.join(' '));
  console.log('prefill_ms', times[0].toFixed(3));
  console.log('decode_ms', times.slice(1).map(t => t.toFixed(3)).join(' '));
  if (option(args, '--json')) fs.writeFileSync(option(args, '--json'), JSON.stringify({tokens, prefill_ms: times[0], decode_ms: times.slice(1)}));
  if (profile) {
    session.endProfiling();
    const dir = os.tmpdir();
    const written = fs.readdirSync(dir).filter(f => f.startsWith(path.basename(prefix))).map(f => path.join(dir, f));
    if (written.length !== 1) throw new Error(`expected one profile file from ${prefix}, found ${written.length}`);
    const events = JSON.parse(fs.readFileSync(written[0], 'utf8'));
    let step = 0;
    for (const e of events)
      if (e.cat === 'Session' && e.name === 'model_run') e.args = {...(e.args || {}), phase: step === 0 ? 'prefill' : 'decode', step: step++};
    fs.writeFileSync(profile, JSON.stringify(events));
    fs.unlinkSync(written[0]);
  }
})().catch(e => { console.error(`generate_ort.js: ${e.message}`); process.exit(1); });
