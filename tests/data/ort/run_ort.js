// Runs each fixture folder's model.onnx in ONNX Runtime (onnxruntime-node, CPU, one thread,
// graph optimizations disabled) on the feeds fixture.py left in FOLDER/.ort/feeds/NAME.npy and
// writes every graph output to FOLDER/.ort/outputs/NAME.npy. Called by fixture.py only:
//   node run_ort.js FOLDER...
// onnxruntime-node is found through NODE_PATH (benchmarks/ort/node_modules, see fixture.py).
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// numpy descr <-> ORT tensor type and typed array
const kinds = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array],
  '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  if (!(descr in kinds)) throw new Error(`${file}: unsupported dtype ${descr}`);
  const [type, Array] = kinds[descr];
  const bytes = new Uint8Array(buf.subarray(10 + headerLen)).buffer;
  return new ort.Tensor(type, new Array(bytes), shape);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(kinds).find(([, [type]]) => type === tensor.type);
  if (!entry) throw new Error(`${file}: unsupported output type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                         Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

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
