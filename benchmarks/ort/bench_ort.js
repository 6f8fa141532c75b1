// Times ONNX Runtime (onnxruntime-node, CPU) on a model: node bench_ort.js MODEL REPEAT NAME=FILE.npy...
// Prints "median_ms min_ms". The peer of `refeval run --repeat` in benchmarks/compare.sh.
// ORT_LEVEL sets graphOptimizationLevel (disabled, basic, extended, all; default all).
// ORT_THREADS sets intraOpNumThreads (default 1; interOpNumThreads stays 1).
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');

(async () => {
  const [model, repeat, ...feeds] = process.argv.slice(2);
  const options = {intraOpNumThreads: Number(process.env.ORT_THREADS || 1), interOpNumThreads: 1, graphOptimizationLevel: process.env.ORT_LEVEL || 'all'};
  const session = await ort.InferenceSession.create(model, options);
  const inputs = {};
  for (const f of feeds) {
    const [name, file] = f.split('=');
    inputs[name] = readNpy(file);
  }
  await session.run(inputs);  // warm-up
  const times = [];
  for (let i = 0; i < Number(repeat); ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(inputs);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(times[Math.floor(times.length / 2)].toFixed(3), times[0].toFixed(3));
})();
