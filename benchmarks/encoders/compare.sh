#!/usr/bin/env bash
# refeval's optimizer on encoders at realistic sizes, timed in ONNX Runtime: for each model of
# make_encoder_exports.py --size base (BERT-base, DistilBERT, a 6-layer nn.TransformerEncoder,
# torchvision's ViT-B/16, CLIP's ViT-B/32 vision tower, T5-small's encoder; random seeded weights),
# `refeval optimize` with its default options (no --model-type), then ORT 1.30 CPU (onnxruntime-node)
# at its own graph optimization level `all` on (a) the torch export and (b) refeval's optimized
# model, on 1 and 2 threads (intraOpNumThreads), REPEAT runs each. a and b are alternated in ROUNDS
# rounds: times are the medians over rounds of each run's median, ratios (b / a, below 1: the
# optimized model is faster) the medians of each round's ratio (a VM's speed drifts within a minute;
# a ratio within one round cancels it). Inputs: batch 2 x 128 tokens, input_ids random ids in
# [3, vocab), attention_mask with row 1 right-padded by 16 (pad id 0 there), token_type_ids zeros,
# key_padding_mask its negation (True = padding); images: batch 2, 3 x 224 x 224, normal pixels.
# Each model's outputs in ORT (level all, one thread) are compared once, optimized against
# original, on those inputs: the largest absolute difference over all outputs ("ok" if <= 1e-3),
# beside the outputs' largest absolute value and, for scale, the largest difference ORT's own
# optimizer makes (the original at level all against level disabled).
# Prints a markdown table (progress on stderr).
#   benchmarks/encoders/compare.sh [BUILD_DIR]     (REPEAT=20, ROUNDS=3; REFEVAL_ENCODERS_DIR for
#                                                   the exports, default /tmp/refeval-encoders-base)
# Needs Debian's python3-torch, python3-torchvision and python3-onnx (to export the models once)
# and npm (installs onnxruntime-node into benchmarks/ort/node_modules on first use). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
exporters=$here/../tests/data/optimize
work=${REFEVAL_ENCODERS_DIR:-/tmp/refeval-encoders-base}
repeat=${REPEAT:-20}
rounds=${ROUNDS:-3}
mkdir -p "$work"
ensure_ort
for ((i = 0; i < 10; ++i)); do  # up to 5 minutes while the binary is relinked
  [[ -x $refeval ]] && break
  echo "waiting for $refeval" >&2
  sleep 30
done

# label|name in encoder_exporters.BASE
models=(
  "BERT-base (HF BertModel)|hf_bert"
  "DistilBERT-base|distilbert_like"
  "nn.TransformerEncoder 6 x 512|torch_encoder"
  "torchvision ViT-B/16|torchvision_vit"
  "CLIP ViT-B/32 vision|clip_vision"
  "T5-small encoder|t5_encoder"
)

# inputs NAME DIR: DIR/<input>.npy for each graph input of the model; prints NAME=FILE feeds.
inputs() {
  /usr/bin/python3 - "$exporters" "$1" "$2" <<'PY'
import sys
import numpy as np
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import encoder_exporters as E
name, folder = sys.argv[2], sys.argv[3]
c, inputs = E.BASE[name], E.MODELS[name][0].inputs
rng = np.random.default_rng(0)
mask = np.ones((2, 128), np.int64)
mask[1, -16:] = 0
arrays = {"input_ids": np.where(mask == 1, rng.integers(3, c.vocab, (2, 128)), 0).astype(np.int64),
          "attention_mask": mask, "token_type_ids": np.zeros((2, 128), np.int64), "key_padding_mask": mask == 0}
for n in inputs:
    a = rng.standard_normal((2, 3, c.image, c.image), dtype=np.float32) if n == "pixel_values" else arrays[n]
    np.save(f"{folder}/{n}.npy", a)
    print(f"{n}={folder}/{n}.npy", end=" ")
PY
}
ort_ms() {  # ort_ms THREADS MODEL FEEDS... -> the median ms, or ERR (ORT's message on stderr)
  local t=$1 m=$2
  shift 2
  (cd "$here/ort" && ORT_LEVEL=all ORT_THREADS=$t node bench_ort.js "$m" "$repeat" "$@" | cut -d' ' -f1) || echo ERR
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "ERR" || b == "ERR") print "ERR"; else printf "%.3f\n", b / a }'; }
med() { if [[ " $* " == *" ERR "* ]]; then echo ERR; else median "$@"; fi; }
fmt() { [[ $1 == ERR ]] && echo ERR || printf "%.${2:-1}f" "$1"; }

echo "Batch 2 x 128 tokens (row 1 right-padded by 16), images batch 2 x 3 x 224 x 224; ONNX Runtime $(node -p "require('$here/ort/node_modules/onnxruntime-node/package.json').version") at its graph optimization level all on both the torch export (original) and refeval's optimized model; 1t, 2t: intraOpNumThreads; medians of $rounds rounds of $repeat runs."
echo "SkipLN counts SkipLayerNormalization and SkipSimplifiedLayerNormalization; ratio: optimized / original (below 1: faster)."
echo
echo "| model | nodes original -> optimized | Attention | MHA | EmbedLN | SkipLN | original 1t (ms) | optimized 1t (ms) | ratio 1t | original 2t (ms) | optimized 2t (ms) | ratio 2t | outputs: max abs diff, optimized vs original |"
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
for entry in "${models[@]}"; do
  IFS='|' read -r label name <<<"$entry"
  folder=$(compgen -G "$work/${name}_opset*" | head -1 || true)
  if [[ -z $folder || ! -f $folder/model.onnx ]]; then
    echo "$name: exporting to $work" >&2
    /usr/bin/python3 "$exporters/make_encoder_exports.py" --size base --out "$work" --only "$name" >/dev/null 2>&1
    folder=$(compgen -G "$work/${name}_opset*" | head -1)
  fi
  orig=$folder/model.onnx opt=$folder/refeval.onnx
  read -ra feeds <<<"$(inputs "$name" "$folder")"
  echo "$name: refeval optimize" >&2
  log=$("$refeval" optimize "$orig" -o "$opt" 2>&1) || { echo "$name: refeval optimize failed" >&2; echo "$log" >&2; exit 1; }
  nodes=$(sed -n 's/^nodes: \([0-9]*\) -> \([0-9]*\);.*/\1 -> \2/p' <<<"$log")
  ops=$(grep '^operators:' <<<"$log")
  count() { { grep -oE "(: |, )$1 [0-9]+" <<<"$ops" || echo " 0"; } | grep -oE '[0-9]+$' | awk '{ s += $1 } END { print s + 0 }'; }
  skip=$(( $(count SkipLayerNormalization) + $(count SkipSimplifiedLayerNormalization) ))
  echo "$name: ORT outputs, optimized against original" >&2
  if diff_out=$(cd "$here/ort" && node ort_models_diff.js "$orig" "$opt" "${feeds[@]}"); then
    read -r maxdiff scale <<<"$diff_out"
    sed "s/^/  /" <<<"$diff_out" >&2
    own=$(cd "$here/ort" && ORT_REF_LEVEL=disabled node ort_models_diff.js "$orig" "$orig" "${feeds[@]}" | awk 'NR == 1 { print $1 }') || own=ERR
    diff=$(awk -v d="$maxdiff" -v s="$scale" -v o="$own" 'BEGIN {
      printf "%.2e %s (max abs %.1f; ORT all vs disabled: %s)", d, d <= 1e-3 ? "ok" : "> 1e-3", s, o == "ERR" ? o : sprintf("%.2e", o) }')
  else
    diff=ERR
  fi
  a1=() b1=() r1=() a2=() b2=() r2=()
  for ((r = 0; r < rounds; ++r)); do
    echo "$name: round $((r + 1)) of $rounds" >&2
    a1+=("$(ort_ms 1 "$orig" "${feeds[@]}")"); b1+=("$(ort_ms 1 "$opt" "${feeds[@]}")")
    a2+=("$(ort_ms 2 "$orig" "${feeds[@]}")"); b2+=("$(ort_ms 2 "$opt" "${feeds[@]}")")
    r1+=("$(ratio "${a1[r]}" "${b1[r]}")") r2+=("$(ratio "${a2[r]}" "${b2[r]}")")
  done
  echo "| $label | $nodes | $(count Attention) | $(count MultiHeadAttention) | $(count EmbedLayerNormalization) | $skip" \
       "| $(fmt "$(med "${a1[@]}")") | $(fmt "$(med "${b1[@]}")") | $(fmt "$(med "${r1[@]}")" 2)" \
       "| $(fmt "$(med "${a2[@]}")") | $(fmt "$(med "${b2[@]}")") | $(fmt "$(med "${r2[@]}")" 2) | $diff |"
done
