#!/usr/bin/env bash
# Few-row float32 products (a decode step's weight streaming) swept over shapes, refeval against
# ONNX Runtime 1.30 side by side in one run: one-node models Y = X · W (gemv/make_gemv.py, W a
# random float32 initializer, X an input of M rows), `refeval --threads T run --repeat R` against
# ORT (ort/bench_ort.js, graph optimizations disabled, T intra-op threads), alternated in ROUNDS
# rounds: times are the medians over rounds of each round's median, the ratio the median of each
# round's refeval / ORT. Each product's weight bandwidth (weight bytes / time) is set beside this
# machine's read bandwidth, measured in each of the product's rounds (gemv/read_bandwidth.c: a 1
# GiB float32 array summed on T threads, best of 3; the row shows the median): on a shared machine
# the bandwidth drifts by 20% within minutes, so one figure at the start would misjudge later rows. Prints a Markdown table and a last line with the worst ratio and
# the worst bandwidth fraction among weights of 64 MiB or more (smaller ones sit partly in cache).
#   benchmarks/gemv/sweep.sh [BUILD_DIR]     (REPEAT=20, ROUNDS=3, THREADS=1, SHAPES=12, SEED=1,
#                                             MAX_MB=1024, FILTER=regex, KINDS="matmul",
#                                             STREAMED=0, REFEVAL_BENCH_DIR)
# Shapes MxKxN: the named ones below (FILTER, an extended regex, keeps those it matches; random
# ones are not filtered), then SHAPES drawn by make_gemv.py --draw from SEED: M in {1, 2, 4, 8}, K
# and N log-uniform in [256, 160000], every other one odd, the weight at most MAX_MB MiB. KINDS
# (separated by spaces or commas): matmul (MatMul, W (K, N)), gemm (Gemm transB=1, W (N, K)), f16
# (a float16 W widened by Cast before the MatMul), half (MatMul in float16: X, W and Y); the
# weight bytes of f16 and half are the float16 ones. STREAMED=COUNT replaces all of these by COUNT
# small weights (make_gemv.py --draw-small: 64 KiB to 1 MiB, M 1 or 2), each product chained over
# 128 MiB of its own weights (make_gemv.py --chain): a decode step's key and value projections,
# which come from memory, not cache; the row's times are per chain. The models are kept in
# REFEVAL_BENCH_DIR/gemv (about 6 GB for the default sweep). Needs Debian's python3-onnx and
# numpy, a C compiler with OpenMP, and npm (onnxruntime-node into benchmarks/ort on first use).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}/gemv
repeat=${REPEAT:-20}
rounds=${ROUNDS:-3}
threads=${THREADS:-1}
IFS=", " read -ra kinds <<<"${KINDS:-matmul}"
mkdir -p "$work"
ensure_ort

# MxKxN of products in decoders people run, at a decode step (M = 1) or a few sequences at once
named=(
  1x768x32000    # LM head of a 768-wide decoder with a 32000-word vocabulary (llm/generate.sh's)
  1x896x151936   # Qwen2-0.5B's LM head
  1x4096x11008   # Llama-2-7B's MLP gate / up
  1x11008x4096   # Llama-2-7B's MLP down
  1x3072x8192    # Llama-3.2-3B's MLP gate / up
  1x1536x8960    # Qwen2-1.5B's MLP gate / up
  1x5120x5120    # Llama-2-13B's attention projections
  1x1000x3001    # odd sizes
  4x4096x4096    # Llama-2-7B's attention projections, 4 sequences
  2x3584x18944   # Qwen2-7B's MLP gate / up, 2 sequences
  4x2048x32000   # TinyLlama-1.1B's LM head, 4 sequences
)
shapes=()
if ((${STREAMED:-0} > 0)); then
  while read -r s; do shapes+=("$s streamed"); done \
    < <(/usr/bin/python3 "$here/gemv/make_gemv.py" --draw-small "$STREAMED" --seed "${SEED:-1}")
else
  for s in "${named[@]}"; do
    if [[ -z ${FILTER:-} || $s =~ $FILTER ]]; then shapes+=("$s named"); fi
  done
  while read -r s; do shapes+=("$s drawn"); done \
    < <(/usr/bin/python3 "$here/gemv/make_gemv.py" --draw "${SHAPES:-12}" --seed "${SEED:-1}" --max-mb "${MAX_MB:-1024}")
fi

bw_exe=$work/read_bandwidth
[[ $bw_exe -nt $here/gemv/read_bandwidth.c ]] || cc -O3 -march=native -fopenmp "$here/gemv/read_bandwidth.c" -o "$bw_exe"

refeval_ms() {  # refeval_ms DIR -> median ms of REPEAT runs
  local out t
  out=$("$refeval" -q --threads "$threads" run "$1/model.onnx" --input "X=$1/X.npy" --repeat "$repeat")
  t=$(sed -n 's/^elapsed: \(median \)\{0,1\}\([0-9.]*\) ms.*/\2/p' <<<"$out")
  [[ -n $t ]] || { echo "no time in refeval's output for $1" >&2; return 1; }
  echo "$t"
}

echo "refeval and ORT on $threads thread(s), medians of $repeat runs over $rounds alternated rounds; read bw: a 1 GiB" \
  "float32 array summed on $threads thread(s), best of 3, in each round (the median of the rounds)."
echo
echo "| shape MxKxN | kind | from | weight MiB | refeval ms | ORT ms | read bw GB/s | refeval GB/s | of read bw | ORT GB/s | of read bw | refeval/ORT |"
echo "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
summary=()
for entry in "${shapes[@]}"; do
  read -r shape from <<<"$entry"
  IFS=x read -r M K N <<<"$shape"
  for kind in "${kinds[@]}"; do
    dir=$work/$kind-$shape chain=()
    if [[ $from == streamed ]]; then dir+=-streamed chain=(--chain 128); fi
    [[ -f $dir/weight_bytes ]] || /usr/bin/python3 "$here/gemv/make_gemv.py" "$dir" --M "$M" --K "$K" --N "$N" --kind "$kind" "${chain[@]}"
    bytes=$(<"$dir/weight_bytes")
    ort=() ours=() ratio=() bws=()
    for ((r = 0; r < rounds; ++r)); do
      bws+=("$("$bw_exe" "$threads")")
      ort+=("$(cd "$here/ort" && ORT_LEVEL=disabled ORT_THREADS=$threads node bench_ort.js "$dir/model.onnx" "$repeat" "X=$dir/X.npy" | cut -d' ' -f1)")
      ours+=("$(refeval_ms "$dir")")
      ratio+=("$(awk -v a="${ours[r]}" -v o="${ort[r]}" 'BEGIN { print a / o }')")
    done
    row=$(awk -v s="$shape" -v k="$kind" -v f="$from" -v b="$bytes" -v a="$(median "${ours[@]}")" -v o="$(median "${ort[@]}")" \
              -v q="$(median "${ratio[@]}")" -v bw="$(median "${bws[@]}")" 'BEGIN {
      printf "| %s | %s | %s | %.1f | %.3f | %.3f | %.1f | %.1f | %.2f | %.1f | %.2f | %.2f |", s, k, f, b / 2^20, a, o, bw,
        b / a / 1e6, b / a / 1e6 / bw, b / o / 1e6, b / o / 1e6 / bw, q }')
    echo "$row"
    if ((bytes >= 64 << 20)); then summary+=("$row"); fi
  done
done
echo
if ((${#summary[@]})); then
  printf "%s\n" "${summary[@]}" | awk -F' *\\| *' '
    { name = $2 " " $3; split($2, mkn, "x"); m = mkn[1] }
    NR == 1 || $13 > worst { worst = $13; wn = name }
    !(m in low) || $10 < low[m] { low[m] = $10; ln[m] = name }
    END {
      printf "Weights of 64 MiB or more (%d): worst refeval/ORT %.2f (%s); lowest fraction of read bandwidth by rows:", NR, worst, wn
      sep = ""
      for (r = 1; r <= 4096; ++r)
        if (r in low) { printf "%s M = %d: %.2f (%s)", sep, r, low[r], ln[r]; sep = ";" }
      print "."
    }'
else
  echo "No weight of 64 MiB or more in this sweep."
fi
