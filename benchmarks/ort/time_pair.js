// Times two models that compute the same thing (an original and its optimized form) in ONNX
// Runtime (CPU, level ORT_LEVEL, default all) on the same feeds, alternated in ROUNDS rounds of
// REPEAT runs each, so a machine's drift within a minute cancels in each round's ratio:
//   node time_pair.js A B REPEAT ROUNDS NAME=FILE.npy...
// ORT_THREADS sets intraOpNumThreads (default 1). Prints one line:
//   "a_ms b_ms ratio max_abs_diff max_abs"
// a_ms and b_ms: the medians over rounds of each round's median; ratio: the median of the rounds'
// b/a; max_abs_diff: the largest difference of any output of b from a's on the first run;
// max_abs: the largest magnitude of a's outputs (the scale the difference is read against).
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');

const median = v => [...v].sort((x, y) => x - y)[Math.floor((v.length - 1) / 2)];

async function timed(session, feeds, repeat) {
  const times = [];
  for (let i = 0; i < repeat; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(times);
}

(async () => {
  const [a, b, repeat, rounds, ...feedArgs] = process.argv.slice(2);
  const options = {intraOpNumThreads: Number(process.env.ORT_THREADS || 1), interOpNumThreads: 1,
                   graphOptimizationLevel: process.env.ORT_LEVEL || 'all', logSeverityLevel: 3};
  const load = async path => {
    try {
      return await ort.InferenceSession.create(path, options);
    } catch (e) {
      throw new Error(`${path}: ${String(e.message || e).split('\n')[0]}`);
    }
  };
  const sessions = [await load(a), await load(b)];
  const feeds = {};
  for (const f of feedArgs) {
    const [name, file] = f.split('=');
    feeds[name] = readNpy(file);
  }
  // warm-up, and the outputs compared by name (an optimized model keeps the graph outputs)
  const first = async (k, path) => {
    try {
      return await sessions[k].run(feeds);
    } catch (e) {
      throw new Error(`${path}: ${String(e.message || e).split('\n')[0]}`);
    }
  };
  const [outA, outB] = [await first(0, a), await first(1, b)];
  let diff = 0, scale = 0;
  for (const name of sessions[0].outputNames) {
    const x = outA[name].data, y = outB[name].data;
    if (x.length !== y.length) throw new Error(`output '${name}': ${x.length} values vs ${y.length}`);
    for (let i = 0; i < x.length; ++i) {
      diff = Math.max(diff, Math.abs(Number(x[i]) - Number(y[i])));
      scale = Math.max(scale, Math.abs(Number(x[i])));
    }
  }
  // Each session has its own intra-op threads, which spin for a while after their last work: a
  // pause before each block lets the other session's go idle, so that at two threads they do not
  // take the core the timed session's second thread needs.
  const settle = () => new Promise(resolve => setTimeout(resolve, 30));
  const ta = [], tb = [], ratios = [];
  for (let r = 0; r < Number(rounds); ++r) {
    // the order within a round alternates too (a cache warmed by one model favours the other)
    const first = r % 2;
    const t = [0, 0];
    await settle();
    t[first] = await timed(sessions[first], feeds, Number(repeat));
    await settle();
    t[1 - first] = await timed(sessions[1 - first], feeds, Number(repeat));
    ta.push(t[0]), tb.push(t[1]), ratios.push(t[1] / t[0]);
  }
  console.log(median(ta).toFixed(3), median(tb).toFixed(3), median(ratios).toFixed(4), diff.toExponential(2), scale.toPrecision(3));
})().catch(e => {
  console.error(String(e.message || e).split('\n')[0]);
  process.exit(1);
});
