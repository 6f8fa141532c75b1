#!/usr/bin/env bash
# Drives the refeval binary as a user would: exit codes and one-line errors for bad input
# (CLI.md: 0 ok, 1 evaluation error, 2 usage/model/input error, 3 check failed).
# Usage: cli_test.sh REFEVAL SHARED_DIR
set -u
refeval=$1
shared=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
golden=$shared/docs/verbose-golden
source "$(dirname "$0")/expect.sh"

head -c 300 "$golden/linreg.onnx" >"$work/truncated.onnx"
head -c 4096 /dev/urandom >"$work/random.onnx"
printf '\x08\x07' >"$work/nograph.onnx"  # ir_version 7 and nothing else

expect 0 "" "" -- run "$golden/linreg.onnx" --input "X=$golden/X.npy" --no-timing
expect 0 "" "" -- "$golden/linreg.onnx" --no-timing
expect 2 "" "^refeval: error: .*truncated.onnx" -- run "$work/truncated.onnx"
expect 2 "" "^refeval: error: .*random.onnx" -- run "$work/random.onnx"
expect 2 "" "^refeval: error: .*nograph.onnx: the model has no graph" -- run "$work/nograph.onnx"
expect 2 "" "^refeval: error: .*missing.onnx" -- run "$work/missing.onnx"
expect 2 "" "^refeval: error: .*input 'X': expected tensor\(float\)" -- run "$golden/linreg.onnx" --input "X=$shared/onnx-backend-tests/node/test_add_uint8/test_data_set_0/input_0.pb"
expect 2 "" "^refeval: error: .*no input named 'Nope'" -- run "$golden/linreg.onnx" --input "Nope=$golden/X.npy"
expect 2 "" "^refeval: error: .*--bogus" -- run "$golden/linreg.onnx" --bogus
expect 2 "" "^refeval: error: .*--fill X: 'abc' is not a number" -- run "$golden/linreg.onnx" --fill X=abc
expect 0 "" "" -- ops
# ops --json against ONNX's own schemas (the installed onnx package knows opsets up to its own,
# 17 for Debian's): each standard operator's since-versions up to that opset are ONNX's, an
# operator ONNX does not know starts after it, and the operators every model uses are listed.
# ONNX Runtime registers two contrib norms in the ONNX domain at version 1; refeval runs them too.
"$refeval" ops --json --domain ai.onnx >"$work/ops.json"
check "ops --json: ai.onnx operators and since-versions are ONNX's" /usr/bin/python3 - "$work/ops.json" <<'PY'
import json, sys
from onnx import defs
known, history = defs.onnx_opset_version(), {"LayerNormalization": {1}, "SimplifiedLayerNormalization": {1}}
for s in defs.get_all_schemas_with_history():
    if s.domain == "":
        history.setdefault(s.name, set()).add(s.since_version)
rows = json.load(open(sys.argv[1]))
bad = [r["op_type"] for r in rows
       if r["domain"] != "ai.onnx" or not {v for v in r["since_versions"] if v <= known} <= history.get(r["op_type"], set())
       or (r["op_type"] not in history and min(r["since_versions"], default=0) <= known)]
missing = {"Add", "MatMul", "Softmax", "Reshape", "Gather"} - {r["op_type"] for r in rows}
if bad or missing or any("float" not in r["types"] for r in rows if r["op_type"] in ("Add", "MatMul")):
    sys.exit(f"not ONNX's: {bad[:10]}; missing: {sorted(missing)}")
PY
expect 2 "" "^refeval: error: cannot load custom-op library" -- --custom-ops "$work/nothing.so" ops

# Resource limits: a tensor beyond --max-memory is refused (exit 2), never an allocation crash.
expect 2 "" "^refeval: error: .*exceeds the memory cap of 16 bytes" -- --max-memory 16 run "$golden/linreg.onnx"
expect 2 "" "^refeval: error: --max-memory: 'lots' is not a size" -- --max-memory lots ops
expect 2 "" "^refeval: error: --max-memory: '99999999999999999999T' does not fit in 64 bits" -- --max-memory 99999999999999999999T ops
expect 2 "" "^refeval: error: .*ConstantOfShape.*(64 bits|memory cap)" -- run "$shared/onnx-backend-tests/node/test_constantofshape_float_ones/model.onnx" --fill x=1000000000 --max-memory 1G
# Scratch buffers sized by input data are capped like tensors (found by fuzzing: a BlackmanWindow
# of 2^31 points filled gigabytes before its output tensor was checked).
expect 2 "" "^refeval: error: node .*\(BlackmanWindow\): the window: 2000000000 elements \(16000000000 bytes\) exceed the memory cap" -- --max-memory 1G run "$shared/onnx-backend-tests/node/test_blackmanwindow/model.onnx" --fill x=2000000000
# A Loop whose trip count (here 2^60, as a corrupted input might hold) exceeds the iteration limit
# is refused at once instead of hanging; the limit is configurable.
loop11="$shared/onnx-backend-tests/node/test_loop11/model.onnx"
expect 2 "" "^refeval: error: node .*\(Loop\): the trip count M = 1152921504606846976 exceeds the limit of 100000000 iterations" -- run "$loop11" --fill trip_count=1152921504606846976 --fill cond=1
expect 2 "" "^refeval: error: .*M = 5 exceeds the limit of 3 iterations" -- --max-loop-iterations 3 run "$loop11" --fill trip_count=5 --fill cond=1
expect 0 "" "" -- --max-loop-iterations 5 run "$loop11" --fill trip_count=5 --fill cond=1
check "a Loop at its iteration limit runs all 5 iterations" grep -q "res_scan: float32:(5, 1)" "$work/out"

# A corrupt name with a carriage return (found by mutating linreg.onnx) still gives one line.
expect 2 "" "input '/Add_output.x0d0' is not a graph input" -- run "$(dirname "$0")/../data/control_char_name.onnx"

# An unknown operator: the linreg model with Sqrt renamed to an op that does not exist.
sed 's/Sqrt/Sqxt/g' "$golden/linreg.onnx" >"$work/unknown_op.onnx"
expect 2 "" "^refeval: error: .*\(Sqxt\): unknown operator" -- run "$work/unknown_op.onnx"

# The golden trace, through the CLI.
for level in 2 3 4; do
  "$refeval" run "$golden/linreg.onnx" --input "X=$golden/X.npy" --verbose $level >"$work/trace" 2>&1
  if cmp -s "$work/trace" "$golden/verbose_$level.txt"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: --verbose $level differs from the golden trace"; diff "$work/trace" "$golden/verbose_$level.txt" | head -5; fi
done

finish
