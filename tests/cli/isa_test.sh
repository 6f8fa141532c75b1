#!/usr/bin/env bash
# One binary, every path: `--isa avx512|avx2|generic` (and REFEVAL_ISA) choose the instruction set
# of refeval's own kernels at run time (refeval/isa.h). Under each path this machine runs, models
# give the outputs computed elsewhere: a GPT-2 and a Llama-style torch export against torch, an
# int4 GenAI decoder (MatMulNBits) and every ONNX Runtime oracle suite of ctest's ort-* against
# ONNX Runtime, the ONNX model zoo's light models (ResNet-50,
# SqueezeNet, Inception, ...) against their reference outputs. The AVX-512 and AVX2 paths give the
# same bits on GPT-2 (products are in-order chains on both); a path above the machine's is a usage
# error, named.
# Usage: isa_test.sh REFEVAL SOURCE_DIR SHARED_DIR
set -u
refeval=$1
source_dir=$2
shared=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

data=$source_dir/tests/data
runnable=()
for isa in avx512 avx2 generic; do
  if "$refeval" --isa "$isa" ops >/dev/null 2>&1; then
    runnable+=("$isa")
  else
    echo "note: the $isa path is not run: this CPU or build does not have it"
  fi
done
check "the portable path runs everywhere" test "${runnable[-1]}" = generic

for isa in "${runnable[@]}"; do
  check "[$isa] GPT-2 export: torch's outputs within 1e-4" bash -c "'$refeval' --isa $isa -q test '$data/optimize/hf_gpt2_opset17' --rtol 0 --atol 1e-4 >/dev/null"
  check "[$isa] Llama-style export with a KV cache: torch's outputs within 1e-4" \
    bash -c "'$refeval' --isa $isa -q test '$data/optimize/hf_llama_opset17' --rtol 0 --atol 1e-4 >/dev/null"
  check "[$isa] int4 GenAI decoder (MatMulNBits): ONNX Runtime's outputs" \
    bash -c "'$refeval' --isa $isa -q test '$data/ort/decoders_genai' --rtol 1e-3 --atol 1e-4 >/dev/null"
  check "[$isa] float16 and bfloat16 weights, float16 models: ONNX Runtime's outputs" \
    bash -c "'$refeval' --isa $isa -q test '$data/ort/half_weights' --rtol 1e-5 --atol 1e-6 --row-rtol 7.62939453125e-06 >/dev/null &&
             '$refeval' --isa $isa -q test '$data/ort/half_models' --rtol 2e-3 --atol 5e-4 >/dev/null"
  # Every ONNX Runtime oracle suite ctest runs at the best path (ort-*), at this path too, with the
  # same tolerances (tests/CMakeLists.txt: float32 rounding in another summation order).
  for suite in "$data"/ort/*/; do
    [[ -e $suite/OWN_CTEST_ENTRY ]] && continue
    check "[$isa] ort-$(basename "$suite"): ONNX Runtime's outputs" \
      bash -c "'$refeval' --isa $isa -q test '$suite' --rtol 1e-5 --atol 1e-6 --row-rtol 7.62939453125e-06 >/dev/null"
  done
  check "[$isa] light model zoo (ResNet-50, SqueezeNet, ...): reference outputs" \
    bash -c "'$refeval' --isa $isa -q test '$shared/onnx-backend-tests/light' --expected-failures '$source_dir/tests/conformance/expected_failures.txt' >/dev/null"
  "$refeval" --isa "$isa" -q run "$data/optimize/hf_gpt2_opset17/model.onnx" --inputs "$data/optimize/hf_gpt2_opset17/test_data_set_2" \
    --save-outputs "$work/gpt2-$isa" --verbose 0 >/dev/null
done
if [[ " ${runnable[*]} " == *" avx512 "* ]]; then
  check "GPT-2: the AVX-512 and AVX2 paths give the same bits" cmp -s "$work/gpt2-avx512/output_0.pb" "$work/gpt2-avx2/output_0.pb"
fi
REFEVAL_ISA=generic "$refeval" -q run "$data/optimize/hf_gpt2_opset17/model.onnx" --inputs "$data/optimize/hf_gpt2_opset17/test_data_set_2" \
  --save-outputs "$work/gpt2-env" --verbose 0 >/dev/null
check "REFEVAL_ISA=generic is --isa generic" cmp -s "$work/gpt2-env/output_0.pb" "$work/gpt2-generic/output_0.pb"

expect 2 "" "error: .*'avx9' is not an instruction set: avx512, avx2 or generic" -- --isa avx9 ops
finish
