#!/usr/bin/env python3
"""Checks a profile written by `refeval profile` against ONNX Runtime's schema, independently of
refeval (stdlib only): a JSON array of complete events ("ph": "X") with cat, pid, tid, ts, dur,
name, args; Session events model_loading_uri and session_initialization, then model_run spans;
Node events "<node>_kernel_time" whose args hold ORT's keys with ORT's value types (numbers as
strings, shapes as [{"type": [dims]}]); each node event inside a model_run; per run, the main
graph's node times add up to at most the run's wall time and at least half of it.
With ORT_PROFILE, also: every args key refeval writes is one ORT writes too (or refeval's `depth`).

usage: check_profile_schema.py PROFILE.json [--runs N] [--ort ORT_PROFILE.json] [--min-share F]
(A tiny model's runs are mostly per-run overhead: pass --min-share 0 for those.)
Prints one line per run (node sum / wall); exit 1 with the reason on the first violation.
"""
import argparse
import json
import sys

KERNEL_ARGS = {"op_name", "provider", "node_index", "activation_size", "parameter_size", "output_size",
               "input_type_shape", "output_type_shape", "thread_scheduling_stats"}


def fail(message):
    sys.exit(f"FAIL: {message}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--runs", type=int, help="the number of model_run events expected")
    ap.add_argument("--ort", help="an ORT profile whose kernel args keys must include refeval's")
    ap.add_argument("--min-share", type=float, default=0.5,
                    help="the least share of each run's wall time the node times must add up to (0.5)")
    a = ap.parse_args()
    events = json.load(open(a.profile, encoding="utf-8"))
    if not isinstance(events, list) or not events:
        fail("not a non-empty JSON array")
    for e in events:
        if set(e) != {"cat", "pid", "tid", "dur", "ts", "ph", "name", "args"} or e["ph"] != "X":
            fail(f"event fields {sorted(e)}: {e}")
        if not all(isinstance(e[k], int) for k in ("pid", "tid", "dur", "ts")):
            fail(f"pid, tid, dur and ts must be integers: {e}")
    session = [e["name"] for e in events if e["cat"] == "Session"]
    if session[:2] != ["model_loading_uri", "session_initialization"]:
        fail(f"the first Session events are {session[:2]}")
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "model_run")
    if a.runs is not None and len(runs) != a.runs:
        fail(f"{len(runs)} model_run events, expected {a.runs}")
    nodes = [e for e in events if e["cat"] == "Node"]
    ort_keys = None
    if a.ort:
        ort_keys = set()
        for e in json.load(open(a.ort, encoding="utf-8")):
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                ort_keys |= set(e["args"])
    sums = [0] * len(runs)
    for n in nodes:
        args = n["args"]
        if not n["name"].endswith("_kernel_time") or not KERNEL_ARGS <= set(args):
            fail(f"node event without ORT's name or args: {n}")
        for k in ("node_index", "activation_size", "parameter_size", "output_size"):
            if not (isinstance(args[k], str) and args[k].isdigit()):
                fail(f"{k} must be a string of digits, as ORT writes it: {n}")
        for k in ("input_type_shape", "output_type_shape"):
            for item in args[k]:
                if not (isinstance(item, dict) and len(item) == 1 and all(isinstance(d, int) for d in next(iter(item.values())))):
                    fail(f"{k} items must be {{type: [dims]}}: {n}")
        if ort_keys is not None and not set(args) - {"depth"} <= ort_keys:
            fail(f"args {sorted(set(args) - ort_keys)} are not ORT's")
        inside = [i for i, (lo, hi) in enumerate(runs) if lo <= n["ts"] and n["ts"] + n["dur"] <= hi]
        if not inside:
            fail(f"node event outside every model_run: {n}")
        if "depth" not in args:
            sums[inside[0]] += n["dur"]
    for i, ((lo, hi), s) in enumerate(zip(runs, sums)):
        wall = hi - lo
        print(f"run {i}: nodes {s} us / wall {wall} us = {s / wall if wall else 0:.3f}")
        if s > wall or s < a.min_share * wall:
            fail(f"run {i}: node times {s} us against wall {wall} us")
    print(f"{a.profile}: {len(runs)} runs, {len(nodes)} node events: ORT's schema, node times within each run's wall time")


if __name__ == "__main__":
    main()
