// The few ONNX protobuf reads the benchmark scripts need, without a protobuf library: a TensorProto
// file of a backend-test folder (input_K.pb) as an onnxruntime-node Tensor, and the operator counts
// of a model file's main graph.
const fs = require('fs');
const ort = require('onnxruntime-node');

function readVarint(buf, pos) {
  let value = 0n, shift = 0n, byte;
  do {
    byte = buf[pos++];
    value |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
  } while (byte & 0x80);
  return [value, pos];
}

// Calls visit(field, wire, value) for every field of the message buf[begin, end): value is the
// varint (BigInt) for wire type 0, the sub-buffer for wire type 2, null for fixed-size fields.
function forEachField(buf, visit, begin = 0, end = buf.length) {
  let pos = begin;
  while (pos < end) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      visit(field, wire, v);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      visit(field, wire, buf.subarray(pos, pos + Number(len)));
      pos += Number(len);
    } else if (wire === 1 || wire === 5) {
      pos += wire === 1 ? 8 : 4;
      visit(field, wire, null);
    } else {
      throw new Error(`unexpected protobuf wire type ${wire}`);
    }
  }
}

const types = {1: ['float32', Float32Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
               9: ['bool', Uint8Array], 11: ['float64', Float64Array]};

// TensorProto: dims (1, varints or packed), data_type (2), name (8), raw_data (9) — the fields
// numpy_helper.from_array writes.
function readTensor(file) {
  const buf = fs.readFileSync(file);
  const dims = [];
  let type = 0, name = '', raw = new Uint8Array(0);
  forEachField(buf, (field, wire, v) => {
    if (field === 1 && wire === 0) dims.push(Number(v));
    else if (field === 1 && wire === 2) forEachField(v, (f, w, d) => dims.push(Number(d)));
    else if (field === 2) type = Number(v);
    else if (field === 8) name = v.toString('utf8');
    else if (field === 9) raw = v;
    else throw new Error(`${file}: TensorProto field ${field} is not read here (only raw_data)`);
  });
  if (!(type in types)) throw new Error(`${file}: data type ${type} is not read here`);
  const [ortType, Array] = types[type];
  return {name, tensor: new ort.Tensor(ortType, new Array(new Uint8Array(raw).buffer), dims)};
}

// ModelProto.graph (7) -> GraphProto.node (1) -> NodeProto.op_type (4): {total, ops: {op: count}}.
function countNodes(file) {
  const buf = fs.readFileSync(file);
  const ops = {};
  let total = 0;
  forEachField(buf, (field, wire, graph) => {
    if (field !== 7) return;
    forEachField(graph, (f, w, node) => {
      if (f !== 1) return;
      ++total;
      forEachField(node, (nf, nw, v) => { if (nf === 4) ops[v.toString('utf8')] = (ops[v.toString('utf8')] || 0) + 1; });
    });
  });
  return {total, ops};
}

module.exports = {readTensor, countNodes};
