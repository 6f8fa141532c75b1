#!/usr/bin/env bash
# `refeval generate --encoder` on encoder-decoders split as Optimum splits them (BART, T5, Whisper;
# tests/data/generate/SEQ2SEQ.md): torch's greedy ids, batch 1 and batch 2 with padding, from the
# exported models, from `refeval optimize`'s output of each of the three (both targets), and, where
# onnxruntime-node is installed, from ONNX Runtime running the optimized models. The optimizer
# fuses every self- and cross-attention (the first step's presents written by the fused node, the
# encoder's keys and values taken as given) and names the family; bad usage is one clear error.
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
finish
