#!/usr/bin/env bash
# Two threads when a core is taken ("Fast on a real machine"): refeval at --threads 1 and 2 beside
# ONNX Runtime 1.30 (graph optimizations disabled) at intraOpNumThreads 1 and 2, once on a quiet
# machine and once with one core saturated by another process (a Python busy loop, unpinned unless
# BUSY_CPU names a core for taskset; killed on exit), alternated in ROUNDS rounds (the two modes'
# order and the four runs' order rotate from round to round); times are the medians over rounds,
# 2t/1t the median of each round's ratio (below 1: the second thread helps). Cases:
#   decode   the median decode step of llm/generate.sh's loop (`refeval generate` against
#            ort/generate_ort.js, 16 new tokens from a 32-token prompt) on a Llama-style fp32 torch
#            export: 12 layers x 768, 12 heads over 4 KV heads, MLP 2048, vocabulary 32000
#            (llm/decode_heldout.sh's model);
#   prefill  the same runs' prefill of the 32 tokens (time to first token; one per run);
#   gpt2     GPT-2 small, 32 tokens (gpt2/make_gpt2.py, opset 17: compare.sh's model), `refeval run
#            --repeat REPEAT` against ort/bench_ort.js, the median of REPEAT runs;
#   resnet18 torchvision's ResNet-18, batch 1 (vision/make_torchvision.py), the same way.
# The decoder's ids are checked equal in both runtimes (the ids column). Prints a Markdown table
# per case, rows quiet and busy. Under the decode table, the machine's read bandwidth in the quiet
# rounds at 1 and 2 threads (gemv/read_bandwidth.c): a decode step streams its weights, so its
# 2t/1t cannot go below the bandwidths' ratio once one thread reads at the one-thread bandwidth.
#   benchmarks/threads/busy_core.sh [BUILD_DIR]     (ROUNDS=3, REPEAT=10, BUSY_CPU, MODES="quiet busy",
#                                                   CASES="decode gpt2 resnet18" (decode gives
#                                                   prefill too), REFEVAL_BENCH_DIR)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
use_build "${1:-}"
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
rounds=${ROUNDS:-3}
repeat=${REPEAT:-10}
read -ra modes <<<"${MODES:-quiet busy}"
read -ra cases <<<"${CASES:-decode gpt2 resnet18}"
mkdir -p "$work"
ensure_ort

llama=$work/heldout-llama-12x768-mlp2048
[[ -f $llama/model.onnx ]] || /usr/bin/python3 "$here/llm/make_decoder.py" "$llama" torch --layers 12 --hidden 768 \
  --heads 12 --kv-heads 4 --intermediate 2048 --vocab 32000
[[ -f $work/gpt2-small-opset17-seq32/model.onnx ]] ||
  /usr/bin/python3 "$here/gpt2/make_gpt2.py" "$work/gpt2-small-opset17-seq32" --opset 17 --seq 32 >/dev/null 2>&1
[[ -f $work/resnet18/model.onnx ]] || /usr/bin/python3 "$here/vision/make_torchvision.py" "$work/resnet18" resnet18 >/dev/null 2>&1
bw_exe=$work/read_bandwidth
[[ $bw_exe -nt $here/gemv/read_bandwidth.c ]] || cc -O3 -march=native -fopenmp "$here/gemv/read_bandwidth.c" -o "$bw_exe"
declare -a bw1 bw2  # the quiet rounds' read bandwidths, GB/s
prompt=$(/usr/bin/python3 -c "import numpy as np; r = np.random.default_rng(0); print(' '.join(map(str, r.integers(0, 96, 32))))")
tmp=$(mktemp -d)

busy=
start_busy() {
  if [[ -n ${BUSY_CPU:-} ]]; then taskset -c "$BUSY_CPU" /usr/bin/python3 -c 'while True: pass' &
  else /usr/bin/python3 -c 'while True: pass' & fi
  busy=$!
  sleep 0.5
}
stop_busy() {
  if [[ -n $busy ]]; then kill "$busy" 2>/dev/null || true; wait "$busy" 2>/dev/null || true; fi
  busy=
}
trap 'stop_busy; rm -rf "$tmp"' EXIT

# one measurement of RUNTIME (ref, ort) at THREADS on CASE: "ms" ("prefill_ms decode_ms" for decode)
measure() {
  local runtime=$1 threads=$2 case=$3 dir input
  if [[ $case == decode ]]; then
    if [[ $runtime == ref ]]; then
      "$refeval" -q --threads "$threads" generate "$llama/model.onnx" --prompt "$prompt" --new-tokens 16 \
        --json "$tmp/ref$threads.json" >/dev/null
      /usr/bin/python3 -c "import json; f = json.load(open('$tmp/ref$threads.json')); print(f['prefill_ms'], f['decode_median_ms'])"
    else
      (cd "$here/ort" && ORT_THREADS=$threads node generate_ort.js "$llama/model.onnx" --prompt "$prompt" --new-tokens 16 \
        --json "$tmp/ort$threads.json" >/dev/null)
      /usr/bin/python3 -c "import json, statistics as s; o = json.load(open('$tmp/ort$threads.json')); print(o['prefill_ms'], s.median(o['decode_ms']))"
    fi
    return
  fi
  dir=$work/gpt2-small-opset17-seq32 input=input_ids
  [[ $case == resnet18 ]] && dir=$work/resnet18 input=input
  if [[ $runtime == ref ]]; then
    "$refeval" --threads "$threads" run "$dir/model.onnx" --input "$input=$dir/$input.npy" --repeat "$repeat" |
      sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p'
  else
    (cd "$here/ort" && ORT_LEVEL=disabled ORT_THREADS=$threads node bench_ort.js "$dir/model.onnx" "$repeat" "$input=$dir/$input.npy" | cut -d' ' -f1)
  fi
}

declare -A t   # "mode|case|runtime|threads" -> the rounds' times, space-separated
declare -A ids # "mode" -> "yes" unless a round's decoder ids differed between the runtimes
configs=("ref 1" "ref 2" "ort 1" "ort 2")
echo "$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "busy: /usr/bin/python3 -c 'while True: pass' ${BUSY_CPU:+pinned to CPU $BUSY_CPU}${BUSY_CPU:-unpinned}; ROUNDS=$rounds, REPEAT=$repeat"
for ((r = 0; r < rounds; ++r)); do
  for ((m = 0; m < ${#modes[@]}; ++m)); do
    mode=${modes[(m + r) % ${#modes[@]}]}
    [[ $mode == busy ]] && start_busy
    [[ $mode == quiet ]] && bw1+=("$("$bw_exe" 1)") && bw2+=("$("$bw_exe" 2)")
    for case in "${cases[@]}"; do
      for ((c = 0; c < 4; ++c)); do
        read -r runtime threads <<<"${configs[(c + r) % 4]}"
        measure "$runtime" "$threads" "$case" >"$tmp/measured"  # not in $(...): a failing run stops the script
        read -r a b <"$tmp/measured"
        if [[ $case == decode ]]; then
          t["$mode|prefill|$runtime|$threads"]+=" $a" t["$mode|decode|$runtime|$threads"]+=" $b"
        else
          t["$mode|$case|$runtime|$threads"]+=" $a"
        fi
      done
      if [[ $case == decode ]]; then
        same=$(/usr/bin/python3 -c "
import json
f = [json.load(open('$tmp/' + n + '.json'))['tokens'] for n in ('ref1', 'ref2', 'ort1', 'ort2')]
print('yes' if all(x == f[0] for x in f) else 'NO')")
        [[ ${ids[$mode]:-yes} == yes ]] && ids[$mode]=$same
      fi
    done
    stop_busy
  done
done

# the median of the rounds' b/a for one mode, case and runtime
gain() {
  local -a x y q=()
  read -ra x <<<"${t["$1|$2|$3|1"]}"
  read -ra y <<<"${t["$1|$2|$3|2"]}"
  for ((i = 0; i < ${#x[@]}; ++i)); do q+=("$(awk -v a="${x[i]}" -v b="${y[i]}" 'BEGIN { print b / a }')"); done
  median "${q[@]}"
}
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); times in ms, medians over rounds; 2t/1t: the median of the rounds' 2-thread / 1-thread ratios (below 1: the second thread helps)"
shown=()
for case in "${cases[@]}"; do
  shown+=("$case")
  [[ $case == decode ]] && shown+=(prefill)
done
for case in "${shown[@]}"; do
  echo
  echo "### $case"
  echo
  header="| other core | refeval 1t ms | refeval 2t ms | refeval 2t/1t | ORT 1t ms | ORT 2t ms | ORT 2t/1t |"
  rule="|---|---:|---:|---:|---:|---:|---:|"
  [[ $case == decode ]] && header+=" ids |" rule+=":---:|"
  printf "%s\n%s\n" "$header" "$rule"
  for mode in "${modes[@]}"; do
    # shellcheck disable=SC2086
    printf "| %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f |%s\n" "$mode" \
      "$(median ${t["$mode|$case|ref|1"]})" "$(median ${t["$mode|$case|ref|2"]})" "$(gain "$mode" "$case" ref)" \
      "$(median ${t["$mode|$case|ort|1"]})" "$(median ${t["$mode|$case|ort|2"]})" "$(gain "$mode" "$case" ort)" \
      "$([[ $case == decode ]] && echo " ${ids[$mode]} |")"
  done
  if [[ $case == decode && ${#bw1[@]} -gt 0 ]]; then
    b1=$(median "${bw1[@]}") b2=$(median "${bw2[@]}")
    streamed=$(/usr/bin/python3 -c "
import onnx
m = onnx.load('$llama/model.onnx', load_external_data=False)
w = {i.name: len(i.raw_data) for i in m.graph.initializer}
print(sum(w.get(n.input[1], 0) for n in m.graph.node if n.op_type == 'MatMul'))")
    echo
    awk -v b1="$b1" -v b2="$b2" -v w="$streamed" -v r1="$(median ${t["quiet|decode|ref|1"]})" -v r2="$(median ${t["quiet|decode|ref|2"]})" \
        -v o1="$(median ${t["quiet|decode|ort|1"]})" -v o2="$(median ${t["quiet|decode|ort|2"]})" 'BEGIN {
      printf "The step reads %.0f MB of MatMul weights. The quiet machine read %.1f GB/s on one thread and %.1f on two (gemv/read_bandwidth.c, the rounds'"'"' median): a floor of %.3f for a step that streams its weights at the one-thread bandwidth. Weights per step time, 1t / 2t: refeval %.1f / %.1f GB/s, ORT %.1f / %.1f. With its one-thread time as it is, refeval'"'"'s 2t/1t cannot go below %.3f (the weights read at the two-thread bandwidth and everything else free, over its one-thread time); ORT'"'"'s one thread, slower, leaves it room down to %.3f.\n",
        w / 1e6, b1, b2, b1 / b2, w / r1 / 1e6, w / r2 / 1e6, w / o1 / 1e6, w / o2 / 1e6, w / b2 / 1e6 / r1, w / b2 / 1e6 / o1 }'
  fi
done
