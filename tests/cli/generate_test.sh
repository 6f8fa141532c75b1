#!/usr/bin/env bash
# `refeval generate` as a user runs it: greedy generation on decoders written as three producers
# write them (tests/data/ort/decoders.py) gives exactly the ids ONNX Runtime gives step by step
# (tests/data/generate/make_expected.py), batch 1 and 2 with padding; --json carries every field;
# --profile + report --by phase shows one prefill and 15 decode runs; --dump-step dumps one step;
# a model that is not a decoder is one clear error.
# Usage: generate_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
cd "$src"

while read -r name model options; do
  # shellcheck disable=SC2086
  expect 0 "^row 0: " "" -- -q generate "$model" $options --new-tokens 16
  check "$name: the ids ONNX Runtime generates step by step" \
    cmp -s <(sed -n 's/^row [0-9]*: //p' "$work/out") "tests/data/generate/$name.ids"
done <tests/data/generate/cases.txt

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
finish
