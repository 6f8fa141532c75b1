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

// numpy descr <-> ORT tensor type and typed array (as tests/data/ort/run_ort.js)
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
