#!/usr/bin/env bash
# `refeval accuracy --html` as a person sees it: the GPT-2 page rendered by headless Chromium
# offline shows ink and the chart's colours (accumulated in blue, local in orange, the ranked
# nodes ringed in red), and the rendered DOM holds the chart's points and the worst-nodes table.
# Exit 77 (skipped) without Chromium.
# Usage: accuracy_html_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
source "$(dirname "$0")/chromium.sh"
gpt2=$src/tests/data/optimize/hf_gpt2_opset17

expect 0 "" "" -- accuracy $gpt2/model.onnx --inputs $gpt2/test_data_set_0 --html $work/acc.html --json $work/acc.json
check "the page names no network resource" bash -c "! grep -qE '(src|href)=|@import|url\(' $work/acc.html"
render $work/acc.html 1400 1100
check "the screenshot shows the page and the chart's colours" python3 $src/tests/tools/png_check.py $work/shot.png 3 3
check "one point per node with a floating output, on each of the two lines" python3 - "$work/acc.json" "$work/dom.html" <<'PY'
import json, re, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
dom = open(sys.argv[2]).read()
acc = len(re.findall(r"<title>[^<]* — accumulated rms", dom))
loc = len(re.findall(r"<title>[^<]* — local rms", dom))
rings = dom.count('stroke="#c53030" stroke-width="2"><title>')
ok = acc == len(nodes) and loc == sum(1 for n in nodes if any(o["local"] for o in n["outputs"])) and rings == 10
print("" if ok else f"points {acc} {loc} rings {rings} nodes {len(nodes)}"); sys.exit(0 if ok else 1)
PY
check "the worst-nodes table starts with the top contributor" python3 - "$work/acc.json" "$work/dom.html" <<'PY'
import json, re, sys
top = json.load(open(sys.argv[1]))["nodes"][0]["node"]
rows = re.findall(r"<tr><td>([^<]*)</td>", open(sys.argv[2]).read())
print("" if rows and rows[0] == top else f"{rows[:3]} vs {top}"); sys.exit(0 if rows and rows[0] == top else 1)
PY
finish
