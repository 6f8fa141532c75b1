// Writes the profile of ONNX Runtime Web 1.16 (WebAssembly, run in Node) for a model whose
// input is X, float32 (3, 10), as linreg's: node profile_ort_web.js MODEL LEVEL RUNS > OUT.json
// ORT before 1.20 wrote fence events around every kernel, and onnxruntime-node of those versions
// has no profiling, but the wasm build of the same core prints the profile to the console at
// endProfiling() (to stdout: redirect it). Inputs are a fixed ramp (i % 7) / 5 - 0.4.
// Set up once: npm install --ignore-scripts onnxruntime-web@1.16.3 (in a folder of your own;
// NODE_PATH=that/node_modules).
const fs = require('fs');
const ort = require('onnxruntime-web');

(async () => {
  const [model, level, runs] = process.argv.slice(2);
  ort.env.wasm.numThreads = 1;
  const session = await ort.InferenceSession.create(fs.readFileSync(model),
      {graphOptimizationLevel: level, enableProfiling: true, executionProviders: ['wasm']});
  const inputs = {};
  for (const name of session.inputNames)
    inputs[name] = new ort.Tensor('float32', new Float32Array(30).map((_, i) => (i % 7) / 5 - 0.4), [3, 10]);
  for (let i = 0; i < Number(runs); ++i) await session.run(inputs);
  session.endProfiling();
  await session.release();
})();
