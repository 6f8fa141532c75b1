#!/usr/bin/env bash
# `refeval show --format html` without a browser: the data the page's script draws, read back from
# the page (show_page.py), on a 2-layer Llama-style decoder whose node names carry their scopes.
# Each scope group's notes against what refeval did not compute for the page: its time from the
# profile's trace events, its live bytes from the liveness oracle (tests/data/memory/liveness.py),
# its worst local error from the accuracy report, its removed, added and changed nodes from the two
# models' node lists; the repeated layers; every attribute type as the panel writes it; If, Loop and
# GRAPHS bodies each in a viewer of their own; and the accuracy overlay's refusals.
# Usage: show_html_data_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
py=/usr/bin/python3
export PYTHONPATH=$(dirname "$(realpath "$0")")  # show_page.py
decoder=$src/tests/data/ort/decoders_torch/b1

# Time: a group's share and milliseconds are its nodes' sums over the profiled runs (the warm-up
# left out), its "max" the costliest of them.
"$refeval" -q profile $decoder/model.onnx --fill attention_mask=1 --repeat 3 -o $work/time.json >/dev/null
expect 0 "" "" -- show $decoder/model.onnx --format html --profile $work/time.json -o $work/time.html
check "time: each group's share, milliseconds and costliest node are the trace's" $py - $work/time.html $work/time.json <<'PY'
import json, sys
import show_page
(side,) = show_page.sides(sys.argv[1])
g, events = side["graph"], json.load(open(sys.argv[2]))
start = sorted(e["ts"] for e in events if e["name"] == "model_run")[1]  # run 0 is the warm-up
ms = {}
for e in events:
    if e.get("cat") == "Node" and e["ts"] >= start:
        node = e["name"][: -len("_kernel_time")]
        ms[node] = ms.get(node, 0) + e["dur"] / 1000
total = sum(ms.values())
groups = 0
for k, path, nodes in show_page.scoped_groups(g):
    assert all(g["nn"][i].startswith("/" + path + "/") for i in nodes), path
    timed = [ms[g["nn"][i]] for i in nodes if g["nn"][i] in ms]
    if not timed:
        continue
    share, total_ms = g["gnote"][str(k)][0].split("% ")
    assert abs(float(share) - 100 * sum(timed) / total) <= 0.05 + 1e-9, (path, share, 100 * sum(timed) / total)
    assert abs(float(total_ms.removesuffix(" ms")) - sum(timed)) <= 0.0005 + 1e-9, (path, total_ms, sum(timed))
    assert abs(float(g["gnote"][str(k)][1].split()[-2]) - max(timed)) <= 0.0005 + 1e-9, (path, g["gnote"][str(k)][1], max(timed))
    groups += 1
assert groups >= 20, groups
PY
check "time: the repeated layers are listed once" grep -q '<li>layers.0&ndash;1: 2 identical blocks</li>\|<li>layers.0–1: 2 identical blocks</li>' $work/time.html

# Memory: a group's "MiB live at most" is the oracle's highest live bytes among its nodes.
"$refeval" -q profile $decoder/model.onnx --fill attention_mask=1 --repeat 1 --memory -o $work/memory.json >/dev/null
$py $src/tests/data/memory/liveness.py $decoder/model.onnx $work/memory.json --run 1 --json $work/oracle.json --quiet >/dev/null
expect 0 "" "" -- show $decoder/model.onnx --format html --profile $work/memory.json --heat memory -o $work/memory.html
check "memory: each group's most live MiB and its node are the oracle's" $py - $work/memory.html $work/oracle.json <<'PY'
import json, sys
import show_page
(side,) = show_page.sides(sys.argv[1])
g, oracle = side["graph"], json.load(open(sys.argv[2]))
live = {t["node"]: t["live_bytes"] / 2**20 for t in oracle["timeline"]}
for k, path, nodes in show_page.scoped_groups(g):
    peak = max(live[g["nn"][i]] for i in nodes)
    most, at = g["gnote"][str(k)]
    assert abs(float(most.removesuffix(" MiB live at most")) - peak) <= 0.005 + 1e-9, (path, most, peak)
    at_node = next(g["nn"][i] for i in nodes if g["nn"][i].endswith("/" + at.removeprefix("at ")))
    assert abs(live[at_node] - peak) <= 0.01 * peak, (path, at, peak)
PY

# Accuracy: a group's "worst local rms" is the largest local rms of its nodes' outputs in the report.
"$refeval" -q accuracy $decoder/model.onnx --inputs $decoder/test_data_set_0 --top-k 0 --json $work/acc.json >/dev/null
expect 0 "" "" -- show $decoder/model.onnx --format html --overlay $work/acc.json -o $work/acc.html
check "overlay: each group's worst local error and its node are the accuracy report's" $py - $work/acc.html $work/acc.json <<'PY'
import json, sys
import show_page
(side,) = show_page.sides(sys.argv[1])
g = side["graph"]
rms = {n["node"]: max(o["local"]["rms"] for o in n["outputs"]) for n in json.load(open(sys.argv[2]))["nodes"]}
checked = 0
for k, path, nodes in show_page.scoped_groups(g):
    errors = [rms[g["nn"][i]] for i in nodes if g["nn"][i] in rms]
    if not errors:
        continue
    worst, at = g["gnote"][str(k)]
    assert worst == f"worst local rms {max(errors):.3g}", (path, worst, max(errors))
    assert any(g["nn"][i].endswith("/" + at.removeprefix("at ")) and rms.get(g["nn"][i]) == max(errors) for i in nodes), (path, at)
    checked += 1
assert checked >= 20, checked
PY
echo "{" >$work/not_json.txt
echo '{"model": "x"}' >$work/no_nodes.json
expect 2 "" "error: --overlay: cannot read '.*missing.json'" -- show $decoder/model.onnx --format html --overlay $work/missing.json -o $work/x.html
expect 2 "" "error: --overlay: '.*not_json.txt' is not JSON" -- show $decoder/model.onnx --format html --overlay $work/not_json.txt -o $work/x.html
expect 2 "" "error: --overlay: '.*no_nodes.json' has no \"nodes\" list \(write it with refeval accuracy --json\)" -- \
  show $decoder/model.onnx --format html --overlay $work/no_nodes.json -o $work/x.html

# Diff: each group counts the nodes removed (before) or added (after) and changed, matched by name,
# as the two models' node lists give them. Without the optimizer's provenance in the metadata, a
# fused node replaces the removed nodes of its own scope.
"$refeval" -q optimize $decoder/model.onnx -o $work/opt.onnx >/dev/null
$py - $work/opt.onnx $work/bare.onnx <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
del m.metadata_props[:]
onnx.save(m, sys.argv[2])
PY
for after in opt bare; do
  expect 0 "" "" -- show $decoder/model.onnx --diff $work/$after.onnx --format html -o $work/diff_$after.html
done
check "diff: each group's removed, added and changed nodes are the two models'" $py - $work/diff_bare.html $decoder/model.onnx $work/bare.onnx <<'PY'
import sys, onnx
import show_page
left, right = show_page.sides(sys.argv[1])
before, after = (onnx.load(p).graph.node for p in sys.argv[2:])
key = lambda n: n.name or n.op_type + ":" + ",".join(n.output)
same = lambda a, b: (a.op_type, a.domain, list(a.input), list(a.output)) == (b.op_type, b.domain, list(b.input), list(b.output)) and \
    [(x.name, onnx.helper.get_attribute_value(x)) for x in a.attribute] == [(x.name, onnx.helper.get_attribute_value(x)) for x in b.attribute]
for side, nodes, others, word in ((left, before, after, "removed"), (right, after, before, "added")):
    g, other = side["graph"], {key(n): n for n in others}
    by_name = {key(n): n for n in nodes}
    for k, path, members in show_page.scoped_groups(g):
        names = [key(by_name[g["nn"][i]]) if g["nn"][i] else None for i in members]
        gone = sum(1 for n in names if n not in other)
        changed = sum(1 for n in names if n in other and not same(by_name[n], other[n]))
        note = g["gnote"].get(str(k))
        assert (note == [f"{gone} {word}, {changed} changed"]) if gone or changed else note is None, (word, path, note, gone, changed)
# A fused node of the bare model replaces the removed nodes directly in its scope.
removed = [n.name for n in before if n.name not in {m.name for m in after}]
g = right["graph"]
replacing = 0
for i, name in enumerate(g["nn"]):
    if str(i) in g["repl"]:
        scope = name[: name.rfind("/") + 1]
        assert sorted(g["repl"][str(i)]) == sorted(r for r in removed if r.startswith(scope) and "/" not in r[len(scope):]), name
        assert g["note"][str(i)] == f"added, replaces {len(g['repl'][str(i)])} nodes"
        replacing += 1
assert replacing >= 4, replacing
PY
check "diff: with the optimizer's provenance, the same counts" bash -c \
  "grep -o '[0-9]* nodes -> [0-9]* nodes: [0-9]* removed' $work/diff_opt.html | cmp -s - <(grep -o '[0-9]* nodes -> [0-9]* nodes: [0-9]* removed' $work/diff_bare.html)"

# Every attribute type as the panel writes it, and the bodies of an If nested in an If, a Loop and
# a GRAPHS attribute each in their own viewer, named by where they sit.
$py - $work/attrs.onnx <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
def body(name, op):
    return helper.make_graph([helper.make_node(op, ["x"], [name + "_out"], name=name + "_node")], name, [],
                             [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [2])])
inner = helper.make_node("If", ["c"], ["inner_out"], name="inner_if", then_branch=body("deep_then", "Relu"), else_branch=body("deep_else", "Neg"))
outer_then = helper.make_graph([inner], "then", [], [helper.make_tensor_value_info("inner_out", TensorProto.FLOAT, [2])])
loop_body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Relu", ["x"], ["scan_out"])], "loop_body",
                              [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [2])])
nodes = [
    helper.make_node("Constant", [], ["f"], name="float", value_float=1.5),
    helper.make_node("Constant", [], ["i"], name="int", value_int=7),
    helper.make_node("Constant", [], ["s"], name="string", value_string="text"),
    helper.make_node("Constant", [], ["fs"], name="floats", value_floats=[0.5, 2.0]),
    helper.make_node("Constant", [], ["is"], name="ints", value_ints=[3, 4]),
    helper.make_node("Constant", [], ["ss"], name="strings", value_strings=["a", "b"]),
    helper.make_node("Constant", [], ["t"], name="tensor", value=numpy_helper.from_array(np.zeros((2, 3), np.float16))),
    helper.make_node("If", ["c"], ["y"], name="outer_if", then_branch=outer_then, else_branch=body("else", "Abs")),
    helper.make_node("Loop", ["", "c"], ["loop_out"], name="loop", body=loop_body),
    helper.make_node("Custom", ["x"], ["z"], name="custom", domain="test.show", bodies=[body("first", "Sigmoid"), body("second", "Tanh")]),
]
graph = helper.make_graph(nodes, "attrs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")])
import onnx
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("test.show", 1)]), sys.argv[1])
PY
expect 0 "" "" -- show $work/attrs.onnx --format html -o $work/attrs.html
check "attributes: each type written as the panel shows it; bodies where they sit" $py - $work/attrs.html <<'PY'
import sys
import show_page
(side,) = show_page.sides(sys.argv[1])
g = side["graph"]
attrs = {g["nn"][int(i)]: a for i, a in g["na"].items()}
assert attrs == {
    "float": [["value_float", "1.5"]], "int": [["value_int", "7"]], "string": [["value_string", "text"]],
    "floats": [["value_floats", "[0.5, 2]"]], "ints": [["value_ints", "[3, 4]"]], "strings": [["value_strings", "[a, b]"]],
    "tensor": [["value", "tensor float16[2,3]"]],
    "outer_if": [["else_branch", "graph 'else' (1 nodes, below)"], ["then_branch", "graph 'then' (1 nodes, below)"]],
    "loop": [["body", "graph 'loop_body' (2 nodes, below)"]], "custom": [["bodies", "2 graphs"]]}, attrs
captions = [b["caption"] for b in side["bodies"]]
# onnx's make_node writes the attributes sorted by name: else_branch first
assert captions == ["outer_if/else_branch", "outer_if/then_branch", "outer_if/then_branch/inner_if/else_branch",
                    "outer_if/then_branch/inner_if/then_branch", "loop/body", "custom/bodies[0]", "custom/bodies[1]"], captions
assert [b["graph"]["nn"] for b in side["bodies"]][2:4] == [["deep_else_node"], ["deep_then_node"]]
PY
finish
