// Runs each fixture folder's model.onnx in ONNX Runtime (onnxruntime-node, CPU, one thread,
// graph optimizations disabled) on the feeds fixture.py left in FOLDER/.ort/feeds/NAME.npy and
// writes every graph output to FOLDER/.ort/outputs/NAME.npy. Called by fixture.py only:
//   node run_ort.js FOLDER...
// onnxruntime-node is found through NODE_PATH (benchmarks/ort/node_modules, see fixture.py).
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy, writeNpy} = require(path.join(__dirname, '..', '..', '..', 'benchmarks', 'ort', 'npy.js'));

(async () => {
  for (const folder of process.argv.slice(2)) {
    const work = path.join(folder, '.ort');
    const session = await ort.InferenceSession.create(path.join(folder, 'model.onnx'),
                                                      {intraOpNumThreads: 1, graphOptimizationLevel: 'disabled', logSeverityLevel: 3});
    const feeds = {};
    for (const name of session.inputNames) feeds[name] = readNpy(path.join(work, 'feeds', `${name}.npy`));
    const results = await session.run(feeds);
    fs.mkdirSync(path.join(work, 'outputs'), {recursive: true});
    for (const name of session.outputNames) writeNpy(path.join(work, 'outputs', `${name}.npy`), results[name]);
  }
})().catch(e => { console.error(`run_ort.js: ${e.message}`); process.exit(1); });
