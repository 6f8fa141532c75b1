#!/usr/bin/env python3
"""Per-op-type totals of an ONNX Runtime profile, computed independently of refeval (stdlib only),
to check `refeval report --format csv` against: the kernel events (cat Node, name ending in
_kernel_time) that start inside a model_run span, runs in start order, the first run left out
as warm-up. Prints op_type,total_ms,count like refeval's CSV (sorted by total, then name).

With --scope DEPTH, totals per name scope instead: the first DEPTH `/`-separated scopes before a
node's own name ("/model/layers.3/mlp/MatMul" is "model/layers.3" at depth 2), "(no scope)" for a
name without any.

usage: ort_profile_totals.py PROFILE.json [--scope DEPTH]
"""
import json
import sys
from collections import defaultdict


def scope(node, depth):
    parts = node.lstrip("/").split("/")[:-1]
    if not parts:
        return "(no scope)"
    return "/".join(parts[:depth] if depth else parts)


def main(path, depth=None):
    with open(path, encoding="utf-8") as f:
        events = json.load(f)
    runs = sorted((int(e["ts"]), int(e["ts"]) + int(e["dur"])) for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")
    measured = runs[1:] if len(runs) > 1 else runs
    micros, count = defaultdict(int), defaultdict(int)
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        ts = int(e["ts"])
        if not any(lo <= ts <= hi for lo, hi in measured):
            continue
        if depth is None:
            op = e.get("args", {}).get("op_name", "(unknown)")
        else:
            op = scope(e["name"][:-len("_kernel_time")], depth)
        micros[op] += int(e["dur"])
        count[op] += 1
    print("op_type,total_ms,count" if depth is None else "scope,total_ms,count")
    for op in sorted(micros, key=lambda o: (-micros[o], o)):
        print(f"{op},{micros[op] / 1000:.3f},{count[op]}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--scope" else None)
