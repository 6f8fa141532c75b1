#!/usr/bin/env bash
# The int4 decoder benchmark (issue 24): a GenAI-builder-style decoder (MatMulNBits int4,
# GroupQueryAttention with rotary, skip RMS norms; 12 layers, hidden 768) timed in ONNX Runtime
# 1.30 (graph optimizations disabled, accuracy_level 0, one thread) and refeval on 1 and 2 threads,
# alternated in ROUNDS rounds; medians of REPEAT runs; the ratio is the median of each round's.
#   benchmarks/llm/decode_int4.sh [BUILD_DIR]     (REPEAT=20, ROUNDS=3, REFEVAL_BENCH_DIR)
# Steps: prefill (32 tokens, empty past) and decode (1 token after 128). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
dir=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}/int4-decoder-12x768
repeat=${REPEAT:-20}
rounds=${ROUNDS:-3}
ensure_ort
[[ -f $dir/model.onnx ]] || /usr/bin/python3 "$here/llm/make_int4_decoder.py" "$dir" >/dev/null

feeds() { for f in "$dir/$1"/*.npy; do n=$(basename "$f" .npy); echo "$n=$f"; done; }
printf "%-10s %9s %10s %6s %10s %8s\n" step ort_ms refeval_1t ratio refeval_2t 2t_gain
for step in prefill decode; do
  mapfile -t fs < <(feeds "$step")
  args=()
  for f in "${fs[@]}"; do args+=(--input "$f"); done
  ort=() one=() two=() ratio=() gain=()
  for ((r = 0; r < rounds; ++r)); do
    ort+=("$(cd "$here/ort" && ORT_LEVEL=disabled node bench_ort.js "$dir/model.onnx" "$repeat" "${fs[@]}" | cut -d' ' -f1)")
    t1=$("$refeval" --threads 1 run "$dir/model.onnx" "${args[@]}" --repeat "$repeat" | sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p')
    t2=$("$refeval" --threads 2 run "$dir/model.onnx" "${args[@]}" --repeat "$repeat" | sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p')
    one+=("$t1") two+=("$t2")
    ratio+=("$(awk -v a="$t1" -v o="${ort[r]}" 'BEGIN { print a / o }')")
    gain+=("$(awk -v a="$t1" -v b="$t2" 'BEGIN { print a / b }')")
  done
  awk -v n="$step" -v o="$(median "${ort[@]}")" -v a="$(median "${one[@]}")" -v b="$(median "${two[@]}")" \
      -v q="$(median "${ratio[@]}")" -v g="$(median "${gain[@]}")" 'BEGIN {
    printf "%-10s %9.2f %10.2f %6.2f %10.2f %7.2fx\n", n, o, a, q, b, g }'
done
