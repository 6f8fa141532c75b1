// The ONNX Runtime half of the oracle of `refeval compare A B --input-set DIR...` (data_figures.py is
// the other): runs MODEL in onnxruntime-node (CPU, one thread, graph optimizations disabled) on each
// input set, a folder of NAME.npy files, one per graph input, and writes every graph output as
// OUT/K/NAME.npy, K the set's position on the command line.
//   NODE_PATH=benchmarks/ort/node_modules node tests/data/quality/run_sets.js MODEL OUT SET_DIR...
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require(path.join(__dirname, '..', '..', '..', 'benchmarks', 'ort', 'npy.js'));
const {writeNpy} = require('./write_npy');

(async () => {
  const [model, out, ...sets] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1,
                                                            graphOptimizationLevel: 'disabled', logSeverityLevel: 3});
  const descr = {float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4', uint8: '|u1', int8: '|i1', bool: '|b1'};
  for (let k = 0; k < sets.length; ++k) {
    const feeds = {};
    for (const f of fs.readdirSync(sets[k]).filter(f => f.endsWith('.npy'))) feeds[f.slice(0, -4)] = readNpy(path.join(sets[k], f));
    const result = await session.run(feeds);
    fs.mkdirSync(path.join(out, String(k)), {recursive: true});
    for (const name of session.outputNames)
      writeNpy(path.join(out, String(k), `${name}.npy`), descr[result[name].type], result[name].dims, result[name].data);
  }
  console.log(`${model}: ${sets.length} input sets, outputs ${session.outputNames.join(', ')}`);
})().catch(e => { console.error(`run_sets.js: ${e.message}`); process.exit(1); });
