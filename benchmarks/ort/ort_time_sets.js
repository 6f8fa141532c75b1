// Times ONNX Runtime (onnxruntime-node, CPU, one thread) on backend-test data sets of a model:
//   node ort_time_sets.js MODEL REPEAT SET_DIR...      (SET_DIR holds input_K.pb)
// One session; per set a warm-up run, then REPEAT runs; prints one line per set: "median_ms min_ms".
// ORT_LEVEL sets graphOptimizationLevel (disabled, basic, extended, all; default disabled, so that
// the fusions timed are the model's own).
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {readTensor} = require('./onnx_pb');

(async () => {
  const [model, repeat, ...sets] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3,
                                                            graphOptimizationLevel: process.env.ORT_LEVEL || 'disabled'});
  for (const dir of sets) {
    const feeds = {};
    for (const f of fs.readdirSync(dir).filter(f => /^input_\d+\.pb$/.test(f))) {
      const {name, tensor} = readTensor(path.join(dir, f));
      feeds[name] = tensor;
    }
    await session.run(feeds);  // warm-up
    const times = [];
    for (let i = 0; i < Number(repeat); ++i) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    console.log(times[Math.floor(times.length / 2)].toFixed(3), times[0].toFixed(3));
  }
})().catch(e => { console.error(`ort_time_sets.js: ${e.message}`); process.exit(2); });
