#!/usr/bin/env bash
# The suite as an AVX2-only machine runs it, on this one: a build for Haswell (-march=haswell, so
# no AVX-512 code at all: refeval's AVX-512 kernels and Eigen's AVX-512 packets are not compiled)
# in build-avx2/, then every ctest test there. What it cannot change: OpenBLAS still picks its
# kernels from this CPU (it serves double products only). About 25 minutes of build on 2 cores
# the first time, then the suite's time. Never part of ctest.
#   scripts/avx2_build_check.sh [CTEST_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build-avx2 -DCMAKE_BUILD_TYPE=Release -DREFEVAL_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=haswell -DCMAKE_C_FLAGS=-march=haswell >/dev/null
cmake --build build-avx2 -j2
if build-avx2/refeval --isa avx512 ops >/dev/null 2>&1; then
  echo "avx2_build_check: build-avx2 runs AVX-512 code; it is not an AVX2-only build" >&2
  exit 1
fi
ctest --test-dir build-avx2 --output-on-failure "$@"
