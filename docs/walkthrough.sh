#!/usr/bin/env bash
# Reproduces docs/walkthrough.md: the chapter's workflow with refeval, every step a command.
#   docs/walkthrough.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, /tmp/refeval-walkthrough)
# Needs the build (with the example plugin), Debian's python3-torch/python3-onnx for the GPT-2
# export, Graphviz, and Chromium for the screenshots (docs/walkthrough/*.png).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
out=${2:-/tmp/refeval-walkthrough}
refeval=$build/refeval
mkdir -p "$out"
cd "$out"
step() { printf '\n$ %s\n' "$*"; "$@"; }
shot() {  # shot PAGE PNG WIDTH HEIGHT
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/chromium" \
    --host-resolver-rules="MAP * ~NOTFOUND" --window-size="$3,$4" --screenshot="$2" "file://$1" >/dev/null 2>&1
}

# 1. Profile the linear regression and read the per-operator table.
step "$refeval" profile "$root/examples/linreg.onnx" --input X="$root/examples/X.npy" --repeat 100 -o linreg_profile.json
step "$refeval" report linreg_profile.json --format csv

# 2. GPT-2 small (random weights, the GPT-2 architecture), exported by torch at opset 17.
[[ -f gpt2/model.onnx ]] || /usr/bin/python3 "$root/benchmarks/gpt2/make_gpt2.py" gpt2 --opset 17 --seq 32
step "$refeval" profile gpt2/model.onnx --input input_ids=gpt2/input_ids.npy -o gpt2_profile.json --top 8
step "$refeval" -q report gpt2_profile.json --format html -o gpt2_profile.html
shot "$out/gpt2_profile.html" "$root/docs/walkthrough/gpt2_profile.png" 1300 900

# 3. A fused custom operator against the unfused graph it replaces.
step "$refeval" --custom-ops "$build/examples/custom_op/librefeval_example_ops.so" check-fusion \
  "$root/examples/custom_op/fused.onnx" --node op:MyFusedGelu --repeat 20

# 4. Optimize GPT-2, proving the rewrite equivalent, and check the predictions against torch's.
step "$refeval" optimize gpt2/model.onnx -o gpt2_opt.onnx --model-type gpt2 --verify --input input_ids=gpt2/input_ids.npy
mkdir -p gpt2_opt && cp -r gpt2/test_data_set_0 gpt2_opt/ && cp gpt2_opt.onnx gpt2_opt/model.onnx
step "$refeval" test gpt2_opt --rtol 0 --atol 1e-4

# 5. View the graph before and after, with the profile's heat.
step "$refeval" -q show gpt2/model.onnx --format html --profile gpt2_profile.json -o gpt2_view.html
shot "$out/gpt2_view.html#select=/blocks.0/c_attn/MatMul" "$root/docs/walkthrough/gpt2_view.png" 1400 900
step "$refeval" -q show gpt2/model.onnx --diff gpt2_opt.onnx --format html -o gpt2_diff.html
shot "$out/gpt2_diff.html" "$root/docs/walkthrough/gpt2_diff.png" 1400 900

# 6. Profile the optimized model and compare with the original, per op type.
step "$refeval" profile gpt2_opt.onnx --input input_ids=gpt2/input_ids.npy -o gpt2_opt_profile.json --top 5
step "$refeval" report gpt2_profile.json --compare gpt2_opt_profile.json --top 12
step "$refeval" -q report gpt2_profile.json --compare gpt2_opt_profile.json --format html -o gpt2_compare.html
shot "$out/gpt2_compare.html" "$root/docs/walkthrough/gpt2_compare.png" 1300 900
