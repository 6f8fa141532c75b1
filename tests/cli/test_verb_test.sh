#!/usr/bin/env bash
# `refeval test` and its expected-failures list: a listed test failing the way its entry records
# is expected; failing any other way, or passing, is not; a test without data fails.
# Usage: test_verb_test.sh REFEVAL SHARED_DIR
set -u
refeval=$1
node=$2/onnx-backend-tests/node
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

printf "test_dft_inverse\tupstream-data: float32 noise beyond atol\tfails: output 'y': element [0, 5, 0, 1]: \n" >"$work/as_recorded.txt"
expect 0 "expected failures: 1;" "" -- test "$node/test_dft_inverse" --expected-failures "$work/as_recorded.txt"
# The same test listed as failing elsewhere: it fails, but not as recorded.
printf "test_dft_inverse\tupstream-data: float32 noise beyond atol\tfails: output 'y': element [0, 0, 0, 0]: \n" >"$work/elsewhere.txt"
expect 3 "FAIL test_dft_inverse: output 'y': element \[0, 5, 0, 1\].*listed as failing with 'output 'y': element \[0, 0, 0, 0\]: '" "" \
  -- test "$node/test_dft_inverse" --expected-failures "$work/elsewhere.txt"
# A listed test that passes.
printf "test_add\tspec: listed by mistake\tfails: output 'sum'\n" >"$work/passes.txt"
expect 3 "UNEXPECTED PASS test_add \(listed as spec: listed by mistake\)" "" -- test "$node/test_add" --expected-failures "$work/passes.txt"
# An entry without what it fails with is refused, naming the line.
printf "test_add\tspec: no failure recorded\n" >"$work/old.txt"
expect 2 "" "old.txt:1: expected 'test_name<TAB>tag: reason<TAB>fails: what the failure says'" -- test "$node/test_add" --expected-failures "$work/old.txt"
# A test folder whose model has no data set tests nothing: it fails.
mkdir -p "$work/empty_case" && cp "$node/test_add/model.onnx" "$work/empty_case/"
expect 3 "FAIL empty_case: no test data" "" -- test "$work/empty_case"
finish
