#!/usr/bin/env bash
# Writes benchmarks/RESULTS.md: a header naming the machine (CPU model, core count), the date
# (UTC), the ONNX Runtime version (benchmarks/ort/node_modules/onnxruntime-node) and refeval's git
# commit, then one section per benchmark of the list below, each the markdown its script prints.
#   benchmarks/report.sh [BUILD_DIR]     (REPEAT, ROUNDS and each script's own variables pass
#                                         through; each section states what it used)
# Run it on a quiet machine: the file is only replaced when every benchmark succeeded. To add a
# benchmark, add "title|script relative to benchmarks/" to the list (VAR=value words before the
# script set its variables); the script gets BUILD_DIR as its argument and prints markdown on stdout.
# ONLY=TEXT runs only the benchmarks whose command (settings and script path) contains TEXT; the other sections (and the
# header) are kept from the current file, and each section run says its own commit and date.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
out=$here/RESULTS.md

benchmarks=(
  "Few-row float products (a decode step's weight streaming) against ONNX Runtime, one thread|gemv/sweep.sh"
  "Small weights streamed at a decode step (key and value projections, each product chained over 128 MiB of its own weights) against ONNX Runtime, one thread|STREAMED=8 gemv/sweep.sh"
  "Small weights streamed at a decode step, two threads on both sides|STREAMED=8 THREADS=2 gemv/sweep.sh"
  "Gemm with transB and float16 weights against ONNX Runtime, one thread: Gemm with W stored (N, K) (gemm), a float16 W cast to float before the MatMul (f16), a float16 model's MatMul (half)|KINDS=gemm,f16,half SHAPES=4 SEED=2 gemv/sweep.sh"
  "Decode steps of held-out decoders against ONNX Runtime|llm/decode_heldout.sh"
  "Encoders: refeval optimize against ONNX Runtime's own optimizer|encoders/compare.sh"
  "Optimized models in ONNX Runtime: refeval optimize --target ort against the torch export, both at ORT's level all|optimize/ort_speed.sh"
  "ONNX Runtime's CPU kernels: each fused form against the nodes it replaces|ort_forms/run.sh"
  "The HTML viewer at LLM scale|show/scale.sh"
  "Two threads with the other core quiet and busy, against ONNX Runtime|threads/busy_core.sh"
  "A Qwen2-0.5B-shaped decoder, float32 and int4, against ONNX Runtime|llm/qwen2_0_5b.sh"
  "Peak memory against the weights, refeval and ONNX Runtime, one thread|llm/memory_heldout.sh"
  "MatMulNBits alone (int4, block 32, symmetric) against ONNX Runtime's float path, one thread|nbits/bench_nbits.sh"
  "MatMulNBits at accuracy_level 4 against ONNX Runtime's int8 path, one thread (refeval with --emulate-accuracy-level)|LEVEL=4 EMULATE=1 nbits/bench_nbits.sh"
  "What each quantize scheme costs and gains on two decoders, in refeval and ONNX Runtime|quantize/table.sh"
)

ensure_ort
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cores=$(grep -c '^processor' /proc/cpuinfo)
ort=$(node -p "require('$here/ort/node_modules/onnxruntime-node/package.json').version")
commit=$(git -C "$here" rev-parse --short=12 HEAD)
[[ -z $(git -C "$here" status --porcelain --untracked-files=no) ]] || commit="$commit (working tree modified)"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "# Benchmark results"
  echo
  echo "Written by benchmarks/report.sh; do not edit by hand."
  echo
  echo "- Machine: $cpu, $cores cores"
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- ONNX Runtime: onnxruntime-node $ort (CPU)"
  echo "- refeval: $commit"
} >"$tmp"
only=${ONLY:-}
if [[ -n $only && -f $out ]]; then  # the current header
  awk '/^## /{exit} {print}' "$out" | sed '$d' >"$tmp"
fi
for entry in "${benchmarks[@]}"; do
  IFS='|' read -r title command <<<"$entry"
  read -ra words <<<"$command"
  settings=("${words[@]:0:${#words[@]}-1}") script=${words[-1]}
  if [[ -n $only && $command != *"$only"* ]]; then  # the section as it is
    awk -v t="## $title" '$0 == t {on = 1} on && /^## / && $0 != t {exit} on {line[++n] = $0}
      END { while (n > 0 && line[n] == "") n--; if (n) print ""; for (i = 1; i <= n; i++) print line[i] }' "$out" >>"$tmp"
    continue
  fi
  echo "report.sh: $command" >&2
  { echo; echo "## $title"; echo; echo "\`${settings[*]}${settings:+ }benchmarks/$script\`"; echo
    [[ -n $only ]] && echo "Run at refeval $commit, $(date -u '+%Y-%m-%d %H:%M UTC') (the header's machine)." && echo
    env "${settings[@]}" "$here/$script" "$build"; } >>"$tmp"
done
cp "$tmp" "$out"
echo "report.sh: wrote $out" >&2
