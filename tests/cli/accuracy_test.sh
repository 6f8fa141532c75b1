#!/usr/bin/env bash
# `refeval accuracy` on hand-built models (written here with Debian's python3-onnx):
# 1. a float32 network with a planted ill-conditioned `(t + 1e4) - 1e4` in the middle: the Add of
#    1e4 ranks first by contribution, far ahead of every other node, and is named in the summary;
#    the Sub is exact in float32 (Sterbenz), so it adds no error of its own (its input's rounding
#    is the Add's); the output's accumulated error equals an independent numpy float64
#    computation of the same graph against refeval's own float32 output;
# 2. a float16 round trip (Cast to float16 and back, a Constant given as value_float): the oracle
#    retargets the Casts to double, so the output error is exactly float16's rounding (at most
#    half an ulp of float16 relative);
# 3. usage errors.
# Usage: accuracy_test.sh REFEVAL
set -u
refeval=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
py=/usr/bin/python3

cd "$work" || exit 1
$py - <<'PY'
import numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
rng = np.random.default_rng(1)
W1 = rng.standard_normal((16, 8)).astype(np.float32)
b1 = rng.standard_normal(8).astype(np.float32)
W2 = (0.05 * rng.standard_normal((8, 4))).astype(np.float32)
x = rng.random((4, 16), dtype=np.float32)
inits = [nh.from_array(W1, "W1"), nh.from_array(b1, "b1"), nh.from_array(W2, "W2"),
         nh.from_array(np.array(1e4, np.float32), "big")]
nodes = [h.make_node("MatMul", ["X", "W1"], ["m1"], name="mm1"),
         h.make_node("Add", ["m1", "b1"], ["a1"], name="bias"),
         h.make_node("Tanh", ["a1"], ["t1"], name="tanh"),
         h.make_node("Add", ["t1", "big"], ["p"], name="add_big"),
         h.make_node("Sub", ["p", "big"], ["q"], name="sub_big"),
         h.make_node("MatMul", ["q", "W2"], ["m2"], name="mm2"),
         h.make_node("Sigmoid", ["m2"], ["Y"], name="sig")]
g = h.make_graph(nodes, "planted", [h.make_tensor_value_info("X", T.FLOAT, [4, 16])],
                 [h.make_tensor_value_info("Y", T.FLOAT, [4, 4])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, "planted.onnx"); np.save("x.npy", x)
# The same graph in numpy float64 on the same float32 input and weights: the oracle.
X = x.astype(np.float64)
q = (np.tanh(X @ W1.astype(np.float64) + b1.astype(np.float64)) + 1e4) - 1e4
np.save("oracle.npy", 1 / (1 + np.exp(-(q @ W2.astype(np.float64)))))

nodes = [h.make_node("Constant", [], ["c"], name="const", value_float=0.1),
         h.make_node("Mul", ["X", "c"], ["s"], name="scale"),
         h.make_node("Cast", ["s"], ["s16"], name="to16", to=T.FLOAT16),
         h.make_node("Cast", ["s16"], ["Y"], name="to32", to=T.FLOAT)]
g = h.make_graph(nodes, "half", [h.make_tensor_value_info("X", T.FLOAT, [4, 16])],
                 [h.make_tensor_value_info("Y", T.FLOAT, [4, 16])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, "half.onnx")

nodes = [h.make_node("DynamicQuantizeLinear", ["X"], ["q", "s", "z"], name="dql")]
g = h.make_graph(nodes, "nodouble", [h.make_tensor_value_info("X", T.FLOAT, [4])],
                 [h.make_tensor_value_info("q", T.UINT8, [4])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, "nodouble.onnx")
PY

# 1. The planted ill-conditioned step.
expect 0 "^worst: add_big \(Add\), contribution rms" "" -- accuracy planted.onnx --input X=x.npy --json acc.json
check "the table starts with add_big" bash -c "grep -A1 '^node / output' '$work/out' | tail -1 | grep -q '^add_big  *Add '"
expect 0 "" "" -- run planted.onnx --input X=x.npy --save-outputs y32 -v 0
check "planted: JSON ranking and output error against numpy float64" $py - <<'PY'
import json, sys, numpy as np, onnx
from onnx import numpy_helper as nh
r = json.load(open("acc.json"))
bad = []
names = [n["node"] for n in r["nodes"]]
if names[0] != "add_big": bad.append(f"ranking {names}")
# Every node but the exact Sub adds some rounding of its own.
if r["contributions_computed"] != 6: bad.append(f"contributions {r['contributions_computed']}")
top = r["nodes"][0]["contribution"]["rms"]
rest = max(n["contribution"]["rms"] for n in r["nodes"][1:] if n["contribution"])
if not top > 100 * rest: bad.append(f"top contribution {top} not far above the rest {rest}")
# Alone in float32, the Add makes (nearly) all of the output's error.
if not 0.9 < top / r["outputs"][0]["accumulated"]["rms"] < 1.1: bad.append(f"add_big contribution {top} vs output error")
y32 = nh.to_array(onnx.load_tensor("y32/output_0.pb")).astype(np.float64)
o = np.load("oracle.npy")
d = np.abs(y32 - o)
want = {"max_abs": d.max(), "rms": np.sqrt((d * d).mean()),
        "sqnr_db": 10 * np.log10((o * o).sum() / (d * d).sum()), "max_rel": (d / np.abs(o)).max()}
got = r["outputs"][0]["accumulated"]
for k, v in want.items():
    if not abs(got[k] - v) <= 1e-6 * abs(v): bad.append(f"output {k}: refeval {got[k]}, numpy {v}")
# The error is the planted one: 1e4's float32 spacing (2^-10) carried through W2 and the sigmoid.
if not 1e-6 < want["rms"] < 1e-4: bad.append(f"output rms {want['rms']} not the planted magnitude")
# The Sub is exact in float32 (Sterbenz): no local error, no contribution; the Add's local error
# is the rounding of 1e4 + t, at most half of float32's spacing there (2^-10).
sub = next(n for n in r["nodes"] if n["node"] == "sub_big")
if sub["outputs"][0]["local"]["max_abs"] != 0 or sub["contribution"] is not None: bad.append(f"sub {sub}")
add = r["nodes"][0]["outputs"][0]["local"]
if not 0 < add["max_abs"] <= 2 ** -11 or not add["ulps"] <= 0.5: bad.append(f"add local {add}")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY
expect 0 "contributions computed for 0 node" "" -- accuracy planted.onnx --input X=x.npy --no-local --json nl.json
check "--no-local: no local error, no contribution, the same output error" $py - <<'PY'
import json, sys
a, b = json.load(open("acc.json")), json.load(open("nl.json"))
ok = all(n["contribution"] is None and all(o["local"] is None for o in n["outputs"]) for n in b["nodes"])
ok = ok and a["outputs"] == b["outputs"] and len(b["nodes"]) == 7
sys.exit(0 if ok else 1)
PY

# 2. float16 round trip: the oracle keeps everything in double.
expect 0 "^worst: to16 \(Cast\)" "" -- accuracy half.onnx --seed 3 --json half.json
check "half: output error is float16 rounding" $py - <<'PY'
import json, sys
r = json.load(open("half.json"))
e = r["outputs"][0]["accumulated"]
ok = 0 < e["max_rel"] <= 2 ** -11 * 1.0001 and e["ulps"] > 0
cast = next(n for n in r["nodes"] if n["node"] == "to16")["outputs"][0]
ok = ok and cast["dtype"] == "float16" and 0 < cast["accumulated"]["ulps"] <= 0.5 + 1e-9
print("" if ok else f"half: {e} {cast}"); sys.exit(0 if ok else 1)
PY

# 3. An operator without a double path is named and marked; the oracle runs its model-precision
#    kernel on the rounded inputs, so its local error is zero.
expect 0 "^no double path \(run in the model's precision inside the oracle, marked \*\): dql \(DynamicQuantizeLinear\)" "" -- \
  accuracy nodouble.onnx --json nd.json
check "fallback: marked in the table and the JSON" bash -c "grep -q '^dql \*' '$work/out' && grep -q '\"fallback\": true' '$work/nd.json'"

# 4. Usage errors.
expect 2 "" "refeval: error: .*oracle" -- accuracy planted.onnx --oracle float16
expect 2 "" "refeval: error: " -- accuracy missing.onnx

finish
