#!/usr/bin/env bash
# `refeval profile --memory` against an independent oracle (tests/data/memory/liveness.py: the live
# activation bytes of a run from the ONNX graph and the run's shapes, never from refeval's figures)
# on models made here (tests/data/memory/make_fixtures.py): an If whose branches read outer values
# (its bytes worked by hand), a held-out 12-layer Llama-style decoder's prefill of 32 tokens and
# ResNet-18 at batch 1 and 2. Every node's live_bytes within 1%, the peak, its node and the tensors
# alive there; report --by memory's JSON against the oracle; the file as a Chrome trace (the Trace
# Event Format's rules, and Chromium's own importer when Chromium and node are there); generate's
# KV-cache counter; a profile with one live_bytes 2% off is caught. --memory's cost is printed, not
# asserted. Needs Debian's python3-onnx and numpy; ResNet-18 also python3-torch and -torchvision.
# Usage: profile_memory_test.sh REFEVAL SOURCE_DIR
set -u
refeval=$(realpath "$1")
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"
py=/usr/bin/python3
data=$src/tests/data/memory
oracle="$py $data/liveness.py"
devtools() { command -v node >/dev/null && { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }; }
devtools || echo "note: node or chromium missing: the profiles are not loaded in Chromium's trace importer"

# check_profile NAME MODEL: $work/NAME.json as refeval wrote it for MODEL, checked every way.
check_profile() {
  local name=$1 model=$2
  for run in 1 3; do  # the first run after the warm-up and the last
    check "$name: the oracle agrees with run $run" $oracle "$model" $work/$name.json --run $run --json $work/$name.oracle$run.json --quiet
  done
  "$refeval" report $work/$name.json --by memory --format json --runs 1:2 >$work/$name.report.json
  check "$name: report --by memory --format json is the oracle's peak, timeline and tensors at the peak" \
    $py - $work/$name.report.json $work/$name.oracle1.json <<'PY'
import json, sys
report, oracle = (json.load(open(p)) for p in sys.argv[1:])
assert report["run"] == 1, report["run"]
assert abs(report["peak_bytes"] - oracle["peak_bytes"]) <= 0.01 * oracle["peak_bytes"], (report["peak_bytes"], oracle["peak_bytes"])
assert report["peak_node"] == oracle["peak_node"], (report["peak_node"], oracle["peak_node"])
assert len(report["timeline"]) == len(oracle["timeline"]), (len(report["timeline"]), len(oracle["timeline"]))
for r, o in zip(report["timeline"], oracle["timeline"]):
    assert r["node"] == o["node"] and abs(r["live_bytes"] - o["live_bytes"]) <= 0.01 * o["live_bytes"], (r, o)
names = lambda entries: {t["name"] for t in entries if t["bytes"] > 0}
assert names(report["at_peak"]) == names(oracle["at_peak"]), names(report["at_peak"]) ^ names(oracle["at_peak"])
PY
  check "$name: a valid Chrome trace (Trace Event Format)" $py $data/check_trace.py $work/$name.json
  if devtools; then
    node --experimental-websocket $data/devtools_trace.mjs $work/$name.json >$work/$name.devtools.json 2>$work/devtools.err ||
      sed 's/^/    /' $work/devtools.err
    check "$name: Chromium's trace importer keeps every event in the file's nesting" \
      $py $data/check_trace.py $work/$name.json --devtools $work/$name.devtools.json
  fi
}

# The If with outer captures: its bytes as make_fixtures.py's table works them by hand.
$py $data/make_fixtures.py $work if || exit 1
expect 0 "^peak: 0.13 MiB of activations at if \(node 4 of 6\)" "" -- \
  -q profile $work/if_capture.onnx --input X=$work/X.npy --input cond=$work/cond.npy --repeat 3 -o $work/if.json --memory
check_profile if $work/if_capture.onnx
check "if: the hand-worked timeline; C and A alive at the If through its branches, D only at its producer, E to the end" \
  $py - $work/if.report.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert [(t["node"], t["live_bytes"]) for t in r["timeline"]] == [
    ("relu", 32769), ("big", 98305), ("dead", 106497), ("early", 114689), ("if", 131073), ("Mul_5", 81920)], r["timeline"]
assert [(t["name"], t["producer"], t["last_reader"]) for t in r["at_peak"]] == [
    ("C", "big", "if"), ("Y", "if", "Mul_5"), ("A", "relu", "if"), ("E", "early", "(graph output)"), ("cond", "(graph input)", "if")], r["at_peak"]
PY

# report --by memory in each format on the same If: the CSV timeline is that table, --top keeps
# the largest tensors, Markdown fences the summary, and the page draws a column per node (the
# peak's marked) and lists the tensors alive there.
"$refeval" report $work/if.json --by memory --format csv --runs 1:2 >$work/if.csv
check "if: --format csv is the hand-worked timeline" diff - $work/if.csv <<'CSV'
index,node,op_type,live_bytes
0,relu,Relu,32769
1,big,Tile,98305
2,dead,Cast,106497
3,early,Neg,114689
4,if,If,131073
5,Mul_5,Mul,81920
CSV
expect 0 "^alive at the peak \(2 of 5 tensors\):" "" -- report $work/if.json --by memory --top 2 --runs 1:2
check "if: --top 2 keeps C and Y, the two largest" bash -c "grep -qE '^C +65536 ' $work/out && grep -qE '^Y +32768 ' $work/out && ! grep -qE '^A ' $work/out"
expect 0 '^\| C \| 65536 \| 0\.06 \| 50\.0% \| big \| if \|$' "" -- report $work/if.json --by memory --format md --runs 1:2
check "if: --format md fences the summary" bash -c "[[ \$(head -1 $work/out) == '\`\`\`' ]] && grep -q '^peak: 0.13 MiB of activations at if' $work/out"
"$refeval" -q report $work/if.json --by memory --format html --runs 1:2 -o $work/if.html
check "if: the page's timeline is the hand-worked one, the If marked, and its table the tensors alive there" \
  $py - $work/if.html <<'PY'
import re, sys
page = open(sys.argv[1]).read()
columns = re.findall(r'<rect class="(live|live peak)"[^>]*><title>(\S+) \((\w+)\): [0-9.]+ MiB \((\d+) bytes\)</title>', page)
assert [(node, int(b)) for _, node, _, b in columns] == [
    ("relu", 32769), ("big", 98305), ("dead", 106497), ("early", 114689), ("if", 131073), ("Mul_5", 81920)], columns
assert [node for kind, node, _, _ in columns if kind == "live peak"] == ["if"], columns
assert "<h1>Memory: " in page and "peak 0.13 MiB at if</text>" in page
table = page[page.index('id="at-peak"'):]
rows = re.findall(r'<tr><td class="l">([^<]*)</td><td>(\d+)</td>', table)
assert rows == [("C", "65536"), ("Y", "32768"), ("A", "16384"), ("E", "16384"), ("cond", "1")], rows
PY

# The held-out decoder: 12 layers of 768, 12 heads over 4 KV heads, MLP 2048, vocabulary 32000;
# a prefill of 32 token ids, the past KV empty.
$py $data/make_fixtures.py $work decoder >/dev/null || exit 1
decoder=(-q profile $work/decoder/model.onnx --input input_ids=$work/decoder/input_ids.npy
         --input position_ids=$work/decoder/position_ids.npy --fill attention_mask=1 --dim batch_size=1
         --dim sequence_length=32 --dim total_sequence_length=32 --dim past_sequence_length=0)
expect 0 "^peak: .* MiB of activations at " "" -- "${decoder[@]}" --repeat 3 -o $work/decoder.json --memory
check_profile decoder $work/decoder/model.onnx

# --depth: the peak per name scope is the oracle's highest live bytes among the scope's nodes.
"$refeval" report $work/decoder.json --by memory --depth 2 --format json --runs 1:2 >$work/decoder.scopes.json
check "decoder: --depth 2 gives each scope the oracle's highest live bytes, at one of its nodes" \
  $py - $work/decoder.scopes.json $work/decoder.oracle1.json <<'PY'
import json, sys
report, oracle = (json.load(open(p)) for p in sys.argv[1:])
def scope(node):  # the first two name scopes: "/model/layers.3/mlp/Mul" is in model/layers.3
    parts = [p for p in node.split("/")[:-1] if p]
    return "/".join(parts[:2]) if parts else "(no scope)"
peaks = {}
for t in oracle["timeline"]:
    peaks[scope(t["node"])] = max(peaks.get(scope(t["node"]), 0), t["live_bytes"])
assert [s["scope"] for s in report["scopes"]] == list(peaks), [s["scope"] for s in report["scopes"]]
for s in report["scopes"]:
    assert abs(s["peak_bytes"] - peaks[s["scope"]]) <= 0.01 * peaks[s["scope"]] and scope(s["node"]) == s["scope"], s
PY

# --compare: two profiles' figures side by side (the If before, the decoder after), against
# their oracles; the page holds both memory sections.
"$refeval" report $work/if.json --by memory --compare $work/decoder.json --format json --runs 1:2 >$work/compare.json
"$refeval" report $work/if.json --by memory --compare $work/decoder.json --runs 1:2 >$work/compare.txt
"$refeval" -q report $work/if.json --by memory --compare $work/decoder.json --format html --runs 1:2 -o $work/compare.html
check "compare: the peaks, their ratio and the peak nodes are the oracles'" \
  $py - $work/compare.json $work/compare.txt $work/compare.html $work/if.oracle1.json $work/decoder.oracle1.json <<'PY'
import json, re, sys
report, text, page = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), open(sys.argv[3]).read()
before, after = (json.load(open(p)) for p in sys.argv[4:])
assert report["before"]["peak_bytes"] == before["peak_bytes"] == 131073, report["before"]["peak_bytes"]
assert abs(report["after"]["peak_bytes"] - after["peak_bytes"]) <= 0.01 * after["peak_bytes"]
assert abs(report["peak_ratio"] - after["peak_bytes"] / before["peak_bytes"]) <= 0.01 * report["peak_ratio"]
assert re.search(r"^memory: \S+if\.json -> \S+decoder\.json$", text, re.M), text[:200]
assert re.search(rf"^peak node +if +{re.escape(after['peak_node'])}$", text, re.M)
assert re.search(rf"^nodes +6 +{len(after['timeline'])}$", text, re.M)
assert text.index("before, alive at its peak:") < text.index("after, alive at its peak:")
assert "<h1>Memory compared: " in page and page.count("<h2>Memory</h2>") == 2
assert f'<tr><td class="l">peak node</td><td>if</td><td>{after["peak_node"]}</td>' in page
PY

# ResNet-18 (torchvision, random weights) at batch 1 and 2: the peak doubles with the batch.
if $py -c "import torch, torchvision" 2>/dev/null; then
  $py $data/make_fixtures.py $work resnet18 || exit 1
  for b in 1 2; do
    expect 0 "^peak: .* MiB of activations at " "" -- \
      -q profile $work/resnet18_b$b/model.onnx --input input=$work/resnet18_b$b/input.npy --repeat 3 -o $work/resnet18_b$b.json --memory
    check_profile resnet18_b$b $work/resnet18_b$b/model.onnx
  done
  check "resnet18: batch 2's peak is twice batch 1's, at the same node" $py - $work/resnet18_b1.oracle1.json $work/resnet18_b2.oracle1.json <<'PY'
import json, sys
b1, b2 = (json.load(open(p)) for p in sys.argv[1:])
assert b1["peak_node"] == b2["peak_node"], (b1["peak_node"], b2["peak_node"])
assert abs(b2["peak_bytes"] / b1["peak_bytes"] - 2) < 0.01, (b1["peak_bytes"], b2["peak_bytes"])
PY
else
  echo "note: python3-torch / python3-torchvision missing: ResNet-18 not checked"
fi

# The oracle catches one node's live_bytes 2% off (its counter changed with it, so only the
# per-node comparison sees it).
check "a profile with one live_bytes 2% off fails the oracle" $py - $work/decoder.json $work/off.json <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))
runs = sorted(e["ts"] for e in events if e["name"] == "model_run")
nodes = [e for e in events if e.get("cat") == "Node" and "live_bytes" in e["args"] and runs[1] <= e["ts"] < runs[2]]
starts = [e["ts"] for e in events if e.get("ph") == "C"]
alone = [e for e in nodes if starts.count(e["ts"]) == 1]  # nodes alone in their microsecond
node = alone[len(alone) // 2]
old, node["args"]["live_bytes"] = node["args"]["live_bytes"], round(node["args"]["live_bytes"] * 1.02)
counter = next(e for e in events if e.get("ph") == "C" and e["ts"] == node["ts"] and e["args"]["activations"] == old)
counter["args"]["activations"] = node["args"]["live_bytes"]
json.dump(events, open(sys.argv[2], "w"))
PY
$oracle $work/decoder/model.onnx $work/off.json --quiet >$work/out
check "the oracle names the node 2% off and nothing else" bash -c "grep -q '^FAIL: .*: live_bytes [0-9]*, oracle [0-9]* (+2.0[0-9]%)' $work/out && [[ \$(grep -c '^FAIL' $work/out) -eq 1 ]]"
check "the oracle's exit status says so" bash -c "! $oracle $work/decoder/model.onnx $work/off.json --quiet >/dev/null"

# generate --profile --memory: the KV-cache series grows by one token's keys and values a step.
"$refeval" -q generate $src/tests/data/ort/decoders_torch/b1/model.onnx --prompt-len 8 --new-tokens 6 --profile $work/gen.json --memory >/dev/null
check "generate: the oracle agrees with the prefill and a decode step" bash -c \
  "$oracle $src/tests/data/ort/decoders_torch/b1/model.onnx $work/gen.json --run 0 --quiet && $oracle $src/tests/data/ort/decoders_torch/b1/model.onnx $work/gen.json --run 3 --quiet"
check "generate: the kv_cache counter is the cache each step reads, strictly increasing over the decode steps" \
  $py - $work/gen.json <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))
runs = sorted((e for e in events if e["name"] == "model_run"), key=lambda e: e["ts"])
counters = sorted((e for e in events if e.get("ph") == "C"), key=lambda e: e["ts"])
during = []
for k, r in enumerate(runs):
    inside = [c["args"]["kv_cache"] for c in counters if r["ts"] <= c["ts"] < r["ts"] + r["dur"]]
    end = [c["args"]["kv_cache"] for c in counters if c["ts"] == r["ts"] + r["dur"] and c["args"]["activations"] == 0]
    before = runs[k - 1]["args"]["kv_cache_bytes"] if k else 0
    assert inside and set(inside) == {before}, (k, set(inside), before)  # the cache the step reads
    assert end == [r["args"]["kv_cache_bytes"]], (k, end, r["args"]["kv_cache_bytes"])  # the cache it leaves
    during.append(inside[0])
decode = [v for v, r in zip(during, runs) if r["args"]["phase"] == "decode"]
assert len(decode) == 5 and all(a < b for a, b in zip(decode, decode[1:])), decode
assert len({b - a for a, b in zip(decode, decode[1:])}) == 1, decode  # one token's keys and values each step
PY
check "generate: a valid Chrome trace" $py $data/check_trace.py $work/gen.json

# The generation loop's reports: per step, the peak (the oracle's, for each run) and the KV cache
# (the trace's model_run figures) in the memory report and its page; the profile page adds the
# latency per step, the KV cache's growth and an op table per phase, each from the trace's events.
for run in 0 1 2 3 4 5; do
  $oracle $src/tests/data/ort/decoders_torch/b1/model.onnx $work/gen.json --run $run --json $work/gen.oracle$run.json --quiet >/dev/null
done
"$refeval" report $work/gen.json --by memory --format json >$work/gen.memory.json
"$refeval" report $work/gen.json --by memory >$work/gen.memory.txt
"$refeval" -q report $work/gen.json --by memory --format html -o $work/gen.memory.html
"$refeval" -q report $work/gen.json --format html -o $work/gen.html
check "generate: the memory report's steps and pages are the trace's runs and the oracle's peaks" \
  $py - $work/gen.json $work/gen.memory.json $work/gen.memory.txt $work/gen.memory.html $work/gen.html $work <<'PY'
import json, re, sys
events, report = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
text, memory_page, page = (open(p).read() for p in sys.argv[3:6])
runs = sorted((e for e in events if e["name"] == "model_run"), key=lambda e: e["ts"])
oracles = [json.load(open(f"{sys.argv[6]}/gen.oracle{k}.json")) for k in range(len(runs))]
assert [r["phase"] for r in report["runs"]] == ["prefill"] + ["decode"] * 5
for k, (run, got, oracle) in enumerate(zip(runs, report["runs"], oracles)):
    assert (got["run"], got["phase"], got["step"], got["kv_cache_bytes"]) == (k, run["args"]["phase"], run["args"]["step"], run["args"]["kv_cache_bytes"]), got
    assert abs(got["peak_bytes"] - oracle["peak_bytes"]) <= 0.01 * oracle["peak_bytes"] and got["peak_node"] == oracle["peak_node"], (got, oracle["peak_node"])
    mib = lambda b: f"{b / 2**20:.2f}"
    assert re.search(rf"^ +{k} +{got['phase']} +{got['step']} +{mib(got['peak_bytes'])} +{re.escape(got['peak_node'])} +{mib(got['kv_cache_bytes'])}$", text, re.M), k
    assert f"<title>step {k} ({got['phase']}): peak activations {mib(got['peak_bytes'])} MiB at {got['peak_node']}</title>" in memory_page, k
    assert f"<title>step {k} ({got['phase']}): KV cache {mib(got['kv_cache_bytes'])} MiB</title>" in memory_page, k
    # the profile page: latency and KV cache columns per step, the prefill in its own colour
    kind = "prefill" if k == 0 else "decode"
    assert re.search(rf'<rect class="{kind}"[^>]*><title>step {k} \({got["phase"]}\): {run["dur"] / 1000:.3f} ms</title>', page), k
    assert re.search(rf'<rect class="{kind}"[^>]*><title>step {k} \({got["phase"]}\): {got["kv_cache_bytes"] / 2**20:.3f} MiB</title>', page), k
assert "<h2>Generation</h2>" in page and "Latency per decode step (ms)" in page and "<h2>Memory</h2>" in page
nodes = [e for e in events if e.get("cat") == "Node"]
for phase in ("prefill", "decode"):
    inside = [r for r in runs if r["args"]["phase"] == phase]
    calls = {}
    for e in nodes:
        if any(r["ts"] <= e["ts"] < r["ts"] + r["dur"] for r in inside):
            calls[e["args"]["op_name"]] = calls.get(e["args"]["op_name"], 0) + 1
    wall = sum(r["dur"] for r in inside) / 1000
    plural = "" if len(inside) == 1 else "s"
    assert f"<h2>Phase {phase} ({len(inside)} run{plural}, {wall:.3f} ms)</h2>" in page, phase
    table = page[page.index(f'id="ops-{phase}"'):]
    table = table[:table.index("</table>")]
    rows = dict(re.findall(r"<tr><td>(\w+)</td><td>[0-9.]+</td><td>(\d+)</td>", table))
    assert {op: int(n) for op, n in rows.items()} == calls, (phase, rows, calls)
PY
expect 2 "" "error: --memory needs --profile FILE.json" -- generate $src/tests/data/ort/decoders_torch/b1/model.onnx --prompt-len 4 --memory
# A profile recorded without --memory has no live bytes to report: one line, exit 2.
"$refeval" -q profile $work/if_capture.onnx --input X=$work/X.npy --input cond=$work/cond.npy --repeat 1 -o $work/plain.json >/dev/null
expect 2 "" "error: .*plain.json: no memory figures in the runs read" -- report $work/plain.json --by memory
check "without --memory: no live_bytes, no counters" $py -c "
import json, sys
events = json.load(open(sys.argv[1]))
sys.exit(any('live_bytes' in e.get('args', {}) or 'memory' in e.get('args', {}) or e.get('ph') == 'C' for e in events))" $work/plain.json

# What --memory costs: the decoder's median model_run over 10 runs without and with it (printed only).
for flag in "" --memory; do
  "$refeval" "${decoder[@]}" --repeat 10 -o $work/cost.json $flag | sed -n "s/^model_run: median \([0-9.]*\) ms.*/\1/p" >$work/cost$flag
done
echo "info: --memory's cost on the decoder: median model_run $(cat $work/cost) ms without, $(cat $work/cost--memory) ms with"
finish
