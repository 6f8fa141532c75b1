#!/usr/bin/env bash
# `refeval optimize --explain` on the look-alike models of tests/data/optimize/lookalikes (written by
# tests/data/optimize/make_lookalikes.py): each resembles a fusion, or holds a com.microsoft
# operator --target onnx rewrites, with one difference that makes the rewrite invalid. For each row
# of lookalikes/expected.txt (<model> TAB <target> TAB <reason> [TAB <options>]):
#   - the optimizer exits 0, prints <reason> in a "not fused:" line, and --verify finds the
#     optimized model equivalent to the original on seeded inputs (<options>: --forms all for the
#     passes --forms cpu leaves out; --dim / --fill to feed the model real values);
#   - with <options> starting "exit=2" (a com.microsoft node the input has and --target onnx
#     cannot rewrite, a usage error): the optimizer exits 2 naming <reason> on stderr and writes
#     nothing; the model is then optimized for --target ort with --verify (the rest of
#     <options>), which must exit 0 and find it equivalent, so the model is known to run; with
#     "exit=2 invalid" the node is malformed and `refeval run` must refuse it as well, in one line.
# Usage: optimize_lookalikes_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$1
source_dir=$2
data=$source_dir/tests/data/optimize/lookalikes
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

[[ -f $data/expected.txt ]] || { echo "FAIL: $data/expected.txt is missing"; exit 1; }

# Every model has a row and every row a model.
for model in "$data"/*.onnx; do
  name=$(basename "$model")
  check "$name: listed in expected.txt" grep -q "^$name	" "$data/expected.txt"
done

row=0
while IFS=$'\t' read -r name target reason options; do
  [[ -z $name || $name == \#* ]] && continue
  row=$((row + 1))
  model=$data/$name
  tag="$name ($target)"
  if [[ ! -f $model ]]; then
    check "$tag: the model exists" false
    continue
  fi
  out=$work/out.onnx
  rm -f "$out"
  if [[ $options == exit=2* ]]; then
    verify_options=${options#exit=2}
    "$refeval" optimize "$model" -o "$out" --explain --target "$target" >"$work/log" 2>"$work/err"
    code=$?
    check "$tag: exits 2 (a given com.microsoft node without a standard form), got $code" test $code -eq 2
    check "$tag: stderr names the reason: $reason" grep -qF -- "$reason" "$work/err"
    check "$tag: nothing written" test ! -e "$out"
    if [[ $options == "exit=2 invalid"* ]]; then  # a malformed node: refeval's own kernel refuses it too
      "$refeval" run "$model" >"$work/log" 2>"$work/err"
      code=$?
      check "$tag: run refuses the malformed node too, with a one-line error (exit $code)" \
        bash -c "[[ $code -ne 0 && \$(wc -l <'$work/err') -eq 1 ]] && grep -q 'MultiHeadAttention' '$work/err'"
      continue
    fi
    # shellcheck disable=SC2086  # the options are words
    "$refeval" optimize "$model" -o "$out" --target ort --verify $verify_options >"$work/log" 2>"$work/err"
    code=$?
    check "$tag: the model runs and --target ort keeps it equivalent (exit $code)" \
      bash -c "[[ $code -eq 0 ]] && grep -q '^verify: equivalent' '$work/log'"
    [[ $code -eq 0 ]] || sed 's/^/    /' "$work/err" | head -5
    continue
  fi
  # shellcheck disable=SC2086
  "$refeval" optimize "$model" -o "$out" --explain --target "$target" --verify $options >"$work/log" 2>"$work/err"
  code=$?
  check "$tag: optimize --verify exits 0, got $code" test $code -eq 0
  [[ $code -eq 0 ]] || sed 's/^/    /' "$work/err" | head -5
  if ! grep '^not fused: ' "$work/log" | grep -qF -- "$reason"; then
    check "$tag: --explain says: $reason" false
    grep '^not fused: ' "$work/log" | sed 's/^/    /' | head -10
  else
    passed=$((passed + 1))
  fi
  check "$tag: the optimized model is equivalent to the original" grep -q '^verify: equivalent' "$work/log"
done <"$data/expected.txt"
check "expected.txt has rows" test $row -gt 0
finish
