#!/usr/bin/env bash
# Which written form of a pattern ONNX Runtime's CPU kernels run fastest: per pattern (encoder
# self-attention with and without a padding mask, residual + LayerNorm / RMSNorm, Linear + Gelu, rotary
# embedding, a decode step's attention with a KV cache) and per shape drawn from SEED, each form
# (forms.py: the unfused graph a torch export gives, and the com.microsoft forms refeval's optimizer
# could write) as a small model, timed in onnxruntime-node 1.30 (CPU, graph optimization level all, so
# ORT applies its own fusions to every form) at each thread count of THREADS, against the unfused form,
# in ROUNDS alternated rounds of REPEAT runs (time_forms.js), outputs checked against unfused first.
# Prints markdown on stdout (report.py), progress on stderr, and writes the raw measurements to OUT_CSV.
#   benchmarks/ort_forms/run.sh [BUILD_DIR]     (BUILD_DIR is ignored; SHAPES=36 per pattern, SEED=1,
#       THREADS="1 2", ROUNDS=3, REPEAT=15, BUDGET_MS=30, PATTERNS=attention,norm,gelu,rotary,decode,
#       CASES=regex on case ids, OUT_CSV=/tmp/ort_forms.csv, REFEVAL_BENCH_DIR=/tmp/refeval-bench)
# The defaults took 10 minutes on 2 cores. The models and inputs go to REFEVAL_BENCH_DIR/ort_forms
# (rewritten on every run; 4.8 GB for the defaults).
# Needs Debian's python3-numpy and python3-onnx, and npm (onnxruntime-node into benchmarks/ort on first use).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/common.sh"
work=${REFEVAL_BENCH_DIR:-/tmp/refeval-bench}/ort_forms
shapes=${SHAPES:-36} seed=${SEED:-1} rounds=${ROUNDS:-3} repeat=${REPEAT:-15} threads=${THREADS:-1 2}
budget=${BUDGET_MS:-30} patterns=${PATTERNS:-attention,norm,gelu,rotary,decode}
ensure_ort
ort=$(node -p "require('$here/ort/node_modules/onnxruntime-node/package.json').version")

rm -rf "$work"
mkdir -p "$work"
echo "ort_forms: writing $shapes shape(s) per pattern to $work" >&2
/usr/bin/python3 "$here/ort_forms/forms.py" "$work" --seed "$seed" --shapes "$shapes" --budget-ms "$budget" --patterns "$patterns"
# glibc keeps freed memory instead of unmapping it: onnxruntime-node copies each fetched output into a fresh
# ArrayBuffer, and on this VM faulting new pages in costs about 12 µs per 4 KiB, which made the forms whose
# presents are fetched (gqa_prealloc, gqa_shared) up to 10x slower at random. ORT's own buffers come from its arena.
MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=17179869184 \
  THREADS=$threads ROUNDS=$rounds REPEAT=$repeat CASES=${CASES:-} \
  node "$here/ort_forms/time_forms.js" "$work/manifest.json" "$work/results.jsonl"

cat <<EOF
onnxruntime-node $ort (CPU EP, graph optimization level all, intraOpNumThreads $threads, interOpNumThreads 1,
session.force_spinning_stop 1 so that the idle sessions' workers do not spin on the cores) on every written form
of each pattern, float32. Shapes: $shapes per pattern drawn from seed $seed (encoder B 1-8,
S 1-512 log-uniform, N 4-32 heads of h in {32, 48, 64, 80, 96, 128} with D = N·h in 256-4096; decode B 1-4,
past P 16-2048 log-uniform, N a multiple of 4, h in {64, 128}, Nkv = N and N/4), a draw redrawn when its
estimated one-thread run exceeds $budget ms. Every model takes the same inputs with dynamic batch/sequence
dims, as a torch export declares them. Each form's outputs are first compared with the unfused form's (at most
1e-4 · max(1, |largest value|) apart, else it fails and is not timed); then $rounds alternated rounds of
$repeat runs, fetching a one-element Slice of each output (onnxruntime-node's copy of a fetched output into
JavaScript would otherwise dominate). Cells: the median over rounds of each round's median time divided by
unfused's in that round (below 1 = faster than the unfused graph that ORT optimizes itself). Forms that ORT
turns into the same graph (see each pattern's last table: norm post skip_ln, post_bias skip_ln and skip_ln_bias,
gelu erf) measure the noise floor. gqa_prealloc is the gqa model with its presents pre-allocated by the caller and
gqa_shared the same model with past and present bound to one buffer (the past plus one free slot, i.e. max length
P + 1): onnxruntime-node copies every pre-allocated output back into JavaScript after the run, which both pay and
a C/C++ caller would not, so sharing's own gain is gqa_prealloc - gqa_shared, not gqa_shared against unfused.
EOF
/usr/bin/python3 "$here/ort_forms/report.py" "$work/results.jsonl" "${OUT_CSV:-/tmp/ort_forms.csv}"
