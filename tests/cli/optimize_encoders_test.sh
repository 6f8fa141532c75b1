#!/usr/bin/env bash
# `refeval optimize` on torch exports of encoders, vision transformers and an encoder-decoder's
# decoder, written the ways real code writes them (tests/data/optimize/README.md, "Encoders"):
# with no --model-type and with the type a user would pass, the type detected fits, attention is
# fused in every layer with no Softmax left, BERT-style encoders get one EmbedLayerNormalization,
# and the optimized model gives torch's outputs within 1e-4 on batch 1 and batch 2 with right and
# left padding, in refeval and, where ONNX Runtime is installed, in ORT. The look-alike traps
# stay unfused and equal to torch, and --explain names the condition that failed.
# Usage: optimize_encoders_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$1
source_dir=$2
data=$source_dir/tests/data/optimize
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

ort_modules=$source_dir/benchmarks/ort/node_modules
if [[ -d $ort_modules/onnxruntime-node ]]; then
  ort=1
else
  ort=0
  echo "note: onnxruntime-node is not installed (benchmarks/ort: npm install); the ORT runs of the optimized models are skipped"
fi

count() { grep '^operators:' "$1" | grep -oE "(: |, )$2 [0-9]+" | grep -oE '[0-9]+$' || echo 0; }
nodes_after() { grep -oE '^nodes: [0-9]+ -> [0-9]+' "$1" | grep -oE '[0-9]+$'; }

while read -r folder family type layers opset; do
  [[ -z $folder || $folder == \#* ]] && continue
  for given in "" "$type"; do
    [[ $family == trap && -n $given ]] && continue
    tag=$folder${given:+-$given}
    dir=$work/$tag
    # the default forms (ORT's CPU kernels' fastest) without a type; every fusion (--forms all)
    # with the type given
    forms=cpu
    [[ -n $given ]] && forms=all
    mkdir -p "$dir" && cp -r "$data/$folder"/test_data_set_* "$dir/"
    "$refeval" optimize "$data/$folder/model.onnx" -o "$dir/model.onnx" --explain --forms $forms ${given:+--model-type "$given"} >"$dir.log" 2>"$dir.err"
    check "$tag: optimize exits 0" test $? -eq 0
    check "$tag: torch's outputs within 1e-4 on every data set" bash -c "'$refeval' -q test '$dir' --rtol 0 --atol 1e-4 >/dev/null"
    if [[ $ort == 1 ]]; then
      check "$tag: ONNX Runtime gives torch's outputs within 1e-4" \
        bash -c "NODE_PATH='$ort_modules' node '$data/check_ort.js' --atol 1e-4 '$dir' >'$dir.ort' 2>&1"
    fi
    if [[ $family == trap ]]; then
      if [[ $folder == handbuilt_trap_mask_wrong_batch* ]]; then
        # Each row's mask is the other row's: not a key padding mask. Passing the computed values
        # as attention_bias is exact, and that is all that may happen to it.
        check "$tag: fused with the computed mask as a bias" test $(($(count "$dir.log" Attention) + $(count "$dir.log" MultiHeadAttention))) -eq 1
        check "$tag: not read as key padding" bash -c "! grep -q 'key padding from' '$dir.log'"
        continue
      fi
      check "$tag: its Softmax stays" test "$(count "$dir.log" Softmax)" -eq 1
      check "$tag: --explain names why attention was not fused" grep -q "not fused: attention at " "$dir.log"
      case $folder in
        trap_softmax_query_axis*) check "$tag: the axis named" grep -q "Softmax over axis .*not the keys" "$dir.log" ;;
        trap_mask_adds_positive*) check "$tag: the positive mask named" grep -qE "adds .*not 0 and a hiding value|neither a padding mask" "$dir.log" ;;
      esac
      continue
    fi
    if [[ -z $given ]]; then
      check "$tag: detected as $type" grep -q "model type $type (detected: " "$dir.log"
    else
      check "$tag: --model-type $given fits, no warning" test ! -s "$dir.err"
    fi
    check "$tag: no Softmax left" test "$(count "$dir.log" Softmax)" -eq 0
    attention=$(($(count "$dir.log" Attention) + $(count "$dir.log" MultiHeadAttention)))
    want=$layers
    [[ $family == bart ]] && want=$((2 * layers))  # self- and cross-attention
    check "$tag: attention fused in every layer ($attention of $want)" test "$attention" -eq "$want"
    if [[ $forms == cpu ]]; then
      check "$tag: no SkipLayerNormalization (--forms cpu: slower in ORT's CPU kernels)" test "$(count "$dir.log" SkipLayerNormalization)" -eq 0
      continue
    fi
    case $family in
      bert)
        check "$tag: one EmbedLayerNormalization" test "$(count "$dir.log" EmbedLayerNormalization)" -eq 1
        # 7 a layer (Attention, MatMul, SkipLayerNorm, MatMul, BiasGelu, MatMul, SkipLayerNorm) and
        # 12 around them: 40 for 4 layers
        check "$tag: at most $((layers * 7 + 12)) nodes ($(nodes_after "$dir.log"))" test "$(nodes_after "$dir.log")" -le $((layers * 7 + 12)) ;;
      roberta)  # positions from the padding mask's cumsum stay outside the fused embedding
        check "$tag: one EmbedLayerNormalization" test "$(count "$dir.log" EmbedLayerNormalization)" -eq 1 ;;
      albert)  # one layer's weights for every layer: what the fusions make from them is made once too
        check "$tag: one EmbedLayerNormalization" test "$(count "$dir.log" EmbedLayerNormalization)" -eq 1
        read -r before after < <(grep -oE 'initializers: [0-9]+ \([0-9.]+ MB\) -> [0-9]+ \([0-9.]+ MB\)' "$dir.log" | grep -oE '[0-9.]+ MB' | tr -d ' MB' | tr '\n' ' ')
        check "$tag: shared weights stay shared ($before MB -> $after MB)" awk "BEGIN { exit !($after <= $before) }"
        packed=$("$refeval" show "$dir/model.onnx" --format text | grep -oE 'Attention[^(]*\("[^"]*", "[^"]*"' | awk -F'"' '{print $4}' | sort -u | wc -l)
        check "$tag: one packed q/k/v weight for the $layers layers ($packed)" test "$packed" -eq 1 ;;
      distilbert)
        check "$tag: one EmbedLayerNormalization" test "$(count "$dir.log" EmbedLayerNormalization)" -eq 1
        check "$tag: at most $((layers * 7 + 11)) nodes ($(nodes_after "$dir.log"))" test "$(nodes_after "$dir.log")" -le $((layers * 7 + 11)) ;;
    esac
  done
  [[ $family == trap ]] && continue
  # Standard operators (Attention-23, LayerNormalization, ...): the same outputs, no com.microsoft.
  dir=$work/$folder-onnx
  mkdir -p "$dir" && cp -r "$data/$folder"/test_data_set_* "$dir/"
  "$refeval" optimize "$data/$folder/model.onnx" -o "$dir/model.onnx" --target onnx >"$dir.log" 2>&1
  check "$folder [onnx]: optimize exits 0" test $? -eq 0
  check "$folder [onnx]: standard operators only" bash -c "'$refeval' show '$dir/model.onnx' --format text | head -4 | grep -q 'opset_import: \[\"\" : 2[3-9]\]'"
  check "$folder [onnx]: no Softmax left" test "$(count "$dir.log" Softmax)" -eq 0
  check "$folder [onnx]: torch's outputs within 1e-4" bash -c "'$refeval' -q test '$dir' --rtol 0 --atol 1e-4 >/dev/null"
  if [[ $ort == 1 ]]; then
    # ORT's Attention-23 answers a query whose every key is hidden (a left-padded decoder row's
    # first positions, pads themselves) otherwise than torch's uniform softmax: those rows are
    # left out for the decoder and CLIP's causal text tower; every other row, and every row of the
    # com.microsoft form, counts.
    skip=()
    [[ $family == bart || $family == clip ]] && skip=(--skip-hidden-queries attention_mask)
    check "$folder [onnx]: ONNX Runtime gives torch's outputs within 1e-4" \
      bash -c "NODE_PATH='$ort_modules' node '$data/check_ort.js' --atol 1e-4 ${skip[*]} '$dir' >'$dir.ort' 2>&1"
  fi
done <"$data/encoder_forms.txt"

# A type that does not fit what the graph shows: one warning naming what was found, and every
# fusion still applied.
"$refeval" optimize "$data/hf_bert_opset17/model.onnx" -o "$work/bert-as-gpt2.onnx" --model-type gpt2 >"$work/out" 2>"$work/err"
check "a BERT optimized as gpt2: one warning naming the encoder" bash -c "[[ \$(wc -l <'$work/err') -eq 1 ]] && grep -q 'warning: --model-type gpt2, but the graph shows bert (encoder: bidirectional' '$work/err'"
check "a BERT optimized as gpt2: still fused" test $(($(count "$work/out" Attention) + $(count "$work/out" MultiHeadAttention))) -eq 4
finish
