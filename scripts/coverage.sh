#!/usr/bin/env bash
# Line and branch coverage of refeval's C++ (evaluator/, ops/, tools/, python/) under the whole test
# suite, written to tests/COVERAGE.md.
#
# Builds BUILD_DIR (default build-coverage) with clang's source-based coverage
# (-fprofile-instr-generate -fcoverage-mapping) at -O1, runs ctest there (CTEST_ARGS pass through,
# e.g. CTEST_ARGS="-R unit" for a quick look), merges the counters of every process with
# llvm-profdata and reads them with llvm-cov (Debian's clang and llvm packages).
#
# Why clang and not gcc's --coverage: gcov counts the branches of the compiled code, and in C++ most
# of those are the clean-up paths of a constructor that throws (a line that builds a vector of three
# nodes has 20 to 100 of them), which no test can take; gcovr's --exclude-throw-branches does not
# remove them. llvm-cov counts the branches of the source: each condition of an if, while, for,
# ?:, && and || once true and once false.
#
# The floors: every source file 80% of its lines, tools/optimize/ and ops/contrib/ 90% of their
# branches; a file under its floor is listed with the reason given in tests/coverage_exceptions.txt
# ("path: reason"), or as unexplained.
#   scripts/coverage.sh [BUILD_DIR]
# Takes about an hour on 2 cores (build and suite); never run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-coverage}
for tool in clang++ llvm-profdata llvm-cov; do
  command -v $tool >/dev/null || { echo "coverage: $tool is missing (apt-get install clang llvm)" >&2; exit 2; }
done
export CCACHE_BASEDIR="$PWD"
instrument="-fprofile-instr-generate -fcoverage-mapping"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS="$instrument" \
  -DCMAKE_EXE_LINKER_FLAGS=-fprofile-instr-generate -DCMAKE_SHARED_LINKER_FLAGS=-fprofile-instr-generate \
  -DCMAKE_MODULE_LINKER_FLAGS=-fprofile-instr-generate -DCMAKE_STRIP=true >/dev/null  # pybind11 strips the module's coverage map
cmake --build "$build" -j2
raw="$PWD/$build/profraw"
rm -rf "$raw" && mkdir -p "$raw"
# %4m: each instrumented binary or module merges its processes' counters into at most 4 files.
export LLVM_PROFILE_FILE="$raw/%4m.profraw"
# shellcheck disable=SC2086
ctest --test-dir "$build" -j2 --timeout 3000 ${CTEST_ARGS:-} | tail -5 || true  # a failing test still counts its coverage
llvm-profdata merge -sparse "$raw"/*.profraw -o "$build/coverage.profdata"
# Every executable and module the build wrote with a coverage map: the CLI, the unit tests, the
# Python module, the test plugins.
objects=()
while IFS= read -r f; do
  llvm-objdump --section-headers "$f" 2>/dev/null | grep -q __llvm_covmap && objects+=(-object "$f")
done < <(find "$build" -type f \( -perm -u+x -o -name '*.so' \) -not -path '*/CMakeFiles/*' -not -path '*/profraw/*')
llvm-cov export -summary-only -instr-profile "$build/coverage.profdata" "${objects[@]}" \
  -ignore-filename-regex '^/usr/' >"$build/coverage.json"
/usr/bin/python3 scripts/coverage_report.py "$build/coverage.json" tests/coverage_exceptions.txt "${CTEST_ARGS:-}" >tests/COVERAGE.md
echo "coverage: tests/COVERAGE.md"
