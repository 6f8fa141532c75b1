// The ONNX Runtime half of the oracle of `refeval compare --tokens` (lm_figures.py is the other):
// runs a decoder (input_ids -> logits, KV cache inputs) in onnxruntime-node, CPU, one thread, graph
// optimizations disabled, on every token window and writes its logits.
//   NODE_PATH=benchmarks/ort/node_modules node tests/data/quality/lm_figures.js MODEL TOKENS.npy LOGITS.npy
//       [--context N] [--generate K IDS.npy]
// TOKENS.npy: int64 (rows, length). Each row is cut into floor(length / N) windows of N consecutive
// tokens (the remainder dropped; N defaults to length), in row order. Each window runs once as a
// prefill: batch 1, input_ids the window, attention_mask all ones, position_ids 0..N-1 (each in the
// element type the model declares, int64 or int32), every past_key_values.* empty (its symbolic axes
// 0, its fixed ones as declared, batch 1). LOGITS.npy: float32 (windows, N, vocab).
// --generate K: also greedy decoding from each window's first floor(N / 2) tokens: that prefill, then
// K - 1 decode steps, each feeding the presents back as the past, the mask grown by a one and the
// next position id; the argmax is the first maximum. IDS.npy: int64 (windows, K).
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require(path.join(__dirname, '..', '..', '..', 'benchmarks', 'ort', 'npy.js'));
const {writeNpy} = require('./write_npy');

(async () => {
  const args = process.argv.slice(2);
  const [model, tokensFile, logitsFile] = args;
  const opt = name => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
  const tokens = readNpy(tokensFile);
  if (tokens.type !== 'int64' || tokens.dims.length !== 2) throw new Error(`${tokensFile}: want int64 (rows, length), got ${tokens.type} ${tokens.dims}`);
  const [rows, length] = tokens.dims;
  const N = opt('--context') ? Number(opt('--context')) : length;
  const perRow = Math.floor(length / N);
  const windows = [];
  for (let r = 0; r < rows; ++r)
    for (let w = 0; w < perRow; ++w) windows.push(Array.from(tokens.data.subarray(r * length + w * N, r * length + (w + 1) * N), Number));

  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1,
                                                            graphOptimizationLevel: 'disabled', logSeverityLevel: 3});
  const meta = session.inputMetadata;
  const info = name => (Array.isArray(meta) ? meta.find(m => m.name === name) : meta[name]);
  const has = name => session.inputNames.includes(name);
  const ints = (name, values, dims) => (info(name).type === 'int32'
    ? new ort.Tensor('int32', Int32Array.from(values), dims)
    : new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims));
  const pasts = session.inputNames.filter(n => n.startsWith('past_key_values'));
  const emptyCache = () => Object.fromEntries(pasts.map(n => {
    const dims = info(n).shape.map((d, a) => (a === 0 ? 1 : typeof d === 'number' ? d : 0));
    const size = dims.reduce((a, b) => a * b, 1);
    return [n, new ort.Tensor(info(n).type, info(n).type === 'float16' ? new Uint16Array(size) : new Float32Array(size), dims)];
  }));
  const logitsName = session.outputNames.includes('logits') ? 'logits' : session.outputNames[0];
  // one run: ids (S new tokens) after `past` cached ones
  const run = async (ids, past, cache) => {
    const S = ids.length, T = past + S;
    const feeds = {...cache, input_ids: ints('input_ids', ids, [1, S])};
    if (has('attention_mask')) feeds.attention_mask = ints('attention_mask', new Array(T).fill(1), [1, T]);
    if (has('position_ids')) feeds.position_ids = ints('position_ids', Array.from({length: S}, (_, i) => past + i), [1, S]);
    const out = await session.run(feeds);
    const next = Object.fromEntries(pasts.map(n => [n, out[n.replace('past_key_values', 'present')]]));
    return {logits: out[logitsName], cache: next};
  };
  const argmaxLast = logits => {
    const V = logits.dims[logits.dims.length - 1], base = logits.data.length - V;
    let best = 0;
    for (let v = 1; v < V; ++v) if (logits.data[base + v] > logits.data[base + best]) best = v;
    return best;
  };

  let all, V;
  for (let w = 0; w < windows.length; ++w) {
    const {logits} = await run(windows[w], 0, emptyCache());
    V = logits.dims[2];
    if (!all) all = new Float32Array(windows.length * N * V);
    all.set(logits.data, w * N * V);
  }
  writeNpy(logitsFile, '<f4', [windows.length, N, V], all);

  const K = opt('--generate') ? Number(opt('--generate')) : 0;
  if (K > 0) {
    const ids = new BigInt64Array(windows.length * K);
    for (let w = 0; w < windows.length; ++w) {
      const prompt = windows[w].slice(0, Math.floor(N / 2));
      let {logits, cache} = await run(prompt, 0, emptyCache());
      let past = prompt.length;
      for (let k = 0; k < K; ++k) {
        const id = argmaxLast(logits);
        ids[w * K + k] = BigInt(id);
        if (k + 1 < K) ({logits, cache} = await run([id], past, cache)), past += 1;
      }
    }
    writeNpy(args[args.indexOf('--generate') + 2], '<i8', [windows.length, K], ids);
  }
  console.log(`${model}: ${windows.length} windows x ${N} tokens, vocab ${V}${K ? `, ${K} greedy steps each` : ''}`);
})().catch(e => { console.error(`lm_figures.js: ${e.message}`); process.exit(1); });
