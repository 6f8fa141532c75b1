#!/usr/bin/env bash
# How fast `refeval show --format html` handles LLM-size graphs: a 12-layer (3,159 nodes) and a
# 150-layer (38k nodes) Llama-style decoder (tests/cli/make_deep_decoder.py repeats a layer of
# tests/data/optimize/hf_llama_opset17). Prints, per size, the time to write the page (refeval,
# wall clock), to load it in headless Chromium (the page's clock at the end of its script, after
# a forced layout; the first paint is not included) and to open one layer from #expand= (the best
# of 3 renders, layout included). The functional checks of the same pages are the ctest
# show-scale-chromium (tests/cli/show_scale_test.sh).
#   benchmarks/show/scale.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../..
refeval=${1:-$src/build}/refeval
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/chromium.sh"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
attr() { grep -oE "$1=\"[0-9.]+\"" "$work/dom.html" | head -1 | grep -oE '[0-9.]+' || echo "n/a"; }
best() { sort -g | head -1; }

echo "| layers | nodes | write (ms) | load (ms) | open a layer (ms) |"
echo "|--:|--:|--:|--:|--:|"
for layers in 12 150; do
  /usr/bin/python3 "$src/tests/cli/make_deep_decoder.py" "$src/tests/data/optimize/hf_llama_opset17/model.onnx" $layers "$work/m.onnx" >/dev/null
  t=$(ms); "$refeval" -q show "$work/m.onnx" --format html -o "$work/m.html"; write=$(( $(ms) - t ))
  loads=() opens=()
  for round in 1 2 3; do
    render "$work/m.html" 1400 900; loads+=("$(attr data-load-ms)")
    render "$work/m.html#expand=layers.$((layers / 2))" 1400 900; opens+=("$(attr data-expand-ms)")
  done
  nodes=$(/usr/bin/python3 -c "import onnx, sys; print(len(onnx.load(sys.argv[1]).graph.node))" "$work/m.onnx")
  echo "| $layers | $nodes | $write | $(printf '%s\n' "${loads[@]}" | best) | $(printf '%s\n' "${opens[@]}" | best) |"
done
