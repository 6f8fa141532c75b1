// Writes the expected outputs of backend-test folders with ONNX Runtime as the oracle: runs
// FOLDER/model.onnx (onnxruntime-node, CPU, one thread, graphOptimizationLevel 'disabled', so that
// ORT's own fusions play no part) on every test_data_set_K/input_I.pb and writes
// test_data_set_K/output_J.pb, J in the order of the graph's outputs, as TensorProtos laid out as
// onnx.numpy_helper.from_array writes them (dims, data_type, name, raw_data):
//   NODE_PATH=benchmarks/ort/node_modules node tests/data/optimize/ort_outputs.js FOLDER...
// make_handbuilt.py runs it on the hand-built folders.
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readTensor} = require(path.join(__dirname, '..', '..', '..', 'benchmarks', 'ort', 'onnx_pb.js'));

const dataTypes = {float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, bool: 9, float64: 11};

function varint(value) {
  const bytes = [];
  let v = BigInt(value);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    bytes.push(byte);
  } while (v);
  return Buffer.from(bytes);
}

// TensorProto fields 1 (dims, one varint each: onnx.proto does not pack them), 2 (data_type),
// 8 (name), 9 (raw_data, little-endian).
function tensorProto(name, tensor) {
  if (!(tensor.type in dataTypes)) throw new Error(`output '${name}': type ${tensor.type} is not written here`);
  const parts = [];
  for (const d of tensor.dims) parts.push(varint(1 << 3 | 0), varint(d));
  parts.push(varint(2 << 3 | 0), varint(dataTypes[tensor.type]));
  const nameBytes = Buffer.from(name, 'utf8');
  parts.push(varint(8 << 3 | 2), varint(nameBytes.length), nameBytes);
  const data = tensor.data;
  const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  parts.push(varint(9 << 3 | 2), varint(raw.length), raw);
  return Buffer.concat(parts);
}

(async () => {
  const folders = process.argv.slice(2);
  if (!folders.length) throw new Error('usage: ort_outputs.js FOLDER...');
  for (const folder of folders) {
    const session = await ort.InferenceSession.create(
        path.join(folder, 'model.onnx'),
        {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled', logSeverityLevel: 3});
    const sets = fs.readdirSync(folder).filter(d => d.startsWith('test_data_set_')).sort();
    for (const set of sets) {
      const dir = path.join(folder, set);
      const feeds = {};
      for (const f of fs.readdirSync(dir).filter(f => /^input_\d+\.pb$/.test(f))) {
        const {name, tensor} = readTensor(path.join(dir, f));
        feeds[name] = tensor;
      }
      const results = await session.run(feeds);
      session.outputNames.forEach((name, j) => {
        fs.writeFileSync(path.join(dir, `output_${j}.pb`), tensorProto(name, results[name]));
      });
    }
    console.log(`${folder}: ${sets.length} sets, outputs ${session.outputNames.join(', ')}`);
  }
})().catch(e => { console.error(`ort_outputs.js: ${e.message}`); process.exit(2); });
