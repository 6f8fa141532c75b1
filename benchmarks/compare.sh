#!/usr/bin/env bash
# refeval against ONNX Runtime side by side, in one run, on the same exported models and inputs:
# ORT 1.30 CPU (onnxruntime-node) with graph optimizations disabled on one thread, refeval on 1 and
# 2 threads (--threads), medians of REPEAT runs; refeval/ORT ratios, refeval's 2-thread speed-up
# and its peak memory (max RSS of the run) against the model's size. The three are alternated in
# ROUNDS rounds: times are the medians over rounds, ratios and gains the medians of each round's
# (a VM's speed drifts by 20% within a minute; a ratio within one round cancels it). Each model is
# also checked against torch's output (refeval test, atol 1e-4).
#   benchmarks/compare.sh [BUILD_DIR]     (REPEAT=20, ROUNDS=3; REFEVAL_BENCH_DIR for the exports;
#                                          HELDOUT=1: instead, models the repo's work was not tuned
#                                          on: other torchvision nets (ResNet-34 and -50,
#                                          MobileNetV3, EfficientNet), opsets and batch sizes, a
#                                          GPT-2 at opset 14 with batch 2)
# Needs Debian's python3-torch, python3-torchvision and python3-onnx (to export the models) and
# npm (installs onnxruntime-node into benchmarks/ort/node_modules on first use). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
repeat=${REPEAT:-20}
rounds=${ROUNDS:-3}
mkdir -p "$work"
ensure_ort

# name|input name|export command (writes DIR/model.onnx, DIR/<input>.npy, DIR/test_data_set_0)
models=(
  "gpt2-small-opset17-seq32|input_ids|$here/gpt2/make_gpt2.py DIR --opset 17 --seq 32"
  "resnet18|input|$here/vision/make_torchvision.py DIR resnet18"
  "mobilenet_v2|input|$here/vision/make_torchvision.py DIR mobilenet_v2"
  "lstm-2layer|input|$here/rnn/make_lstm.py DIR"
)
if [[ ${HELDOUT:-0} == 1 ]]; then
  models=(
    "heldout-gpt2-opset14-b2-seq48|input_ids|$here/gpt2/make_gpt2.py DIR --opset 14 --batch 2 --seq 48 --seed 3"
    "heldout-resnet34-opset17|input|$here/vision/make_torchvision.py DIR resnet34 --opset 17"
    "heldout-resnet18-b2-opset11|input|$here/vision/make_torchvision.py DIR resnet18 --opset 11 --batch 2"
    "heldout-resnet50-opset17|input|$here/vision/make_torchvision.py DIR resnet50 --opset 17"
    "heldout-mobilenet_v3_large|input|$here/vision/make_torchvision.py DIR mobilenet_v3_large --opset 17"
    "heldout-efficientnet_b0|input|$here/vision/make_torchvision.py DIR efficientnet_b0 --opset 17"
  )
fi
refeval_ms() {  # refeval_ms THREADS DIR INPUT -> "median_ms peak_kb"
  local out
  out=$( { /usr/bin/time -f "peak %M" "$refeval" --threads "$1" run "$2/model.onnx" --input "$3=$2/$3.npy" --repeat "$repeat"; } 2>&1)
  echo "$(sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p' <<<"$out") $(sed -n 's/^peak \([0-9]*\)$/\1/p' <<<"$out")"
}
printf "%-26s %9s %10s %6s %10s %8s %8s %8s %6s %7s\n" model ort_ms refeval_1t ratio refeval_2t 2t_gain peak_MB model_MB peak/m torch
for entry in "${models[@]}"; do
  IFS='|' read -r name input make <<<"$entry"
  dir=$work/$name
  # shellcheck disable=SC2086
  [[ -f $dir/model.onnx ]] || /usr/bin/python3 ${make/DIR/$dir} >/dev/null 2>&1
  ort=() one=() two=() ratio=() gain=() peak=0
  for ((r = 0; r < rounds; ++r)); do
    ort+=("$(cd "$here/ort" && ORT_LEVEL=disabled node bench_ort.js "$dir/model.onnx" "$repeat" "$input=$dir/$input.npy" | cut -d' ' -f1)")
    read -r t1 p <<<"$(refeval_ms 1 "$dir" "$input")"
    read -r t2 _ <<<"$(refeval_ms 2 "$dir" "$input")"
    one+=("$t1") two+=("$t2") peak=$((p > peak ? p : peak))
    ratio+=("$(awk -v a="$t1" -v o="${ort[r]}" 'BEGIN { print a / o }')")
    gain+=("$(awk -v a="$t1" -v b="$t2" 'BEGIN { print a / b }')")
  done
  size=$(stat -c %s "$dir/model.onnx")
  "$refeval" -q test "$dir" --rtol 0 --atol 1e-4 >/dev/null && torch=ok || torch=DIFF
  awk -v n="$name" -v o="$(median "${ort[@]}")" -v a="$(median "${one[@]}")" -v b="$(median "${two[@]}")" \
      -v q="$(median "${ratio[@]}")" -v g="$(median "${gain[@]}")" -v p="$peak" -v s="$size" -v t="$torch" 'BEGIN {
    printf "%-26s %9.2f %10.2f %6.2f %10.2f %7.2fx %8.0f %8.0f %6.2f %7s\n", n, o, a, q, b, g, p / 1024, s / 1e6, p * 1024 / s, t }'
done
