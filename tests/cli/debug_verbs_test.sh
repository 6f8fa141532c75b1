#!/usr/bin/env bash
# The debugging verbs driven as a user would: `run --dump`, `run --check-finite`, `node`
# (with --extract, whose folder `refeval test` must pass) and `compare`, with their exit codes
# (CLI.md: 0 ok, 2 usage/model/input error, 3 a check found a problem) and one-line errors.
# Usage: debug_verbs_test.sh REFEVAL SHARED_DIR
set -u
refeval=$1
shared=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
golden=$shared/docs/verbose-golden
linreg=$golden/linreg.onnx
nodes=$shared/onnx-backend-tests/node
source "$(dirname "$0")/expect.sh"

# --- run --dump: every value, an index in execution order -------------------------------------
expect 0 "dump: 8 values in" "" -- run "$linreg" --input "X=$golden/X.npy" --no-timing --dump "$work/dump"
check "the dump holds index.json and a file per value" test "$(ls "$work/dump" | wc -l)" -eq 9
check "initializers come first, with node null" grep -q '^  {"name":"coef","file":"coef.pb","node":null,"op_type":null' "$work/dump/index.json"
check "node outputs name their node" grep -q '"name":"/Add_output_0","file":"_Add_output_0.pb","node":"/Add","op_type":"Add"' "$work/dump/index.json"
expect 2 "" "^refeval: error: --dump .*cannot create the folder" -- run "$linreg" --dump /proc/nope

# --- run --check-finite -----------------------------------------------------------------------
expect 0 "check-finite: 8 values checked, none holds NaN or Inf" "" -- run "$linreg" --input "X=$golden/X.npy" --no-timing --check-finite
# Log of a negative value plants a NaN: found at the Log node, with its input and first position.
expect 3 "first NaN or Inf: node #0 \(Log\)" "" -- run "$nodes/test_log/model.onnx" --fill x=-1 --check-finite
check "the finding shows the first positions" grep -q "first at \[0, 0, 0\] \[0, 0, 1\]" "$work/out"
check "the finding shows the input" grep -q "input 'x': float32:(3, 4, 5) min -1.0 max -1.0 mean -1.0, 0 NaN, 0 Inf" "$work/out"
# linreg takes the square root of X + 2: X = -3 makes NaN at /Sqrt, the dump keeps what ran.
expect 3 "first NaN or Inf: node '/Sqrt' \(Sqrt\)" "" -- run "$linreg" --fill X=-3 --check-finite --dump "$work/nandump" -v 0
check "the dump stops at the offending node" grep -q '"name":"/Sqrt_output_0".*"nan":10' "$work/nandump/index.json"
expect 3 "input 'x' holds NaN or Inf before any node runs" "" -- run "$nodes/test_log/model.onnx" --fill x=nan --check-finite

# --- node: one node, inputs from files or from the model --------------------------------------
expect 0 "^ \+ /Sqrt_output_0: float32:\(3, 10\) in \[1.0, 1.974841833114624\]" "" -- node "$linreg" --node /Sqrt --input "X=$golden/X.npy"
expect 0 "^ \+I /Add_output_0: float32:\(3, 10\) in \[1.0, 3.9000000953674316\]" "" -- node "$linreg" --node '#1' --input "X=$golden/X.npy"
expect 0 "^ \+I /Add_output_0: float32:\(3, 10\) in \[1.0, 1.974841833114624\]" "" -- node "$linreg" --node op:Sqrt --input "/Add_output_0=$work/dump/_Sqrt_output_0.pb" -v 3
expect 0 "extracted: .*with 2 inputs, 1 outputs" "" -- node "$linreg" --node /MatMul --input "X=$golden/X.npy" --extract "$work/extract"
expect 0 "1 passed, 0 failed" "" -- test "$work/extract"
# What --extract froze is what the whole model computed (the dump above, the same X), not only
# what the extract recomputes from itself.
check "the extract's inputs equal the full run's values" /usr/bin/python3 "$(dirname "$0")/frozen_from_dump.py" "$work/extract" "$work/dump"
expect 0 "extracted:" "" -- node "$nodes/test_if/model.onnx" --node '#0' --extract "$work/extract_if"
expect 0 "1 passed, 0 failed" "" -- test "$work/extract_if"
# At --verbose 2-4 a node's trace is the trace `run` prints for its extracted model, byte for byte
# (one node with an initializer input, and an If whose branches are traced one level down).
for level in 2 3 4; do
  for case in "linreg|$linreg|/MatMul|--input X=$golden/X.npy" "if|$nodes/test_if/model.onnx|#0|"; do
    IFS='|' read -r tag model node extra <<<"$case"
    # shellcheck disable=SC2086
    "$refeval" node "$model" --node "$node" $extra --verbose "$level" --extract "$work/trace_$tag$level" >"$work/node_trace" 2>/dev/null
    "$refeval" run "$work/trace_$tag$level/model.onnx" --inputs "$work/trace_$tag$level/test_data_set_0" --verbose "$level" >"$work/run_trace"
    check "node --verbose $level traces $tag's $node as run traces its extract" cmp -s "$work/node_trace" "$work/run_trace"
    check "the $tag trace at $level is not empty" grep -q '^[A-Z][A-Za-z]*(.*) -> ' "$work/node_trace"
  done
done
expect 2 "" "^refeval: error: no node matches 'nope'" -- node "$linreg" --node nope
expect 2 "" "^refeval: error: --node op:Add: matches 2 nodes \(/Add, /Add_1\)" -- node "$linreg" --node op:Add
expect 2 "" "is inside a body .*main-graph nodes only" -- node "$nodes/test_if/model.onnx" --node '#0/then_branch/#0'
expect 2 "" "^refeval: error: --input Z=.*neither a value node '/Sqrt' reads nor a model input" -- node "$linreg" --node /Sqrt --input "Z=$golden/X.npy"
# A file whose shape contradicts the model's declaration of the value is refused as a feed is.
expect 2 "" "^refeval: error: input 'X': expected tensor\(float\)\[.*dimension 1 differs" -- node "$linreg" --node /Add --input "X=$work/dump/coef.pb"

# --- compare ----------------------------------------------------------------------------------
expect 0 "result: equal within tolerance" "" -- compare "$linreg" "$linreg"
expect 0 "values: 0 of 5 differ" "" -- compare "$linreg" "$work/dump" --per-tensor
# Other feeds than the dump's: every value differs; the first is the first node's output.
expect 3 "first difference: '/Add_output_0' from node '/Add' \(Add\)" "" -- compare "$linreg" "$work/dump" --fill X=0.5 --json "$work/cmp.json"
check "--json names the first difference" grep -q '"op_type": "Add"' "$work/cmp.json"
# A dump whose value has another shape (another runtime's): a difference naming the shapes.
sed 's/"file":"_Sqrt_output_0.pb"/"file":"coef.pb"/' "$work/dump/index.json" >"$work/index.json" && cp "$work/index.json" "$work/dump/index.json"
expect 3 "DIFF /Sqrt_output_0 from node '/Sqrt' \(Sqrt\).*shape \(3, 10\) vs expected \(10, 1\)" "" -- compare "$linreg" "$work/dump" --per-tensor
mkdir -p "$work/empty"
expect 2 "" "^refeval: error: .*empty: not a dump folder \(no index.json\)" -- compare "$linreg" "$work/empty"
echo '{"not": "a list"}' >"$work/empty/index.json"
expect 2 "" "^refeval: error: .*index.json: expected a JSON array" -- compare "$linreg" "$work/empty"
expect 2 "" "^refeval: error: .*nothing.onnx" -- compare "$linreg" "$work/nothing.onnx"

finish
