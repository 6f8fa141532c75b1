// The node count of a model after ONNX Runtime's own session optimizer (CPU; level 'all' unless
// ORT_LEVEL says otherwise): node ort_optimized_nodes.js MODEL OUT.onnx
// ORT writes its optimized graph to OUT.onnx (optimizedModelFilePath); prints
// "NODES Op:count,Op:count,..." (the operators of the optimized main graph, most frequent first).
const ort = require('onnxruntime-node');
const {countNodes} = require('./onnx_pb');

(async () => {
  const [model, out] = process.argv.slice(2);
  await ort.InferenceSession.create(model, {intraOpNumThreads: 1, graphOptimizationLevel: process.env.ORT_LEVEL || 'all',
                                            optimizedModelFilePath: out, logSeverityLevel: 3});
  const {total, ops} = countNodes(out);
  const list = Object.entries(ops).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  console.log(total, list.map(([op, n]) => `${op}:${n}`).join(','));
})().catch(e => { console.error(`ort_optimized_nodes.js: ${e.message}`); process.exit(2); });
