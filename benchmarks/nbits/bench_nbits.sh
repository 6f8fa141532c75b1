#!/usr/bin/env bash
# MatMulNBits (int4, block 32, symmetric, accuracy_level 0) against ONNX Runtime 1.30
# (onnxruntime-node, CPU, graph optimizations disabled, one thread) on the projections of a
# 768-wide decoder: K = 768 and N = 768, 2304 (packed QKV), 3072 (MLP up) and 32000 (an LM head),
# at M = 1 (a decode step) and M = 32 (a prefill). Times are the node's kernel time from each
# runtime's profile (ORT's JSON, and refeval profile's, which writes the same format), median and
# minimum over REPEAT runs after one warm-up, alternated over ROUNDS rounds; the ratio is the median
# of the rounds' refeval / ORT ratios of medians. The minimum is the better estimate on a busy
# machine. Each model is also checked against ORT's output (refeval test, rtol 1e-3, atol 1e-4).
#   benchmarks/nbits/bench_nbits.sh [BUILD_DIR]     (REPEAT=50, ROUNDS=3, THREADS=1, LEVEL=0)
# LEVEL=4 times ORT's int8 path against refeval's exact math (and --emulate-accuracy-level when
# EMULATE=1).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
level=${LEVEL:-0}
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}/nbits-level$level
repeat=${REPEAT:-50}
rounds=${ROUNDS:-3}
threads=${THREADS:-1}
emulate=()
[[ ${EMULATE:-0} == 1 ]] && emulate=(--emulate-accuracy-level)
ensure_ort
# kernel_ms PROFILE.json -> "median min" of the MatMulNBits kernel times, the warm-up run left out
kernel_ms() {
  /usr/bin/python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))
t = sorted(e["dur"] / 1000 for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
           and e.get("args", {}).get("op_name") == "MatMulNBits")
t = sorted(t[1:]) if len(t) > 1 else t
print(f"{t[len(t) // 2]:.4f} {t[0]:.4f}")' "$1"
}
echo "K = 768, threads $threads, accuracy_level $level${emulate:+ (refeval with --emulate-accuracy-level)}; kernel ms over $repeat runs x $rounds rounds"
echo
echo '```'
printf "%-18s %10s %10s %12s %12s %6s %8s %6s\n" model ort_med ort_min refeval_med refeval_min ratio min_rat check
for M in 1 32; do
  for N in 768 2304 3072 32000; do
    name=k768_n${N}_m${M}
    dir=$work/$name
    [[ -f $dir/model.onnx ]] || /usr/bin/python3 "$here/nbits/make_nbits.py" "$dir" --M "$M" --K 768 --N "$N" --level "$level" >/dev/null
    ort_med=() ort_min=() our_med=() our_min=() ratio=()
    for ((r = 0; r < rounds; ++r)); do
      (cd "$here/ort" && node profile_ort.js "$dir/model.onnx" disabled $((repeat + 1)) "$work/ort.json" "A=$dir/A.npy" >/dev/null)
      read -r a b <<<"$(kernel_ms "$work/ort.json")"
      ort_med+=("$a") ort_min+=("$b")
      "$refeval" -q --threads "$threads" "${emulate[@]}" profile "$dir/model.onnx" --input "A=$dir/A.npy" --warmup 1 \
        --repeat "$repeat" -o "$work/refeval.json" >/dev/null
      read -r c d <<<"$(kernel_ms "$work/refeval.json")"
      our_med+=("$c") our_min+=("$d")
      ratio+=("$(awk -v x="$c" -v o="$a" 'BEGIN { print x / o }')")
    done
    "$refeval" -q "${emulate[@]}" test "$dir" --rtol 1e-3 --atol 1e-4 >/dev/null && check=ok || check=DIFF
    om=$(median "${ort_min[@]}") rm=$(median "${our_min[@]}")
    printf "%-18s %10.4f %10.4f %12.4f %12.4f %6.2f %8.2f %6s\n" "$name" "$(median "${ort_med[@]}")" "$om" \
      "$(median "${our_med[@]}")" "$rm" "$(median "${ratio[@]}")" "$(awk -v x="$rm" -v o="$om" 'BEGIN { print x / o }')" "$check"
  done
done
echo '```'
