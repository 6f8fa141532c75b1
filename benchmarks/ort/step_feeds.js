// The feeds of one step of a greedy generation loop in ONNX Runtime, as refeval's generator makes
// them (tools/generate/generator.cc): the step's ids, the attention mask so far, position ids
// following the mask (cumsum - 1, 1 on padding), cache_position and use_cache_branch when the model
// has them, beside the cache. Shared by benchmarks/ort/generate_ort.js and the generate tests'
// oracle (tests/data/generate/ort_greedy.js).
const ort = require('onnxruntime-node');

const big = a => BigInt64Array.from(a.map(BigInt));

// ids: the step's ids, row-major (B, S); mask: (B, T) rows; past: positions already cached.
function stepFeeds(session, info, cache, {ids, mask, B, S, T, past, step}) {
  const feeds = {...cache, input_ids: new ort.Tensor('int64', big(ids), [B, S])};
  if (session.inputNames.includes('attention_mask')) feeds.attention_mask = new ort.Tensor('int64', big(mask.flat()), [B, T]);
  if (session.inputNames.includes('position_ids')) {
    const pos = [];
    for (const r of mask) {
      let c = 0;
      const all = r.map(v => (c += v, v ? c - 1 : 1));
      pos.push(...all.slice(T - S));
    }
    feeds.position_ids = new ort.Tensor('int64', big(pos), [B, S]);
  }
  if (session.inputNames.includes('cache_position')) {
    const perRow = info('cache_position').shape[0] === info('input_ids').shape[0];
    const cp = perRow ? new Array(B).fill(past) : Array.from({length: S}, (_, s) => past + s);
    feeds.cache_position = new ort.Tensor('int64', big(cp), [cp.length]);
  }
  if (session.inputNames.includes('use_cache_branch')) feeds.use_cache_branch = new ort.Tensor('bool', Uint8Array.from([step > 0 ? 1 : 0]), [1]);
  return feeds;
}

module.exports = {stepFeeds};
