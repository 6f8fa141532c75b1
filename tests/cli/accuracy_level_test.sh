#!/usr/bin/env bash
# MatMulNBits' accuracy_level 4 as a user chasing a token flip meets it, on the GenAI-builder
# decoder (tests/data/ort/decoders_genai_level4, every MatMulNBits at level 4): refeval computes
# the exact math (the level-0 outputs of the same weights and inputs), ORT's int8 path differs
# from it, and --emulate-accuracy-level reproduces ORT's result; `compare` of the two runs names
# the first node where they part.
# Usage: accuracy_level_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
level4=$src/tests/data/ort/decoders_genai_level4/int4_asym_b1
exact=$src/tests/data/ort/decoders_genai/int4_asym_b1

# the exact math: the level-4 model gives the level-0 model's ORT outputs (same weights, same inputs)
mkdir $work/exact && cp $level4/model.onnx $work/exact/ && cp -r $exact/test_data_set_* $work/exact/
expect 0 "^1 passed, 0 failed" "" -- test $work/exact --rtol 1e-3 --atol 1e-4
# which is not what ORT's int8 path gives ...
expect 3 "FAIL int4_asym_b1: test_data_set_0: output 'logits'" "" -- test $src/tests/data/ort/decoders_genai_level4 --rtol 1e-3 --atol 1e-4
# ... unless asked to emulate it (ORT's outputs to 1e-6)
expect 0 "^1 passed, 0 failed" "" -- --emulate-accuracy-level test $src/tests/data/ort/decoders_genai_level4 --rtol 0 --atol 1e-6
# the two runs compared node by node: the first difference is a MatMulNBits
"$refeval" -q run $level4/model.onnx --inputs $level4/test_data_set_0 --dump $work/exact_dump >/dev/null
"$refeval" -q --emulate-accuracy-level run $level4/model.onnx --inputs $level4/test_data_set_0 --dump $work/int8_dump >/dev/null
expect 3 "MatMulNBits" "" -- compare $work/exact_dump $work/int8_dump --per-tensor
finish
