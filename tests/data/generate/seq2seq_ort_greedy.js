// Greedy decoding of an Optimum-style encoder-decoder split in ONNX Runtime (onnxruntime-node, CPU,
// one thread), for make_seq2seq.py's check of its folders: encoder_model.onnx once, then
// decoder_model.onnx on the decoder start token (presents.{i}.decoder/encoder.* become
// past_key_values.{i}.decoder/encoder.*), then decoder_with_past_model.onnx one token at a time
// (its present.{i}.decoder.* replace the decoder past; the encoder past stays), the argmax of the
// last position (the first of equal maxima). Reads FOLDER/expected.txt ("<case> <start id>
// <new tokens>") and each case's <case>.prompt.npy + <case>.mask.npy or <case>.features.npy.
//   node seq2seq_ort_greedy.js FOLDER [--opt disabled|basic|extended|all]
// Prints JSON: {case: {ids: [[...] per row], logits: [flat (steps, B, V) float32 the argmax read]}}.
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require('../../../benchmarks/ort/npy');

(async () => {
  const args = process.argv.slice(2);
  const folder = args[0];
  const optIndex = args.indexOf('--opt');
  const opt = optIndex >= 0 ? args[optIndex + 1] : 'disabled';
  const options = {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: opt, logSeverityLevel: 3};
  const open = f => ort.InferenceSession.create(path.join(folder, f), options);
  const encoder = await open('encoder_model.onnx');
  const decoder = await open('decoder_model.onnx');
  const decoderPast = await open('decoder_with_past_model.onnx');
  const result = {};
  const lines = fs.readFileSync(path.join(folder, 'expected.txt'), 'utf8').split('\n').filter(l => l.trim());
  for (const line of lines) {
    const [name, startText, newText] = line.trim().split(/\s+/);
    const start = BigInt(startText), newTokens = Number(newText);
    const file = kind => path.join(folder, `${name}.${kind}.npy`);
    const encFeeds = {};
    if (encoder.inputNames.includes('input_features')) {
      encFeeds.input_features = readNpy(file('features'));
    } else {
      encFeeds.input_ids = readNpy(file('prompt'));
      encFeeds.attention_mask = readNpy(file('mask'));
    }
    const hidden = (await encoder.run(encFeeds)).last_hidden_state;
    const B = hidden.dims[0];
    const maskFeed = decoder.inputNames.includes('encoder_attention_mask')
      ? {encoder_attention_mask: encFeeds.attention_mask} : {};
    const ids = Array.from({length: B}, () => []);
    const logitsRead = [];
    let out = await decoder.run({input_ids: new ort.Tensor('int64', new BigInt64Array(B).fill(start), [B, 1]),
                                 encoder_hidden_states: hidden, ...maskFeed});
    const past = {};
    const keep = (session, out) => {  // present.* -> past_key_values.*
      for (const n of session.outputNames.filter(n => n.startsWith('present.'))) {
        past[n.replace('present.', 'past_key_values.')] = out[n];
      }
    };
    keep(decoder, out);
    for (let step = 0; step < newTokens; ++step) {
      const logits = out.logits, [, S, V] = logits.dims;
      const next = new BigInt64Array(B);
      for (let b = 0; b < B; ++b) {
        const row = logits.data.subarray((b * S + S - 1) * V, (b * S + S) * V);
        let best = 0;
        for (let v = 1; v < V; ++v) if (row[v] > row[best]) best = v;
        next[b] = BigInt(best);
        ids[b].push(best);
        logitsRead.push(...row);
      }
      if (step === newTokens - 1) break;
      out = await decoderPast.run({input_ids: new ort.Tensor('int64', next, [B, 1]), ...maskFeed, ...past});
      keep(decoderPast, out);
    }
    result[name] = {ids, logits: logitsRead};
  }
  process.stdout.write(JSON.stringify(result) + '\n');
})().catch(e => { console.error(e); process.exit(1); });
