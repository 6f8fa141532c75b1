#!/usr/bin/env bash
# What `refeval optimize` does to full-size LLM decoders, side by side with ONNX Runtime,
# in one run. The models are the torch exports of tests/data/optimize/make_exports.py --size full
# (GPT-2 small 12 x 768; a Llama 12 x 768, 12 heads over 4 KV heads; backend-test folders whose
# expected outputs are torch's: set 0 prefill B=1 S=7, set 1 one decode step, 2-5 batch 2 padded).
# Per model and target (ort: com.microsoft fused operators; onnx: standard operators of opset 23):
#   - `refeval optimize --explain`: nodes before -> after, the fused operator families left in the
#     graph (LN = LayerNormalization + SkipLayerNormalization, SLN = SimplifiedLayerNormalization +
#     SkipSimplifiedLayerNormalization + RMSNormalization, Attn = Attention + MultiHeadAttention +
#     GroupQueryAttention, Rot = RotaryEmbedding, Gelu = FastGelu + BiasGelu + Gelu, QGelu = QuickGelu)
#     and the Softmax/Tanh/Neg nodes left unfused; ORT = the node count of ORT's own session
#     optimizer (level all) on the ORIGINAL model;
#   - outputs against torch on every data set: refeval (`refeval test`, rtol 0; the smallest of
#     atol 1e-5, 1e-4 that passes) and ORT with its optimizations disabled (max |ort - torch|);
#   - speed, one process at a time, original and optimized alternated ROUNDS times, medians of the
#     rounds' medians of REPEAT runs: `refeval run --repeat` and ORT (one thread, its optimizations
#     disabled, so the fusions timed are ours) on the prefill set (0) and the decode set (1);
#     ratios original / optimized (> 1: the optimized model is faster).
#   benchmarks/optimize_llm.sh [BUILD_DIR]
#     MODELS="hf_gpt2_opset14 hf_gpt2_opset17 hf_llama_opset17 mistral_like_opset17 phi3_like_opset17"
#     TARGETS="ort onnx" ROUNDS=3 REPEAT=5 EXPORTS=/tmp/refeval-exports
# The per-model logs (--explain, ORT's operator counts, absolute times) are in REFEVAL_BENCH_DIR
# (default /tmp/refeval-bench/llm). Needs Debian's python3-torch and python3-onnx (to export a
# missing model) and npm (onnxruntime-node).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
refeval=${1:-$here/../build}/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}/llm
exports=${EXPORTS:-/tmp/refeval-exports}
models=${MODELS:-hf_gpt2_opset14 hf_gpt2_opset17 hf_llama_opset17 mistral_like_opset17 phi3_like_opset17}
targets=${TARGETS:-ort onnx}
rounds=${ROUNDS:-3}
repeat=${REPEAT:-5}
ensure_ort
mkdir -p "$work"

# refeval's median time of REPEAT runs of MODEL on the data set SET_DIR.
refeval_ms() { "$refeval" -q run "$1" --inputs "$2" --repeat "$repeat" | sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p' || echo -; }
# ORT's median times of MODEL on the prefill and decode sets of EXPORT_DIR, one per line.
ort_ms() { (cd "$here/ort" && node ort_time_sets.js "$1" "$repeat" "$2/test_data_set_0" "$2/test_data_set_1" | cut -d' ' -f1) || echo - -; }
# "-" where a run failed (its error is on stderr).
ratio() { awk -v b="$1" -v a="$2" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2f", b / a; else printf "-" }'; }

header="%-22s %-4s %5s %5s %5s %3s %3s %4s %3s %4s %5s %-11s %-8s %8s %6s %6s %6s %6s\n"
table=$(printf "$header" model tgt nodes after ORT LN SLN Attn Rot Gelu QGelu "left S/T/N" refeval ort_diff re_pre re_dec ort_pre ort_dec)
times=""
for m in $models; do
  src=$exports/$m
  if [[ ! -f $src/model.onnx ]]; then
    /usr/bin/python3 "$here/../tests/data/optimize/make_exports.py" --size full --only "${m%_opset*}" --out "$exports" >/dev/null 2>&1
  fi
  ort_nodes=$(cd "$here/ort" && node ort_optimized_nodes.js "$src/model.onnx" "$work/ort_all.onnx")
  rm -f "$work/ort_all.onnx"
  echo "$m: ORT level all: $ort_nodes" >"$work/$m.ort_nodes.txt"
  declare -A row=()
  for t in $targets; do
    opt=$work/$m-$t
    rm -rf "$opt"; mkdir -p "$opt"
    for s in "$src"/test_data_set_*; do ln -s "$s" "$opt/"; done
    log=$("$refeval" optimize "$src/model.onnx" -o "$opt/model.onnx" --target "$t" --explain 2>&1)
    echo "$log" >"$work/$m-$t.explain.txt"
    ops=$(grep '^operators:' <<<"$log")
    count() { local n=0 op; for op; do n=$(( n + $(grep -oE "(: |, )$op [0-9]+" <<<"$ops" | grep -oE '[0-9]+$' || echo 0) )); done; echo $n; }
    nodes=$(sed -n 's/^nodes: \([0-9]*\) -> \([0-9]*\);.*/\1 \2/p' <<<"$log")
    if "$refeval" -q test "$opt" --rtol 0 --atol 1e-5 >/dev/null 2>&1; then ref="<=1e-5"
    elif "$refeval" -q test "$opt" --rtol 0 --atol 1e-4 >/dev/null 2>&1; then ref="<=1e-4"
    else ref=FAIL; fi
    diff=$(NODE_PATH=$here/ort/node_modules node "$here/../tests/data/optimize/check_ort.js" "$opt" 2>&1 | grep -oE 'torch\| [^ ]+' | cut -d' ' -f2) || true
    row[$t]=$(printf "%-22s %-4s %5s %5s %5s %3s %3s %4s %3s %4s %5s %-11s %-8s %8s" "$m" "$t" $nodes "${ort_nodes%% *}" \
      "$(count LayerNormalization SkipLayerNormalization)" \
      "$(count SimplifiedLayerNormalization SkipSimplifiedLayerNormalization RMSNormalization)" \
      "$(count Attention MultiHeadAttention GroupQueryAttention)" "$(count RotaryEmbedding)" \
      "$(count FastGelu BiasGelu Gelu)" "$(count QuickGelu)" "$(count Softmax)/$(count Tanh)/$(count Neg)" "$ref" "${diff:-ERROR}")
  done
  # Speed: original and each optimized model alternated, one process at a time.
  declare -A ms=()  # ms[KIND.VARIANT]: the rounds' medians, KIND re_pre, re_dec, ort_pre or ort_dec
  for ((r = 0; r < rounds; ++r)); do
    for v in orig $targets; do
      model=$work/$m-$v/model.onnx; [[ $v == orig ]] && model=$src/model.onnx
      ms[re_pre.$v]+=" $(refeval_ms "$model" "$src/test_data_set_0")"
      ms[re_dec.$v]+=" $(refeval_ms "$model" "$src/test_data_set_1")"
      o=($(ort_ms "$model" "$src"))
      ms[ort_pre.$v]+=" ${o[0]}" ms[ort_dec.$v]+=" ${o[1]}"
    done
  done
  for k in "${!ms[@]}"; do ms[$k]=$(median ${ms[$k]}); done
  for v in orig $targets; do
    times+=$(printf "\n%-22s %-4s refeval prefill %8s ms, decode %8s ms; ORT prefill %8s ms, decode %8s ms" "$m" "$v" \
      "${ms[re_pre.$v]}" "${ms[re_dec.$v]}" "${ms[ort_pre.$v]}" "${ms[ort_dec.$v]}")
  done
  for t in $targets; do
    table+=$'\n'"${row[$t]}"$(printf " %6s %6s %6s %6s" "$(ratio "${ms[re_pre.orig]}" "${ms[re_pre.$t]}")" \
      "$(ratio "${ms[re_dec.orig]}" "${ms[re_dec.$t]}")" "$(ratio "${ms[ort_pre.orig]}" "${ms[ort_pre.$t]}")" \
      "$(ratio "${ms[ort_dec.orig]}" "${ms[ort_dec.$t]}")")
  done
  unset row ms
done
echo "$table"
echo "
Speed ratios: original / optimized (> 1: faster), medians of $rounds rounds of $repeat runs; set 0 prefill, set 1 decode.
Median times (original and optimized):$times"
