#!/usr/bin/env bash
# Diagnostics as a user sees them (README, "Diagnostics"): results on stdout, warnings and notes
# on stderr as "refeval: LEVEL: ...", --log-level and -q, and progress lines only at a terminal.
# Usage: diagnostics_test.sh REFEVAL SHARED_DIR
set -u
refeval=$1
shared=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
golden=$shared/docs/verbose-golden
linreg=$golden/linreg.onnx
nodes=$shared/onnx-backend-tests/node
source "$(dirname "$0")/expect.sh"

# A warning is one line on stderr; the results on stdout are unchanged by it.
expect 0 "^ \+ variable: float32:\(1, 1\)" "^refeval: warning: --dim foo=3: no model input has a dimension named 'foo'$" -- "$linreg" --dim foo=3 --no-timing
mkdir -p "$work/empty_inputs"
expect 0 "" "^refeval: warning: --inputs .*: no input_0.pb for input 'X'; it is generated$" -- run "$linreg" --inputs "$work/empty_inputs" -v 0
# -q (before or after the verb, before an implicit run) and --log-level error hide it.
expect 0 "variable" "" -- -q "$linreg" --dim foo=3 --no-timing
check "-q leaves stderr empty" test ! -s "$work/err"
expect 0 "variable" "" -- run "$linreg" --dim foo=3 --no-timing --log-level error
check "--log-level error leaves stderr empty" test ! -s "$work/err"
# debug shows the generated feeds; errors stay one line at every level.
expect 0 "" "" -- --log-level debug run "$linreg" -v 0
check "debug names the generated input" grep -q "^refeval: debug: input 'X' generated (float32:(1, 10)" "$work/err"
expect 2 "" "^refeval: error: --log-level loud: expected trace, debug, info, warning, error or off$" -- --log-level loud ops
expect 2 "" "^refeval: error: .*missing.onnx" -- -q run "$work/missing.onnx"

# Progress: drawn on stderr at a terminal (util-linux `script` gives a pseudo-terminal), erased
# before the summary; never when stderr is a file or a pipe.
suite=(test "$nodes" --filter '^test_(abs|add)')
script -qec "$(printf '%q ' "$refeval" "${suite[@]}")" /dev/null >"$work/tty" 2>&1
check "a terminal shows the test progress line" grep -qa $'test [0-9]*/[0-9]*: test_a' "$work/tty"
check "the line is erased before the summary" grep -qa $'\r\e\[Kunexpected failures: 0' "$work/tty"
expect 0 "passed, 0 failed" "" -- "${suite[@]}"
check "no progress without a terminal" test ! -s "$work/err"
script -qec "$(printf '%q ' "$refeval" -q "${suite[@]}")" /dev/null >"$work/tty_quiet" 2>&1
check "-q hides progress at a terminal" bash -c "! grep -qa 'test [0-9]*/' '$work/tty_quiet'"

finish
