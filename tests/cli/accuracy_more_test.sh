#!/usr/bin/env bash
# `refeval accuracy` on the models tests/cli/accuracy_models.py builds, each against numpy:
# 1. float16 variance, E[x^2] - E[x]^2 beside E[(x - m)^2] on inputs of mean 100: the mean and the
#    naive branch's E[x^2], E[x]^2 and x^2 rank first by contribution, never a node of the stable
#    branch; the naive output's error is catastrophic, the stable one's a few float16 ulps;
# 2. GPT-2 (tests/data/optimize/hf_gpt2_opset17, float32): the oracle equals torch's float64 run
#    of the same model within 1e-10 relative (tests/data/accuracy); the accumulated output error
#    equals the plain `run` of the model against the `run` of the oracle model --save-oracle writes
#    (`refeval compare` refuses float32 against float64 element types, so numpy compares them);
# 3. --reference: the QDQ CNN against its float original: every matched tensor's SQNR within
#    0.1 dB of numpy's qdq_loss_debug formula on numpy's own QDQ arithmetic; a float16 model
#    against its float32 original (feeds converted, names matched); a fused Gemm matched to the
#    Add it replaced through the optimizer's provenance;
# 4. the table as CSV and Markdown, --html.
# Usage: accuracy_more_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
py=/usr/bin/python3
$py "$src/tests/cli/accuracy_models.py" "$work" || exit 1
cd "$work" || exit 1

# 1. float16 variance.
expect 0 "^worst: (mean|mean_sq|mean_squared) \(" "" -- accuracy var16.onnx --input X=x16.npy --json var.json
check "variance: the mean and the naive branch rank first, the stable branch after them" $py - <<'PY'
import json, sys
r = json.load(open("var.json"))
names = [n["node"] for n in r["nodes"]]
first = set(names[:4])
bad = []
if first != {"mean", "mean_sq", "mean_squared", "sq"}: bad.append(f"first four {names[:4]}")
# the stable branch: contributions far below the naive branch's
stable = [n for n in r["nodes"] if n["node"] in ("centre", "dev_sq", "stable")]
naive_min = min(n["contribution"]["rms"] for n in r["nodes"][:3])
for n in stable:
    if n["contribution"] and not n["contribution"]["rms"] < naive_min / 100: bad.append(f"stable {n['node']} {n['contribution']}")
out = {o["name"]: o["accumulated"] for o in r["outputs"]}
# x ~ 100 + N(0, 1): the variance is ~1; float16's spacing at E[x^2] ~ 1e4 is 8
if not out["var_naive"]["max_abs"] > 1: bad.append(f"naive {out['var_naive']}")
if not out["var_stable"]["ulps"] <= 4: bad.append(f"stable {out['var_stable']}")
if any(o["dtype"] != "float16" for n in r["nodes"] for o in n["outputs"]): bad.append("an output not float16")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY
expect 0 "" "" -- run var16.onnx --input X=x16.npy --save-outputs v16 -v 0
check "variance: output errors equal numpy's float64 variance against refeval's float16 outputs" $py - <<'PY'
import json, sys, numpy as np, onnx
from onnx import numpy_helper as nh
r = json.load(open("var.json"))
x = np.load("x16.npy").astype(np.float64)
m = x.mean(axis=1, keepdims=True)
want = [(x * x).mean(axis=1, keepdims=True) - m * m, ((x - m) ** 2).mean(axis=1, keepdims=True)]
bad = []
for k, (o, w) in enumerate(zip(r["outputs"], want)):
    y = nh.to_array(onnx.load_tensor(f"v16/output_{k}.pb")).astype(np.float64)
    d = np.abs(y - w)
    for key, v in {"max_abs": d.max(), "rms": np.sqrt((d * d).mean())}.items():
        if not abs(o["accumulated"][key] - v) <= 1e-9 * max(abs(v), 1e-300) + 1e-12: bad.append(f"{o['name']} {key}: {o['accumulated'][key]} vs numpy {v}")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY

# 2. GPT-2: accumulated output error = run(model) against run(oracle model).
gpt2=$src/tests/data/optimize/hf_gpt2_opset17
expect 0 "^worst: " "" -- accuracy $gpt2/model.onnx --inputs $gpt2/test_data_set_0 --json g.json --save-oracle g64.onnx
expect 0 "" "" -- run $gpt2/model.onnx --inputs $gpt2/test_data_set_0 --save-outputs y32 -v 0
expect 0 "" "" -- run g64.onnx --inputs $gpt2/test_data_set_0 --save-outputs y64 -v 0
check "gpt2: the accumulated output error is the float32 run against the oracle run" $py - <<'PY'
import json, sys, numpy as np, onnx
from onnx import numpy_helper as nh
r = json.load(open("g.json"))
a = nh.to_array(onnx.load_tensor("y32/output_0.pb"))
o = nh.to_array(onnx.load_tensor("y64/output_0.pb"))
bad = []
if a.dtype != np.float32 or o.dtype != np.float64: bad.append(f"dtypes {a.dtype} {o.dtype}")
d = np.abs(a.astype(np.float64) - o)
want = {"max_abs": d.max(), "rms": np.sqrt((d * d).mean()), "max_rel": (d / np.abs(o)).max(),
        "sqnr_db": 20 * np.log10(np.linalg.norm(o) / np.linalg.norm(d))}
got = r["outputs"][0]["accumulated"]
for k, v in want.items():
    if not abs(got[k] - v) <= 1e-9 * abs(v): bad.append(f"{k}: accuracy {got[k]}, runs {v}")
if not 0 < want["max_abs"] < 1e-4: bad.append(f"max_abs {want['max_abs']} not float32 rounding")
if r["contributions_computed"] != 10: bad.append(f"contributions {r['contributions_computed']}")
rms = [n["contribution"]["rms"] for n in r["nodes"][:10]]
if rms != sorted(rms, reverse=True): bad.append(f"not sorted by contribution: {rms}")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY
# The oracle itself against torch's float64 run of the same model (tests/data/accuracy/make_float64.py,
# the file's float32 constants): 1e-10 relative, on set 0 and on the padded batch of set 2.
expect 0 "" "" -- accuracy $gpt2/model.onnx --inputs $gpt2/test_data_set_2 --no-local --save-oracle g64b.onnx
expect 0 "" "" -- run g64b.onnx --inputs $gpt2/test_data_set_2 --save-outputs y64b -v 0
check "gpt2: the float64 oracle is torch's model in double within 1e-10 relative" $py - "$src/tests/data/accuracy" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper as nh
bad = []
for out, k in (("y64", 0), ("y64b", 2)):
    o = nh.to_array(onnx.load_tensor(f"{out}/output_0.pb"))
    t = np.load(f"{sys.argv[1]}/gpt2_float64_{k}.npy")
    rel = (np.abs(o - t) / np.abs(t)).max()
    print(f"set {k}: max relative difference from torch's float64 logits {rel:.3g}")
    if o.dtype != np.float64 or o.shape != t.shape or not rel <= 1e-10: bad.append(f"set {k}: {o.dtype} {o.shape} rel {rel}")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY

# 3. --reference.
expect 0 "^12 tensor\(s\) matched, 0 floating value\(s\) without a counterpart" "" -- \
  accuracy cnn_qdq.onnx --reference cnn.onnx --input X=xc.npy --json qdq.json
check "qdq: per-tensor SQNR within 0.1 dB of numpy's qdq_loss_debug computation" $py - <<'PY'
import json, sys
r = json.load(open("qdq.json"))
want = json.load(open("want_sqnr.json"))
got = {t["name"]: t for t in r["tensors"]}
bad = []
if set(got) != set(want): bad.append(f"matched {sorted(got)} want {sorted(want)}")
for name, (base, sqnr) in want.items():
    t = got.get(name)
    if t is None: continue
    if t["reference"] != base: bad.append(f"{name} matched to {t['reference']}")
    if not abs(t["sqnr_db"] - sqnr) <= 0.1: bad.append(f"{name}: {t['sqnr_db']} dB, numpy {sqnr} dB")
    if t["match"] != ("qdq" if name.endswith("_DequantizeLinear_Output") else "name"): bad.append(f"{name} match {t['match']}")
if r["oracle"] != "reference" or r["outputs"][0]["name"] != "Y": bad.append("header")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY
expect 0 "^worst: conv2_out_DequantizeLinear_Output" "" -- accuracy cnn_qdq.onnx --reference cnn.onnx --input X=xc.npy
expect 0 "^8 tensor\(s\) matched" "" -- accuracy cnn16.onnx --reference cnn.onnx --input X=xc16.npy --json c16.json
check "float16 against float32: errors of float16 rounding, ulps in float16" $py - <<'PY'
import json, sys
r = json.load(open("c16.json"))
ok = all(t["dtype"] == "float16" and 0 < t["ulps"] < 8 and t["sqnr_db"] > 50 for t in r["tensors"])
print("" if ok else r["tensors"]); sys.exit(0 if ok else 1)
PY
expect 0 "gemm_out +u +fused_from " "" -- accuracy fused.onnx --reference reference.onnx --input A=a.npy
expect 2 "" "error: .*--reference" -- accuracy cnn.onnx --reference cnn.onnx --oracle float64

# 4. Formats.
expect 0 "^node / output,op,contrib," "" -- accuracy cnn16.onnx --input X=xc16.npy --format csv
check "csv: one line per node output and the header" bash -c "[[ \$(wc -l <'$work/out') -eq 5 ]]"
expect 0 "^\| node / output \| op \| contrib \|" "" -- accuracy cnn16.onnx --input X=xc16.npy --format md
check "md: the alignment row" grep -q '^| --- | --- | ---: |' "$work/out"
expect 0 "" "" -- accuracy cnn_qdq.onnx --reference cnn.onnx --input X=xc.npy --html qdq.html
check "html: a self-contained page with the chart and the table" bash -c \
  "grep -q '<svg' qdq.html && grep -q '<td>conv2_out_DequantizeLinear_Output</td>' qdq.html && ! grep -qE '(src|href)=|@import|url\(' qdq.html"
finish
