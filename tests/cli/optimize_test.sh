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
expect 2 "" "error: unknown pass 'warp'" -- optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --only warp
expect 2 "" "error: --model-type: 'resnet' is not one of bert, vit, clip, t5, bart, whisper, gpt2, llama" -- optimize $m/fast_gelu_unfused.onnx -o $m/x.onnx --model-type resnet
head -c 100 $m/gpt2_attention_unfused.onnx >$m/cut.onnx
expect 2 "" "error: .*cut.onnx" -- optimize $m/cut.onnx -o $m/x.onnx
expect 2 "" "error: --opset 12: node '/attn/MatMul_0' \(MatMul\) is version 13 at opset 17 and 9 at opset 12; convert the model first" -- \
  optimize $m/gpt2_attention_unfused.onnx -o $m/x.onnx --disable attention --opset 12
expect 0 "" "" -- optimize $m/fast_gelu_wrong_coefficient.onnx -o $m/o18.onnx --opset 18
expect 0 "opsets ai.onnx 18" "" -- run $m/o18.onnx --no-timing
finish
