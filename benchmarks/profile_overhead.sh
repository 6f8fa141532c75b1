#!/usr/bin/env bash
# The cost of profiling: `refeval run --repeat N` against `refeval profile --repeat N` on the same
# GPT-2 small export, alternated ROUNDS times in one run so both see the same machine state.
# Prints each round's medians and the ratio of the medians of those medians (profiled / plain).
#   benchmarks/profile_overhead.sh [BUILD_DIR]   (REPEAT=20 ROUNDS=3; REFEVAL_BENCH_DIR for the model)
# Needs Debian's python3-torch and python3-onnx to export the model on first use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
refeval=${1:-$here/../build}/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
repeat=${REPEAT:-20}
rounds=${ROUNDS:-3}
dir=$work/gpt2-small-opset17-seq32
if [[ ! -f $dir/model.onnx ]]; then
  mkdir -p "$work"
  /usr/bin/python3 "$here/gpt2/make_gpt2.py" "$dir" --opset 17 --seq 32 >/dev/null 2>&1
fi
feed="input_ids=$dir/input_ids.npy"
plain=() profiled=()
printf "%-6s %12s %12s\n" round run_ms profile_ms
for ((r = 1; r <= rounds; ++r)); do
  p=$("$refeval" run "$dir/model.onnx" --input "$feed" --repeat "$repeat" | sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p')
  q=$("$refeval" profile "$dir/model.onnx" --input "$feed" --repeat "$repeat" -o "$work/overhead.json" --top 1 |
      sed -n 's/^model_run: median \([0-9.]*\) ms.*/\1/p')
  plain+=("$p") profiled+=("$q")
  printf "%-6s %12s %12s\n" "$r" "$p" "$q"
done
mp=$(median "${plain[@]}") mq=$(median "${profiled[@]}")
printf "median %12s %12s   profiled / plain = %s\n" "$mp" "$mq" "$(awk -v a="$mq" -v b="$mp" 'BEGIN { printf "%.3f", a / b }')"
