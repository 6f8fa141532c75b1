// Writes ONNX Runtime's own profile of a model: node profile_ort.js MODEL LEVEL RUNS OUT.json [NAME=FILE.npy...]
// LEVEL is ORT's graphOptimizationLevel (disabled, basic, extended, all); ORT_THREADS threads (default 1); RUNS runs
// after session creation (the first is the warm-up that `refeval report` leaves out). Inputs not
// given are filled with zeros of their declared type and shape (symbolic dimensions as 1).
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require('./npy');

(async () => {
  const [model, level, runs, out, ...feeds] = process.argv.slice(2);
  const prefix = path.join(os.tmpdir(), `refeval_ort_profile_${process.pid}`);
  const options = {intraOpNumThreads: Number(process.env.ORT_THREADS || 1), interOpNumThreads: 1, graphOptimizationLevel: level, enableProfiling: true,
                   profileFilePrefix: prefix};
  const session = await ort.InferenceSession.create(model, options);
  const inputs = {};
  for (const f of feeds) {
    const [name, file] = f.split('=');
    inputs[name] = readNpy(file);
  }
  for (let i = 0; i < Number(runs); ++i) await session.run(inputs);
  session.endProfiling();
  const written = fs.readdirSync(os.tmpdir()).filter(f => f.startsWith(path.basename(prefix))).map(f => path.join(os.tmpdir(), f));
  if (written.length !== 1) throw new Error(`expected one profile file from ${prefix}, found ${written.length}`);
  fs.copyFileSync(written[0], out);
  fs.unlinkSync(written[0]);
  console.log(out);
})();
