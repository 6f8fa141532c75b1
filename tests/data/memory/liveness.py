#!/usr/bin/python3
"""An independent oracle for `refeval profile --memory`: the live activation bytes of one run,
computed from the ONNX graph and the run's node events, never from refeval's own figures, then
compared with what refeval wrote.

    liveness.py MODEL.onnx PROFILE.json [--run K] [--json OUT.json] [--quiet]

The run: K-th model_run in time order (default 1, the first run after the warm-up). Its main-graph
node events (cat Node, "<node>_kernel_time", no args.depth) in start order are matched to the
graph's nodes by name, an unnamed node by "<OpType>_<index>" or args.node_index. From the graph:
  - a value is alive from its producer (a graph input from the first node) to its last reader, a
    node naming it as an input or reading it from the outer scope in its If/Loop/Scan bodies,
    nested bodies included; a graph output to the last node; a value nobody reads only at its
    producer (a feed nobody reads at the first node), its last reader "(nobody)";
  - initializers (weights) are not activations; a graph input with an initializer counts as one;
  - bytes: element count x element size of the shape the value had in this run, from its
    producer's output_type_shape, a feed's from its first direct reader's input_type_shape; an
    output with no name ("") that the node computed anyway is alive while its node runs.
A node's live bytes are the bytes of every value alive while it runs, its inputs and outputs
included; the peak is the largest, the first node reaching it the peak node.

Compared with refeval (each a line "FAIL: ..." and exit 1): every node's args.live_bytes within 1%
(relative to the larger), model_run's args.memory peak_bytes within 1% and equal to the largest
live_bytes, peak_node and peak_node_index, the at_peak names as sets (values of 0 bytes left out of
both sides: an empty KV cache is alive but weighs nothing), each at_peak entry's bytes, producer and
last_reader, and the Memory counter events of every run: one per node at its start with
args.activations equal to its live_bytes, and one of 0 at the run's end.
Prints one line: the model, run, nodes, peak bytes and node, the number of tensors at the peak and
the verdict. --json writes the oracle's own timeline, peak and at_peak. Needs Debian's python3-onnx.
"""
import argparse
import bisect
import collections
import json
import sys

import onnx

# refeval's element sizes (evaluator/values/dtype.cc), by the names profiles use
ELEMENT_BYTES = {
    "float": 4, "uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "int32": 4, "int64": 8, "string": 32, "bool": 1,
    "float16": 2, "double": 8, "uint32": 4, "uint64": 8, "complex64": 8, "complex128": 16, "bfloat16": 2,
    "float8e4m3fn": 1, "float8e4m3fnuz": 1, "float8e5m2": 1, "float8e5m2fnuz": 1, "uint4": 1, "int4": 1,
    "float4e2m1": 1, "float8e8m0": 1, "uint2": 1, "int2": 1,
}
TOLERANCE = 0.01


def type_shape_bytes(item):
    """{"float": [1, 9, 768]} -> 27648."""
    (dtype, shape), = item.items()
    if dtype not in ELEMENT_BYTES:
        raise SystemExit(f"liveness: unknown element type '{dtype}' in a profile")
    count = 1
    for d in shape:
        count *= d
    return count * ELEMENT_BYTES[dtype]


def graph_defines(graph):
    """The names a graph makes for itself: its inputs, initializers and node outputs."""
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    names |= {t.values.name for t in graph.sparse_initializer}
    for node in graph.node:
        names.update(o for o in node.output if o)
    return names


def body_graphs(node):
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs


def outer_reads(node):
    """The names a node's bodies read from the scopes around the node (nested bodies included)."""
    names = set()
    for g in body_graphs(node):
        inner = graph_defines(g)
        used = set()
        for n in g.node:
            used.update(i for i in n.input if i)
            used |= outer_reads(n)
        used.update(o.name for o in g.output)  # a body may return an outer value as it is
        names |= used - inner
    return names


def load_runs(events):
    """The model_run events in time order, each with its main-graph node events in start order (a
    node belongs to the last run started at or before it; nodes starting in the same microsecond
    stay in file order, refeval's order of start)."""
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"),
                  key=lambda e: e["ts"])
    if not runs:
        raise SystemExit("liveness: no model_run event in the profile")
    nodes = [[] for _ in runs]
    starts = [r["ts"] for r in runs]
    for e in sorted((e for e in events if e.get("cat") == "Node" and e.get("ph") == "X"
                     and e.get("name", "").endswith("_kernel_time") and "depth" not in e.get("args", {})),
                    key=lambda e: e["ts"]):
        k = bisect.bisect_right(starts, e["ts"]) - 1
        if k >= 0:
            nodes[k].append(e)
    return runs, nodes


def match_nodes(graph, node_events):
    """The graph node index of each event."""
    by_name = {}
    for i, n in enumerate(graph.node):
        if n.name:
            by_name.setdefault(n.name, []).append(i)
    matched, seen = [], set()
    for e in node_events:
        name = e["name"][: -len("_kernel_time")]
        raw = e.get("args", {}).get("node_index")
        index = int(raw) if raw is not None and str(raw).isdigit() else None
        found = None
        if len(by_name.get(name, [])) == 1:
            found = by_name[name][0]
        elif name in by_name and index in by_name[name]:  # a name used twice: the index tells which
            found = index
        else:
            op, _, suffix = name.rpartition("_")
            for i in ([int(suffix)] if suffix.isdigit() else []) + ([index] if index is not None else []):
                if 0 <= i < len(graph.node) and not graph.node[i].name and graph.node[i].op_type == op:
                    found = i
                    break
        if found is None:
            raise SystemExit(f"liveness: event '{e['name']}' matches no node of the graph")
        if found in seen:
            raise SystemExit(f"liveness: node #{found} '{name}' ran twice in one run")
        seen.add(found)
        matched.append(found)
    missing = [i for i in range(len(graph.node)) if i not in seen]
    if missing:
        n = graph.node[missing[0]]
        raise SystemExit(f"liveness: {len(missing)} graph node(s) did not run, first #{missing[0]} "
                         f"'{n.name}' ({n.op_type})")
    return matched


def timeline(model, node_events):
    """The oracle's figures: per node its live bytes; the values with bytes, producer and last reader."""
    g = model.graph
    order = match_nodes(g, node_events)
    names = [e["name"][: -len("_kernel_time")] for e in node_events]
    weights = {t.name for t in g.initializer} | {t.values.name for t in g.sparse_initializer}
    feeds = [i.name for i in g.input if i.name not in weights]
    outputs = {o.name for o in g.output}
    last = len(order) - 1

    values = {}  # name -> {"bytes", "start", "end", "producer", "last_reader"}
    for f in feeds:
        values[f] = {"bytes": None, "start": 0, "producer": "(graph input)"}
    readers = {}  # name -> positions reading it
    unnamed = [0] * len(order)
    for pos, (i, e) in enumerate(zip(order, node_events)):
        node = g.node[i]
        args = e.get("args", {})
        present_in = [n for n in node.input if n]
        ins = args.get("input_type_shape", [])
        for n in set(present_in) | outer_reads(node):
            readers.setdefault(n, []).append(pos)
        # a feed weighs what its first direct reader saw (input_type_shape lists the present inputs)
        if len(ins) == len(present_in):
            for n, item in zip(present_in, ins):
                if n in values and values[n]["bytes"] is None:
                    values[n]["bytes"] = type_shape_bytes(item)
        outs = args.get("output_type_shape", [])
        # output_type_shape has the node's tensor outputs; "" outputs are there when computed anyway
        named = list(node.output) if len(outs) == len(node.output) else [o for o in node.output if o]
        if len(outs) != len(named):
            raise SystemExit(f"liveness: '{names[pos]}' has {len(outs)} output shapes for outputs {list(node.output)}")
        for n, item in zip(named, outs):
            if n:
                values[n] = {"bytes": type_shape_bytes(item), "start": pos, "producer": names[pos]}
            else:  # computed though no name asks for it: alive while its node runs, in no listing
                unnamed[pos] += type_shape_bytes(item)
    for n, v in values.items():
        if v["bytes"] is None:  # a feed no node reads directly: its declared shape, when fixed
            t = next(i for i in g.input if i.name == n).type
            dims = [d.dim_value if d.HasField("dim_value") else None for d in t.tensor_type.shape.dim] \
                if t.HasField("tensor_type") else None
            elem = onnx.TensorProto.DataType.Name(t.tensor_type.elem_type).lower() if dims is not None else ""
            if dims is None:
                v["bytes"] = 0  # not a tensor: 0
            elif None in dims or elem not in ELEMENT_BYTES:
                raise SystemExit(f"liveness: feed '{n}' is read by no node directly and has no fixed shape")
            else:
                count = 1
                for d in dims:
                    count *= d
                v["bytes"] = count * ELEMENT_BYTES[elem]
        reads = readers.get(n, [])
        if n in outputs:
            v["end"], v["last_reader"] = last, "(graph output)"
        elif reads:
            v["end"], v["last_reader"] = max(reads), names[max(reads)]
        else:
            v["end"], v["last_reader"] = v["start"], "(nobody)"
    live = list(unnamed)
    for v in values.values():
        for pos in range(v["start"], v["end"] + 1):
            live[pos] += v["bytes"]
    return names, live, values


def close(a, b):
    return abs(a - b) <= TOLERANCE * max(abs(a), abs(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("profile")
    ap.add_argument("--run", type=int, default=1, help="the model_run, 0-based in time order (default 1)")
    ap.add_argument("--json", help="write the oracle's timeline, peak and at_peak here")
    ap.add_argument("--quiet", action="store_true", help="only the summary line and failures")
    a = ap.parse_args()
    model = onnx.load(a.model, load_external_data=False)
    with open(a.profile, encoding="utf-8") as f:
        events = json.load(f)
    runs, run_nodes = load_runs(events)
    if not 0 <= a.run < len(runs):
        raise SystemExit(f"liveness: run {a.run} asked, the profile has runs 0-{len(runs) - 1}")
    run, node_events = runs[a.run], run_nodes[a.run]
    if not node_events:
        raise SystemExit(f"liveness: run {a.run} has no main-graph node events")
    names, live, values = timeline(model, node_events)
    peak = max(live)
    peak_pos = live.index(peak)
    at_peak = sorted(((n, v) for n, v in values.items() if v["start"] <= peak_pos <= v["end"]),
                     key=lambda nv: (-nv[1]["bytes"], nv[0]))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"run": a.run, "peak_bytes": peak, "peak_node": names[peak_pos], "peak_node_index": peak_pos,
                       "timeline": [{"node": n, "live_bytes": b} for n, b in zip(names, live)],
                       "at_peak": [{"name": n, "bytes": v["bytes"], "producer": v["producer"],
                                    "last_reader": v["last_reader"]} for n, v in at_peak]}, f, indent=1)

    failures = []
    # refeval's figures
    theirs = [e.get("args", {}).get("live_bytes") for e in node_events]
    for n, mine, t in zip(names, live, theirs):
        if not isinstance(t, (int, float)) or isinstance(t, bool):
            failures.append(f"{n}: args.live_bytes is {t!r}, not a number")
        elif not close(mine, t):
            failures.append(f"{n}: live_bytes {t}, oracle {mine} ({(t - mine) / max(mine, 1):+.2%})")
    memory = run.get("args", {}).get("memory")
    if not isinstance(memory, dict):
        failures.append("model_run has no args.memory")
        memory = {}
    numbers = [t for t in theirs if isinstance(t, (int, float))]
    if not isinstance(memory.get("peak_bytes"), (int, float)) or not close(memory["peak_bytes"], peak):
        failures.append(f"peak_bytes {memory.get('peak_bytes')!r}, oracle {peak}")
    elif numbers and memory["peak_bytes"] != max(numbers):
        failures.append(f"peak_bytes {memory['peak_bytes']} is not the largest live_bytes {max(numbers)}")
    if memory.get("peak_node") != names[peak_pos]:
        failures.append(f"peak_node {memory.get('peak_node')!r}, oracle '{names[peak_pos]}'")
    if memory.get("peak_node_index") != peak_pos:
        failures.append(f"peak_node_index {memory.get('peak_node_index')!r}, oracle {peak_pos}")
    ours = {n: v for n, v in at_peak if v["bytes"] > 0}
    listed = {t.get("name"): t for t in memory.get("at_peak", []) if t.get("bytes", 0) > 0}
    if set(listed) != set(ours):
        extra, absent = sorted(set(listed) - set(ours)), sorted(set(ours) - set(listed))
        failures.append(f"at_peak names differ: refeval only {extra[:5]}{'...' if len(extra) > 5 else ''}, "
                        f"oracle only {absent[:5]}{'...' if len(absent) > 5 else ''}")
    for n in sorted(set(listed) & set(ours)):
        t, v = listed[n], ours[n]
        got = (t.get("bytes"), t.get("producer"), t.get("last_reader"))
        if got != (v["bytes"], v["producer"], v["last_reader"]):
            failures.append(f"at_peak '{n}': (bytes, producer, last_reader) {got}, oracle "
                            f"{(v['bytes'], v['producer'], v['last_reader'])}")
    sizes = [t.get("bytes") for t in memory.get("at_peak", [])]
    if sizes != sorted(sizes, reverse=True):
        failures.append("at_peak is not largest first")
    # the Memory counters of every run: (ts, activations) of each node's start, then (run end, 0)
    counters = [(e["ts"], e["args"]["activations"]) for e in events
                if e.get("ph") == "C" and e.get("name") == "Memory" and "activations" in e.get("args", {})]
    if not counters:
        failures.append("no Memory counter events with args.activations")
    else:
        want = [(e["ts"], e.get("args", {}).get("live_bytes")) for nodes in run_nodes for e in nodes]
        want += [(r["ts"] + r["dur"], 0) for r in runs]
        got_c, want_c = collections.Counter(counters), collections.Counter(want)
        if got_c != want_c:
            extra, absent = sorted(got_c - want_c), sorted(want_c - got_c)
            failures.append(f"Memory counters: {len(counters)} events with activations, want {len(want)} (each node's "
                            f"start and live_bytes, then 0 at each run's end); unexpected {extra[:3]}, missing {absent[:3]}")
    for f in failures[:20]:
        print(f"FAIL: {f}")
    if len(failures) > 20:
        print(f"FAIL: ... {len(failures) - 20} more")
    if not a.quiet:
        for n, v in at_peak[:5]:
            print(f"  at peak: {n} {v['bytes']} bytes ({v['producer']} -> {v['last_reader']})")
    verdict = "MISMATCH" if failures else "match"
    print(f"liveness: {a.model} run {a.run}: {len(names)} nodes, peak {peak} bytes at #{peak_pos} '{names[peak_pos]}', "
          f"{len(at_peak)} tensors alive there ({len(ours)} non-empty), {len(counters)} counters in the file: {verdict}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
