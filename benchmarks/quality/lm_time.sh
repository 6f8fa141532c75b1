#!/usr/bin/env bash
# What `refeval compare --tokens` costs over the models' own forward passes: one window of 256
# tokens on the held-out Llama-style float decoder (12 layers, hidden 768, 12 heads over 4 KV heads,
# MLP 2048, vocabulary 32000; benchmarks/llm/make_decoder.py, the model decode_heldout.sh times)
# against its int4 twin (tests/data/quality/make_int4_twin.py). Prints, over ROUNDS runs (medians):
#   compare    the wall time of `refeval compare F Q --tokens T` (process, loading both models, both
#              prefills, the figures over 256 x 32000 logits);
#   forward    each model's forward pass on the same 256 tokens, `refeval run --repeat R`'s median
#              (the models loaded once, not timed), and their sum;
#   run wall   the wall time of a single `refeval run` of each (process and loading included), summed;
#   ratio      compare / forward sum (acceptance: < 3), and compare / run wall sum.
# Not a test: nothing is asserted.
#   benchmarks/quality/lm_time.sh [BUILD_DIR]     (ROUNDS=3, REPEAT=3, THREADS=1, REFEVAL_BENCH_DIR)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
refeval=${1:-$here/../build}/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
rounds=${ROUNDS:-3}
repeat=${REPEAT:-3}
threads=${THREADS:-1}
py=/usr/bin/python3

model=$work/heldout-llama-12x768-mlp2048
[[ -f $model/model.onnx ]] || $py "$here/llm/make_decoder.py" "$model" torch --layers 12 --hidden 768 --heads 12 \
  --kv-heads 4 --intermediate 2048 --vocab 32000 >/dev/null
F=$model/model.onnx
Q=$work/heldout-llama-12x768-mlp2048-int4/model.onnx
if [[ ! -f $Q ]]; then
  mkdir -p "$(dirname "$Q")"
  $py "$here/../tests/data/quality/make_int4_twin.py" "$F" "$Q" >/dev/null
fi
inputs=$work/lm_time_inputs
mkdir -p "$inputs"
$py - "$inputs" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
ids = np.random.default_rng(256).integers(0, 32000, (1, 256))
np.save(f"{d}/tokens.npy", ids)
np.save(f"{d}/input_ids.npy", ids)
np.save(f"{d}/attention_mask.npy", np.ones((1, 256), np.int64))
np.save(f"{d}/position_ids.npy", np.arange(256)[None])
np.save(f"{d}/past.npy", np.zeros((1, 4, 0, 64), np.float32))
PY
feeds=(--input "input_ids=$inputs/input_ids.npy" --input "attention_mask=$inputs/attention_mask.npy"
       --input "position_ids=$inputs/position_ids.npy")
for ((i = 0; i < 12; ++i)); do feeds+=(--input "past_key_values.$i.key=$inputs/past.npy" --input "past_key_values.$i.value=$inputs/past.npy"); done

now() { date +%s.%N; }
ms() { $py -c "print(f'{($2 - $1) * 1000:.1f}')"; }
forward() { "$refeval" --threads "$threads" run "$1" "${feeds[@]}" --repeat "$repeat" | sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p'; }
compare=() fwd_f=() fwd_q=() wall=()
for ((r = 0; r < rounds; ++r)); do
  t0=$(now)
  "$refeval" -q --threads "$threads" compare "$F" "$Q" --tokens "$inputs/tokens.npy" --json "$work/lm_time.json" >/dev/null
  t1=$(now)
  compare+=("$(ms "$t0" "$t1")")
  fwd_f+=("$(forward "$F")")
  fwd_q+=("$(forward "$Q")")
  t0=$(now)
  "$refeval" -q --threads "$threads" run "$F" "${feeds[@]}" -v 0 >/dev/null
  "$refeval" -q --threads "$threads" run "$Q" "${feeds[@]}" -v 0 >/dev/null
  t1=$(now)
  wall+=("$(ms "$t0" "$t1")")
done
c=$(median "${compare[@]}") f=$(median "${fwd_f[@]}") q=$(median "${fwd_q[@]}") w=$(median "${wall[@]}")
echo "refeval compare --tokens: 1 window of 256 tokens, float 12x768 (vocab 32000) vs its int4 twin; $threads thread(s), medians of $rounds rounds"
echo "figures: $($py -c "import json; j = json.load(open('$work/lm_time.json')); print(', '.join(f'{k} {j[k]:.6g}' for k in ('perplexity_a', 'perplexity_b', 'kl_mean', 'top1_agreement')))")"
printf "%-34s %10s\n" "" "ms"
printf "%-34s %10s\n" "compare --tokens (wall)" "$c"
printf "%-34s %10s\n" "forward float (run --repeat $repeat)" "$f"
printf "%-34s %10s\n" "forward int4 (run --repeat $repeat)" "$q"
printf "%-34s %10s\n" "forward sum" "$($py -c "print(f'{$f + $q:.1f}')")"
printf "%-34s %10s\n" "two single runs (wall, with load)" "$w"
echo "ratio compare / forward sum: $($py -c "print(f'{$c / ($f + $q):.2f}')")x (acceptance < 3x); compare / two runs' wall: $($py -c "print(f'{$c / $w:.2f}')")x"
