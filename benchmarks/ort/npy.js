// Little-endian .npy files <-> onnxruntime-node Tensors (the dtypes refeval's examples and tests use).
const fs = require('fs');
const ort = require('onnxruntime-node');

// numpy descr -> ORT tensor type and typed array
const kinds = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array],
  '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  if (!(descr in kinds)) throw new Error(`${path}: unsupported dtype ${descr}`);
  const [type, Array] = kinds[descr];
  const copy = new Uint8Array(buf.subarray(10 + headerLen)).buffer;
  return new ort.Tensor(type, new Array(copy), shape);
}

// Writes an ORT tensor as a version 1.0 .npy file.
function writeNpy(path, tensor) {
  const entry = Object.entries(kinds).find(([, [type]]) => type === tensor.type);
  if (!entry) throw new Error(`${path}: unsupported output type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';  // magic + version + length + header: a multiple of 64
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                         Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

module.exports = {readNpy, writeNpy};
