#!/usr/bin/env bash
# `refeval optimize` as a user runs it: fusions reported with ORT-style counters, the output a
# model refeval runs, --verify (exit 3 when not equivalent), --verify-each, look-alike patterns
# left alone and still equivalent at --level all, and usage errors (exit 2).
# Usage: optimize_test.sh REFEVAL MAKE_TEST_MODELS
set -u
refeval=$1
make_models=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$make_models" "$work" || exit 1
source "$(dirname "$0")/expect.sh"
m=$work

expect 0 "Fused Attention: 1" "" -- optimize $m/gpt2_attention_unfused.onnx -o $m/att.onnx --model-type gpt2 --verify --forms all
check "attention: the dynamic shapes folded, one node left" grep -qE "^nodes: 27 -> 1;" $work/out
# ORT's CPU forms (the default): MultiHeadAttention on the projection, cut into the three products
# its kernel reads, their biases in its bias input
expect 0 "Fused Attention: 1" "" -- optimize $m/gpt2_attention_unfused.onnx -o $m/att_cpu.onnx --model-type gpt2 --verify
check "attention [--forms cpu]: MultiHeadAttention after three MatMuls, no Attention" grep -qE "^operators: MatMul 3, MultiHeadAttention 1$" $work/out
check "attention [--forms cpu]: the projections' form said" grep -q "^  Wrote q/k/v projections as MultiHeadAttention reads them: 1$" $work/out
check "attention: verified" grep -q "^verify: equivalent on" $work/out
check "attention: both sides' float64 oracle error reported" grep -qE "^verify: float64 oracle rms error \(worst set\): optimized [0-9.e-]+, original [0-9.e-]+$" $work/out
expect 0 "\+ y: float32:\(1, 5, 8\)" "" -- run $m/att.onnx --dim batch=1 --dim seq=5 --no-timing
expect 0 "Fused FastGelu: 1" "" -- optimize $m/fast_gelu_unfused.onnx -o $m/fg.onnx --verify
expect 0 "Fused LayerNormalization: 1" "" -- optimize $m/layer_norm_unfused.onnx -o $m/ln.onnx --verify-each
check "verify-each: every pass checked" grep -q "every pass kept the model equivalent" $work/out
# With no tolerance at all, FastGelu's kernel (tanh in double) is not the float graph bit for bit:
# the first pass that changed a bit is named, with the element, and nothing is written.
expect 3 "verify-each: pass 'fast-gelu' broke equivalence; nothing written" "" -- \
  optimize $m/fast_gelu_unfused.onnx -o $m/fg_each.onnx --verify-each --atol 0 --rtol 0
check "verify-each: the differing output named" grep -q "NOT equivalent: first failing input set 'given', output 'y'" $work/out
check "verify-each: nothing written after a broken pass" test ! -e $m/fg_each.onnx

# Look-alikes are not the fused operator: nothing fused, still equivalent.
for look_alike in fast_gelu_wrong_coefficient layer_norm_eps_outside_sqrt gpt2_attention_mask_shifted; do
  expect 0 "^verify: equivalent" "" -- optimize $m/$look_alike.onnx -o $m/la.onnx --level all --verify
  check "$look_alike: no fused operator" bash -c "! grep -qE '^  Fused (Attention|FastGelu|LayerNormalization)' $work/out"
done

# Levels, --only, --disable.
expect 0 "" "" -- optimize $m/gpt2_attention_unfused.onnx -o $m/basic.onnx --level basic
check "basic: no com.microsoft operator" bash -c "! grep -qE 'Attention|FastGelu' $work/out"
# The three head reshapes and the head merge: ONNX's inference gives up past the Where, the
# symbolic shapes (symbolic_shapes.h) carry the merge's (batch, seq, 8) through it.
expect 0 "Fused Reshape shape: 4" "" -- optimize $m/gpt2_attention_unfused.onnx -o $m/only.onnx --only reshape-fusion
expect 0 "" "" -- optimize $m/gpt2_attention_unfused.onnx -o $m/no_att.onnx --disable attention
check "--disable attention: Softmax stays" grep -q "Softmax 1" $work/out
expect 0 "^fast-gelu$" "" -- optimize --list-passes $m/gpt2_attention_unfused.onnx -o $m/x.onnx

# Errors: usage and model errors exit 2 with one line.
expect 2 "" "error: --level: 'max' is not basic, extended or all" -- optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --level max
expect 2 "" "error: --forms: 'fastest' is not cpu or all" -- optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --forms fastest
expect 2 "" "error: --opset 22 with --target onnx: the standard attention, RMS and rotary operators need opset 23" -- \
  optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --target onnx --opset 22
expect 2 "" "error: --target onnx rewrites the fused operators: it needs --level extended or all" -- \
  optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --target onnx --level basic
# A com.microsoft node the input has (a GenAI int4 decoder's MatMulNBits): named, with why it stays an error.
genai=$(cd "$(dirname "$0")/../data/ort/decoders_genai/int4_asym_b1" && pwd)/model.onnx
expect 2 "" "^refeval: error: --target onnx: node '/model/layers.0/attn/qkv_proj/MatMul' \(com.microsoft:MatMulNBits\): no standard form is written for com.microsoft MatMulNBits \(the input has this node: no fusion can be left out instead\)$" -- \
  optimize "$genai" -o $m/x.onnx --target onnx
expect 2 "" "error: unknown pass 'warp'" -- optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --only warp
expect 2 "" "error: --model-type: 'resnet' is not one of bert, vit, clip, t5, bart, whisper, gpt2, llama" -- optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --model-type resnet
head -c 100 $m/gpt2_attention_unfused.onnx >$m/cut.onnx
expect 2 "" "error: .*cut.onnx" -- optimize $m/cut.onnx -o $m/x.onnx
expect 2 "" "error: --opset 12: node '/attn/MatMul_0' \(MatMul\) is version 13 at opset 17 and 9 at opset 12; convert the model first" -- \
  optimize $m/gpt2_attention_unfused.onnx -o $m/x.onnx --disable attention --opset 12
expect 0 "" "" -- optimize $m/fast_gelu_wrong_coefficient.onnx -o $m/o18.onnx --opset 18
expect 0 "opsets ai.onnx 18" "" -- run $m/o18.onnx --no-timing

# --benchmark-with-ort: both models timed in ONNX Runtime on the same feeds, their outputs compared.
ort_dir=$(cd "$(dirname "$0")/../../benchmarks/ort" && pwd)
if [[ -d $ort_dir/node_modules/onnxruntime-node ]]; then
  expect 0 "^ort: original [0-9.]+ ms, optimized [0-9.]+ ms per run: [0-9.]+x \(2 threads, level all, median of 2 alternated rounds of 10 runs\)$" "" -- \
    --threads 2 optimize $m/gpt2_attention_unfused.onnx -o $m/att_ort.onnx --dim batch=2 --dim seq=7 --benchmark-with-ort --benchmark-rounds 2
  read -r diff scale < <(sed -nE 's/^ort: outputs differ by at most ([0-9.e+-]+) \(largest \|output\| ([0-9.e+-]+)\)$/\1 \2/p' $work/out)
  check "--benchmark-with-ort: ORT's outputs of both models agree (float32 sums of 8 terms)" \
    awk -v d="${diff:-1}" -v s="${scale:-0}" 'BEGIN { exit !(s > 0 && d <= 1e-5 * (s > 1 ? s : 1)) }'
else
  echo "note: onnxruntime-node is not installed (benchmarks/ort: npm install); --benchmark-with-ort's real run is skipped"
fi
# Without onnxruntime-node, or when ORT fails: one line, naming what to do or ORT's own message.
REFEVAL_ORT_DIR=$work/none expect 2 "" "error: --benchmark-with-ort: onnxruntime-node not found in '$work/none'" -- \
  optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --benchmark-with-ort
fake=$work/fake_ort
mkdir -p $fake/node_modules/onnxruntime-node
echo "console.error('logged by ORT'); console.error('model.onnx: cannot run'); process.exit(1);" >$fake/time_pair.js
REFEVAL_ORT_DIR=$fake expect 1 "" "error: --benchmark-with-ort: ONNX Runtime failed: model.onnx: cannot run$" -- \
  optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --benchmark-with-ort
# No node on the PATH (Debian without nodejs): the one line says what to install.
env PATH=$work/none REFEVAL_ORT_DIR=$fake "$refeval" optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --benchmark-with-ort >$work/out 2>$work/err
code=$?
check "--benchmark-with-ort without node on the PATH: exit 2, one line naming nodejs" \
  bash -c "[[ $code -eq 2 && \$(wc -l <'$work/err') -eq 1 ]] && grep -q 'error: --benchmark-with-ort: node was not found (install nodejs, as scripts/install-deps.sh does)$' '$work/err'"
# The script's contract: the original first, then the written model, runs and rounds, the feeds
# as .npy files; ORT's threads in ORT_THREADS.
cat >$fake/time_pair.js <<EOF
const fs = require('fs');
fs.writeFileSync('$work/argv', [process.env.ORT_THREADS, ...process.argv.slice(2, 6),
                 ...process.argv.slice(6).map(f => f.split('=')[0] + '=' + fs.statSync(f.split('=')[1]).size)].join(' '));
console.log('4.0 3.0 0.75 1e-7 2.5');
EOF
REFEVAL_ORT_DIR=$fake expect 0 "^ort: original 4.000 ms, optimized 3.000 ms per run: 0.750x \(3 threads, level all, median of 4 alternated rounds of 10 runs\)$" "" -- \
  --threads 3 optimize $m/gpt2_attention_unfused.onnx -o $m/att_fake.onnx --dim batch=1 --dim seq=5 --benchmark-with-ort --benchmark-rounds 4
check "--benchmark-with-ort: the original, then the written model, 3 threads, x: a (1, 5, 8) float32 .npy" \
  grep -qxF "3 $m/gpt2_attention_unfused.onnx $m/att_fake.onnx 10 4 x=288" $work/argv
echo "console.log('1.0 2.0');" >$fake/time_pair.js
REFEVAL_ORT_DIR=$fake expect 1 "" "error: --benchmark-with-ort: time_pair.js printed '1.0 2.0', not five numbers$" -- \
  optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --benchmark-with-ort
finish
