#!/usr/bin/env bash
# Planted-defect check (not a ctest test): does the test suite catch realistic bugs?
#
# Copies HEAD of this repository (git archive) to $REFEVAL_MUTATION_DIR/src (default
# /tmp/refeval-mutation), builds it once in .../build (Release, ccache), checks that the named
# tests pass on the unchanged tree, then for each defect of tests/mutation/defects.txt: applies it
# (a substitution that must match exactly once), rebuilds, runs the ctest tests named for it
# (ctest -R; the whole suite with --all), records CAUGHT (some test failed) or MISSED, and puts the
# file back. Prints a table and writes it to .../results.md; logs are in .../logs. Exits 1 if a
# defect is missed (or does not build), 2 on a usage or set-up error.
#
# Usage: tests/mutation/run.sh [--all] [--only ID[,ID...]] [--list]
#   --all    run the whole suite for every defect (slow: minutes per defect), not only its tests
#   --only   these defects only
#   --list   print the defects and exit
# Environment: REFEVAL_MUTATION_DIR (/tmp/refeval-mutation), REFEVAL_SHARED_DIR (/work/shared:
# the ONNX backend data stays there), MUTATION_JOBS (2: make and ctest parallelism).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel) || exit 2
root=${REFEVAL_MUTATION_DIR:-/tmp/refeval-mutation}
src=$root/src
build=$root/build
logs=$root/logs
shared=${REFEVAL_SHARED_DIR:-/work/shared}
jobs=${MUTATION_JOBS:-2}
defects=$here/defects.txt
tool=(python3 "$here/defects.py")
source "$here/npm_folders.sh"

all=0
only=""
while (($#)); do
  case $1 in
    --all) all=1 ;;
    --only) only=${2:?--only needs a list of ids}; shift ;;
    --list)
      for id in $("${tool[@]}" list "$defects"); do
        printf '%-32s %-48s %s\n' "$id" "$("${tool[@]}" get "$defects" "$id" file)" "$("${tool[@]}" get "$defects" "$id" what)"
      done
      exit 0 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

mkdir -p "$root" "$logs" || exit 2
cp "$defects" "$root/defects.txt" || exit 2  # this run's defects, whatever happens to the file meanwhile
defects=$root/defects.txt
ids=$("${tool[@]}" list "$defects") || exit 2
if [[ -n $only ]]; then
  for id in ${only//,/ }; do
    grep -qx -- "$id" <<<"$ids" || { echo "run.sh: no defect '$id' in $defects" >&2; exit 2; }
  done
  ids=$(tr ',' '\n' <<<"$only")
fi

start=$SECONDS
elapsed() { local s=$((SECONDS - ${1:-$start})); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
say() { echo "[$(elapsed)] $*"; }

# 1. The copy: HEAD's files, written only where they differ from what is there (an unchanged file
# keeps its time stamp, so the build stays incremental; a file a stopped run left mutated is put back).
commit=$(git -C "$repo" rev-parse HEAD) || exit 2
say "copying $repo at ${commit:0:12} to $src"
git -C "$repo" archive --format=tar HEAD | python3 -c '
import os, sys, tarfile
dest = sys.argv[1]
keep = {os.path.join(dest, d, "node_modules") for d in sys.argv[2:]}
seen, written = set(), 0
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tar:
    for m in tar:
        path = os.path.join(dest, m.name)
        if m.isdir():
            os.makedirs(path, exist_ok=True)
            continue
        seen.add(path)
        if m.issym():
            if not (os.path.islink(path) and os.readlink(path) == m.linkname):
                if os.path.lexists(path): os.remove(path)
                os.symlink(m.linkname, path)
            continue
        data = tar.extractfile(m).read()
        try:
            with open(path, "rb") as f: same = f.read() == data
        except OSError: same = False
        if not same:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if os.path.lexists(path): os.remove(path)
            with open(path, "wb") as f: f.write(data)
            os.chmod(path, m.mode & 0o7777)
            written += 1
removed = 0
for d, dirs, files in os.walk(dest):
    dirs[:] = [x for x in dirs if os.path.join(d, x) not in keep]
    for x in files:
        p = os.path.join(d, x)
        if p not in seen and p not in keep:
            os.remove(p); removed += 1
print(f"{written} files written, {removed} removed")
' "$src" "${npm_folders[@]}" || { echo "run.sh: copying the tree failed" >&2; exit 2; }
link_npm_folders "$repo" "$src"
"${tool[@]}" check "$defects" "$src" || { echo "run.sh: fix $defects first" >&2; exit 2; }

# 2. The build (ccache: paths relative to the copy, so later runs hit).
export CCACHE_BASEDIR=$src
build_tree() {  # build_tree LOG
  cmake --build "$build" -j"$jobs" >"$1" 2>&1
}
if [[ ! -f $build/CMakeCache.txt ]]; then
  say "configuring $build"
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DREFEVAL_SHARED_DIR="$shared" >"$logs/configure.log" 2>&1 ||
    { echo "run.sh: cmake failed: $logs/configure.log" >&2; exit 2; }
fi
t=$SECONDS
say "building the unchanged tree (log: $logs/build.log)"
build_tree "$logs/build.log" || { tail -20 "$logs/build.log"; echo "run.sh: the unchanged tree does not build" >&2; exit 2; }
say "built in $(elapsed $t)"

# ctest_run LOG REGEX: runs the tests (all if REGEX is empty); prints the failed ones, one a line.
ctest_run() {
  local log=$1 regex=$2 args=(--test-dir "$build" -j"$jobs" --timeout 1200 --output-on-failure)
  [[ -n $regex ]] && args+=(-R "$regex")
  rm -f "$build/Testing/Temporary/LastTestsFailed.log"
  ctest "${args[@]}" >"$log" 2>&1
  if [[ -f $build/Testing/Temporary/LastTestsFailed.log ]]; then
    # unit is one test of ~600 doctest cases: it is shown as unit(N), N cases failed
    local cases
    cases=$(sed -n 's/^\[doctest\] test cases:.*| *\([0-9]*\) failed.*/\1/p' "$log" | head -1)
    sed -n 's/^[0-9]*://p' "$build/Testing/Temporary/LastTestsFailed.log" | sed "s/^unit\$/unit${cases:+($cases)}/"
  fi
}
test_names() {  # the tests REGEX selects, space-separated
  ctest --test-dir "$build" -N ${1:+-R "$1"} | sed -n 's/^ *Test *#[0-9]*: //p' | tr '\n' ' ' | sed 's/ $//'
}

# 3. The baseline: every test some defect names must pass on the unchanged tree. (The union is
# made of test names: ctest's regular expressions do not anchor ^ and $ inside an alternative.)
names=()
for id in $ids; do
  regex=$("${tool[@]}" get "$defects" "$id" tests)
  selected=$(test_names "$regex")
  [[ -n $selected ]] || { echo "run.sh: [$id] tests '$regex' select no test" >&2; exit 2; }
  names+=($selected)
done
union="^($(printf '%s\n' "${names[@]}" | sort -u | sed 's/[.+]/\\&/g' | paste -sd '|'))\$"
((all)) && union=""
count=$(test_names "$union" | wc -w)
[[ -n $union ]] && ((count != $(printf '%s\n' "${names[@]}" | sort -u | wc -l))) &&
  { echo "run.sh: the baseline's regex '$union' selects $count tests, not the defects' tests" >&2; exit 2; }
t=$SECONDS
say "baseline: $count tests on the unchanged tree"
failed=$(ctest_run "$logs/baseline.log" "$union")
if [[ -n $failed ]]; then
  echo "run.sh: on the unchanged tree these tests fail, so they cannot judge a defect: $(echo $failed) (log: $logs/baseline.log)" >&2
  exit 2
fi
say "baseline passed in $(elapsed $t)"

# 4. The defects, one at a time; the file is put back whatever happens.
active=""
restore() {
  if [[ -n $active ]]; then
    cp "$root/original" "$src/$active" && active=""
  fi
}
trap 'restore; exit 130' INT TERM
trap restore EXIT

rows=()
missed=0
broken=0
for id in $ids; do
  file=$("${tool[@]}" get "$defects" "$id" file)
  regex=$("${tool[@]}" get "$defects" "$id" tests)
  ((all)) && regex=""
  t=$SECONDS
  cp "$src/$file" "$root/original" || exit 2
  active=$file
  if ! "${tool[@]}" apply "$defects" "$id" "$src"; then
    restore
    rows+=("$id|$file|-|NOT APPLIED|0")
    broken=$((broken + 1))
    continue
  fi
  say "[$id] $file: building"
  if ! build_tree "$logs/$id.build.log"; then
    restore
    say "[$id] does not compile (log: $logs/$id.build.log)"
    rows+=("$id|$file|-|DOES NOT BUILD|$((SECONDS - t))")
    broken=$((broken + 1))
    continue
  fi
  say "[$id] running $(test_names "$regex" | wc -w) tests"
  failed=$(ctest_run "$logs/$id.ctest.log" "$regex" | tr '\n' ' ' | sed 's/ $//')
  restore
  if [[ -n $failed ]]; then
    result=CAUGHT
  else
    result=MISSED
    missed=$((missed + 1))
  fi
  say "[$id] $result${failed:+ by $failed} ($(elapsed $t))"
  rows+=("$id|$file|${failed:--}|$result|$((SECONDS - t))")
done

# 5. The table.
{
  echo "Planted defects at ${commit:0:12} ($(date -u +%Y-%m-%d), $( ((all)) && echo 'whole suite' || echo 'named tests'), $(elapsed) in all):"
  echo
  echo "| defect | file | caught by (failed tests) | result | time |"
  echo "|---|---|---|---|---|"
  for r in "${rows[@]}"; do
    IFS='|' read -r id file failed result secs <<<"$r"
    printf '| %s | %s | %s | %s | %dm%02ds |\n' "$id" "$file" "$failed" "$result" $((secs / 60)) $((secs % 60))
  done
  echo
  echo "$((${#rows[@]} - missed - broken)) caught, $missed missed, $broken not applied or not building, of ${#rows[@]}."
} | tee "$root/results.md"
((missed || broken)) && exit 1
exit 0
