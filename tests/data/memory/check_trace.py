#!/usr/bin/python3
"""Checks a profile as a Chrome trace (stdlib only), against the Trace Event Format's rules for
the events it holds, and optionally against what Chromium's own importer made of it:

    check_trace.py PROFILE.json [--devtools IMPORTED.json]

The format (JSON Array Format): a list of objects; each has name (string), ph, ts (number of
microseconds), pid; ph is "X" (complete) or "C" (counter), nothing else; an X event has a tid and a
dur >= 0; a C event has args, a non-empty object whose every value is a finite number (each key a
series of the counter named by name); cat, when present, is a string, args an object. The X
events of one thread nest: each lies inside the one open around it (starting before its end) or
starts after it ended (viewers drop or misplace events that overlap partly).

IMPORTED.json: tests/data/memory/devtools_trace.mjs's output for the same file (the DevTools
Performance panel's trace engine). It must have kept every X event, each on its thread, with
the file's nesting: the roots are the events inside no other, every node event below a model_run,
each model_run with every node event of the run below it and its main-graph nodes as children (but for a node of 0 us drawn inside the
next one, which started in the same microsecond), and no warnings.
Prints one line; exit 1 with the reasons otherwise."""
import argparse
import json
import math
import sys


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def format_errors(events):
    errors = []
    if not isinstance(events, list):
        return ["not a JSON array of events"]
    for k, e in enumerate(events):
        where = f"event {k} ({e.get('name') if isinstance(e, dict) else e!r})"
        if not isinstance(e, dict):
            errors.append(f"{where}: not an object")
            continue
        if not isinstance(e.get("name"), str):
            errors.append(f"{where}: no string name")
        if e.get("ph") not in ("X", "C"):
            errors.append(f"{where}: ph {e.get('ph')!r}, not X or C")
        if not is_number(e.get("ts")) or e["ts"] < 0:
            errors.append(f"{where}: ts {e.get('ts')!r} is not a number of microseconds")
        if not isinstance(e.get("pid"), (int, str)) or isinstance(e.get("pid"), bool):
            errors.append(f"{where}: no pid")
        if "cat" in e and not isinstance(e["cat"], str):
            errors.append(f"{where}: cat is not a string")
        if "args" in e and not isinstance(e["args"], dict):
            errors.append(f"{where}: args is not an object")
        if e.get("ph") == "X":
            if not is_number(e.get("dur")) or e["dur"] < 0:
                errors.append(f"{where}: a complete event without a dur >= 0")
            if not isinstance(e.get("tid"), (int, str)) or isinstance(e.get("tid"), bool):
                errors.append(f"{where}: a complete event without a tid")
        if e.get("ph") == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(is_number(v) for v in args.values()):
                errors.append(f"{where}: a counter's args must be series of numbers: {args!r}")
    return errors


def nesting(events):
    """Per (pid, tid): the X events as a forest; errors for partial overlaps. Returns (roots, errors),
    roots as (event, children, descendants) in time order."""
    threads = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and is_number(e.get("ts")) and is_number(e.get("dur")):
            threads.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    forest, errors = {}, []
    for thread, xs in threads.items():
        xs = sorted(xs, key=lambda e: (e["ts"], -e["dur"]))  # a parent before the children starting with it
        roots, stack = [], []
        for e in xs:
            end = e["ts"] + e["dur"]
            # inside: from the parent's start to its end, starting before the end (as DevTools nests)
            while stack and not (stack[-1]["event"]["ts"] <= e["ts"] < stack[-1]["end"] and end <= stack[-1]["end"]):
                if e["ts"] < stack[-1]["end"]:  # starts inside, ends after
                    errors.append(f"thread {thread}: '{e['name']}' at {e['ts']} overlaps '{stack[-1]['event']['name']}' partly")
                stack.pop()
            node = {"event": e, "children": [], "end": end}
            (stack[-1]["children"] if stack else roots).append(node)
            stack.append(node)
        forest[thread] = roots
    return forest, errors


def zero_length_inside_a_sibling(run):
    """Main-graph events of 0 us drawn below another main-graph event (or a body node of it) that
    starts in the same microsecond: the viewer puts a 0 us event inside the deepest event open at its
    start, whichever ran first within that microsecond."""
    out = []
    def main_graph_node(e):
        return e.get("cat") == "Node" and "depth" not in e.get("args", {})
    def walk(node, caller):
        for c in node["children"]:
            e = c["event"]
            if main_graph_node(e) and caller is not None and e["dur"] == 0 and e["ts"] == caller["ts"]:
                out.append(e)
            walk(c, e if main_graph_node(e) else caller)
    for c in run["children"]:
        walk(c, c["event"] if main_graph_node(c["event"]) else None)
    return out


def size(node):
    return sum(1 + size(c) for c in node["children"])


def devtools_errors(events, forest, imported):
    errors = []
    threads = {(t["pid"], t["tid"]): t for t in imported["threads"]}
    xs = {}
    for e in events:
        if e.get("ph") == "X":
            xs.setdefault((e["pid"], e["tid"]), []).append(e)
    if set(threads) != set(xs):
        errors.append(f"DevTools made threads {sorted(threads)}, the file has {sorted(xs)}")
    for key, mine in forest.items():
        t = threads.get(key)
        if t is None:
            continue
        if t["entries"] != len(xs[key]):
            errors.append(f"thread {key}: DevTools kept {t['entries']} of the {len(xs[key])} complete events")
        want = [(r["event"]["name"], r["event"]["ts"], len(r["children"]), size(r)) for r in mine]
        got = [(r["name"], r["ts"], r["children"], r["descendants"]) for r in t["roots"]]
        if got != want:
            bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            errors.append(f"thread {key}: DevTools' tree differs from the file's nesting at root {bad}: "
                          f"{got[bad] if bad < len(got) else None} vs {want[bad] if bad < len(want) else None} "
                          "(name, ts, children, descendants)")
        nodes = sum(1 for n in xs[key] if n.get("cat") == "Node")
        below = sum(size(r) for r in mine if r["event"].get("name") == "model_run")
        if below != nodes:
            errors.append(f"thread {key}: {nodes - below} node event(s) below no model_run")
        for r in mine:  # each run's node events below it, the main graph's as its children
            e = r["event"]
            if e.get("name") != "model_run":
                continue
            inside = [n for n in xs[key] if n.get("cat") == "Node" and e["ts"] <= n["ts"] < e["ts"] + e["dur"] and
                      n["ts"] + n["dur"] <= e["ts"] + e["dur"]]
            top = [n for n in inside if "depth" not in n.get("args", {})]
            # A node of 0 us starting in the microsecond the next one starts in is drawn inside it
            # (ts and dur are whole microseconds; ORT's files do the same): the only other place allowed.
            placed = [c["event"] for c in r["children"]] + zero_length_inside_a_sibling(r)
            if size(r) != len(inside) or sorted(map(id, placed)) != sorted(map(id, top)):
                errors.append(f"model_run at {e['ts']}: {len(r['children'])} children / {size(r)} below, "
                              f"its node events {len(top)} main-graph / {len(inside)} in all")
    if imported.get("warnings"):
        errors.append(f"DevTools warnings: {imported['warnings']}")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile")
    ap.add_argument("--devtools", help="devtools_trace.mjs's output for the same profile")
    a = ap.parse_args()
    with open(a.profile, encoding="utf-8") as f:
        events = json.load(f)
    errors = format_errors(events)
    forest, nest_errors = nesting(events if isinstance(events, list) else [])
    errors += nest_errors
    if a.devtools and not errors:
        with open(a.devtools, encoding="utf-8") as f:
            errors += devtools_errors(events, forest, json.load(f))
    for e in errors[:10]:
        print(f"FAIL: {e}")
    counters = sum(1 for e in events if isinstance(e, dict) and e.get("ph") == "C") if isinstance(events, list) else 0
    print(f"check_trace: {a.profile}: {len(events)} events ({counters} counters), "
          f"{'and DevTools agrees, ' if a.devtools and not errors else ''}{'a valid trace' if not errors else f'{len(errors)} problem(s)'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
