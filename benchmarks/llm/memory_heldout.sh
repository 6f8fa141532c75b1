#!/usr/bin/env bash
# Peak resident memory against the weights' bytes, refeval and ONNX Runtime 1.30 side by side: a
# 32-token prompt and 16 new tokens (refeval generate, ort/generate_ort.js; one thread) on the
# held-out Llama-style fp32 torch export (one 499 MB file, most weights at offsets that are not a
# multiple of 4), on its int4 twin (refeval quantize --int4, blocks of 32, asymmetric; one file),
# and on a GenAI-builder int4 decoder. Peak RSS is /usr/bin/time's maximum resident set size of
# the whole process (node's own ~50 MB included on ORT's side); weights: the initializers' bytes.
#   benchmarks/llm/memory_heldout.sh [BUILD_DIR]     (REFEVAL_BENCH_DIR)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
use_build "${1:-}"
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
ensure_ort
llama=$work/heldout-llama-12x768-mlp2048
[[ -f $llama/model.onnx ]] || /usr/bin/python3 "$here/llm/make_decoder.py" "$llama" torch --layers 12 --hidden 768 \
  --heads 12 --kv-heads 4 --intermediate 2048 --vocab 32000 >/dev/null
[[ -f $llama/int4.onnx ]] || "$refeval" -q quantize "$llama/model.onnx" -o "$llama/int4.onnx" --int4 >/dev/null
genai=$work/genai-int4-12x768
[[ -f $genai/model.onnx ]] || /usr/bin/python3 "$here/llm/make_decoder.py" "$genai" genai >/dev/null
prompt=$(seq -s' ' 1 32)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# peak_mib COMMAND...: the command's maximum resident set size in MiB
peak_mib() {
  /usr/bin/time -f "%M" -o "$tmp/time" "$@" >/dev/null 2>&1
  awk '{ printf "%.1f", $1 / 1024 }' "$tmp/time"
}
echo "| model | weights MiB | refeval peak RSS MiB | / weights | ORT peak RSS MiB | / weights |"
echo "|---|--:|--:|--:|--:|--:|"
for model in "$llama/model.onnx" "$llama/int4.onnx" "$genai/model.onnx"; do
  weights=$(/usr/bin/python3 -c "
import onnx, numpy as np
from onnx import numpy_helper
m = onnx.load('$model')
print(sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer) / 2**20)")
  ours=$(peak_mib "$refeval" -q --threads 1 generate "$model" --prompt "$prompt" --new-tokens 16)
  theirs=$(cd "$here/ort" && ORT_THREADS=1 peak_mib node generate_ort.js "$model" --prompt "$prompt" --new-tokens 16)
  name=$(basename "$(dirname "$model")")/$(basename "$model")
  awk -v n="$name" -v w="$weights" -v o="$ours" -v t="$theirs" \
    'BEGIN { printf "| %s | %.1f | %.1f | %.2f | %.1f | %.2f |\n", n, w, o, o / w, t, t / w }'
done
