#!/usr/bin/env bash
# `refeval profile` and `refeval report` as a user runs them: ORT's file layout from refeval's
# profiler, ORT's real files read (fences or not), every format, --compare, and bad files as
# one-line errors with exit 2.
# Usage: profile_report_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
fixtures=$src/tests/data/profiles
totals="python3 $src/tests/tools/profile/ort_profile_totals.py"

# profile: W warm-up + N runs, the file named, the per-op table printed.
expect 0 "^profile: $work/lr.json \(2 warm-up \+ 3 profiled runs, 27 events\)" "" -- \
  profile $src/examples/linreg.onnx --input X=$src/examples/X.npy --warmup 2 --repeat 3 -o $work/lr.json
check "profile prints the per-op table of the profiled runs" grep -qE "^Add +[0-9.]+ +6 " $work/out
check "the file follows ORT's schema, node events inside their runs" \
  python3 $src/tests/tools/profile/check_profile_schema.py $work/lr.json --runs 5 --ort $fixtures/ort-1.30-linreg-disabled.json --min-share 0
# Default file name as ORT's, in the current folder.
(cd $work && "$refeval" profile $src/examples/linreg.onnx --input X=$src/examples/X.npy --repeat 1 >/dev/null)
check "default name refeval_profile_<date>_<time>.json" bash -c "ls $work | grep -qE '^refeval_profile_[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}\.json$'"

# report: ORT's own files give the totals an independent script computes.
for f in ort-1.30-linreg-disabled ort-1.30-linreg-all ort-web-1.16.3-linreg-fences; do
  "$refeval" report $fixtures/$f.json --format csv | cut -d, -f1-3 >$work/ours.csv
  $totals $fixtures/$f.json >$work/theirs.csv
  check "$f: report equals the independent totals" cmp -s $work/ours.csv $work/theirs.csv
done
expect 0 "fence 0.000 ms \(24 events\)" "" -- report $fixtures/ort-web-1.16.3-linreg-fences.json
expect 0 "^op_type,total_ms,count,mean_ms,pct$" "" -- report $fixtures/ort-1.30-linreg-disabled.json --format csv
expect 0 "^/Add_1 +Add +CPUExecutionProvider " "" -- report $fixtures/ort-1.30-linreg-disabled.json --by node
expect 0 "^CPUExecutionProvider " "" -- report $fixtures/ort-1.30-linreg-disabled.json --by provider
expect 0 "^\| op_type \| total_ms" "" -- report $fixtures/ort-1.30-linreg-disabled.json --format md
expect 0 "\"runs_used\": 4" "" -- report $fixtures/ort-1.30-linreg-disabled.json --format json --include-warmup
expect 0 "runs 2-3 of 4" "" -- report $fixtures/ort-1.30-linreg-disabled.json --runs 2:
check "--top 1 keeps one row" bash -c "[[ \$('$refeval' report $fixtures/ort-1.30-linreg-disabled.json --format csv --top 1 | wc -l) -eq 2 ]]"
# refeval's file and ORT's read together, and compared.
expect 0 "runs 1-4 of 5" "" -- report $work/lr.json
expect 0 "^MatMul .* vanished$" "" -- report $fixtures/ort-1.30-linreg-disabled.json --compare $fixtures/ort-1.30-linreg-all.json
expect 0 "^Gemm .* appeared$" "" -- report $fixtures/ort-1.30-linreg-disabled.json --compare $fixtures/ort-1.30-linreg-all.json
expect 0 "^op_type,before_ms,before_count,after_ms,after_count,delta_ms,speedup,status$" "" -- \
  report $fixtures/ort-1.30-linreg-disabled.json --compare $fixtures/ort-1.30-linreg-all.json --format csv
expect 0 "" "report written to $work/r.md" -- report $fixtures/ort-1.30-linreg-disabled.json --format md -o $work/r.md
check "-o writes the file" grep -q "| Add |" $work/r.md

# --format html: the per-op table and each op type's calls are the independent totals; --compare's
# page gives per-run times and calls (the totals over the 3 runs) with what vanished and appeared,
# then both profiles' timelines, calls and node tables side by side.
"$refeval" report $fixtures/ort-1.30-linreg-disabled.json --compare $fixtures/ort-1.30-linreg-all.json --format json >$work/compare.json
check "json: the comparison's rows are the independent totals per run" \
  python3 - $work/compare.json $fixtures/ort-1.30-linreg-disabled.json $fixtures/ort-1.30-linreg-all.json $src/tests/tools/profile/ort_profile_totals.py <<'PY'
import csv, io, json, subprocess, sys
report = json.load(open(sys.argv[1]))
def totals(path):
    out = subprocess.run([sys.executable, sys.argv[4], path], capture_output=True, text=True, check=True).stdout
    return {r["op_type"]: (float(r["total_ms"]), int(r["count"])) for r in csv.DictReader(io.StringIO(out))}
before, after = totals(sys.argv[2]), totals(sys.argv[3])
assert report["by"] == "op_type" and report["before"]["runs_used"] == report["after"]["runs_used"] == 3, report["before"]
assert sorted(r["op_type"] for r in report["rows"]) == sorted(set(before) | set(after)), report["rows"]
for r in report["rows"]:
    (tb, nb), (ta, na) = before.get(r["op_type"], (0, 0)), after.get(r["op_type"], (0, 0))
    assert abs(r["before_ms"] - tb / 3) <= 1e-6 and abs(r["after_ms"] - ta / 3) <= 1e-6, r
    assert (r["before_count"], r["after_count"]) == (nb / 3, na / 3), r
    assert r["status"] == ("vanished" if not na else "appeared" if not nb else "both"), r
PY
"$refeval" -q report $fixtures/ort-1.30-linreg-disabled.json --format html -o $work/single.html
"$refeval" -q report $fixtures/ort-1.30-linreg-disabled.json --compare $fixtures/ort-1.30-linreg-all.json --format html -o $work/compare.html
check "html: the op table, the calls per op type and the comparison are the independent totals" \
  python3 - $work/single.html $work/compare.html $fixtures/ort-1.30-linreg-disabled.json $fixtures/ort-1.30-linreg-all.json \
  $src/tests/tools/profile/ort_profile_totals.py <<'PY'
import csv, io, re, subprocess, sys
single, compare = (open(p).read() for p in sys.argv[1:3])
def totals(path):
    out = subprocess.run([sys.executable, sys.argv[5], path], capture_output=True, text=True, check=True).stdout
    return {r["op_type"]: (float(r["total_ms"]), int(r["count"])) for r in csv.DictReader(io.StringIO(out))}
before, after = totals(sys.argv[3]), totals(sys.argv[4])
ops = single[single.index('id="ops"'):]
rows = re.findall(r"<tr><td>(\w+)</td><td>([0-9.]+)</td><td>(\d+)</td>", ops[:ops.index("</table>")])
assert {op: (float(ms), int(n)) for op, ms, n in rows} == before, rows
assert "<h2>Generation</h2>" not in single  # a session's runs, no generation loop: no per-step charts
for op, (ms, n) in before.items():
    calls = single[single.index(f'<details data-op="{op}">'):]
    calls = calls[:calls.index("</details>")]
    assert f"<summary>{op} &mdash; {n} calls, {ms:.3f} ms</summary>" in calls, op
    assert len(re.findall(r"<tr><td>[1-3]</td>", calls)) == n, op
table = compare[compare.index('id="compare"'):]
rows = re.findall(r"<tr><td>(\w+)</td><td>([0-9.]+)</td><td>([0-9.]+)</td><td>([0-9.]+)</td><td>([0-9.]+)</td><td>[-+0-9.]+</td><td>[0-9.x]*</td><td>(\w*)</td>",
                  table[:table.index("</table>")])
assert sorted(r[0] for r in rows) == sorted(set(before) | set(after)), rows
for op, b_ms, b_n, a_ms, a_n, status in rows:
    (tb, nb), (ta, na) = before.get(op, (0, 0)), after.get(op, (0, 0))
    assert abs(float(b_ms) - tb / 3) <= 0.001 and abs(float(a_ms) - ta / 3) <= 0.001, (op, b_ms, a_ms)
    assert (float(b_n), float(a_n)) == (nb / 3, na / 3), (op, b_n, a_n)
    assert status == ("vanished" if op not in after else "appeared" if op not in before else ""), (op, status)
assert compare.count('<table class="rows" id="nodes">') == 2 and compare.count('<figure class="timeline">') == 2
assert re.search(r"<h2>Before: \S+ort-1\.30-linreg-disabled\.json</h2>", compare) and re.search(r"<h2>After: \S+ort-1\.30-linreg-all\.json</h2>", compare)
PY

# --by scope: time per name scope of a torch export (2 Llama layers), equal to the independent totals;
# deeper scopes split a layer into attention and MLP; each row names its costliest node.
llama=$src/tests/data/optimize/hf_llama_opset17
"$refeval" -q profile $llama/model.onnx --inputs $llama/test_data_set_0 --repeat 3 -o $work/llama.json >/dev/null
for depth in 1 2 3; do
  "$refeval" report $work/llama.json --by scope --depth $depth --format csv | cut -d, -f1-3 >$work/ours.csv
  $totals $work/llama.json --scope $depth >$work/theirs.csv
  check "scope depth $depth: report equals the independent totals" cmp -s $work/ours.csv $work/theirs.csv
done
# This export names its nodes /layers.0/self_attn/... (no /model/ wrapper): depth 1 is the layer.
expect 0 "^layers.0 +[0-9.]+ .*/layers.0/" "" -- report $work/llama.json --by scope --depth 1
check "scope depth 1: both layers, the norm and the head" bash -c "grep -q '^layers.1 ' $work/out && grep -q '^norm ' $work/out && grep -q '^lm_head ' $work/out"
check "scope: the header names the costliest node" grep -qE "^scope +total_ms +count +mean_ms +pct +nodes +costliest_node +its_op +its_pct" $work/out
expect 0 "^layers.1/self_attn " "" -- report $work/llama.json --by scope
check "scope depth 2 (the default): attention and MLP apart" grep -q "^layers.1/mlp " $work/out
expect 0 '"depth": 3' "" -- report $work/llama.json --by scope --depth 3 --format json
check "scope json: the costliest node" grep -q '"costliest_node": {' $work/out
expect 0 "" "report written" -- report $work/llama.json --by scope --format html -o $work/scope.html
check "scope html: a chart and the table" bash -c "grep -q 'Duration per scope' $work/scope.html && grep -q '<td>layers.0/mlp</td>' $work/scope.html"
expect 2 "" "error: --depth: only with --by scope" -- report $work/llama.json --depth 2

# A file cut short: its complete events, a warning; bad files: one line, exit 2.
head -c 5000 $fixtures/ort-1.30-linreg-disabled.json >$work/cut.json
"$refeval" report $work/cut.json >$work/out 2>$work/err
check "a cut file: its complete events reported" grep -q "^Add " $work/out
check "a cut file: a warning says what was skipped" grep -q "warning: .*cut.json: 1 line(s) that are not complete JSON events were skipped" $work/err
: >$work/empty.json
expect 2 "" "error: .*empty.json: empty file, not a profile" -- report $work/empty.json
echo '[]' >$work/none.json
expect 2 "" "error: .*none.json: no events" -- report $work/none.json
echo 'garbage' >$work/garbage.json
expect 2 "" "error: .*garbage.json: not a profile" -- report $work/garbage.json
expect 2 "" "error: .*missing.json: cannot open the profile" -- report $work/missing.json
expect 2 "" "error: --runs: '9:' .*empty|selection is empty" -- report $fixtures/ort-1.30-linreg-disabled.json --runs 9:
expect 2 "" "error: --by: color not in \{op,node,provider,phase,scope,memory\}" -- report $fixtures/ort-1.30-linreg-disabled.json --by color
finish
