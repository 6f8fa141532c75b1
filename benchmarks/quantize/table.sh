#!/usr/bin/env bash
# What each `refeval quantize` scheme costs and gains on decoders of two exporters' forms (a torch
# export and Optimum's, from llm/make_decoder.py, random seeded weights): the weights' size, the
# loss against the float model on 256 random tokens (2 rows of 128, windows of 32: perplexity
# ratio, mean KL per token, top-1 agreement, as `quantize --tokens` reports them; GPTQ calibrates
# on those same tokens), and the median decode step of a 32-token prompt + 16 new tokens in
# refeval (`generate`) and in ONNX Runtime 1.30 (ort/generate_ort.js, graph optimizations at
# ORT_LEVEL, default all), one thread, with the ratio to the float model's step in each. "int4 RTN,
# level 4" is RTN with accuracy_level 4, which ORT runs on its int8 path: refeval runs it with
# --emulate-accuracy-level (the same arithmetic), its report and its decode step both.
#   benchmarks/quantize/table.sh [BUILD_DIR]     (REFEVAL_BENCH_DIR, ORT_LEVEL)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
use_build "${1:-}"
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}/quantize
export ORT_LEVEL=${ORT_LEVEL:-all}
mkdir -p "$work"
ensure_ort
models=(
  "torch-8x512|torch|--layers 8 --hidden 512 --heads 8 --kv-heads 4 --intermediate 1408 --vocab 4096"
  "optimum-6x384|optimum|--layers 6 --hidden 384 --heads 6 --kv-heads 6 --intermediate 1024 --vocab 4096"
)
schemes=(
  "float|"
  "int4 RTN|--int4"
  "int4 RTN, level 4|--int4 --accuracy-level 4|--emulate-accuracy-level"
  "int4 HQQ|--int4 --algo hqq"
  "int4 GPTQ|--int4 --algo gptq"
  "int8 dynamic|--int8 --per-channel"
  "int8 static QDQ|--int8 --per-channel --calibrate"
  "float16|--float16 --keep-io-types"
)
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 4096, (2, 128)).astype(np.int64))"
prompt=$(/usr/bin/python3 -c "import numpy as np; print(' '.join(map(str, np.random.default_rng(1).integers(0, 4096, 32))))")

# decode_ms MODEL [REFEVAL_FLAG...]: refeval's and ORT's median decode step (ms), space-separated.
decode_ms() {
  "$refeval" -q --threads 1 "${@:2}" generate "$1" --prompt "$prompt" --new-tokens 16 --json "$work/ref.json" >/dev/null
  (cd "$here/ort" && ORT_THREADS=1 node generate_ort.js "$1" --prompt "$prompt" --new-tokens 16 --json "$work/ort.json" >/dev/null 2>&1) ||
    echo '{"decode_ms": [NaN]}' >"$work/ort.json"
  /usr/bin/python3 -c "
import json, statistics as s
r, o = json.load(open('$work/ref.json')), json.load(open('$work/ort.json'))
print(r['decode_median_ms'], s.median(o['decode_ms']))"
}

echo "ONNX Runtime 1.30 at level $ORT_LEVEL, one thread; 256 tokens in windows of 32; decode: the median step after a 32-token prompt (16 new tokens)"
echo
echo "| model | scheme | weights MB | perplexity ratio | mean KL | top-1 | refeval decode ms | vs float | ORT decode ms | vs float |"
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"
for entry in "${models[@]}"; do
  IFS='|' read -r name form options <<<"$entry"
  dir=$work/$name
  # shellcheck disable=SC2086
  [[ -f $dir/model.onnx ]] || /usr/bin/python3 "$here/llm/make_decoder.py" "$dir" "$form" $options >/dev/null
  read -r ref_float ort_float <<<"$(decode_ms "$dir/model.onnx")"
  for scheme in "${schemes[@]}"; do
    IFS='|' read -r label flags refeval_flags <<<"$scheme"
    if [[ -z $flags ]]; then
      size=$(/usr/bin/python3 -c "import onnx; m = onnx.load('$dir/model.onnx'); print(sum(len(i.raw_data) for i in m.graph.initializer) / 1e6)")
      printf "| %s | float | %.2f | 1 | 0 | 1 | %.3f | 1 | %.3f | 1 |\n" "$name" "$size" "$ref_float" "$ort_float"
      continue
    fi
    out=$dir/${label//[ ,]/_}.onnx
    # shellcheck disable=SC2086
    "$refeval" $refeval_flags quantize "$dir/model.onnx" -o "$out" $flags --tokens "$work/tokens.npy" --context 32 >"$work/q.txt"
    # shellcheck disable=SC2086
    read -r ref_q ort_q <<<"$(decode_ms "$out" $refeval_flags)"
    /usr/bin/python3 - "$work/q.txt" "$name" "$label" "$ref_q" "$ref_float" "$ort_q" "$ort_float" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
name, label = sys.argv[2], sys.argv[3]
ref_q, ref_f, ort_q, ort_f = map(float, sys.argv[4:8])
size = re.search(r"weights: .* -> ([\d.]+) (MB|kB)", text)
mb = float(size.group(1)) / (1000 if size.group(2) == "kB" else 1)
ppl = re.search(r"\(B/A ([\d.]+)\)", text).group(1)
kl = re.search(r"KL\(A\|\|B\) per token: mean (\S+),", text).group(1)
top1 = re.search(r"top-1 agreement (\S+),", text).group(1)
print(f"| {name} | {label} | {mb:.2f} | {ppl} | {kl} | {top1} | {ref_q:.3f} | {ref_q / ref_f:.2f} | {ort_q:.3f} | {ort_q / ort_f:.2f} |")
EOF
  done
done
