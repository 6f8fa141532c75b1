#!/usr/bin/env bash
# Side-by-side timing of refeval and ONNX Runtime (CPU, one thread each) on the same models and
# inputs, in one run. Prints median times and the ratio refeval / ORT.
#   benchmarks/compare.sh [BUILD_DIR]     (default: build)
# Needs: Debian's python3-torch and python3-onnx (to export the models) and npm (installs
# onnxruntime-node into benchmarks/ort/node_modules on first use). Never part of the test suite.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
refeval=$build/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
repeat=${REPEAT:-20}
mkdir -p "$work"
if [[ ! -d $here/ort/node_modules/onnxruntime-node ]]; then
  (cd "$here/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-save onnxruntime-node >/dev/null)
fi

# name|make_gpt2.py arguments
models=(
  "gpt2-small-opset17-seq64|--opset 17 --seq 64"
  "gpt2-small-opset13-seq64|--opset 13 --seq 64"
  "gpt2-small-opset17-seq8|--opset 17 --seq 8"
)
printf "%-28s %12s %12s %8s\n" model refeval_ms ort_ms ratio
for entry in "${models[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  dir=$work/$name
  if [[ ! -f $dir/model.onnx ]]; then
    # shellcheck disable=SC2086
    /usr/bin/python3 "$here/gpt2/make_gpt2.py" "$dir" $args >/dev/null 2>&1
  fi
  ours=$("$refeval" run "$dir/model.onnx" --input "input_ids=$dir/input_ids.npy" --repeat "$repeat" | sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p')
  theirs=$(cd "$here/ort" && node bench_ort.js "$dir/model.onnx" "$repeat" "input_ids=$dir/input_ids.npy" | cut -d' ' -f1)
  printf "%-28s %12s %12s %8s\n" "$name" "$ours" "$theirs" "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')"
done
