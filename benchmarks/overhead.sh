#!/usr/bin/env bash
# Per-node overhead (issue 31): a chain of N tiny Adds (float [1, 8], N=1000) timed side by side in
# `refeval run --repeat` and ONNX Runtime 1.30 (onnxruntime-node, graph optimizations disabled, one
# thread), ROUNDS alternated rounds; prints each round's medians and ns per node for both (the
# medians over rounds), and the ratio refeval / ORT (the median of each round's ratio). The kernels
# do next to nothing, so the time is the loop between them: slot lookups, allocation, observers.
#   benchmarks/overhead.sh [BUILD_DIR]     (NODES=1000 REPEAT=200 ROUNDS=5; REFEVAL_BENCH_DIR)
# Needs Debian's python3-onnx and npm (onnxruntime-node on first use). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
refeval=${1:-$here/../build}/refeval
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}
nodes=${NODES:-1000}
repeat=${REPEAT:-200}
rounds=${ROUNDS:-5}
ensure_ort
dir=$work/add-chain-$nodes
if [[ ! -f $dir/model.onnx ]]; then
  mkdir -p "$dir"
  /usr/bin/python3 - "$dir" "$nodes" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
d, n = sys.argv[1], int(sys.argv[2])
one = numpy_helper.from_array(np.full([1, 8], 0.5, np.float32), "c")
# Each Add reads the previous value and one shared initializer: x -> v1 -> ... -> y.
names = ["x"] + [f"v{i}" for i in range(1, n)] + ["y"]
nodes = [helper.make_node("Add", [names[i], "c"], [names[i + 1]], name=f"add{i}") for i in range(n)]
graph = helper.make_graph(nodes, "add_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [one])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), f"{d}/model.onnx")
np.save(f"{d}/x.npy", np.arange(8, dtype=np.float32).reshape(1, 8))
PY
fi
ort=() ref=() ratio=()
printf "%-6s %10s %12s %10s %12s\n" round ort_ms ort_ns/node ref_ms ref_ns/node
for ((r = 1; r <= rounds; ++r)); do
  o=$(cd "$here/ort" && ORT_LEVEL=disabled node bench_ort.js "$dir/model.onnx" "$repeat" "x=$dir/x.npy" | cut -d' ' -f1)
  f=$("$refeval" run "$dir/model.onnx" --input "x=$dir/x.npy" --repeat "$repeat" | sed -n 's/^elapsed: median \([0-9.]*\) ms.*/\1/p')
  ort+=("$o") ref+=("$f") ratio+=("$(awk -v a="$f" -v b="$o" 'BEGIN { print a / b }')")
  awk -v r="$r" -v o="$o" -v f="$f" -v n="$nodes" 'BEGIN { printf "%-6s %10.3f %12.0f %10.3f %12.0f\n", r, o, o * 1e6 / n, f, f * 1e6 / n }'
done
awk -v o="$(median "${ort[@]}")" -v f="$(median "${ref[@]}")" -v q="$(median "${ratio[@]}")" -v n="$nodes" 'BEGIN {
  printf "median %10.3f %12.0f %10.3f %12.0f   refeval / ORT = %.2f\n", o, o * 1e6 / n, f, f * 1e6 / n, q }'
