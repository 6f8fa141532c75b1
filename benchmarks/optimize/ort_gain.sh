#!/usr/bin/env bash
# What `refeval optimize --target ort` buys a given model in ONNX Runtime, on the given inputs:
# the model optimized (OPTIMIZE_ARGS pass through), then ORT 1.30 CPU at its own level `all` on
# the original and on the optimized model, alternated in ROUNDS rounds of REPEAT runs
# (ort/time_pair.js), at 1 and 2 threads; ratio = optimized / original (below 1: faster), and
# the outputs' largest difference.
#   benchmarks/optimize/ort_gain.sh MODEL.onnx NAME=FILE.npy... [BUILD_DIR from $BUILD_DIR]
#     (REPEAT=10, ROUNDS=3, OPTIMIZE_ARGS, OUT: where the optimized model goes)
# Needs npm (installs onnxruntime-node into benchmarks/ort on first use). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
[[ $# -ge 1 ]] || { echo "usage: $0 MODEL.onnx NAME=FILE.npy..." >&2; exit 2; }
model=$(readlink -f "$1")
shift
refeval=${BUILD_DIR:-$here/../build}/refeval
out=${OUT:-$(mktemp -d)/optimized.onnx}
ensure_ort
# shellcheck disable=SC2086
"$refeval" optimize "$model" -o "$out" --target ort ${OPTIMIZE_ARGS:-} | grep -E '^(optimize|nodes|operators):'
feeds=()
for f in "$@"; do feeds+=("${f%%=*}=$(readlink -f "${f#*=}")"); done
echo "threads | original (ms) | optimized (ms) | ratio | max abs diff (max abs)"
for t in 1 2; do
  read -r a b ratio diff scale < <(cd "$here/ort" && ORT_THREADS=$t node time_pair.js "$model" "$out" "${REPEAT:-10}" "${ROUNDS:-3}" "${feeds[@]}")
  echo "$t | $a | $b | $ratio | $diff ($scale)"
done
