#!/usr/bin/env bash
# What `refeval optimize --target ort` buys in ONNX Runtime: each case of make_models.py (the
# optimizer's fixture families at hidden 512, 8 heads, 4 layers; encoders and prefill at batch 2 x
# 128, decode steps after a past of 512) timed in ORT 1.30 CPU at its own graph optimization level
# `all` on (a) the torch export and (b) refeval's optimized model, at 1 and 2 threads
# (intraOpNumThreads), a and b alternated in ROUNDS rounds of REPEAT runs (ort/time_pair.js).
# ratio = b / a (below 1: the optimized model is faster), the median of the rounds' ratios; the
# geometric mean over the cases closes each column. "diff" is the largest difference of any
# output, b against a in ORT (one thread), beside the outputs' largest magnitude; rows a mask hides
# entirely differ by design (no runtime agrees there) and count in it. Then ORT's own profile (one
# thread, level all) of the case with the largest gain and of the one with the smallest, per op type,
# original against optimized (`refeval report --compare`). "floor 1t" is what the optimized model
# would take if every node but the products took no time: the products' share of the original's
# node time in that one-thread profile (ort/product_share.js), which no rewrite of the graph gets under.
#   benchmarks/optimize/ort_speed.sh [BUILD_DIR]     (REPEAT=10, ROUNDS=3, CASES="name ...",
#                                                     OPTIMIZE_ARGS, REFEVAL_OPTIMIZE_DIR)
# Needs Debian's python3-torch and python3-onnx (the exports, made once) and npm. Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
work=${REFEVAL_OPTIMIZE_DIR:-/tmp/refeval-optimize-ort}
repeat=${REPEAT:-10}
rounds=${ROUNDS:-3}
ensure_ort
[[ -d $work/models ]] || /usr/bin/python3 "$here/optimize/make_models.py" "$work" >&2
mkdir -p "$work/optimized"
cases=${CASES:-$(cd "$work" && ls -d */ | tr -d / | grep -v '^models$\|^optimized$')}

# profile_original CASE: ORT's one-thread profile of the case's original (made once per export)
profile_original() {
  local dir=$work/$1 feeds=()
  [[ -f $work/$1.original.json && ! $work/$1.original.json -ot $dir/model.onnx ]] && return
  for f in "$dir"/*.npy; do feeds+=("$(basename "$f" .npy)=$f"); done
  (cd "$here/ort" && node profile_ort.js "$(readlink -f "$dir/model.onnx")" all 21 "$work/$1.original.json" "${feeds[@]}" >/dev/null)
}

# optimized MODEL_PATH -> refeval's --target ort output for it (made once per model and options)
optimized() {
  local args=${OPTIMIZE_ARGS:-}
  local out=$work/optimized/${args//[^a-z0-9]/_}$(basename "$1")
  if [[ ! -f $out || $out -ot $refeval ]]; then
    # shellcheck disable=SC2086
    "$refeval" optimize "$1" -o "$out" --target ort ${OPTIMIZE_ARGS:-} >"$out.log" 2>&1 || { echo "optimize failed: $(tail -1 "$out.log")" >&2; return 1; }
  fi
  echo "$out"
}

echo "ONNX Runtime $(node -p "require('$here/ort/node_modules/onnxruntime-node/package.json').version") CPU at graph optimization level all on the torch export (original) and on \`refeval optimize --target ort\`${OPTIMIZE_ARGS:+ $OPTIMIZE_ARGS} (optimized); medians of $rounds alternated rounds of $repeat runs; ratio = optimized / original (below 1: faster)."
echo
echo "| case | fused | original 1t (ms) | optimized 1t (ms) | ratio 1t | floor 1t | original 2t (ms) | optimized 2t (ms) | ratio 2t | diff (max abs) |"
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|---|"
logs=()
ratios=()  # "ratio_1t case"
floors=()  # "1 floor_1t"
for c in $cases; do
  dir=$work/$c
  original=$(readlink -f "$dir/model.onnx")
  opt=$(optimized "$original") || continue
  feeds=()
  for f in "$dir"/*.npy; do feeds+=("$(basename "$f" .npy)=$f"); done
  row=()
  for t in 1 2; do
    echo "$c: $t thread(s)" >&2
    read -r a b ratio diff scale < <(cd "$here/ort" && ORT_THREADS=$t node time_pair.js "$original" "$opt" "$repeat" "$rounds" "${feeds[@]}" || echo "ERR ERR ERR ERR ERR")
    row+=("$a" "$b" "$ratio")
    [[ $t == 1 ]] && d1="$diff ($scale)" && ratios+=("$ratio $c")
    logs+=("$t $ratio")
  done
  profile_original "$c"
  floor=$(cd "$here/ort" && node product_share.js "$work/$c.original.json" | cut -d' ' -f1)
  floors+=("1 $floor")
  row=("${row[@]:0:3}" "$floor" "${row[@]:3}")
  fused=$(sed -n 's/^operators: //p' "$opt.log" | tr ',' '\n' | grep -oE '(Attention|MultiHeadAttention|GroupQueryAttention|SkipLayerNormalization|SkipSimplifiedLayerNormalization|RotaryEmbedding|EmbedLayerNormalization|BiasGelu|FastGelu) [0-9]+' | sed 's/LayerNormalization/LN/; s/MultiHeadAttention/MHA/' | paste -sd' ' - || true)
  printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$c" "${fused:--}" "${row[@]}" "$d1"
done
geomean() { printf "%s\n" "${@:2}" | awk -v t="$1" '$1 == t && $2 != "ERR" { s += log($2); n++ } END { if (n) printf "%.3f (%d cases)", exp(s / n), n; else print "-" }'; }
echo "| geometric mean | | | | $(geomean 1 "${logs[@]}") | $(geomean 1 "${floors[@]}") | | | $(geomean 2 "${logs[@]}") | |"

# profile CASE LABEL: ORT's per-op times of the original and the optimized model, side by side
profile() {
  local dir=$work/$1 original opt feeds=()
  original=$(readlink -f "$dir/model.onnx")
  opt=$(optimized "$original")
  for f in "$dir"/*.npy; do feeds+=("$(basename "$f" .npy)=$f"); done
  profile_original "$1"
  (cd "$here/ort" && node profile_ort.js "$opt" all 21 "$work/$1.optimized.json" "${feeds[@]}" >/dev/null)
  echo
  echo "ORT's profile, $2: $1 (one thread, level all, 20 runs after a warm-up; ms per run by op type, original then optimized). A profile adds a little time to every node, so a graph of more nodes reads slower here than it runs."
  echo
  "$refeval" report "$work/$1.original.json" --compare "$work/$1.optimized.json" --format md --top 12
}
mapfile -t ranked < <(printf "%s\n" "${ratios[@]}" | grep -v '^ERR' | sort -g)
if ((${#ranked[@]} > 1)); then
  profile "${ranked[0]#* }" "the largest gain"
  profile "${ranked[-1]#* }" "the smallest gain"
fi
