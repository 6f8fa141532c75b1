#!/usr/bin/python3
"""Prints the median time, in ms, of the node kernels of one run in a profile JSON in ONNX
Runtime's format (ORT's own, or refeval's `profile` output): the Node events' kernel_time
durations summed per run (in time order, a run's kernels follow its Session model_run event,
which starts first), the first run (warm-up) left out. Usage: kernel_ms.py PROFILE.json"""
import json
import statistics
import sys

events = json.load(open(sys.argv[1]))
events = events["traceEvents"] if isinstance(events, dict) else events
runs, current = [], None
for e in sorted((e for e in events if e.get("ph", "X") == "X"), key=lambda e: e["ts"]):
    if e.get("cat") == "Session" and e.get("name") == "model_run":
        current = None
    elif e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
        if current is None:
            current = [0.0]
            runs.append(current)
        current[0] += e["dur"]
print(f"{statistics.median(r[0] for r in runs[1:] or runs) / 1000:.4f}")
