#!/usr/bin/env bash
# --custom-ops as a user meets it: a plugin that replaces Relu at every opset is used by `run`
# at opsets 6, 13, 14 and 21; a plugin built for another API version is refused (exit 2, one line).
# Usage: custom_ops_test.sh REFEVAL MAKE_TEST_MODELS RELU_PLUGIN FUTURE_API_PLUGIN
set -u
refeval=$1
make_models=$2
relu_plugin=$3
future_plugin=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$make_models" "$work" || exit 1
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

for opset in 6 13 14 21; do
  # The marked Relu maps negatives to -1 (the built-in gives 0); X is filled with -2.
  out=$("$refeval" --custom-ops "$relu_plugin" run "$work/relu_$opset.onnx" --fill X=-2 --no-timing) || fail "run at opset $opset exited $?"
  grep -q ' + Y: float32:(1, 4) in \[-1.0, -1.0\]' <<<"$out" || fail "opset $opset: the plugin's Relu was not used: $out"
  out=$("$refeval" run "$work/relu_$opset.onnx" --fill X=-2 --no-timing)
  grep -q ' + Y: float32:(1, 4) in \[0.0, 0.0\]' <<<"$out" || fail "opset $opset: the built-in Relu changed: $out"
done
# The global option works after the verb too.
out=$("$refeval" run "$work/relu_14.onnx" --fill X=-2 --no-timing --custom-ops "$relu_plugin")
grep -q 'in \[-1.0, -1.0\]' <<<"$out" || fail "--custom-ops after the verb was ignored"

"$refeval" --custom-ops "$future_plugin" ops >"$work/out" 2>"$work/err"
code=$?
[[ $code -eq 2 ]] || fail "a plugin for another API version exited $code (want 2)"
[[ $(wc -l <"$work/err") -eq 1 ]] && grep -q '^refeval: error: custom-op library .* was built for plugin API version 3, but this refeval provides version 2' "$work/err" \
  || fail "unclear API-version error: $(cat "$work/err")"

echo "custom-ops: $((4 * 2 + 2 - failed)) checks passed, $failed failed"
[[ $failed -eq 0 ]]
