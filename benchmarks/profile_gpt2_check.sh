#!/usr/bin/env bash
# The acceptance checks of profiling on GPT-2 small, reproducible: refeval's profile follows ORT's
# schema with node times between half and all of each run's wall time; `refeval report` on ORT's
# own GPT-2 profiles (optimizations disabled and all) gives exactly the per-op totals and counts an
# independent script computes; the HTML report of both renders offline (open it in a browser).
#   benchmarks/profile_gpt2_check.sh [BUILD_DIR]     (REFEVAL_BENCH_DIR for the model and outputs)
# Needs Debian's python3-torch and python3-onnx on first use, and npm for onnxruntime-node.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
refeval=${1:-$here/../build}/refeval
tools=$here/../tests/tools/profile
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
dir=$work/gpt2-small-opset17-seq32
if [[ ! -f $dir/model.onnx ]]; then
  mkdir -p "$work"
  /usr/bin/python3 "$here/gpt2/make_gpt2.py" "$dir" --opset 17 --seq 32 >/dev/null 2>&1
fi
ensure_ort
feed="input_ids=$dir/input_ids.npy"
"$refeval" profile "$dir/model.onnx" --input "$feed" -o "$work/gpt2_refeval.json" --top 5
for level in disabled all; do
  NODE_PATH=$here/ort/node_modules node "$here/ort/profile_ort.js" "$dir/model.onnx" $level 6 "$work/gpt2_ort_$level.json" "$feed" >/dev/null
done
python3 "$tools/check_profile_schema.py" "$work/gpt2_refeval.json" --runs 11 --ort "$work/gpt2_ort_disabled.json" | tail -1
for level in disabled all; do
  if cmp -s <("$refeval" report "$work/gpt2_ort_$level.json" --format csv | cut -d, -f1-3) \
            <(python3 "$tools/ort_profile_totals.py" "$work/gpt2_ort_$level.json"); then
    echo "ORT $level: refeval report equals the independent totals ($(grep -c _kernel_time "$work/gpt2_ort_$level.json") kernel events)"
  else
    echo "ORT $level: refeval report DIFFERS from the independent totals"; exit 1
  fi
done
"$refeval" -q report "$work/gpt2_ort_disabled.json" --compare "$work/gpt2_ort_all.json" --format html -o "$work/gpt2_ort_compare.html"
"$refeval" -q report "$work/gpt2_refeval.json" --format html -o "$work/gpt2_refeval.html"
echo "HTML: $work/gpt2_refeval.html, $work/gpt2_ort_compare.html"
