#!/usr/bin/env bash
# `refeval show --format html` as a person sees it, in headless Chromium, offline: the graph
# drawn (screenshot ink and node colours), a node's panel opened by #select= (attributes,
# inputs, outputs), the profile heat, the diff's two panes with removed and added nodes, and a
# function body in its own viewer.
# Usage: show_html_test.sh REFEVAL MAKE_TEST_MODELS
set -u
refeval=$1
make_models=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
source "$(dirname "$0")/chromium.sh"
"$make_models" "$work" || exit 1
m=$work

"$refeval" -q profile $m/gpt2_attention_unfused.onnx --repeat 2 -o $m/p.json >/dev/null
expect 0 "" "" -- show $m/gpt2_attention_unfused.onnx --format html --profile $m/p.json -o $m/view.html
render "$m/view.html#select=n9" 1400 900
check "view: the screenshot shows the graph and the selected node (red)" python3 "$(dirname "$0")/../tools/png_check.py" $work/shot.png 3 1
check "view: #select opens the node's panel" bash -c "grep -q 'id=\"panel\" data-node=\"n9\"' $work/dom.html && grep -q '<h3>Reshape</h3>' $work/dom.html"
check "view: the panel lists inputs and outputs with shapes" bash -c "grep -q '<h4>Inputs</h4>' $work/dom.html && grep -q 'float\[batch,seq,2,4\]' $work/dom.html"
check "view: the script ran (load time recorded)" grep -qE 'data-load-ms="[0-9]+"' $work/dom.html
# Heat runs from white to red (#ffRRGG with RR, GG falling): an uncoloured node is #ffffff, so
# only a fill other than white shows that time was drawn.
check "view: nodes coloured by time (a fill other than white)" bash -c "grep -oE 'fill=\"#ff[0-9a-f]{4}\"' $work/dom.html | grep -vq '#ffffff'"

"$refeval" -q optimize $m/gpt2_attention_unfused.onnx -o $m/opt.onnx >/dev/null
expect 0 "" "" -- show $m/gpt2_attention_unfused.onnx --diff $m/opt.onnx --format html -o $m/diff.html
render "$m/diff.html" 1400 900
check "diff: the screenshot shows both graphs (pastel marks: ink only)" python3 "$(dirname "$0")/../tools/png_check.py" $work/shot.png 3 0
check "diff: two panes" bash -c "[[ \$(grep -o 'class=\"pane\"' $work/dom.html | wc -l) -eq 2 ]]"
check "diff: removed nodes red, the fused node green and linked" bash -c "grep -q 'fill=\"#f8c9c9\"' $work/dom.html && grep -q 'fill=\"#c8e6c9\"' $work/dom.html"
# A model-local function's body: the same viewer, built when its <details> opens.
expect 0 "" "" -- show "$(dirname "$0")/../../examples/custom_op/fused.onnx" --format html -o $m/fn.html
sed 's/<details class="body"/<details open class="body"/' $m/fn.html >$m/fn_open.html
render "$m/fn_open.html" 1400 900
check "body: the function's nodes drawn in its own viewer" grep -q 'id="function example.fused.MyFusedGelu:n0"' $work/dom.html
finish
