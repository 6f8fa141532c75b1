// Preloaded into run_ort.js (NODE_OPTIONS=--require) by make_decoder_attention.py for the
// SparseAttention suite: ORT's CPU SparseAttention insists that past_key/present_key and
// past_value/present_value are one buffer (it checks the data pointers), which a plain session.run
// never gives. Every session.run here binds the outputs present_key / present_value to the
// tensors fed as past_key / past_value, so ORT writes the new rows into the past buffers.
const ort = require('onnxruntime-node');

const pairs = [['present_key', 'past_key'], ['present_value', 'past_value']];
const create = ort.InferenceSession.create;
ort.InferenceSession.create = async (...args) => {
  const session = await create.apply(ort.InferenceSession, args);
  const run = session.run.bind(session);
  session.run = (feeds, ...rest) => {
    const fetches = {};
    for (const name of session.outputNames) fetches[name] = null;
    for (const [out, inp] of pairs) if (out in fetches && inp in feeds) fetches[out] = feeds[inp];
    return run(feeds, fetches, ...rest);
  };
  return session;
};
