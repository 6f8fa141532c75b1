// ONNX Runtime side of differential.py: runs many models in one process.
//   NODE_PATH=benchmarks/ort/node_modules node differential_ort.js LIST
// LIST has one line per model, tab-separated: MODEL.onnx FEEDS_DIR OUT_DIR. FEEDS_DIR holds one
// folder per input set (set_0, set_1, ...) of NAME.npy files; every graph output of set_K is written
// to OUT_DIR/set_K/NAME.npy. CPU, one thread, graph optimizations disabled (the model's nodes as
// written, fused com.microsoft operators included). A model ORT refuses or fails on gets
// OUT_DIR/error.txt with the message and the run goes on with the next line.
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy, writeNpy} = require(path.join(__dirname, '..', '..', '..', 'benchmarks', 'ort', 'npy.js'));

(async () => {
  const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter(l => l.trim());
  for (const line of lines) {
    const [model, feedsDir, outDir] = line.split('\t');
    fs.mkdirSync(outDir, {recursive: true});
    try {
      const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1,
                                                                graphOptimizationLevel: 'disabled', logSeverityLevel: 3});
      for (const set of fs.readdirSync(feedsDir).filter(d => d.startsWith('set_')).sort()) {
        const feeds = {};
        for (const name of session.inputNames) feeds[name] = readNpy(path.join(feedsDir, set, `${name}.npy`));
        const results = await session.run(feeds);
        fs.mkdirSync(path.join(outDir, set), {recursive: true});
        for (const name of session.outputNames) writeNpy(path.join(outDir, set, `${name}.npy`), results[name]);
      }
    } catch (e) {
      fs.writeFileSync(path.join(outDir, 'error.txt'), String(e && e.message || e).split('\n')[0] + '\n');
    }
  }
})().catch(e => { console.error(`differential_ort.js: ${e.message}`); process.exit(1); });
