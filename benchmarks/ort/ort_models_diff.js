// Runs two models on the same inputs in ONNX Runtime (CPU, one thread) and prints how far the
// second's outputs are from the first's, output by output (matched by name):
//   node ort_models_diff.js REFERENCE.onnx OTHER.onnx NAME=FILE.npy...
// Prints "MAX_ABS_DIFF MAX_ABS_REF" (the largest absolute difference over every output and the
// largest absolute reference value, for scale), then one line per output: "NAME max_abs_diff".
// ORT_LEVEL sets graphOptimizationLevel of both sessions (disabled, basic, extended, all; default
// all), ORT_REF_LEVEL the reference's alone (default ORT_LEVEL): ORT_REF_LEVEL=disabled with one
// model twice measures what ORT's own optimizer changes. Exits 2 if a session cannot be created or
// run, or if the outputs' names or sizes differ.
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');

async function run(model, inputs, level) {
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3,
                                                            graphOptimizationLevel: level});
  return [session.outputNames, await session.run(inputs)];
}

(async () => {
  const [reference, other, ...feeds] = process.argv.slice(2);
  const inputs = {};
  for (const f of feeds) {
    const [name, file] = f.split('=');
    inputs[name] = readNpy(file);
  }
  const level = process.env.ORT_LEVEL || 'all';
  const [names, want] = await run(reference, inputs, process.env.ORT_REF_LEVEL || level);
  const [, got] = await run(other, inputs, level);
  let max = 0, scale = 0;
  const lines = [];
  for (const name of names) {
    if (!(name in got)) throw new Error(`${other} has no output '${name}'`);
    const a = want[name].data, b = got[name].data;
    if (a.length !== b.length) throw new Error(`output '${name}': ${b.length} values, expected ${a.length}`);
    let m = 0;
    for (let i = 0; i < a.length; ++i) {
      const d = Math.abs(Number(a[i]) - Number(b[i]));
      m = d > m || Number.isNaN(d) ? d : m;  // a NaN is reported, not skipped
      scale = Math.max(scale, Math.abs(Number(a[i])));
    }
    max = m > max || Number.isNaN(m) ? m : max;
    lines.push(`${name} ${m.toExponential(3)}`);
  }
  console.log(max.toExponential(3), scale.toExponential(3));
  for (const l of lines) console.log(l);
})().catch(e => { console.error(`ort_models_diff.js: ${e.message}`); process.exit(2); });
