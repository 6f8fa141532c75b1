#!/usr/bin/env bash
# `refeval report --format html` as a person sees it: the page is rendered by headless Chromium
# with every network name unresolvable (it must open offline), the screenshot must show ink and
# the charts' colours, and the rendered DOM must hold the three charts, the tables, the
# drill-down and the timeline. Exit 77 (skipped) without Chromium; scripts/install-deps.sh installs it.
# Usage: report_html_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
source "$(dirname "$0")/chromium.sh"
fixtures=$src/tests/data/profiles


expect 0 "" "report written" -- report $fixtures/ort-1.30-linreg-disabled.json --format html -o $work/single.html
check "the page names no network resource" bash -c "! grep -qE '(src|href)=|@import|url\(' $work/single.html"
render $work/single.html 1200 1400
check "single: the screenshot shows the page" python3 $src/tests/tools/png_check.py $work/shot.png 3 3
check "single: three charts of three op types each" bash -c "[[ \$(grep -o 'class=\"bar\"' $work/dom.html | wc -l) -eq 9 ]]"
check "single: duration, count and share charts" bash -c "grep -q 'class=\"chart duration\"' $work/dom.html && grep -q 'class=\"chart count\"' $work/dom.html && grep -q 'class=\"chart share\"' $work/dom.html"
check "single: a drill-down per op type listing every call" bash -c "[[ \$(grep -o '<details' $work/dom.html | wc -l) -eq 3 && \$(grep -c '^<tr><td>[0-9]</td><td>/' $work/dom.html) -eq 12 ]]"
check "single: the per-node table" grep -q '<table class="rows" id="nodes">' $work/dom.html
check "single: a timeline of the median run" grep -q 'Timeline of run' $work/dom.html

expect 0 "" "report written" -- report $fixtures/ort-1.30-linreg-disabled.json --compare $fixtures/ort-1.30-linreg-all.json --format html -o $work/compare.html
render $work/compare.html 1400 1400
check "compare: the screenshot shows the page" python3 $src/tests/tools/png_check.py $work/shot.png 3 2
check "compare: before and after bars for each of 4 op types in 2 charts" bash -c "[[ \$(grep -o 'class=\"bar\"' $work/dom.html | wc -l) -eq 16 ]]"
check "compare: MatMul vanished, Gemm appeared" bash -c "grep -q '<td>MatMul</td>.*vanished' $work/dom.html && grep -q '<td>Gemm</td>.*appeared' $work/dom.html"
check "compare: both sides side by side" bash -c "[[ \$(grep -o '<h2>Before: \|<h2>After: ' $work/dom.html | wc -l) -eq 2 ]]"

# a generation loop's profile: latency per step with the prefill marked, KV growth, op charts per phase
"$refeval" -q generate $src/tests/data/ort/decoders_torch/b1/model.onnx --prompt-len 8 --new-tokens 6 --profile $work/gen.json >/dev/null
expect 0 "" "report written" -- report $work/gen.json --format html -o $work/gen.html
render $work/gen.html 1300 1400
check "generate: the screenshot shows the page" python3 $src/tests/tools/png_check.py $work/shot.png 3 3
check "generate: one prefill and 5 decode columns per step chart (latency, KV cache)" \
  bash -c "[[ \$(grep -o 'class=\"prefill\"' $work/dom.html | wc -l) -eq 2 && \$(grep -o 'class=\"decode\"' $work/dom.html | wc -l) -eq 15 ]]"
check "generate: the op charts of each phase" bash -c "grep -q '<h2>Phase prefill (1 run, ' $work/dom.html && grep -q '<h2>Phase decode (5 runs, ' $work/dom.html"
finish
