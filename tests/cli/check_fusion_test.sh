#!/usr/bin/env bash
# `refeval check-fusion` as a user runs it (CLI.md exit codes: 0 equivalent, 3 not, 2 usage or
# model error): wrong fusions are caught, right ones pass, in both forms, and the README's
# example with the plugin works.
# Usage: check_fusion_test.sh REFEVAL MAKE_TEST_MODELS EXAMPLE_PLUGIN EXAMPLE_DIR
set -u
refeval=$1
make_models=$2
plugin=$3
example=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$make_models" "$work" || exit 1
source "$(dirname "$0")/expect.sh"

m=$work
# Model form: wrong fusions exit 3 and name the first failing input set.
expect 3 "NOT equivalent: first failing input set 'random 1', output 'Y'" "" -- check-fusion --fused $m/gelu_tanh.onnx --unfused $m/gelu_erf_unfused.onnx
expect 3 "NOT equivalent: first failing input set 'tiny'" "" -- check-fusion --fused $m/layer_norm.onnx --unfused $m/layer_norm_eps_outside_sqrt.onnx
expect 3 "NOT equivalent: first failing input set 'given'" "" -- check-fusion --fused $m/attention.onnx --unfused $m/attention_mask_off_by_one.onnx
# ... right ones exit 0.
expect 0 "equivalent: 7 input sets x 1 outputs" "" -- check-fusion --fused $m/gelu_erf.onnx --unfused $m/gelu_erf_unfused.onnx
expect 0 "equivalent" "" -- check-fusion --fused $m/layer_norm.onnx --unfused $m/layer_norm_unfused.onnx
expect 0 "equivalent" "" -- check-fusion --fused $m/attention.onnx --unfused $m/attention_unfused.onnx
# Looser tolerances let the tanh approximation through; without edge cases only the given set runs.
expect 0 "equivalent" "" -- check-fusion --fused $m/gelu_tanh.onnx --unfused $m/gelu_erf_unfused.onnx --atol 1e-3 --rtol 1
expect 0 "equivalent: 1 input sets" "" -- check-fusion --fused $m/layer_norm.onnx --unfused $m/layer_norm_eps_outside_sqrt.onnx --random-sets 0 --no-edge-cases

# Node form: the built-in kernel against the built-in decomposition, by name and by op type.
expect 0 "unfused: built-in decomposition" "" -- check-fusion $m/layer_norm.onnx --node ln
expect 0 "fused:   Gelu kernel \(builtin\)" "" -- check-fusion $m/gelu_tanh.onnx --op Gelu
expect 0 "equivalent" "" -- check-fusion $m/gelu_erf.onnx --node '#0' --seed 7 --repeat 2

# JSON.
expect 3 "" "" -- check-fusion --fused $m/layer_norm.onnx --unfused $m/layer_norm_eps_outside_sqrt.onnx --json $work/r.json
grep -q '"first_failing_set": "tiny"' $work/r.json && grep -q '"equivalent": false' $work/r.json || { failed=$((failed + 1)); echo "FAIL: JSON report"; cat $work/r.json; }

# The README example: the plugin's kernel against the model-local function, and the two models.
expect 0 "unfused: model-local function" "" -- --custom-ops "$plugin" check-fusion "$example/fused.onnx" --node op:MyFusedGelu
expect 0 "equivalent: 7 input sets x 2 outputs" "" -- --custom-ops "$plugin" check-fusion --fused "$example/fused.onnx" --unfused "$example/unfused.onnx"

# The float64 oracle: variance as E[(x - m)^2] (fused) against E[x^2] - E[x]^2 (unfused) on inputs
# of mean 1000, where float32's E[x^2] loses the variance: the two differ far beyond the tolerance,
# but the fused side is the accurate one (the unfused side's float64 run says so), so it passes;
# judged by the difference alone (--no-oracle) it fails, and with the roles swapped it fails.
/usr/bin/python3 - "$work" <<'PY' || exit 1
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T
io = ([h.make_tensor_value_info("X", T.FLOAT, [4, 64])], [h.make_tensor_value_info("V", T.FLOAT, [4, 1])])
def save(nodes, name):
    m = h.make_model(h.make_graph(nodes, "var", *io), opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
    onnx.save(m, f"{sys.argv[1]}/{name}")
save([h.make_node("ReduceMean", ["X"], ["m"], axes=[1]), h.make_node("Sub", ["X", "m"], ["d"]),
      h.make_node("Mul", ["d", "d"], ["d2"]), h.make_node("ReduceMean", ["d2"], ["V"], axes=[1])], "var_stable.onnx")
save([h.make_node("ReduceMean", ["X"], ["m"], axes=[1]), h.make_node("Mul", ["X", "X"], ["x2"]),
      h.make_node("ReduceMean", ["x2"], ["ex2"], axes=[1]), h.make_node("Mul", ["m", "m"], ["m2"]),
      h.make_node("Sub", ["ex2", "m2"], ["V"])], "var_naive.onnx")
np.save(f"{sys.argv[1]}/x1000.npy", (1000 + np.random.default_rng(3).standard_normal((4, 64))).astype(np.float32))
PY
expect 0 "^  given +V .* ok: [0-9]+ elements differ, the fused side is as accurate" "" -- \
  check-fusion --fused $m/var_stable.onnx --unfused $m/var_naive.onnx --input X=$m/x1000.npy --json $work/v.json
check "oracle: the fused side's error is far below the unfused side's, both in the JSON" /usr/bin/python3 - "$work/v.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["checks"][0]["sets"][0]["outputs"][0]
ok = not o["equal"] and o["passes"] and o["oracle"]["fused_as_accurate"] and o["oracle"]["fused"]["rms"] * 1000 < o["oracle"]["unfused"]["rms"]
print("" if ok else o); sys.exit(0 if ok else 1)
PY
expect 3 "NOT equivalent: first failing input set 'given', output 'V'" "" -- \
  check-fusion --fused $m/var_stable.onnx --unfused $m/var_naive.onnx --input X=$m/x1000.npy --no-oracle
expect 3 "NOT equivalent: first failing input set 'given', output 'V'" "" -- \
  check-fusion --fused $m/var_naive.onnx --unfused $m/var_stable.onnx --input X=$m/x1000.npy

# Usage and model errors exit 2 with one line.
expect 2 "" "no kernel is registered for example.fused:MyFusedGelu at opset 1; load one with --custom-ops" -- check-fusion "$example/fused.onnx" --node op:MyFusedGelu
expect 2 "" "node 'attention' \(Attention\): nothing to check against" -- check-fusion $m/attention.onnx --op Attention
expect 2 "" "give either MODEL with --node or --op, or --fused" -- check-fusion
expect 2 "" "give either MODEL" -- check-fusion $m/gelu_erf.onnx --node '#0' --fused $m/gelu_erf.onnx
expect 2 "" "the model form needs both --fused and --unfused" -- check-fusion --fused $m/gelu_erf.onnx
expect 2 "" "give exactly one of --node ADDR and --op" -- check-fusion $m/gelu_erf.onnx
expect 2 "" "no node matches 'nope'" -- check-fusion $m/gelu_erf.onnx --node nope
expect 2 "" "missing.onnx" -- check-fusion --fused $m/missing.onnx --unfused $m/gelu_erf.onnx

finish
