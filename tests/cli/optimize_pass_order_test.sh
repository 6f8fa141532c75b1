#!/usr/bin/env bash
# The order of the optimizer's passes never decides what fuses: every export fixture
# (tests/data/optimize, decoders and encoders) optimized with the passes in the default order and in
# two seeded shuffled orders (--shuffle-passes) leaves the same operators, node for node counted,
# for both targets. A pass whose output hid a later pass's candidate (a fused Gelu whose output
# shape nobody knew, a FusedMatMul written over the attention's scores) fails here.
# Usage: optimize_pass_order_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$1
data=$2/tests/data/optimize
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

operators() { "$refeval" optimize "$data/$1/model.onnx" -o "$work/m.onnx" --target "$2" "${@:3}" 2>&1 | grep -E '^(operators|nodes):' | sed 's/; initializers.*//'; }

folders=$(cat "$data/forms.txt" "$data/encoder_forms.txt" | grep -v '^#' | awk 'NF { print $1 }')
for folder in $folders; do
  for target in ort onnx; do
    default=$(operators "$folder" "$target")
    check "$folder [$target]: optimized in the default order" test -n "$default"
    for seed in 1 2; do
      shuffled=$(operators "$folder" "$target" --shuffle-passes "$seed")
      if [[ "$shuffled" != "$default" ]]; then
        check "$folder [$target]: shuffled order $seed leaves the same operators" false
        diff <(echo "$default" | tr ',' '\n') <(echo "$shuffled" | tr ',' '\n') | sed 's/^/    /'
      else
        check "$folder [$target]: shuffled order $seed leaves the same operators" true
      fi
    done
  done
done
finish
