#!/usr/bin/env bash
# `refeval generate --encoder` on encoder-decoders split as Optimum splits them (BART, T5, Whisper;
# tests/data/generate/SEQ2SEQ.md): torch's greedy ids, batch 1 and batch 2 with padding, from the
# exported models, from `refeval optimize`'s output of each of the three (both targets), and, where
# onnxruntime-node is installed, from ONNX Runtime running the optimized models. The optimizer
# fuses every self- and cross-attention (the first step's presents written by the fused node, the
# encoder's keys and values taken as given) and names the family; bad usage is one clear error.
# BART with int32 ids (three models, prompt and mask files) gives torch's ids; a decoder with past
# that is not one, a decoder without presents, flattened logits and prompts that cannot run (empty,
# rank 3, a mask of another shape) are one line each.
# Usage: generate_seq2seq_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
data=$src/tests/data/generate
ort_modules=$src/benchmarks/ort/node_modules
ort=0
[[ -d $ort_modules/onnxruntime-node ]] && ort=1
[[ $ort == 1 ]] || echo "note: onnxruntime-node is not installed (benchmarks/ort: npm install); ONNX Runtime's runs of the optimized models are skipped"

count() { grep '^operators:' "$1" | grep -oE "(: |, )$2 [0-9]+" | grep -oE '[0-9]+$' || echo 0; }

# generate_ids FOLDER CASE START NEW: refeval's rows, one per line
generate_ids() {
  local dir=$1 case=$2 start=$3 new=$4 input
  if [[ -e $data/seq2seq_$family/$case.features.npy ]]; then input=(--features "$data/seq2seq_$family/$case.features.npy")
  else input=(--prompt-file "$data/seq2seq_$family/$case.prompt.npy" --prompt-mask "$data/seq2seq_$family/$case.mask.npy"); fi
  "$refeval" generate "$dir/decoder_model.onnx" --encoder "$dir/encoder_model.onnx" --decoder-with-past "$dir/decoder_with_past_model.onnx" \
    --decoder-start "$start" --new-tokens "$new" "${input[@]}" 2>"$work/err" | sed -n 's/^row [0-9]*: //p'
}

for family in bart t5 whisper; do
  folder=$data/seq2seq_$family
  for target in ort onnx; do
    out=$work/$family-$target
    mkdir -p "$out"
    cp "$folder"/expected.txt "$out/"
    cp "$folder"/*.npy "$out/"
    for m in encoder_model decoder_model decoder_with_past_model; do
      "$refeval" optimize "$folder/$m.onnx" -o "$out/$m.onnx" --target "$target" >"$out/$m.log" 2>&1
      check "$family $m [$target]: optimize exits 0" test $? -eq 0
      check "$family $m [$target]: no Softmax left" test "$(count "$out/$m.log" Softmax)" -eq 0
    done
    if [[ $target == ort ]]; then
      check "$family: the encoder's 2 attentions fused" \
        test $(($(count "$out/encoder_model.log" Attention) + $(count "$out/encoder_model.log" MultiHeadAttention))) -eq 2
      for m in decoder_model decoder_with_past_model; do
        check "$family $m: self- and cross-attention fused in both layers" test "$(count "$out/$m.log" MultiHeadAttention)" -eq 4
        check "$family $m: detected as $family" grep -q "model type $family (detected: " "$out/$m.log"
      done
    fi
  done
  while read -r case start new; do
    [[ -z $case || $case == \#* ]] && continue
    want=$(cat "$folder/$case.ids")
    check "$family $case: torch's greedy ids from the exported models" test "$(generate_ids "$folder" "$case" "$start" "$new")" == "$want"
    for target in ort onnx; do
      check "$family $case [$target]: torch's greedy ids from the optimized models" \
        test "$(generate_ids "$work/$family-$target" "$case" "$start" "$new")" == "$want"
      if [[ $ort == 1 ]]; then
        got=$(NODE_PATH=$ort_modules node "$data/seq2seq_ort_greedy.js" "$work/$family-$target" 2>"$work/ort_err" |
              /usr/bin/python3 -c "import json, sys; print('\n'.join(' '.join(map(str, r)) for r in json.load(sys.stdin)['$case']['ids']))")
        check "$family $case [$target]: ONNX Runtime gives torch's ids on the optimized models" test "$got" == "$want"
      fi
    done
  done <"$folder/expected.txt"
done

# Usage errors: one line, exit 2.
bart=$data/seq2seq_bart
expect 2 "" "needs --encoder" -- generate "$bart/decoder_model.onnx" --decoder-start 2 --prompt "1 2 3"
expect 2 "" "has no input 'encoder_hidden_states'" -- --log-level warning generate "$bart/encoder_model.onnx" --encoder "$bart/encoder_model.onnx" --prompt "4 5 6"
expect 2 "" "input_features" -- --log-level warning generate "$data/seq2seq_whisper/decoder_model.onnx" --encoder "$data/seq2seq_whisper/encoder_model.onnx" --prompt "4 5 6"

# BART's three models as other exporters declare them (tests/tools/generate/edit_decoder.py: the
# same computation), and prompts that cannot run.
py=/usr/bin/python3
edit=$src/tests/tools/generate/edit_decoder.py
bart_args=(--encoder "$bart/encoder_model.onnx" --decoder-start 2 --new-tokens 12)
# input_ids, attention_mask and encoder_attention_mask declared int32 (Cast to int64 inside) in the
# three models, the prompt and mask int32 .npy files: torch's ids, batch 2 right padded
for m in encoder_model decoder_model decoder_with_past_model; do $py "$edit" int32-ids "$bart/$m.onnx" "$work/int32_$m.onnx"; done
$py -c "
import numpy as np
for k in ('prompt', 'mask'):
    np.save('$work/b2.%s.int32.npy' % k, np.load('$bart/b2_right_padded.%s.npy' % k).astype(np.int32))"
expect 0 "^row 1: " "" -- -q generate "$work/int32_decoder_model.onnx" --encoder "$work/int32_encoder_model.onnx" \
  --decoder-with-past "$work/int32_decoder_with_past_model.onnx" --decoder-start 2 --new-tokens 12 \
  --prompt-file "$work/b2.prompt.int32.npy" --prompt-mask "$work/b2.mask.int32.npy"
check "bart, int32 ids and int32 prompt files: torch's greedy ids" test "$(sed -n 's/^row [0-9]*: //p' "$work/out")" == "$(cat "$bart/b2_right_padded.ids")"
# the decoder given as the decoder with past (it has no past_key_values.* input)
expect 2 "" "^refeval: error: the decoder with past has no past_key_values\.\* input$" -- \
  -q generate "$bart/decoder_model.onnx" "${bart_args[@]}" --decoder-with-past "$bart/decoder_model.onnx" --prompt "4 5 6"
# a decoder exported without use_cache (no present outputs) beside a decoder with past
$py "$edit" no-presents "$bart/decoder_model.onnx" "$work/no_presents.onnx"
expect 2 "" "^refeval: error: the decoder gives no 'present\.0\.decoder\.key' for the decoder with past's 'past_key_values\.0\.decoder\.key'$" -- \
  -q generate "$work/no_presents.onnx" "${bart_args[@]}" --decoder-with-past "$bart/decoder_with_past_model.onnx" --prompt "4 5 6"
# logits flattened to (batch x tokens, vocab): one line naming the shape (exit 1)
$py "$edit" flat-logits "$bart/decoder_model.onnx" "$work/flat_logits.onnx"
expect 1 "" "^refeval: error: output 'logits' has shape \(2, 64\), expected \(batch 2, tokens, vocab\)$" -- \
  -q generate "$work/flat_logits.onnx" "${bart_args[@]}" --prompt "4 5 6; 7 8 9"
# an empty prompt, a (batch, length, 1) one, a mask one column short
$py -c "
import numpy as np
p, m = np.load('$bart/b2_right_padded.prompt.npy'), np.load('$bart/b2_right_padded.mask.npy')
np.save('$work/empty.npy', np.zeros((1, 0), np.int64))
np.save('$work/rank3.npy', p[:, :, None])
np.save('$work/mask_short.npy', m[:, 1:])"
length_msg="^refeval: error: the prompt must hold \(batch, length\) token ids, length >= 1$"
expect 2 "" "$length_msg" -- -q generate "$bart/decoder_model.onnx" "${bart_args[@]}" --prompt-file "$work/empty.npy"
expect 2 "" "$length_msg" -- -q generate "$bart/decoder_model.onnx" "${bart_args[@]}" --prompt-file "$work/rank3.npy"
expect 2 "" "^refeval: error: the prompt mask has shape \(2, 6\), the prompt \(2, 7\)$" -- -q generate "$bart/decoder_model.onnx" \
  "${bart_args[@]}" --prompt-file "$bart/b2_right_padded.prompt.npy" --prompt-mask "$work/mask_short.npy"
finish
