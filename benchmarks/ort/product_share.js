// The share of a model's node time that ONNX Runtime spends in products, from its own profile:
//   node product_share.js PROFILE.json   ->   "<share> <product ms per run> <all nodes ms per run>"
// Products are the operators whose arithmetic every fused form still does (the dense and
// quantized matrix products and convolutions; an attention's Q·K and P·V are products in the
// original graph and stay products inside MultiHeadAttention). If an optimizer removed every
// other node's time and left the products as fast as they are, the model would take `share` of
// its node time: the floor of what rewriting the graph can gain. The first run (the warm-up, which
// `refeval report` also leaves out) is not counted.
const fs = require('fs');

const products = new Set(['MatMul', 'FusedMatMul', 'Gemm', 'MatMulNBits', 'MatMulInteger', 'QGemm',
                          'DynamicQuantizeMatMul', 'MatMulIntegerToFloat', 'Conv', 'FusedConv', 'NhwcFusedConv',
                          'QLinearConv', 'QLinearMatMul', 'ConvTranspose']);

const [file] = process.argv.slice(2);
if (!file) {
  console.error('usage: node product_share.js PROFILE.json');
  process.exit(2);
}
const events = JSON.parse(fs.readFileSync(file, 'utf8'));
const runs = events.filter(e => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
if (runs.length < 2) {
  console.error(`${file}: ${runs.length} model_run events; the profile needs a warm-up and at least one more run`);
  process.exit(1);
}
const warmupEnd = runs[0].ts + runs[0].dur;
let product = 0;
let all = 0;
for (const e of events) {
  if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || e.ts < warmupEnd) continue;
  all += e.dur;
  if (products.has(e.args.op_name)) product += e.dur;
}
if (all === 0) {
  console.error(`${file}: no node times after the warm-up`);
  process.exit(1);
}
const perRun = us => (us / 1000 / (runs.length - 1)).toFixed(3);
console.log(`${(product / all).toFixed(4)} ${perRun(product)} ${perRun(all)}`);
