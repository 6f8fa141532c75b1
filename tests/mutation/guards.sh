#!/usr/bin/env bash
# Guard check (not a ctest test): which early-exit checks of the named folders does no test notice?
#
# Copies HEAD to $REFEVAL_GUARDS_DIR/src (default /tmp/refeval-guards), rewrites every guard of
# the folders' .cc files (an `if` that returns, continues, breaks or throws) so that it can be
# switched off at run time (guards.py), and builds the copy once. Then:
#  1. the trace: each ctest test runs alone and records the guards it takes. A guard no test takes
#     is listed at once: deleting it is a defect no test can catch.
#  2. the drops (unless --trace-only): each guard some test takes is switched off
#     (REFEVAL_GUARD_DROP) and the unit cases that take it (each case traced alone), then the other
#     tests that take it run, fastest first, until one fails (CAUGHT) or none does (MISSED).
# Writes $dir/catalogue.tsv, trace/, results.txt (resumed if the run is repeated on the same
# commit) and report.txt. Exits 1 if a guard is never taken or dropped unnoticed, 2 on a set-up
# error. The guards a reviewer has shown unreachable are listed in guards_unreached.txt.
#
# Usage: tests/mutation/guards.sh [--trace-only] [--skip REGEX] [--only REGEX] [--jobs N] DIR...
#   --trace-only  stop after the trace
#   --skip        tests not run for the drops (default: the slow audit tests)
#   --only        drop only the guards of the files this matches (default: all of DIR...)
#   --jobs        guards dropped at once (default 1; each runs one test at a time)
# Environment: REFEVAL_GUARDS_DIR (/tmp/refeval-guards), REFEVAL_SHARED_DIR (/work/shared).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel) || exit 2
root=${REFEVAL_GUARDS_DIR:-/tmp/refeval-guards}
src=$root/src
build=$src/build  # inside the copy, so ccache sees the paths of a normal build
shared=${REFEVAL_SHARED_DIR:-/work/shared}
source "$here/npm_folders.sh"
trace_only=0
only=.
jobs=1
# The audit tests (slow, and a refusal they notice is one some other test names), and the unit
# tests under the lower ISAs (the unit cases run once, at this machine's).
skip='^(evaluator-errors|optimize-differential|show-scale-chromium|mutation-list|unit-avx2|unit-generic)$'
dirs=()
while (($#)); do
  case $1 in
    --trace-only) trace_only=1 ;;
    --skip) skip=${2:?--skip needs a regex}; shift ;;
    --only) only=${2:?--only needs a regex}; shift ;;
    --jobs) jobs=${2:?--jobs needs a count}; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "guards.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) dirs+=("${1%/}") ;;
  esac
  shift
done
((${#dirs[@]})) || { echo "guards.sh: name the folders whose guards to check (see --help)" >&2; exit 2; }

start=$SECONDS
say() { local s=$((SECONDS - start)); printf '[%dm%02ds] %s\n' $((s / 60)) $((s % 60)) "$*"; }

# 1. The copy and its build, anew unless it is of this commit and these folders.
commit=$(git -C "$repo" rev-parse HEAD) || exit 2
stamp="$commit ${dirs[*]}"
if [[ $(cat "$root/stamp" 2>/dev/null) != "$stamp" ]]; then
  say "copying ${commit:0:12} to $src and instrumenting ${dirs[*]}"
  rm -rf "$src" "$root/trace" "$root/results.txt"
  mkdir -p "$src" "$root/trace" || exit 2
  git -C "$repo" archive HEAD | tar -x -C "$src" || exit 2
  link_npm_folders "$repo" "$src"
  files=$(cd "$src" && for d in "${dirs[@]}"; do find "$d" -name '*.cc' -not -path '*/python/*'; done | sort)
  [[ -n $files ]] || { echo "guards.sh: no .cc file under ${dirs[*]}" >&2; exit 2; }
  # shellcheck disable=SC2086
  python3 "$here/guards.py" instrument "$src" $files >"$root/catalogue.tsv" || exit 2
  export CCACHE_BASEDIR=$src
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DREFEVAL_SHARED_DIR="$shared" >"$root/configure.log" 2>&1 ||
    { echo "guards.sh: cmake failed: $root/configure.log" >&2; exit 2; }
  say "building (log: $root/build.log)"
  cmake --build "$build" -j2 >"$root/build.log" 2>&1 || { tail -20 "$root/build.log"; echo "guards.sh: the copy does not build" >&2; exit 2; }
  echo "$stamp" >"$root/stamp"
fi
say "$(($(wc -l <"$root/catalogue.tsv") - 1)) guards in ${dirs[*]}"

# 2. The trace: every test alone (two at a time), each with its own trace file.
if [[ ! -f $root/trace/done ]]; then
  say "trace: every test, recording the guards it takes"
  ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: //p' >"$root/tests.txt"
  export build root
  xargs -P2 -I{} bash -c 'REFEVAL_GUARD_TRACE=$root/trace/{}.txt ctest --test-dir "$build" -R "^{}\$" --timeout 1200 >"$root/trace/{}.log" 2>&1; touch "$root/trace/{}.txt"' <"$root/tests.txt"
  touch "$root/trace/done"
fi
# 2b. Each unit case alone: a drop then runs the few cases that took the guard, not a minute of them.
if [[ ! -f $root/trace/cases/done ]]; then
  say "trace: each unit case alone"
  python3 "$here/guards.py" trace-cases "$root" 2 || exit 2
  touch "$root/trace/cases/done"
fi

# 3. The drops, one guard at a time, resumed where a stopped run left off.
if ((!trace_only)); then
  say "drops: each guard some test takes, switched off (results: $root/results.txt)"
  python3 "$here/guards.py" drop "$root" "$skip" "$only" "$jobs" || exit 2
fi
python3 "$here/guards.py" report "$root" "$here/guards_unreached.txt" | tee "$root/report.txt"
