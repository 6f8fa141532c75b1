#!/usr/bin/env bash
# Operator by operator, refeval against ONNX Runtime: the one-node models of make_ops.py (typical
# shapes of every kernel family) timed in ORT 1.30 CPU (onnxruntime-node, graph optimizations
# disabled, one thread) and in refeval (`run --repeat`, one thread), the two alternated in ROUNDS
# rounds; per case the medians of each runtime's medians and the median of each round's
# refeval/ORT ratio (a shared VM's speed drifts; a ratio within one round cancels most of it),
# sorted worst first; `same` says whether refeval's outputs match ORT's (refeval test, rtol 1e-3,
# atol 1e-4). The floor-relu-8 case shows each runtime's fixed cost of a run (onnxruntime-
# node's is about 0.03 ms, plus copying inputs and outputs between JavaScript and ORT: 0.3 ms for
# a 128 x 768 Add, whose kernel takes 0.1). KERNEL=1 takes ORT's time from its own profile
# instead (enableProfiling through ort/profile_ort.js; kernel_ms.py: the node's kernel_time in the
# median run), against refeval's `run`, which adds 1-2 us to its kernel (floor-relu-8). (Not
# `refeval profile`: under it a one-node BatchNormalization faulted in 780 fresh pages a run, 37
# under `run`, and its kernels took 2-6x as long.) A case one runtime cannot run shows "fail".
#   benchmarks/ops/compare.sh [BUILD_DIR]   (REPEAT=30, ROUNDS=5, KERNEL=0, FILTER=regex of case
#                                             names, REFEVAL_OPS_DIR=/tmp/refeval-ops for the models)
# Needs Debian's python3-onnx and npm (installs onnxruntime-node on first use). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
work=${REFEVAL_OPS_DIR:-/tmp/refeval-ops}
repeat=${REPEAT:-30}
rounds=${ROUNDS:-5}
filter=${FILTER:-}
ensure_ort
mkdir -p "$work"
/usr/bin/python3 "$here/ops/make_ops.py" "$work" --filter "$filter" --ort-outputs
mapfile -t cases < <(/usr/bin/python3 "$here/ops/make_ops.py" --list --filter "$filter")

feeds() {  # feeds DIR -> NAME=DIR/NAME.npy for every input file of the case
  local f
  for f in "$1"/*.npy; do printf "%s=%s\n" "$(basename "$f" .npy)" "$f"; done
}
ort_ms() {  # ort_ms DIR FEED... -> median ms, or nothing on failure
  if [[ ${KERNEL:-0} == 1 ]]; then
    (cd "$here/ort" && node profile_ort.js "$1/model.onnx" disabled "$((repeat + 1))" "$work/ort.json" "${@:2}" >/dev/null 2>&1 &&
      /usr/bin/python3 "$here/ops/kernel_ms.py" "$work/ort.json") || true
    return
  fi
  (cd "$here/ort" && ORT_LEVEL=disabled node bench_ort.js "$1/model.onnx" "$repeat" "${@:2}" 2>/dev/null | cut -d' ' -f1) || true
}
refeval_ms() {  # refeval_ms DIR FEED... -> median ms, or nothing on failure
  local args=() f
  for f in "${@:2}"; do args+=(--input "$f"); done
  "$refeval" --threads 1 run "$1/model.onnx" "${args[@]}" --repeat "$repeat" -v 1 2>/dev/null |
    sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p' || true
}

rows=()
for name in "${cases[@]}"; do
  dir=$work/$name
  mapfile -t fs < <(feeds "$dir")
  ort=() ref=() ratio=()
  for ((r = 0; r < rounds; ++r)); do
    o=$(ort_ms "$dir" "${fs[@]}")
    a=$(refeval_ms "$dir" "${fs[@]}")
    [[ -n $o && -n $a ]] || { ort=(); break; }
    ort+=("$o") ref+=("$a")
    ratio+=("$(awk -v a="$a" -v o="$o" 'BEGIN { print (o > 0 ? a / o : 0) }')")
  done
  if ((${#ort[@]} == 0)); then
    [[ -n ${o:-} ]] || o=fail
    [[ -n ${a:-} ]] || a=fail
    rows+=("$(printf "%-42s %10s %10s %7s" "$name" "$o" "$a" "-")")
    echo "$name: ort ${o} refeval ${a}" >&2
    continue
  fi
  "$refeval" -q test "$dir" --rtol 1e-3 --atol 1e-4 >/dev/null 2>&1 && same=ok || same=DIFF
  rows+=("$(awk -v n="$name" -v o="$(median "${ort[@]}")" -v a="$(median "${ref[@]}")" -v q="$(median "${ratio[@]}")" \
    -v s="$same" 'BEGIN { printf "%-42s %10.3f %10.3f %7.2f %5s", n, o, a, q, s }')")
  echo "${rows[-1]}" >&2
done
printf "%-42s %10s %10s %7s %5s\n" case ort_ms refeval_ms ratio same
printf "%s\n" "${rows[@]}" | sort -k4,4gr
