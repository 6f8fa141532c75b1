#!/usr/bin/env bash
# `refeval show` as a user runs it: ONNX text that Debian's ONNX parser reads back (plain names),
# quoted names, DOT that Graphviz renders, SVG, HTML holding every node, profile heat, diff, and
# collapsed views (--depth), errors. Usage: show_test.sh REFEVAL MAKE_TEST_MODELS PARSE_ONNX_TEXT SOURCE_DIR
set -u
refeval=$1
make_models=$2
parse=$3
src=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$make_models" "$work" || exit 1
source "$(dirname "$0")/expect.sh"
m=$work

# Text: plain names read back with libonnx 1.12's parser, node for node.
expect 0 "^attention \(float\[batch,seq,8\] x\) => \(float\[batch,seq,8\] y\)" "" -- show $m/gpt2_attention_unfused.onnx --full
"$refeval" show $m/gpt2_attention_unfused.onnx --full >$m/att.txt
check "text: Debian's parser reads it back, 27 nodes, 16 initializers" bash -c "'$parse' $m/att.txt | grep -q '^nodes 27 initializers 16 inputs 1 outputs 1 ops MatMul,Add,Split,'"
"$refeval" show $m/gpt2_attention_unfused.onnx >$m/att_short.txt
check "text: large initializers summarised as comments, still parses" bash -c "grep -q '# float\[8,24\] W: 192 values' $m/att_short.txt && '$parse' $m/att_short.txt | grep -q '^nodes 27 '"
expect 0 '"/MatMul_output_0" = MatMul\("/Sqrt_output_0", coef\)  # /MatMul' "" -- show $src/examples/linreg.onnx
expect 0 '\[ "?/MatMul"? \] "/MatMul_output_0" = MatMul|\["/MatMul"\] "/MatMul_output_0"' "" -- show $src/examples/linreg.onnx --labels

# DOT renders with Graphviz; SVG directly.
expect 0 "" "" -- show $m/gpt2_attention_unfused.onnx --format dot -o $m/att.dot
check "dot: Graphviz renders it" bash -c "dot -Tsvg $m/att.dot -o $m/att.svg && grep -q '<svg' $m/att.svg"
expect 0 "<svg" "" -- show $src/examples/linreg.onnx --format svg
check "dot: shapes from inference label the nodes" grep -q 'float\[batch,seq,24\]' $m/att.dot

# HTML: every node in the page, offline (no src/href to anything).
expect 0 "" "html written to" -- show $m/gpt2_attention_unfused.onnx --format html -o $m/att.html
# The page draws its SVG in the browser (show_html_test.sh, show_scale_test.sh): here its data.
check "html: the page's data holds the 27 nodes" python3 -c "import json, re, sys
d = json.loads(re.search(r'id=\"model-data\">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
sys.exit(len(d['sides'][0]['graph']['nn']) != 27)" $m/att.html
check "html: nothing from the network" bash -c "! grep -qE '(src|href)=\"(https?:)?//' $m/att.html"
# Profile heat (refeval's own profile of the model) and diff against its optimized form.
"$refeval" profile $m/gpt2_attention_unfused.onnx --repeat 2 -o $m/p.json >/dev/null
expect 0 "" "" -- show $m/gpt2_attention_unfused.onnx --format html --profile $m/p.json -o $m/heat.html
check "heat: costliest nodes listed" grep -q '<table class="counts" id="top">' $m/heat.html
# Memory heat: a profile recorded with --memory; one without it is refused in one line.
"$refeval" profile $m/gpt2_attention_unfused.onnx --repeat 1 --memory -o $m/pm.json >/dev/null
expect 0 "" "" -- show $m/gpt2_attention_unfused.onnx --format html --profile $m/pm.json --heat memory -o $m/mheat.html
check "memory heat: the nodes with the most memory alive, in MiB of the peak" \
  bash -c "grep -q 'Most memory alive' $m/mheat.html && grep -q 'MiB live' $m/mheat.html"
expect 2 "" "no memory figures.*--memory" -- show $m/gpt2_attention_unfused.onnx --format html --profile $m/p.json --heat memory -o $m/x.html
"$refeval" -q optimize $m/gpt2_attention_unfused.onnx -o $m/opt.onnx --forms all >/dev/null  # the fused Attention
expect 0 "" "" -- show $m/gpt2_attention_unfused.onnx --diff $m/opt.onnx --format html -o $m/diff.html
check "diff: removed and added counted" grep -q "27 nodes -> 1 nodes: 27 removed" $m/diff.html
check "diff: the Attention links the 16 nodes it replaced (the optimizer's provenance)" grep -q "added, replaces 16 nodes" $m/diff.html

# --depth: name-scope groups as single boxes (the GPT-2 test model's /attn/... scopes).
expect 0 "nodes as [0-9]+ boxes" "" -- show $m/gpt2_attention_unfused.onnx --depth 1
expect 0 "" "" -- show $m/gpt2_attention_unfused.onnx --depth 1 --format dot -o $m/d1.dot
check "depth: the collapsed DOT renders" bash -c "dot -Tsvg $m/d1.dot -o $m/d1.svg && grep -q '<svg' $m/d1.svg"
expect 2 "" "depth" -- show $m/gpt2_attention_unfused.onnx --depth 0

# A model-local function is laid out too, expandable below the graph.
expect 0 "" "" -- show $src/examples/custom_op/fused.onnx --format html -o $m/fn.html
check "html: the function's body below the graph" bash -c "grep -q '<details class=\"body\"' $m/fn.html && grep -q 'function example.fused.MyFusedGelu' $m/fn.html"
expect 0 "^<\n   domain: \"example.fused\"|MyFusedGelu \(" "" -- show $src/examples/custom_op/fused.onnx

# Errors.
# A node's metadata_props["namespace"] (IR 10, NodeProto field 9, which Debian's onnx.proto lacks:
# appended to the node's bytes) groups it, as torch's dynamo exporter writes it ("scope: Class").
/usr/bin/python3 - "$m/ns.onnx" <<'PY'
import sys
from onnx import StringStringEntryProto, TensorProto, helper
nodes = [helper.make_node("Relu", [i], [o], name=f"n{k}") for k, (i, o) in enumerate([("x", "a"), ("a", "b"), ("b", "y")])]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
entry = StringStringEntryProto(key="namespace", value="model: M/layers.0: Layer").SerializeToString()
for n in m.graph.node[:2]:
    n.ParseFromString(n.SerializeToString() + b"\x4a" + bytes([len(entry)]) + entry)
open(sys.argv[1], "wb").write(m.SerializeToString())
PY
expect 0 "^\[model/layers.0\] 2 nodes: Relu 2$" "" -- show $m/ns.onnx --format text --depth 2
check "namespace: the node without one stays at the root" grep -q "^model/layers.0 -> n2  b$" $work/out
expect 2 "" "error: " -- show $m/missing.onnx
expect 2 "" "error: --format: pdf not in \{text,dot,svg,html\}" -- show $m/gpt2_attention_unfused.onnx --format pdf
finish
