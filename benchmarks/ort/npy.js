// Reads a little-endian .npy file into an onnxruntime-node Tensor (the dtypes refeval's examples use).
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
                 '<f8': ['float64', Float64Array], '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
                 '<f2': ['float16', Uint16Array]};
  const [type, Array] = kinds[descr];
  return new ort.Tensor(type, new Array(copy), shape);
}

module.exports = {readNpy};
