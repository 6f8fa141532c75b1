// Times ONNX Runtime (onnxruntime-node, CPU) on a model: node bench_ort.js MODEL REPEAT NAME=FILE.npy...
// Prints "median_ms min_ms". The peer of `refeval run --repeat` in benchmarks/compare.sh.
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const buf = fs.readFileSync(path);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const data = buf.subarray(10 + headerLen);
  const copy = new Uint8Array(data).buffer;
  const kinds = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
                 '<f8': ['float64', Float64Array], '|b1': ['bool', Uint8Array]};
  const [type, Array] = kinds[descr];
  return new ort.Tensor(type, new Array(copy), shape);
}

(async () => {
  const [model, repeat, ...feeds] = process.argv.slice(2);
  const options = {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all'};
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
