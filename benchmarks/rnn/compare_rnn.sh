#!/usr/bin/env bash
# The recurrent models of issue 31, refeval against ONNX Runtime side by side as benchmarks/compare.sh
# does: torch exports (make_lstm.py: batch first, 2 x 20 steps of 32 inputs, 64 hidden) of a
# one-layer GRU, a one-layer RNN and a 2-layer bidirectional LSTM, plus compare.sh's 2-layer LSTM
# (1 x 64 steps, 128 -> 256). ORT 1.30 CPU (onnxruntime-node, graph optimizations disabled, one
# thread) and refeval on one thread, alternated in ROUNDS rounds of REPEAT runs each; the times are
# the medians over rounds, the ratio the median of each round's refeval/ORT ratio (a shared VM's
# speed drifts; a ratio within one round cancels most of it). `1t=2t` says whether refeval's
# outputs are bit-identical on 1 and 2 threads, `torch` whether they match torch's (atol 1e-4).
#   benchmarks/rnn/compare_rnn.sh [BUILD_DIR]   (REPEAT=50, ROUNDS=5; REFEVAL_RNN_DIR for the exports)
# Needs Debian's python3-torch and python3-onnx and npm (onnxruntime-node on first use). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
work=${REFEVAL_RNN_DIR:-/tmp/refeval-rnn}
repeat=${REPEAT:-50}
rounds=${ROUNDS:-5}
mkdir -p "$work"
ensure_ort

small="--batch 2 --seq 20 --input 32 --hidden 64"
models=(  # name|make_lstm.py options
  "gru-1layer-32x64|--cell gru --layers 1 $small"
  "rnn-1layer-32x64|--cell rnn --layers 1 $small"
  "lstm-2layer-bidir-32x64|--cell lstm --layers 2 --bidirectional $small"
  "lstm-2layer-128x256|--cell lstm --layers 2"
)
refeval_ms() {  # refeval_ms DIR -> median ms
  "$refeval" --threads 1 run "$1/model.onnx" --input "input=$1/input.npy" --repeat "$repeat" |
    sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p'
}
same_on_threads() {  # same_on_threads DIR -> yes / NO: outputs of --threads 1 and 2 bit for bit
  local t
  for t in 1 2; do
    "$refeval" -q --threads "$t" run "$1/model.onnx" --input "input=$1/input.npy" --save-outputs "$work/out$t" >/dev/null
  done
  cmp -s <(cat "$work"/out1/*) <(cat "$work"/out2/*) && echo yes || echo NO
}
printf "%-26s %9s %10s %6s %5s %6s\n" model ort_ms refeval_ms ratio 1t=2t torch
for entry in "${models[@]}"; do
  IFS='|' read -r name options <<<"$entry"
  dir=$work/$name
  # shellcheck disable=SC2086
  [[ -f $dir/model.onnx ]] || /usr/bin/python3 "$here/rnn/make_lstm.py" "$dir" $options >/dev/null 2>&1
  ort=() ref=() ratio=()
  for ((r = 0; r < rounds; ++r)); do
    ort+=("$(cd "$here/ort" && ORT_LEVEL=disabled node bench_ort.js "$dir/model.onnx" "$repeat" "input=$dir/input.npy" | cut -d' ' -f1)")
    ref+=("$(refeval_ms "$dir")")
    ratio+=("$(awk -v a="${ref[r]}" -v o="${ort[r]}" 'BEGIN { print a / o }')")
  done
  "$refeval" -q test "$dir" --rtol 0 --atol 1e-4 >/dev/null && torch=ok || torch=DIFF
  awk -v n="$name" -v o="$(median "${ort[@]}")" -v a="$(median "${ref[@]}")" -v q="$(median "${ratio[@]}")" \
      -v s="$(same_on_threads "$dir")" -v t="$torch" 'BEGIN { printf "%-26s %9.3f %10.3f %6.2f %5s %6s\n", n, o, a, q, s, t }'
done
