#!/usr/bin/env bash
# `refeval generate` as a user runs it: greedy generation on decoders written as three producers
# write them (tests/data/ort/decoders.py), ONNX Runtime's gpt2_helper export (stacked past) and a
# batch-2 --eos case give ONNX Runtime's ids and, step by step, its logits within 1e-4
# (tests/data/generate/make_expected.py: ORT's loop, every step's logits), batch 1 and 2 with
# padding; no expected row cycles; --json carries every field; --profile + report --by phase
# shows one prefill and 15 decode runs; --dump-step dumps one step; a model that is not a
# decoder is one clear error. The Optimum decoder with int32 ids (prompt and mask files int32 too)
# or presents of unknown dims gives ORT's ids; flattened logits and prompts that cannot run (empty,
# rank 3, a mask of another shape, an all-padding row, a negative random length or vocabulary)
# are one line each.
# Usage: generate_test.sh REFEVAL SOURCE_DIR
# Needs Debian's python3-onnx and numpy (/usr/bin/python3) to read the dumps.
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
cd "$src"
py=/usr/bin/python3
data=tests/data/generate
atol=1e-4

# cases.txt's WORK/ models: ORT's gpt2_helper export takes a float attention_mask; this copy casts
# an int64 one to it (generate feeds the tokenizer's int64 mask)
$py $data/int64_mask.py tests/data/optimize/ort_gpt2_past_opset17/model.onnx "$work/ort_gpt2_past_int64_mask.onnx"

# Each case: every step K dumped (--dump-step K, one run each); the first run's ids are ORT's, and
# each dump's logits (found by the graph output's name in index.json; the prefill's at each row's
# last valid position) are ORT's logits of that step within $atol
while read -r name model options; do
  model=${model/#WORK\//$work/}
  eos=$(sed -n 's/.*--eos \([0-9]*\).*/\1/p' <<<"$options")
  check "$name: the expected ids do not cycle (no period <= 4 over the last 8, rows stopped on --eos aside)" \
    $py -c "
import sys; sys.path.insert(0, '$data')
from make_expected import cycles, stopped
eos = int('$eos') if '$eos' else None
rows = [list(map(int, line.split())) for line in open('$data/$name.ids')]
bad = [r for r in rows if len(r) != 16 or not (stopped(r, eos) or not cycles(r))]
assert not bad, bad"
  steps=$($py -c "import numpy; print(numpy.load('$data/$name.logits.npy').shape[0])")
  for ((k = 0; k < steps; ++k)); do
    # shellcheck disable=SC2086
    expect 0 "^dump: step $k " "" -- generate "$model" $options --new-tokens 16 --dump-step $k --dump "$work/$name/$k"
    if ((k == 0)); then
      check "$name: the ids ONNX Runtime generates step by step" \
        cmp -s <(sed -n 's/^row [0-9]*: //p' "$work/out") "$data/$name.ids"
      logits=$(sed -n 's/^refeval: info: decoder: .* -> \([^;]*\);.*/\1/p' "$work/err")
    fi
  done
  check "$name: refeval's logits of each of the $steps steps are ORT's within $atol" $py - "$name" "$logits" "$work/$name" $atol <<'PY'
import json, os, sys
import numpy as np, onnx
from onnx import numpy_helper as nh
name, output, dumps, atol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
data = "tests/data/generate"
want = np.load(f"{data}/{name}.logits.npy")
steps, batch = want.shape[:2]
mask_file = f"{data}/{name}.mask.npy"
mask = np.load(mask_file) if os.path.exists(mask_file) else np.ones(np.load(f"{data}/{name}.prompt.npy").shape)
last_valid = [int(np.nonzero(r)[0][-1]) for r in mask]
worst, where = 0.0, None
for k in range(steps):
    files = [e["file"] for e in json.load(open(f"{dumps}/{k}/index.json")) if e["name"] == output]
    assert len(files) == 1, f"step {k}: {len(files)} dumped values named {output!r}"
    got = nh.to_array(onnx.load_tensor(f"{dumps}/{k}/{files[0]}")).astype(np.float64)
    if got.ndim == 3:  # (batch, positions, vocab): the position the argmax reads
        rows = got.shape[1]
        got = got[np.arange(batch), [min(lv, rows - 1) if k == 0 else rows - 1 for lv in last_valid]]
    assert got.shape == want[k].shape, f"step {k}: logits {got.shape}, ORT's {want[k].shape}"
    diff = np.where(np.isfinite(got), np.abs(got - want[k]), np.inf)
    if diff.max() > worst:
        worst, where = float(diff.max()), (k,) + tuple(int(i) for i in np.unravel_index(int(diff.argmax()), diff.shape))
print(f"{name}: {steps} steps x {batch} rows x {want.shape[2]} logits, max |refeval - ORT| {worst:.3g}"
      + (f" at (step, row, id) {where}" if where else ""))
sys.exit(0 if worst <= atol else 1)
PY
  rm -rf "${work:?}/$name"
done <$data/cases.txt

optimum=tests/data/ort/decoders_optimum/b1/model.onnx
expect 0 "^decode: 15 steps, median [0-9.]+ ms, p90 [0-9.]+ ms per step, [0-9.]+ tokens/s" "" \
  -- generate $optimum --prompt-len 32 --batch 2 --seed 1 --new-tokens 16 --json $work/g.json --profile $work/p.json
check "one info line says what was found" grep -qx "refeval: info: decoder: input_ids, attention_mask, position_ids -> logits; 4 KV cache tensors (past_key_values.0.key -> present.0.key ...), BNSH float" $work/err
check "--json has every field, tokens per row" python3 -c "
import json, sys
j = json.load(open('$work/g.json'))
need = ['tokens', 'prefill_ms', 'decode_ms', 'tokens_per_s', 'kv_cache_bytes', 'peak_rss_bytes', 'weight_bytes', 'decode_median_ms', 'decode_p90_ms']
assert all(k in j for k in need), [k for k in need if k not in j]
assert len(j['tokens']) == 2 and all(len(r) == 16 for r in j['tokens'])
assert len(j['decode_ms']) == 15 and j['prefill_ms'] > 0
# 2 layers x (key, value) x (B 2, heads 4, 47 positions, 16) float32
assert j['kv_cache_bytes'] == 4 * 2 * 4 * 47 * 16 * 4, j['kv_cache_bytes']
assert j['kv_cache_bytes_per_step'][0] == 4 * 2 * 4 * 32 * 16 * 4
"
expect 0 "^prefill +[0-9.]+ +[0-9]+ " "" -- report $work/p.json --by phase
check "report --by phase: one prefill run and 15 decode runs, an op table each" \
  bash -c "grep -q '^phase prefill (1 run):' $work/out && grep -q '^phase decode (15 runs):' $work/out && grep -qE '^MultiHeadAttention +' $work/out"
expect 0 "runs 1-15 of 16" "" -- report $work/p.json --phase decode
expect 2 "" "^refeval: error: --phase: no run of phase 'nope'" -- report $work/p.json --phase nope

# one step dumped, then compared with itself as another runtime's dump would be
expect 0 "^dump: step 3 \(decode\), [0-9]+ values in $work/d3" "" -- generate $optimum --prompt "1 2 3" --new-tokens 5 --dump-step 3 --dump $work/d3
check "the dumped step holds the decode step's 4-position past" grep -q '"name":"past_key_values.0.key".*"shape":\[1,4,5,16\]' $work/d3/index.json
# --eos: a row that produces it stops; here the first token, so no decode step runs
first=$("$refeval" -q generate $optimum --prompt "1 2 3" --new-tokens 5 | sed -n 's/^row 0: \([0-9]*\).*/\1/p')
expect 0 "^row 0: $first$" "" -- -q generate $optimum --prompt "1 2 3" --new-tokens 5 --eos "$first" --json $work/eos.json
check "--eos: one token, no decode step" python3 -c "
import json; j = json.load(open('$work/eos.json')); assert j['tokens'] == [[$first]] and j['decode_ms'] == [], j"
# bad use: one line each, exit 2
expect 2 "" "^refeval: error: not a decoder: no input 'input_ids'" -- -q generate examples/linreg.onnx --prompt "1 2"
expect 2 "" "^refeval: error: .*declare the same length: a static cache; give its length with --max-length" -- \
  -q generate tests/data/ort/decoders_portable/b1/model.onnx --prompt "1 2"
expect 2 "" "^refeval: error: --prompt '1 x': 'x' is not part of a token id" -- -q generate $optimum --prompt "1 x"
expect 2 "" "^refeval: error: --prompt '1 2; 3': every row needs the same number" -- -q generate $optimum --prompt "1 2; 3"
expect 2 "" "^refeval: error: the cache holds 4 positions, fewer than the prompt's 3 plus 4 new tokens" -- \
  -q generate tests/data/ort/decoders_portable/b1/model.onnx --prompt "1 2 3" --max-length 4 --new-tokens 5
expect 2 "" "^refeval: error: --dump-step needs --dump DIR" -- -q generate $optimum --prompt "1 2" --dump-step 1

# The Optimum decoder as other exporters declare it (tests/tools/generate/edit_decoder.py: the same
# computation): ONNX Runtime's ids of the original, batch 1 and batch 2 left padded.
edit=tests/tools/generate/edit_decoder.py
ids_of_run() { sed -n 's/^row [0-9]*: //p' "$work/out"; }
# input_ids, attention_mask and position_ids declared int32 (Cast to int64 inside): generate feeds
# int32; the batch-2 prompt and mask given as int32 .npy files, as some tokenizers write them
$py $edit int32-ids $optimum "$work/int32_ids.onnx"
$py -c "
import numpy as np
for k in ('prompt', 'mask'):
    np.save('$work/b2.%s.int32.npy' % k, np.load('$data/optimum_b2_left_padded.%s.npy' % k).astype(np.int32))"
expect 0 "^row 0: " "" -- -q generate "$work/int32_ids.onnx" --prompt-file $data/optimum_b1.prompt.npy
check "int32 ids, batch 1: ONNX Runtime's ids" cmp -s <(ids_of_run) $data/optimum_b1.ids
expect 0 "^row 1: " "" -- -q generate "$work/int32_ids.onnx" --prompt-file "$work/b2.prompt.int32.npy" --prompt-mask "$work/b2.mask.int32.npy"
check "int32 ids, batch 2 left padded, int32 prompt and mask files: ONNX Runtime's ids" cmp -s <(ids_of_run) $data/optimum_b2_left_padded.ids
# the presents declared of rank 4, every dim unknown: the cache layout is the past's (BNSH, growing)
$py $edit unknown-present-dims $optimum "$work/unknown_present_dims.onnx"
expect 0 "^row 1: " "" -- generate "$work/unknown_present_dims.onnx" --prompt-file $data/optimum_b2_left_padded.prompt.npy \
  --prompt-mask $data/optimum_b2_left_padded.mask.npy
check "presents of unknown dims: ONNX Runtime's ids" cmp -s <(ids_of_run) $data/optimum_b2_left_padded.ids
check "presents of unknown dims: read as a BNSH cache that grows" grep -qE "\), BNSH float$" "$work/err"
# logits flattened to (batch x tokens, vocab), as a training export writes them for the loss: the
# rows cannot be told apart, one line naming the shape (exit 1)
$py $edit flat-logits $optimum "$work/flat_logits.onnx"
expect 1 "" "^refeval: error: output 'logits' has shape \(6, 96\), expected \(batch 2, \.\.\., vocab\)$" -- \
  -q generate "$work/flat_logits.onnx" --prompt "1 2 3; 4 5 6"

# prompts generate cannot run: one line each, exit 2
$py -c "
import numpy as np
p, m = np.load('$data/optimum_b2_left_padded.prompt.npy'), np.load('$data/optimum_b2_left_padded.mask.npy')
np.save('$work/empty.npy', np.zeros((1, 0), np.int64))  # a tokenizer's ids of '' without special tokens
np.save('$work/rank3.npy', p[:, :, None])               # (batch, length, 1)
np.save('$work/mask_short.npy', m[:, 1:])               # one column short of the prompt
m[1] = 0
np.save('$work/mask_row_padding.npy', m)                # row 1 all padding"
length_msg="^refeval: error: the prompt must hold \(batch, length\) token ids, length >= 1$"
expect 2 "" "$length_msg" -- -q generate $optimum --prompt-file "$work/empty.npy"
expect 2 "" "$length_msg" -- -q generate $optimum --prompt-file "$work/rank3.npy"
expect 2 "" "^refeval: error: the prompt mask has shape \(2, 31\), the prompt \(2, 32\)$" -- \
  -q generate $optimum --prompt-file $data/optimum_b2_left_padded.prompt.npy --prompt-mask "$work/mask_short.npy"
expect 2 "" "^refeval: error: prompt row 1 is all padding$" -- \
  -q generate $optimum --prompt-file $data/optimum_b2_left_padded.prompt.npy --prompt-mask "$work/mask_row_padding.npy"
random_msg="^refeval: error: --batch, --prompt-len and the vocabulary size must be at least 1$"
expect 2 "" "$random_msg" -- -q generate $optimum --prompt-len -1
expect 2 "" "$random_msg" -- -q generate $optimum --prompt-len 3 --vocab -1
expect 2 "" "^refeval: error: --new-tokens: Value 0 not in range 1 to 1073741824$" -- -q generate $optimum --new-tokens 0
finish
