#!/usr/bin/env bash
# The decode step of decoders the kernels were not tuned on, against ONNX Runtime 1.30 (graph
# optimizations disabled), at one and two threads on both sides: llm/generate.sh on a Llama-style
# fp32 torch export with a 2048-wide MLP and a 32000-word vocabulary, and on GenAI-builder int4
# decoders (MatMulNBits) of two sizes. Prints markdown (the tables in code blocks).
#   benchmarks/llm/decode_heldout.sh [BUILD_DIR]     (ROUNDS=3, REFEVAL_BENCH_DIR)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
models="heldout-llama-12x768-mlp2048|torch|--layers 12 --hidden 768 --heads 12 --kv-heads 4 --intermediate 2048 --vocab 32000"
models+=";genai-int4-12x768|genai|"
models+=";heldout-genai-int4-16x512|genai|--layers 16 --hidden 512 --heads 8 --kv-heads 2 --intermediate 1536"
for threads in 1 2; do
  echo "$threads thread(s) on both sides; ratio = refeval / ORT (median of the rounds' ratios); ids: both generated the same tokens."
  echo
  echo '```'
  THREADS=$threads MODELS=$models "$here/llm/generate.sh" "${1:-$here/../build}"
  echo '```'
  echo
done
