#!/usr/bin/env bash
# `refeval optimize` on torch exports written the ways real code writes GPT-2 and Llama
# (tests/data/optimize, README there): each form fuses what its family should, for both targets,
# and the optimized model still gives torch's outputs (prefill, decode step, batch 2 with right and
# left padding) within 1e-4. The look-alike traps stay unfused, equal to torch, and --explain names
# the condition that failed.
# Usage: optimize_exports_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$1
data=$2/tests/data/optimize
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

ort_modules=$2/benchmarks/ort/node_modules
ort=0
if [[ -d $ort_modules/onnxruntime-node ]]; then
  ort=1
else
  echo "note: onnxruntime-node is not installed (benchmarks/ort: npm install); the ORT runs of the optimized models are skipped"
fi

# count OP: how many OP nodes the last `optimize` left ("operators: A 1, B 2").
count() { grep '^operators:' "$work/out" | grep -oE "(: |, )$1 [0-9]+" | grep -oE '[0-9]+$' || echo 0; }
sum() { local s=0; for op in "$@"; do s=$((s + $(count "$op"))); done; echo $s; }

# optimized FOLDER TARGET: optimize FOLDER's model into $work/FOLDER-TARGET with its data sets.
# ORT's stacked-past GPT-2 fuses into com.microsoft Attention with a padding mask_index: in a
# left-padded row's first queries, where every key is hidden, the export's softmax is uniform over
# its padded keys and the operator answers otherwise. Those positions are padding (their logits
# are never read): sets 4 and 5 (left padding) are compared on the positions the mask keeps there.
# MixFormer adds its padding bias of float's lowest first and then replaces the future's scores
# (masked_fill(causal, lowest)): a hidden row's scores are all lowest in float, uniform over every
# key. No bias added to the scores replaces them: the fused row is uniform over the keys hidden
# once, and -inf (lowest + lowest) where both masks hide. Its sets 4 and 5 too are compared on
# the kept positions. The other forms get an exact bias (attention.cc) and are compared on every
# position.
# The same optimized model runs in ONNX Runtime (a runtime refeval did not write) against torch at
# 1e-4 on every data set, left-padded rows' pad positions left out (where every key is hidden,
# runtimes differ by design; those logits are never read).
optimized() {
  local dir=$work/$1-$2
  mkdir -p "$dir" && cp -r "$data/$1"/test_data_set_* "$dir/"
  expect 0 "^nodes: " "" -- optimize "$data/$1/model.onnx" -o "$dir/model.onnx" --target "$2" --explain
  cp "$work/out" "$dir.log"
  if [[ $ort == 1 ]]; then
    check "$1 [$2]: ONNX Runtime gives torch's outputs within 1e-4 (pad rows left out)" \
      bash -c "NODE_PATH='$ort_modules' node '$data/check_ort.js' --atol 1e-4 --skip-hidden-queries attention_mask '$dir' >'$dir.ort' 2>&1"
  fi
  if [[ $1 == ort_gpt2_past* || $1 == mixformer_* ]]; then
    # Its left-padded sets compared on the positions the mask keeps (compare_kept.py).
    for k in 4 5; do
      [[ -d $dir/test_data_set_$k ]] || continue  # the fixed-shape exports have one set
      "$refeval" -q run "$dir/model.onnx" --inputs "$dir/test_data_set_$k" --save-outputs "$dir.out$k" -v 0
      check "$1 [$2]: torch's outputs within 1e-4 on set $k's kept positions" \
        /usr/bin/python3 "$(dirname "$0")/compare_kept.py" "$dir.out$k" "$dir/test_data_set_$k" attention_mask 1e-4
      rm -rf "$dir/test_data_set_$k"
    done
  fi
  check "$1 [$2]: torch's outputs within 1e-4 on every data set" bash -c "'$refeval' -q test '$dir' --rtol 0 --atol 1e-4 >/dev/null"
}

while read -r folder family past opset; do
  [[ -z $folder || $folder == \#* ]] && continue
  for target in ort onnx; do
    optimized "$folder" "$target"
    cp "$work/$folder-$target.log" "$work/out"
    if [[ $target == onnx ]]; then
      # Standard operators only: the model imports no com.microsoft domain.
      check "$folder [onnx]: standard operators only" bash -c "'$refeval' show '$work/$folder-onnx/model.onnx' --format text | head -4 | grep -q 'opset_import: \[\"\" : 2[3-9]\]'"
    fi
    if [[ $folder == meta_llama* ]]; then
      # Meta's model.py rotates neighbour pairs (x[2i], x[2i + 1]): RotaryEmbedding with interleaved = 1.
      check "$folder [$target]: the rotary fused with interleaved = 1 for q and k in both layers" \
        test "$("$refeval" show "$work/$folder-$target/model.onnx" --format text | grep -c 'RotaryEmbedding <interleaved = 1,')" -eq 4
    fi
    case $folder in
      trap_ln_eps_outside*) check "$folder: epsilon outside the root named" grep -q "not fused: layer-norm at .*epsilon is added outside the square root" "$work/out"
        check "$folder: ln_1's statistics stay (2 ReduceMean, its Sqrt)" test "$(count ReduceMean)" -eq 2 -a "$(count Sqrt)" -eq 1 ;;
      trap_ln_first_axis*) check "$folder: the first-axis mean named" grep -q "not fused: layer-norm at .*reduces axis 0, not the last axis" "$work/out"
        check "$folder: ln_1's statistics stay (2 ReduceMean, its Sqrt)" test "$(count ReduceMean)" -eq 2 -a "$(count Sqrt)" -eq 1 ;;
      trap_gelu_coef_near*) check "$folder: the coefficient named" grep -q "not fused: fast-gelu at .*is 0.0447, not 0.044715" "$work/out"
        check "$folder: the Tanh stays" test "$(count Tanh)" -eq 1 ;;
      trap_gelu_coef*) check "$folder: the coefficient named" grep -q "not fused: fast-gelu at .*is 0.05, not 0.044715" "$work/out"
        check "$folder: the Tanh stays" test "$(count Tanh)" -eq 1 ;;
      trap_mask_shifted*) check "$folder: the non-causal mask named" grep -q "not fused: attention at .*not causal" "$work/out"
        check "$folder: its Softmax stays" test "$(count Softmax)" -eq 1 ;;
      trap_rotary_tail*) check "$folder: the rotated tail fused on its own (2 RotaryEmbedding), its Slices and Concat kept" test "$(count RotaryEmbedding)" -eq 2 -a "$(count Concat)" -ge 2
        check "$folder: the attention over the joined halves stays, named" grep -q "not fused: attention at .*concatenates .* on the last axis" "$work/out"
        check "$folder: its Softmax stays" test "$(count Softmax)" -eq 1 ;;
      trap_rotary_pairs_swapped*) check "$folder: the pairs read in the other order named" \
          grep -q "not fused: rotary-embedding at .*: the rotation by the negative angle" "$work/out"
        check "$folder: no RotaryEmbedding (q and k stay rotated by Mul, Sub, Add)" test "$(count RotaryEmbedding)" -eq 0 ;;
      trap_cross_kv_bsnh*) check "$folder: keys and values given as (B, T, N, h) are not read as heads (B, N, T, h)" \
          grep -q "not fused: attention at '/layers.0/encoder_attn/Softmax': .* does not transpose a Reshape into heads" "$work/out"
        check "$folder: the cross-attention's Softmax stays, the self-attention fused" test "$(count Softmax)" -eq 1 -a "$(sum Attention MultiHeadAttention)" -eq 1 ;;
      trap_rms_eps_outside*) check "$folder: epsilon outside the root named" grep -q "not fused: simplified-layer-norm at .*epsilon is added outside the square root" "$work/out"
        check "$folder: the first RMSNorm's statistics stay (a ReduceMean, its Sqrt)" test "$(count ReduceMean)" -eq 1 -a "$(count Sqrt)" -eq 1 ;;
      trap_rotary_halves_swapped*) check "$folder [$target]: the halves read in the other order named" \
          grep -q "not fused: rotary-embedding at .*: the halves are read as (x\[h/2:\], x\[:h/2\]): the rotation by the negative angle" "$work/out"
        check "$folder [$target]: no RotaryEmbedding" test "$(count RotaryEmbedding)" -eq 0 ;;
      mixformer_scores_shape*)
        check "$folder [$target]: the mask sized by the scores' shape read from the inputs, the attention fused" \
          test "$(sum Attention MultiHeadAttention)" -eq 1 -a "$(sum Softmax Einsum)" -eq 0 -a "$(count RotaryEmbedding)" -eq 2
        expect 0 "^nodes: " "" -- optimize "$data/$folder/model.onnx" -o "$work/$folder-unread.onnx" --target "$target" --explain --disable shape-source
        check "$folder [$target]: without shape-source the attention stays, named" \
          grep -q "not fused: attention at .*stays (the mask is computed from the attention's own values) and writes 'present.0.key'" "$work/out"
        cp "$work/$folder-$target.log" "$work/out" ;;
      mixformer_phi*)
        # MixFormer's Phi-2 (both targets): the partial rotary on BSNH halves with half-width
        # tables fuses (rotary_embedding_dim 8 of 16), both attention einsums become MatMuls, and
        # the attention over them fuses in both layers.
        check "$folder [$target]: the rotary fused for q and k in both layers, rotary_embedding_dim 8" \
          test "$("$refeval" show "$work/$folder-$target/model.onnx" --format text | grep -c 'RotaryEmbedding <interleaved = 0, rotary_embedding_dim = 8,')" -eq 4
        check "$folder [$target]: no Neg, Einsum or Softmax left" test "$(sum Neg Einsum Softmax)" -eq 0
        check "$folder [$target]: attention fused in both layers" test "$(sum Attention MultiHeadAttention)" -eq 2
        check "$folder [$target]: one norm a layer and the final one (3 LayerNorm-family nodes)" \
          test "$(sum LayerNormalization SkipLayerNormalization)" -eq 3
        [[ $target == ort ]] && check "$folder: detected as phi" grep -q "model type phi (detected: " "$work/out" ;;
      *)
        [[ $target == ort ]] || continue
        check "$folder: detected as $family" grep -q "model type $family (detected: " "$work/out"
        check "$folder: no Softmax left" test "$(count Softmax)" -eq 0
        case $family in
          bart) check "$folder: self- and cross-attention fused in both layers (cross K/V given as past)" test "$(count MultiHeadAttention)" -eq 4
            check "$folder: 7 LayerNorm-family nodes" test "$(sum EmbedLayerNormalization SkipLayerNormalization LayerNormalization)" -eq 7 ;;
          *) check "$folder: attention fused in both layers" test "$(sum Attention MultiHeadAttention GroupQueryAttention)" -eq 2 ;;
        esac
        # Keys and values repeated for grouped-query heads (repeat_kv) after a per-layer past:
        # GroupQueryAttention on the Nkv heads (its ORT run above checks it against torch).
        case $folder in
          hf_llama_opset17 | mistral_like* | mistral_sliding* | gemma_like* | phi3_like*)
            check "$folder: grouped-query attention as GroupQueryAttention in both layers" test "$(count GroupQueryAttention)" -eq 2 ;;
        esac
        case $family in
          gpt2) check "$folder: 5 LayerNorm-family nodes" test "$(sum LayerNormalization SkipLayerNormalization)" -eq 5
            check "$folder: no Tanh left" test "$(count Tanh)" -eq 0 ;;
          llama) check "$folder: 5 RMSNorm-family nodes" test "$(sum SimplifiedLayerNormalization SkipSimplifiedLayerNormalization)" -eq 5 ;;
          phi) check "$folder: one norm a layer and the final one (3 LayerNorm-family nodes)" test "$(sum LayerNormalization SkipLayerNormalization)" -eq 3 ;;
          gpt_neox) check "$folder: two norms a layer and the final one (5 LayerNorm-family nodes)" test "$(sum LayerNormalization SkipLayerNormalization)" -eq 5 ;;
        esac
        if [[ $family != gpt2 && $family != bart ]]; then
          check "$folder: rotary fused for q and k in both layers" test "$(count RotaryEmbedding)" -eq 4
          check "$folder: no Neg left" test "$(count Neg)" -eq 0
        fi ;;
    esac
  done
done <"$data/forms.txt"

# The command line as documented: --list-passes alone; --verify on generated inputs of a decoder
# whose rotary table is sliced to the sequence (Phi-2): position ids count from the past, masks are
# ones, so nothing indexes past the table.
expect 0 "^attention$" "" -- optimize --list-passes
expect 0 "^verify: equivalent" "" -- optimize "$data/phi2_like_opset17/model.onnx" -o "$work/phi_verify.onnx" --verify --dim batch=2 --dim sequence=5
finish
