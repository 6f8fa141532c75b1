#!/usr/bin/env bash
# `refeval show --format html` at LLM scale, in headless Chromium, offline: a 12-layer and a
# 150-layer Llama-style torch export (tests/cli/make_deep_decoder.py repeats a layer of
# tests/data/optimize/hf_llama_opset17) show their layers as collapsed groups, open a layer from
# #search= / #expand=, and mark the repeated blocks; a profile and an accuracy report colour the
# groups; the GPT-2 export against its optimized form shows per-group diff counts and links every
# fused node to what it replaced. How fast pages are written, load and open a layer is measured by
# benchmarks/show/scale.sh, not here. With SHOW_SHOTS=DIR the screenshots are kept there.
# Usage: show_scale_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
source "$(dirname "$0")/chromium.sh"
llama=$src/tests/data/optimize/hf_llama_opset17
gpt2=$src/tests/data/optimize/hf_gpt2_opset17
keep() { [[ -n ${SHOW_SHOTS:-} ]] && mkdir -p "$SHOW_SHOTS" && cp "$work/shot.png" "$SHOW_SHOTS/$1.png"; true; }
page_data() {  # PAGE PYTHON_EXPR: the expression on the page's data `d` must be true
  python3 -c "import json, re, sys
d = json.loads(re.search(r'id=\"model-data\">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
sys.exit(0 if ($2) else 1)" "$1"
}

/usr/bin/python3 "$src/tests/cli/make_deep_decoder.py" $llama/model.onnx 12 $work/l12.onnx >/dev/null || exit 1
/usr/bin/python3 "$src/tests/cli/make_deep_decoder.py" $llama/model.onnx 150 $work/l150.onnx >/dev/null || exit 1

# 12 layers (3159 nodes, the size of the full Llama export).
expect 0 "" "" -- show $work/l12.onnx --format html -o $work/l12.html
render "$work/l12.html" 1400 900; keep llama_top
check "12 layers: the screenshot shows the graph" python3 "$src/tests/tools/png_check.py" $work/shot.png 3 0
check "12 layers: the top level shows layers.0 … layers.11 as collapsed groups" bash -c \
  "for k in \$(seq 0 11); do grep -q \"class=\\\"group[^\\\"]*\\\" id=\\\"g[0-9]*\\\" data-g=\\\"[0-9]*\\\" data-path=\\\"layers.\$k\\\"\" $work/dom.html || exit 1; done"
check "12 layers: norm and lm_head at the top level, no layer opened" bash -c \
  "grep -q 'data-path=\"norm\"' $work/dom.html && grep -qE 'data-n=\"[0-9]+\"><rect[^>]*>(</rect>)?<text[^>]*>MatMul</text></g>' $work/dom.html && ! grep -qE 'class=\"frame\" data-g=\"[0-9]' $work/dom.html"
check "12 layers: identical blocks detected and badged" bash -c \
  "grep -q 'layers.1–11: 11 identical blocks' $work/l12.html && grep -q '≡ 11 identical' $work/dom.html"
render "$work/l12.html#search=/layers.7/self_attn/Softmax" 1400 900
check "12 layers: #search opens layers.7 and selects the node" bash -c \
  "grep -q 'class=\"frame\" data-g=\"[0-9]*\" data-path=\"layers.7\"' $work/dom.html && grep -q 'class=\"node selected' $work/dom.html && grep -q '<h3>Softmax</h3>' $work/dom.html"
check "12 layers: other layers stay closed" bash -c "! grep -q 'class=\"frame\" data-g=\"[0-9]*\" data-path=\"layers.6\"' $work/dom.html"
render "$work/l12.html#expand=layers.7" 1400 900; keep llama_layer7
check "12 layers: layers.7 opened" grep -q 'data-expanded="layers.7"' $work/dom.html

# 150 layers (38k nodes).
expect 0 "" "" -- show $work/l150.onnx --format html -o $work/l150.html
check "150 layers: more than 28,000 nodes" page_data $work/l150.html "len(d['sides'][0]['graph']['nn']) > 28000"
check "150 layers: identical blocks detected" grep -q 'layers.1–149: 149 identical blocks' $work/l150.html
render "$work/l150.html" 1400 900; keep decoder150_top
check "150 layers: the top level shows the parts, no layer opened" bash -c \
  "grep -q 'data-path=\"part_2_of_2\"' $work/dom.html && ! grep -qE 'class=\"frame\" data-g=\"[0-9]' $work/dom.html"
render "$work/l150.html#expand=layers.77" 1400 900; keep decoder150_layer77
check "150 layers: layers.77 opened" grep -qE 'data-expanded="([a-z_0-9]+/)*layers.77"' $work/dom.html
check "150 layers: the screenshot shows the graph" python3 "$src/tests/tools/png_check.py" $work/shot.png 3 0

# Profile heat per group (the committed 2-layer export, run on its first data set).
"$refeval" -q profile $llama/model.onnx --inputs $llama/test_data_set_0 --repeat 2 -o $work/p.json >/dev/null
expect 0 "" "" -- show $llama/model.onnx --format html --profile $work/p.json -o $work/heat.html
render "$work/heat.html" 1400 900; keep profile
check "profile: a group box has a heat fill and a time label" bash -c \
  "grep -qE 'class=\"group[^\"]*\"[^>]*><rect class=\"gb\"[^>]*fill=\"#ff[0-9a-f]{4}\">(</rect>)?(<text[^>]*>[^<]*</text>){2}<text[^>]*>[0-9.]+% [0-9.]+ ms</text><text[^>]*>max ' $work/dom.html"
check "profile: the costliest nodes listed" grep -q '<table class="counts" id="top">' $work/dom.html

# Accuracy overlay: nodes by local error, groups by their worst node.
"$refeval" -q accuracy $llama/model.onnx --inputs $llama/test_data_set_0 --top-k 0 --json $work/acc.json >/dev/null
expect 0 "" "" -- show $llama/model.onnx --format html --overlay $work/acc.json -o $work/acc.html
render "$work/acc.html#select=/layers.1/self_attn/MatMul" 1400 900
check "overlay: groups coloured by their worst node" grep -qE 'fill="#ff[0-9a-f]{4}">(</rect>)?(<text[^>]*>[^<]*</text>){2}<text[^>]*>worst local rms' $work/dom.html
check "overlay: the node's panel shows its local and accumulated errors" grep -qE 'class="note">[^<]*local rms [0-9][^<]*accumulated rms' $work/dom.html
expect 2 "" "overlay" -- show $llama/model.onnx --format html --overlay $work/p.json -o $work/bad.html

# The GPT-2 export against its optimized form: diff counts per group, fused nodes linked.
"$refeval" -q optimize $gpt2/model.onnx -o $work/opt.onnx >/dev/null
expect 0 "" "" -- show $gpt2/model.onnx --diff $work/opt.onnx --format html -o $work/diff.html
check "diff: every fused node (the optimizer's fused_from provenance) lists the nodes it replaced" /usr/bin/python3 -c "import json, onnx, re, sys
d = json.loads(re.search(r'id=\"model-data\">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
g = d['sides'][1]['graph']
fused = [p.key.split(':', 1)[1] for p in onnx.load(sys.argv[2]).metadata_props if p.key.startswith('refeval.fused_from:')]
linked = {g['nn'][int(k)] for k, r in g['repl'].items() if r}
print(len(fused), 'fused nodes,', len(linked & set(fused)), 'linked')
sys.exit(0 if fused and set(fused) <= linked else 1)" $work/diff.html $work/opt.onnx
render "$work/diff.html" 1400 900; keep diff
check "diff: two panes" bash -c "[[ \$(grep -o 'class=\"pane\" id=' $work/dom.html | wc -l) -eq 2 ]]"
check "diff: groups count removed and added nodes" bash -c \
  "grep -qE '>[0-9]+ removed, [0-9]+ changed<' $work/dom.html && grep -qE '>[0-9]+ added, [0-9]+ changed<' $work/dom.html"
fused=$(python3 -c "import json, re, sys
d = json.loads(re.search(r'id=\"model-data\">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
g = d['sides'][1]['graph']; print(g['nn'][int(next(iter(g['repl'])))])" $work/diff.html)
render "$work/diff.html#select=$fused" 1400 900; keep diff_fused
check "diff: #select of a fused node opens its group and says what it replaces" grep -q '<p class="note">replaces /' $work/dom.html
finish
