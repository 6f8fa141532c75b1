#!/usr/bin/env bash
# Line and branch coverage of refeval's C++ (evaluator/, ops/, tools/, python/) under the whole test
# suite, written to tests/COVERAGE.md.
#
# Builds BUILD_DIR (default build-coverage) with gcc's --coverage at -O1 (an optimized build folds
# lines together; -O0 makes the model tests too slow), runs ctest there (CTEST_ARGS pass through,
# e.g. CTEST_ARGS="-R unit" for a quick look), then reads the counters with gcovr (Debian's
# package). Branches count without the ones gcc adds for exceptions and the ones it proves
# unreachable (--exclude-throw-branches, --exclude-unreachable-branches): the branches of the
# source's own conditions. The floors: every source file 80% of its lines, tools/optimize/ and
# ops/contrib/ 90% of their branches; a file under its floor is listed with the reason given in
# tests/coverage_exceptions.txt ("path: reason"), or as unexplained.
#   scripts/coverage.sh [BUILD_DIR]
# Takes about 45 minutes on 2 cores (build and suite); never run by CI. In a reused BUILD_DIR, an
# object compiled while one of its headers was being edited keeps the old header's lines, and
# gcovr 5.2 stops on the mismatch ("assert left.lineno == right.lineno"): touch that source (the
# object gcov reports the other line for) or use a fresh BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-coverage}
command -v gcovr >/dev/null || { echo "coverage: gcovr is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }
export CCACHE_BASEDIR="$PWD"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="--coverage -fprofile-update=atomic" -DCMAKE_EXE_LINKER_FLAGS=--coverage \
  -DCMAKE_SHARED_LINKER_FLAGS=--coverage -DCMAKE_MODULE_LINKER_FLAGS=--coverage >/dev/null
cmake --build "$build" -j2
find "$build" -name '*.gcda' -delete
# shellcheck disable=SC2086
ctest --test-dir "$build" -j2 --timeout 3000 ${CTEST_ARGS:-} | tail -5 || true  # a failing test still counts its coverage
gcovr --root . --object-directory "$build" --filter 'evaluator/' --filter 'ops/' --filter 'tools/' --filter 'python/' \
  --exclude-throw-branches --exclude-unreachable-branches --json-summary "$build/coverage.json" --json-summary-pretty
/usr/bin/python3 scripts/coverage_report.py "$build/coverage.json" tests/coverage_exceptions.txt "${CTEST_ARGS:-}" >tests/COVERAGE.md
echo "coverage: tests/COVERAGE.md"
