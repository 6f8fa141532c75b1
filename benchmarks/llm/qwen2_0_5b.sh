#!/usr/bin/env bash
# A Qwen2-0.5B-shaped decoder (24 layers, hidden 896, 14 query heads over 2 KV heads, MLP 4864,
# vocabulary 151936, LM head tied to the embedding table; random seeded weights) in three forms:
# from llm/make_decoder.py --tied --external-data, the torch export in float32 (~2 GB: the head
# reads the table through a Transpose node) and the GenAI builder's int4 form (MatMulNBits +
# GroupQueryAttention; its head an int4 copy of the table); and `refeval quantize --int4
# --embeddings` of the torch export (one file: the token table as GatherBlockQuantized, whose int4
# blocks the head's MatMulNBits shares). For each, refeval against ONNX Runtime
# 1.30 (onnxruntime-node, graph optimization level ORT_LEVEL, default basic: at "disabled" ORT would
# transpose the 545 MB table on every step instead of folding it once at session creation):
#   - the files' size (model.onnx + model.onnx.data);
#   - load: the model_loading_uri + session_initialization events of each one's own profile of one
#     decode step after a 512-token cache (`refeval profile --memory --warmup 0 --repeat 1`,
#     ort/profile_ort.js; one thread, the same .npy feeds), and the process's peak RSS
#     (/usr/bin/time -v, maximum resident set size; node's own ~50 MB included on ORT's side);
#   - generation as llm/generate.sh drives it: `refeval generate` against ort/generate_ort.js, a
#     512-token random prompt (seed 0) and 32 new tokens at 1 and 2 threads on both sides: the
#     prefill of 512 tokens, the median decode step (a KV cache of 512 to 542 positions), the
#     ratio refeval / ORT, and whether all four runs generate the same 32 ids; ROUNDS rounds,
#     medians over rounds;
#   - refeval profile --memory's weights / packed-weights lines.
#   benchmarks/llm/qwen2_0_5b.sh [BUILD_DIR]     (ROUNDS=1, ORT_LEVEL=basic, FORMS="torch genai quantized",
#                                                REFEVAL_BENCH_DIR; the models take 0.85 GB and 2 GB
#                                                there and 6.5 GB of RAM to write, once)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
use_build "${1:-}"
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
rounds=${ROUNDS:-1}
export ORT_LEVEL=${ORT_LEVEL:-basic}
read -ra forms <<<"${FORMS:-torch genai quantized}"
shape="--layers 24 --hidden 896 --heads 14 --kv-heads 2 --intermediate 4864 --vocab 151936"
mkdir -p "$work"
ensure_ort
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prompt=$(/usr/bin/python3 -c "import numpy as np; r = np.random.default_rng(0); print(' '.join(map(str, r.integers(0, 151936, 512))))")
name_of() {
  case $1 in
    torch) echo qwen2-0.5b-fp32-torch ;;
    genai) echo qwen2-0.5b-int4-genai ;;
    *) echo qwen2-0.5b-int4-refeval ;;
  esac
}
peak_mb() { awk '/Maximum resident set size/ { printf "%.0f", $NF / 1024 }' "$1"; }
# load_ms PROFILE.json: model loading + session initialization, from the profile's Session events
load_ms() {
  /usr/bin/python3 -c "
import json
e = json.load(open('$1'))
print(f\"{sum(x['dur'] for x in e if x.get('cat') == 'Session' and x['name'] in ('model_loading_uri', 'session_initialization')) / 1e3:.0f}\")"
}

echo "$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo);" \
  "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); ORT graph optimization level $ORT_LEVEL"
# m KEY: the median of v[KEY]'s rounds (nan if every round failed)
m() {
  # shellcheck disable=SC2086
  if [[ -n ${v[$1]:-} ]]; then median ${v[$1]}; else echo nan; fi
}
declare -A v
load_rows=() gen_rows=() memory_lines=() failures=()
for form in "${forms[@]}"; do
  dir=$work/$(name_of "$form")
  torch_dir=$work/$(name_of torch)
  for made in torch "$form"; do
    [[ $made == quantized ]] && continue
    # shellcheck disable=SC2086
    [[ -f $work/$(name_of "$made")/model.onnx.data ]] ||
      /usr/bin/python3 "$here/llm/make_decoder.py" "$work/$(name_of "$made")" "$made" $shape --tied --external-data
  done
  if [[ $form == quantized && ! -f $dir/model.onnx ]]; then
    mkdir -p "$dir"
    "$refeval" quantize "$torch_dir/model.onnx" -o "$dir/model.onnx" --int4 --embeddings --runs 0 >/dev/null
  fi
  size=$(du -cb "$dir"/model.onnx* | tail -1 | cut -f1)

  # one decode step's feeds after a 512-token cache, the same .npy files for both
  /usr/bin/python3 - "$dir/model.onnx" "$tmp/feeds" <<'EOF' >"$tmp/feeds.txt"
import os, sys
import numpy as np
import onnx
m = onnx.load(sys.argv[1], load_external_data=False)
os.makedirs(sys.argv[2], exist_ok=True)
past = 512
for i in m.graph.input:
    dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
    if i.name == "input_ids":
        a = np.ones((1, 1), np.int64)
    elif i.name == "attention_mask":
        a = np.ones((1, past + 1), np.int64)
    elif i.name == "position_ids":
        a = np.full((1, 1), past, np.int64)
    else:
        a = np.random.default_rng(0).standard_normal((1, dims[1], past, dims[3])).astype(np.float32)
    np.save(f"{sys.argv[2]}/{i.name}.npy", a)
    print(f"{i.name}={sys.argv[2]}/{i.name}.npy")
EOF
  mapfile -t feeds <"$tmp/feeds.txt"
  inputs=()
  for f in "${feeds[@]}"; do inputs+=(--input "$f"); done
  ref_load=FAIL ref_peak=FAIL ort_load=FAIL ort_peak=FAIL
  if /usr/bin/time -v "$refeval" --threads 1 profile "$dir/model.onnx" "${inputs[@]}" --warmup 0 --repeat 1 --memory \
       -o "$tmp/ref_profile.json" >"$tmp/ref_profile.out" 2>"$tmp/ref_profile.err"; then
    ref_load=$(load_ms "$tmp/ref_profile.json") ref_peak=$(peak_mb "$tmp/ref_profile.err")
    while IFS= read -r line; do memory_lines+=("$form: $line"); done < <(grep -E 'weights|packed' "$tmp/ref_profile.out")
  else
    failures+=("$form: $refeval --threads 1 profile $dir/model.onnx --input ... --warmup 0 --repeat 1 --memory: $(grep -v $'^\t' "$tmp/ref_profile.err" | tail -3 | tr '\n' ' ')")
  fi
  if (cd "$here/ort" && /usr/bin/time -v node profile_ort.js "$dir/model.onnx" "$ORT_LEVEL" 1 "$tmp/ort_profile.json" "${feeds[@]}" \
       >/dev/null 2>"$tmp/ort_profile.err"); then
    ort_load=$(load_ms "$tmp/ort_profile.json") ort_peak=$(peak_mb "$tmp/ort_profile.err")
  else
    failures+=("$form: node profile_ort.js $dir/model.onnx $ORT_LEVEL 1 ...: $(grep -v $'^\t' "$tmp/ort_profile.err" | tail -3 | tr '\n' ' ')")
  fi
  load_rows+=("$(printf "| %s | %.0f | %s | %s | %s | %s |" "$(name_of "$form")" "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')" \
    "$ref_load" "$ort_load" "$ref_peak" "$ort_peak")")

  for threads in 1 2; do
    v=()
    same=yes
    for ((r = 0; r < rounds; ++r)); do
      for ((k = 0; k < 2; ++k)); do
        if (((k + r) % 2 == 0)); then
          if "$refeval" -q --threads "$threads" generate "$dir/model.onnx" --prompt "$prompt" --new-tokens 32 \
               --json "$tmp/ref.json" >"$tmp/ref.out" 2>"$tmp/ref.err"; then
            read -r p d <<<"$(/usr/bin/python3 -c "import json; f = json.load(open('$tmp/ref.json')); print(f['prefill_ms'], f['decode_median_ms'])")"
            v[rp]+=" $p" v[rd]+=" $d"
          else
            failures+=("$form: $refeval -q --threads $threads generate $dir/model.onnx --prompt <512 ids> --new-tokens 32: exit $?: $(tail -3 "$tmp/ref.err" | tr '\n' ' ')")
            rm -f "$tmp/ref.json"
          fi
        else
          if (cd "$here/ort" && ORT_THREADS=$threads node generate_ort.js "$dir/model.onnx" --prompt "$prompt" --new-tokens 32 \
               --json "$tmp/ort.json" >/dev/null 2>"$tmp/ort.err"); then
            read -r p d <<<"$(/usr/bin/python3 -c "import json, statistics as s; o = json.load(open('$tmp/ort.json')); print(o['prefill_ms'], s.median(o['decode_ms']))")"
            v[op]+=" $p" v[od]+=" $d"
          else
            failures+=("$form: ORT_THREADS=$threads node generate_ort.js $dir/model.onnx ...: $(tail -3 "$tmp/ort.err" | tr '\n' ' ')")
            rm -f "$tmp/ort.json"
          fi
        fi
      done
      if [[ -f $tmp/ref.json && -f $tmp/ort.json ]]; then
        eq=$(/usr/bin/python3 -c "
import json
print(json.load(open('$tmp/ref.json'))['tokens'] == json.load(open('$tmp/ort.json'))['tokens'])")
        [[ $eq == True ]] || same=NO
        cp "$tmp/ref.json" "$tmp/ref_$form$threads.json"
        cp "$tmp/ort.json" "$tmp/ort_$form$threads.json"
      else
        same=n/a
      fi
    done
    gen_rows+=("$(awk -v n="$(name_of "$form")" -v t="$threads" -v a="$(m rp)" -v b="$(m op)" -v c="$(m rd)" -v d="$(m od)" -v s="$same" 'BEGIN {
      printf "| %s | %d | %.0f | %.0f | %.2f | %.1f | %.1f | %.2f | %s |", n, t, a, b, a / b, c, d, c / d, s }')")
  done
  # the ids at 1 and 2 threads agree too (each runtime's results do not depend on its threads)
  if [[ -f $tmp/ref_${form}1.json && -f $tmp/ref_${form}2.json && -f $tmp/ort_${form}1.json && -f $tmp/ort_${form}2.json ]]; then
    all=$(/usr/bin/python3 -c "
import json
t = [json.load(open('$tmp/' + n + '.json'))['tokens'] for n in ('ref_${form}1', 'ref_${form}2', 'ort_${form}1', 'ort_${form}2')]
print('yes' if all(x == t[0] for x in t) else 'NO')")
    gen_rows+=("| $(name_of "$form") | 1 and 2 | | | | | | | all four: $all |")
  fi
done

echo
echo "Load (one thread): the model's loading and session initialization from each runtime's own profile, and the peak RSS of that process (load + one decode step after 512 tokens)."
echo
echo "| model | file MB | refeval load ms | ORT load ms | refeval peak RSS MB | ORT peak RSS MB |"
echo "|---|---:|---:|---:|---:|---:|"
printf "%s\n" "${load_rows[@]}"
echo
echo "Generation: a 512-token prompt then 32 new tokens; decode = the median step (cache 512-542); ratio = refeval / ORT; ids: the 32 generated ids equal."
echo
echo "| model | threads | refeval prefill ms | ORT prefill ms | ratio | refeval decode ms | ORT decode ms | ratio | ids |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|:---:|"
printf "%s\n" "${gen_rows[@]}"
echo
echo "refeval profile --memory (one decode step after 512 tokens):"
echo
echo '```'
printf "%s\n" "${memory_lines[@]}"
echo '```'
if ((${#failures[@]})); then
  echo
  echo "Failures:"
  printf -- "- %s\n" "${failures[@]}"
  exit 1
fi
