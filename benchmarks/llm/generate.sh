#!/usr/bin/env bash
# The generation loop side by side (issue 26): `refeval generate` against the same greedy loop
# driven step by step in ONNX Runtime 1.30 (benchmarks/ort/generate_ort.js; graph optimizations
# disabled, THREADS intra-op threads, default 1), 16 new tokens from a 32-token prompt, ROUNDS alternated rounds. Prints
# prefill (time to first token) and the median decode step for both, their ratios (medians of each
# round's), the decode step's weight bandwidth (weight bytes / step) beside this machine's copy
# bandwidth (numpy), and checks both generate the same ids.
#   benchmarks/llm/generate.sh [BUILD_DIR]     (ROUNDS=3, THREADS=1, REFEVAL_BENCH_DIR; MODELS:
#                                                ";"-separated "name|form|make_decoder options"
#                                                entries instead of the list below; HELDOUT=1: instead,
#                                                decoders of forms and sizes the work was not
#                                                tuned on: Optimum's, a deeper narrower GenAI int4
#                                                and torch decoder, a wide shallow one; not the
#                                                opset-23 portable form, whose fixed-size cache
#                                                generate_ort.js does not drive)
# Models: a Llama-style fp32 torch export (12 layers, hidden 768, 12 heads over 4 KV heads), the
# GenAI-builder int4 decoder of the same size, and the 2-layer tiny torch export (hidden 64).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
build=${1:-$here/../build}
refeval=$build/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
rounds=${ROUNDS:-3}
threads=${THREADS:-1}
ensure_ort

models=(
  "llama-fp32-12x768|torch|"
  "genai-int4-12x768|genai|"
  "tiny-torch-2x64|torch|--layers 2 --hidden 64 --heads 4 --kv-heads 2 --intermediate 128 --vocab 96 --max-length 64"
)
if [[ ${HELDOUT:-0} == 1 ]]; then
  models=(
    "heldout-optimum-8x512|optimum|--layers 8 --hidden 512 --heads 8 --kv-heads 8 --intermediate 1408"
    "heldout-torch-4x1024|torch|--layers 4 --hidden 1024 --heads 16 --kv-heads 16 --intermediate 2816"
    "heldout-genai-int4-16x512|genai|--layers 16 --hidden 512 --heads 8 --kv-heads 2 --intermediate 1536"
    "heldout-torch-24x256|torch|--layers 24 --hidden 256 --heads 8 --kv-heads 4 --intermediate 704"
  )
fi
if [[ -n ${MODELS:-} ]]; then IFS=';' read -ra models <<<"$MODELS"; fi
prompt=$(/usr/bin/python3 -c "import numpy as np; r = np.random.default_rng(0); print(' '.join(map(str, r.integers(0, 96, 32))))")
bandwidth=$(/usr/bin/python3 -c "
import numpy as np, time
a = np.ones(1 << 27, np.float32); b = np.empty_like(a); best = 1e9
for _ in range(5):
    t = time.perf_counter(); np.copyto(b, a); best = min(best, time.perf_counter() - t)
print(f'{2 * a.nbytes / best / 1e9:.1f}')")
echo "machine copy bandwidth (numpy, read + write): $bandwidth GB/s"
printf "%-20s %10s %10s %6s %10s %10s %6s %8s %6s\n" model ort_prefill ref_prefill ratio ort_decode ref_decode ratio GB/s ids
for entry in "${models[@]}"; do
  IFS='|' read -r name form options <<<"$entry"
  dir=$work/$name
  # shellcheck disable=SC2086
  [[ -f $dir/model.onnx ]] || /usr/bin/python3 "$here/llm/make_decoder.py" "$dir" "$form" $options
  pr=() dr=() op=() od=() rp=() rd=() same=yes
  for ((r = 0; r < rounds; ++r)); do
    (cd "$here/ort" && ORT_THREADS=$threads node generate_ort.js "$dir/model.onnx" --prompt "$prompt" --new-tokens 16 --json "$work/ort.json" >/dev/null)
    "$refeval" -q --threads "$threads" generate "$dir/model.onnx" --prompt "$prompt" --new-tokens 16 --json "$work/ref.json" >/dev/null
    read -r a b c d w ids <<<"$(/usr/bin/python3 -c "
import json, statistics as s
o, f = json.load(open('$work/ort.json')), json.load(open('$work/ref.json'))
print(o['prefill_ms'], f['prefill_ms'], s.median(o['decode_ms']), f['decode_median_ms'], f['weight_bytes'], o['tokens'] == f['tokens'])")"
    op+=("$a") rp+=("$b") od+=("$c") rd+=("$d")
    pr+=("$(awk -v x="$b" -v y="$a" 'BEGIN { print x / y }')") dr+=("$(awk -v x="$d" -v y="$c" 'BEGIN { print x / y }')")
    [[ $ids == True ]] || same=NO
  done
  awk -v n="$name" -v a="$(median "${op[@]}")" -v b="$(median "${rp[@]}")" -v p="$(median "${pr[@]}")" \
      -v c="$(median "${od[@]}")" -v d="$(median "${rd[@]}")" -v q="$(median "${dr[@]}")" -v w="$w" -v s="$same" 'BEGIN {
    printf "%-20s %10.2f %10.2f %6.2f %10.3f %10.3f %6.2f %8.1f %6s\n", n, a, b, p, c, d, q, w / (d / 1000) / 1e9, s }'
done
