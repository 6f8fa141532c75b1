#!/usr/bin/env bash
# `refeval reduce` on a torch export of GPT-2 (tests/data/optimize/hf_gpt2_opset17, 516 nodes):
# one weight perturbed and checked against the original's dump, a NaN planted in layer 1, and a
# --check command that fails while one node is present. Each result has at most 5 nodes, holds the
# guilty node, still fails its predicate and passes `refeval test` on its own data.
# Needs Debian's python3-onnx (/usr/bin/python3) to write the modified models.
# Usage: reduce_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$1
src=$2
data=$src/tests/data/optimize/hf_gpt2_opset17
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

# small_ok DIR NODE: DIR/model.onnx has 1 to 5 nodes, NODE among them, and passes `refeval test DIR`.
small_ok() {
  local dir=$1 node=$2 n
  n=$("$refeval" run "$dir/model.onnx" --inputs "$dir/test_data_set_0" --no-timing | head -1 | grep -oE '[0-9]+ nodes' | grep -oE '[0-9]+')
  check "$dir has 1 to 5 nodes (has $n)" test "${n:-0}" -ge 1 -a "${n:-0}" -le 5
  check "$dir holds $node" bash -c "'$refeval' show '$dir/model.onnx' --format text | grep -q '# $node\$'"
  expect 0 "^1 passed, 0 failed" "" -- test "$dir"
}

# 1. One weight of layer 1's MLP perturbed; the original's dump is the reference.
expect 0 "" "" -- run "$data/model.onnx" --inputs "$data/test_data_set_0" --dump "$work/dump" -v 0
# Layer 0's MLP weight is also moved by 1e-6, below the comparison's tolerance: every later value
# of the perturbed run then differs slightly from the dump, and the reduced model must be fed the
# dump's values (what the reference computed), not its own run's.
/usr/bin/python3 "$src/benchmarks/gpt2/perturb_weight.py" "$data/model.onnx" "$work/slightly.onnx" \
  --consumer /h.0/mlp/c_fc/Gemm --delta 1e-6 >/dev/null
/usr/bin/python3 "$src/benchmarks/gpt2/perturb_weight.py" "$work/slightly.onnx" "$work/perturbed.onnx" \
  --consumer /h.1/mlp/c_fc/Gemm --delta 0.5 >/dev/null
expect 0 "^result: 516 -> 1 node .*'/h.1/mlp/c_fc/Gemm_output_0' from node '/h.1/mlp/c_fc/Gemm' \(Gemm\) differs" "" -- \
  reduce "$work/perturbed.onnx" -o "$work/cmp/model.onnx" --compare-with "$work/dump"
check "the differing initializer is reported" grep -q "^initializer differs from the dump: 'h.1.mlp.c_fc.weight'" "$work/out"
check "a step line per predicate run" grep -qE "^step +1  outputs +258 nodes  passes" "$work/out"
small_ok "$work/cmp" /h.1/mlp/c_fc/Gemm
# The frozen inputs are the original run's values (before the perturbed weight, the runs agree).
check "the reduced model's inputs equal the original run's values" /usr/bin/python3 "$src/tests/cli/frozen_from_dump.py" "$work/cmp" "$work/dump"
# Still failing: the small model differs from the dump on the dump's own values.
expect 3 "^result: different" "" -- compare "$work/cmp/model.onnx" "$work/dump"
expect 0 "^result: 1 -> 1 node" "" -- reduce "$work/cmp/model.onnx" -o "$work/cmp2" --compare-with "$work/dump"

# 2. A NaN planted in layer 1: Sqrt(-1) * 0 + x after the attention's projection.
/usr/bin/python3 - "$data/model.onnx" "$work/nan.onnx" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper
m = onnx.load(sys.argv[1])
g = m.graph
target = "/h.1/attn/c_proj/Gemm_output_0"
at = next(i for i, n in enumerate(g.node) if target in n.output)
for n in g.node:
    for k, name in enumerate(n.input):
        if name == target:
            n.input[k] = "planted_sum"
g.initializer.extend([numpy_helper.from_array(np.array([-1.0], np.float32), "planted_minus_one"),
                      numpy_helper.from_array(np.array([0.0], np.float32), "planted_zero")])
nodes = [helper.make_node("Sqrt", ["planted_minus_one"], ["planted_root"], name="planted_sqrt"),
         helper.make_node("Mul", ["planted_root", "planted_zero"], ["planted_zeroed"], name="planted_mul"),
         helper.make_node("Add", [target, "planted_zeroed"], ["planted_sum"], name="planted_add")]
for k, n in enumerate(nodes):
    g.node.insert(at + 1 + k, n)
onnx.save(m, sys.argv[2])
EOF
expect 3 "" "" -- run "$work/nan.onnx" --inputs "$data/test_data_set_0" --check-finite
expect 0 "^result: 519 -> 1 node .*new NaN in 'planted_root' from node 'planted_sqrt' \(Sqrt\)" "" -- \
  reduce "$work/nan.onnx" --inputs "$data/test_data_set_0" -o "$work/nan" --nan
small_ok "$work/nan" planted_sqrt
expect 3 "" "" -- run "$work/nan/model.onnx" --inputs "$work/nan/test_data_set_0" --check-finite
# Four input sets, all failing; --mode bisect and linear find the same node.
sets=()
for k in 0 1 2 3; do sets+=(--input-set "$data/test_data_set_$k"); done
expect 0 "^result: 519 -> 1 node" "" -- reduce "$work/nan.onnx" "${sets[@]}" -o "$work/nan4" --nan --mode bisect
check "four test_data_set folders" test -d "$work/nan4/test_data_set_3"
expect 0 "^1 passed, 0 failed" "" -- test "$work/nan4"
expect 0 "^kept: 'planted_sqrt' \(Sqrt\)" "" -- reduce "$work/nan4/model.onnx" --inputs "$work/nan4/test_data_set_0" -o "$work/nan5" --nan --mode linear

# 3. A --check command that fails while one node is present.
cmd="'$refeval' show {model} --format text | grep -q '# /h.1/mlp/c_fc/Gemm\$'; test \$? -ne 0"
expect 0 "^result: 516 -> 1 node .*still fails: exit 1" "" -- \
  reduce "$data/model.onnx" --inputs "$data/test_data_set_0" -o "$work/check" --check "$cmd"
small_ok "$work/check" /h.1/mlp/c_fc/Gemm
check "the --check result's inputs equal the original run's values" /usr/bin/python3 "$src/tests/cli/frozen_from_dump.py" "$work/check" "$work/dump"
check "the --check command still fails on the result" \
  bash -c "! bash -c \"${cmd//\{model\}/$work/check/model.onnx}\""

# 4. --error: a Reshape to an impossible shape planted in layer 0.
/usr/bin/python3 - "$data/model.onnx" "$work/err.onnx" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper
m = onnx.load(sys.argv[1])
g = m.graph
target = "/h.0/mlp/c_fc/Gemm_output_0"
at = next(i for i, n in enumerate(g.node) if target in n.output)
for n in g.node:
    for k, name in enumerate(n.input):
        if name == target:
            n.input[k] = "planted_reshaped"
g.initializer.append(numpy_helper.from_array(np.array([5, -1, 3], np.int64), "planted_shape"))
g.node.insert(at + 1, helper.make_node("Reshape", [target, "planted_shape"], ["planted_reshaped"], name="planted_reshape"))
onnx.save(m, sys.argv[2])
EOF
expect 0 "^kept: 'planted_reshape' \(Reshape\)" "" -- reduce "$work/err.onnx" --inputs "$data/test_data_set_0" -o "$work/reshape" --error "planted_reshape"
check "no expected outputs for a model refeval fails on" grep -q "no expected outputs: refeval fails on it" "$work/out"

# Errors: one line, non-zero.
expect 2 "" "give exactly one predicate" -- reduce "$data/model.onnx" -o "$work/x.onnx"
expect 2 "" "give exactly one predicate" -- reduce "$data/model.onnx" -o "$work/x.onnx" --nan --error x
expect 2 "" "--nan does not hold on the full model" -- reduce "$data/model.onnx" --inputs "$data/test_data_set_0" -o "$work/x.onnx" --nan
expect 2 "" "--error '\(': not a regular expression" -- reduce "$data/model.onnx" -o "$work/x.onnx" --error "("
expect 2 "" "needs a single input set" -- reduce "$work/nan.onnx" "${sets[@]}" -o "$work/x.onnx" --nan --freeze constants
expect 2 "" "--mode" -- reduce "$data/model.onnx" -o "$work/x.onnx" --nan --mode fast
expect 2 "" "--check 'true' does not hold on the full model \(exit 0\)" -- reduce "$data/model.onnx" -o "$work/x.onnx" --check "true"
expect 2 "" "^refeval: error: --check: the command is empty$" -- reduce "$data/model.onnx" -o "$work/x.onnx" --check " "
# a command the shell cannot find is the user's mistake, not a candidate on which the failure holds
# (the shell's own "not found" line comes first)
"$refeval" reduce "$data/model.onnx" -o "$work/x.onnx" --check "no_such_checker_7 {model}" >/dev/null 2>"$work/err"
status=$?
check "--check of a command not found: exit 2, one line naming it" bash -c "[[ $status == 2 ]] &&
  tail -1 '$work/err' | grep -qE \"^refeval: error: --check: 'no_such_checker_7 .*/model.onnx' exits 127 \\(command not found\\)$\""

finish
