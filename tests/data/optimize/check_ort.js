// Runs backend-test folders (model.onnx + test_data_set_K/input_I.pb, output_J.pb) in ONNX Runtime
// (onnxruntime-node, CPU, one thread) and prints, per folder, the largest absolute difference of
// every output of every data set from the expected (torch's) outputs:
//   NODE_PATH=benchmarks/ort/node_modules node tests/data/optimize/check_ort.js [--opt LEVEL] FOLDER...
// LEVEL is ORT's graphOptimizationLevel (disabled by default; 'all' runs ORT's own fusions).
// Exits 1 if a difference exceeds --atol (default 1e-4).
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// The few TensorProto fields numpy_helper.from_array writes: dims (1), data_type (2), name (8),
// raw_data (9). A protobuf reader of varints and length-delimited fields is enough.
function readVarint(buf, pos) {
  let value = 0n, shift = 0n, byte;
  do {
    byte = buf[pos++];
    value |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
  } while (byte & 0x80);
  return [value, pos];
}

const types = {1: ['float32', Float32Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
               9: ['bool', Uint8Array], 11: ['float64', Float64Array]};

function readTensor(file) {
  const buf = fs.readFileSync(file);
  const dims = [];
  let type = 0, name = '', raw = null, pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      if (field === 1) dims.push(Number(v));
      else if (field === 2) type = Number(v);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const bytes = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
      if (field === 1) {  // packed dims
        for (let p = 0; p < bytes.length;) { let v; [v, p] = readVarint(bytes, p); dims.push(Number(v)); }
      } else if (field === 8) name = bytes.toString('utf8');
      else if (field === 9) raw = bytes;
      else throw new Error(`${file}: TensorProto field ${field} is not read here (only raw_data)`);
    } else {
      throw new Error(`${file}: unexpected wire type ${wire}`);
    }
  }
  if (!(type in types)) throw new Error(`${file}: data type ${type} is not read here`);
  const [ortType, Array] = types[type];
  const copy = new Uint8Array(raw ? raw : []).buffer;
  return {name, tensor: new ort.Tensor(ortType, new Array(copy), dims)};
}

(async () => {
  const args = process.argv.slice(2);
  let level = 'disabled', atol = 1e-4;
  const folders = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--opt') level = args[++i];
    else if (args[i] === '--atol') atol = Number(args[++i]);
    else folders.push(args[i]);
  }
  let failed = false;
  for (const folder of folders) {
    const session = await ort.InferenceSession.create(path.join(folder, 'model.onnx'),
                                                      {intraOpNumThreads: 1, graphOptimizationLevel: level, logSeverityLevel: 3});
    const sets = fs.readdirSync(folder).filter(d => d.startsWith('test_data_set_')).sort();
    let worst = 0, where = '';
    for (const set of sets) {
      const dir = path.join(folder, set);
      const files = fs.readdirSync(dir);
      const feeds = {};
      for (const f of files.filter(f => f.startsWith('input_'))) {
        const {name, tensor} = readTensor(path.join(dir, f));
        feeds[name] = tensor;
      }
      const results = await session.run(feeds);
      for (const f of files.filter(f => f.startsWith('output_'))) {
        const {name, tensor} = readTensor(path.join(dir, f));
        const got = results[name];
        if (!got) throw new Error(`${folder}/${set}: ORT has no output '${name}'`);
        if (got.dims.join() !== tensor.dims.join())
          throw new Error(`${folder}/${set}: output '${name}' has shape [${got.dims}], expected [${tensor.dims}]`);
        for (let i = 0; i < got.data.length; ++i) {
          const d = Math.abs(Number(got.data[i]) - Number(tensor.data[i]));
          if (!(d <= worst)) { worst = d; where = `${set} ${name}`; }
        }
      }
    }
    if (!(worst <= atol)) failed = true;
    console.log(`${path.basename(path.resolve(folder))}: ${sets.length} sets, max |ort - torch| ${worst.toExponential(2)} (${where})`);
  }
  process.exit(failed ? 1 : 0);
})().catch(e => { console.error(`check_ort.js: ${e.message}`); process.exit(2); });
