#!/usr/bin/env bash
# The optimizer on GPT-2 small, side by side in one run: torch exports at opsets 14 (decomposed
# LayerNorm) and 17, `refeval optimize --model-type gpt2 --verify`, the fused operator counts, the
# optimized model's logits against torch's in refeval and in ONNX Runtime, and ORT's run time of
# the original and the optimized model with ORT's own optimizations disabled (one thread),
# alternated ROUNDS times; medians of the rounds' medians and their ratio.
#   benchmarks/optimize_gpt2.sh [BUILD_DIR]     (SEQS="32 128" ROUNDS=3 REPEAT=10)
# Needs Debian's python3-torch and python3-onnx (export) and npm (onnxruntime-node).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
refeval=${1:-$here/../build}/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
rounds=${ROUNDS:-3}
repeat=${REPEAT:-10}
ensure_ort
ort_ms() { (cd "$here/ort" && ORT_LEVEL=disabled node bench_ort.js "$1" "$repeat" "$2" | cut -d' ' -f1); }

printf "%-10s %5s %6s %6s %5s %5s %5s %9s %9s %8s %8s %7s\n" model nodes after LN-fam SkipLN Gelu Attn refeval_d ort_diff ort_ms opt_ms speedup
for seq in ${SEQS:-32 128}; do
  for opset in 14 17; do
    name=gpt2-small-opset$opset-seq$seq dir=$work/gpt2-small-opset$opset-seq$seq
    [[ -f $dir/model.onnx ]] || /usr/bin/python3 "$here/gpt2/make_gpt2.py" "$dir" --opset "$opset" --seq "$seq" >/dev/null 2>&1
    feed="input_ids=$dir/input_ids.npy"
    opt=$work/opt; rm -rf "$opt"; mkdir -p "$opt"; cp -r "$dir/test_data_set_0" "$opt/"
    log=$("$refeval" -q optimize "$dir/model.onnx" -o "$opt/model.onnx" --model-type gpt2 --verify --input "$feed")
    grep -q "^verify: equivalent" <<<"$log" || { echo "$name: --verify failed"; echo "$log"; exit 1; }
    ops=$(grep '^operators:' <<<"$log")
    count() { grep -oE "(^|, |: )$1 [0-9]+" <<<"$ops" | grep -oE '[0-9]+$' || echo 0; }
    ln=$(( $(count LayerNormalization) + $(count SkipLayerNormalization) ))
    nodes=$(sed -n 's/^nodes: \([0-9]*\) -> \([0-9]*\);.*/\1 \2/p' <<<"$log")
    # refeval against torch: the largest difference `refeval test` tolerates at atol 1e-4 is enough.
    "$refeval" -q test "$opt" --rtol 0 --atol 1e-4 >/dev/null && ref="<=1e-4" || ref=FAIL
    /usr/bin/python3 -c "import numpy as np, onnx.numpy_helper as h, onnx; t = onnx.TensorProto(); t.ParseFromString(open('$dir/test_data_set_0/output_0.pb','rb').read()); np.save('$opt/torch.npy', h.to_array(t))"
    diff=$(cd "$here/ort" && node ort_output_diff.js "$opt/model.onnx" "$opt/torch.npy" "$feed")
    before=() after=()
    for ((r = 0; r < rounds; ++r)); do before+=("$(ort_ms "$dir/model.onnx" "$feed")"); after+=("$(ort_ms "$opt/model.onnx" "$feed")"); done
    b=$(median "${before[@]}") a=$(median "${after[@]}")
    printf "%-10s %5s %6s %6s %5s %5s %5s %9s %9s %8s %8s %7s\n" "o$opset/s$seq" $nodes "$ln" "$(count SkipLayerNormalization)" \
      "$(( $(count FastGelu) + $(count BiasGelu) ))" "$(count Attention)" "$ref" "$diff" "$b" "$a" "$(awk -v b="$b" -v a="$a" 'BEGIN { printf "%.2fx", b / a }')"
  done
done
