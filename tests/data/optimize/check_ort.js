// Runs backend-test folders (model.onnx + test_data_set_K/input_I.pb, output_J.pb) in ONNX Runtime
// (onnxruntime-node, CPU, one thread) and prints, per folder, the largest absolute difference of
// every output of every data set from the expected (torch's) outputs:
//   NODE_PATH=benchmarks/ort/node_modules node tests/data/optimize/check_ort.js [--opt LEVEL] FOLDER...
// LEVEL is ORT's graphOptimizationLevel (disabled by default; 'all' runs ORT's own fusions).
// --skip-hidden-queries INPUT leaves out the positions (b, t) where the (B, T) input INPUT is 0, in
// every output with those axes (hidden states, logits, presents): a left-padded decoder's pads,
// where every key is hidden and runtimes differ by design, and whatever is computed from them.
// Exits 1 if a difference exceeds --atol (default 1e-4).
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// input_K.pb / output_K.pb as onnxruntime-node Tensors: the benchmarks' small protobuf reader.
const {readTensor} = require(path.join(__dirname, '..', '..', '..', 'benchmarks', 'ort', 'onnx_pb.js'));

(async () => {
  const args = process.argv.slice(2);
  let level = 'disabled', atol = 1e-4, skipBy = '';
  const folders = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--opt') level = args[++i];
    else if (args[i] === '--atol') atol = Number(args[++i]);
    else if (args[i] === '--skip-hidden-queries') skipBy = args[++i];
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
        // The (batch, position) axes of this output: (0, 1) for hidden states and logits, (0, 2)
        // for a per-layer present (B, N, T, h), (1, 3) for ORT's stacked one (2, B, N, T, h).
        const mask = skipBy && feeds[skipBy];
        let axes = null;
        if (mask && mask.dims.length === 2)
          for (const [bi, ti] of [[0, 1], [0, 2], [1, 3]])
            if (!axes && got.dims.length > ti && got.dims[bi] === mask.dims[0] && got.dims[ti] === mask.dims[1]) axes = [bi, ti];
        const strides = got.dims.map((_, i) => got.dims.slice(i + 1).reduce((a, b) => a * b, 1));
        for (let i = 0; i < got.data.length; ++i) {
          if (axes) {
            const b = Math.floor(i / strides[axes[0]]) % got.dims[axes[0]], t = Math.floor(i / strides[axes[1]]) % got.dims[axes[1]];
            if (Number(mask.data[b * mask.dims[1] + t]) === 0) continue;
          }
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
