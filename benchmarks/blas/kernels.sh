#!/usr/bin/env bash
# OpenBLAS's kernel sets on this CPU for GPT-2's products, one thread each: the one it picks
# itself and the AVX-512 / AVX2 alternatives, their speed and whether equal rows of A give equal
# rows of C. On Zen 4 the AVX2 (Haswell, Zen) sets are faster and differ; refeval keeps OpenBLAS's
# pick and runs these products on its own kernel (ops/linalg/gemm_small_m.cc). Needs gcc and
# libopenblas-dev.
#   benchmarks/blas/kernels.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)/kernels
trap 'rm -rf "$(dirname "$bin")"' EXIT
gcc -O2 -I/usr/include/x86_64-linux-gnu/openblas-pthread "$here/kernels.c" -o "$bin" -lopenblas
echo "# OpenBLAS's own choice"
OPENBLAS_NUM_THREADS=1 "$bin"
for core in Cooperlake SkylakeX Haswell Zen; do
  echo "# OPENBLAS_CORETYPE=$core"
  OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=$core "$bin"
done
