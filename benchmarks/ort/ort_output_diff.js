// Runs a model in ONNX Runtime (CPU, one thread, optimizations disabled) and prints the largest
// absolute difference of its first output from EXPECTED.npy: node ort_output_diff.js MODEL EXPECTED.npy NAME=FILE.npy...
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');

(async () => {
  const [model, expected, ...feeds] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, graphOptimizationLevel: 'disabled'});
  const inputs = {};
  for (const f of feeds) {
    const [name, file] = f.split('=');
    inputs[name] = readNpy(file);
  }
  const out = (await session.run(inputs))[session.outputNames[0]].data;
  const want = readNpy(expected).data;
  if (out.length !== want.length) throw new Error(`output has ${out.length} values, expected ${want.length}`);
  let max = 0;
  for (let i = 0; i < out.length; ++i) max = Math.max(max, Math.abs(out[i] - want[i]));
  console.log(max.toExponential(3));
})();
