"""The chapter's charts as Plotly figures (interactive in Jupyter), made with Plotly Express:

    df = refeval.read_profile("gpt2_profile.json")
    refeval.plot.ops(df)                       # total time per op type, one bar each
    refeval.plot.ops(df, kind="count")         # calls per op type
    refeval.plot.ops(df, kind="share")         # share of the kernel time (a pie)
    refeval.plot.timeline(df, run=1)           # one run's kernels on a time axis
    refeval.plot.compare(df, df_optimized)     # per-run time per op type, before and after
    refeval.plot.steps(refeval.read_profile("generate_profile.json"))   # latency per generated token
    refeval.plot.memory(refeval.read_profile("memory.json"))   # live bytes per node (profile --memory)

Every function takes a read_profile() frame (or, for ops and compare, the op_table() / compare()
table). plotly and pandas are imported on the first call; without them the ImportError names the
Debian package (python3-plotly, python3-pandas)."""
from . import frames
from ._optional import need

__all__ = ["ops", "timeline", "compare", "steps", "memory"]

_KINDS = {"duration": ("total_ms", "total time (ms)"), "count": ("count", "calls"), "share": ("pct", "share of kernel time (%)")}


def _is_events(df):
    return "duration_us" in df.columns


def ops(df_or_table, kind="duration", by="op", top=None, title=None):
    """Per op type (or node, provider, phase, scope with `by`): kind="duration" total time,
    "count" calls, "share" share of the kernel time; bars, costliest first, except "share", a pie."""
    px = need("plotly.express")
    if kind not in _KINDS:
        raise ValueError(f"kind: '{kind}' is not duration, count or share")
    table = frames.op_table(df_or_table, by, top=top) if _is_events(df_or_table) else df_or_table
    if top and not _is_events(df_or_table):
        table = table.head(top)
    key = table.columns[0]
    column, label = _KINDS[kind]
    s = table.attrs.get("summary")
    runs = f" over {s.runs_used} run{'s' if s.runs_used != 1 else ''}" if s is not None else ""
    title = title or f"{label} per {key}{runs}"
    hover = [c for c in ("total_ms", "count", "mean_ms", "pct", "op_type") if c in table.columns and c != key]
    if kind == "share":
        fig = px.pie(table, names=key, values=column, title=title, hover_data=hover)
        fig.update_traces(textposition="inside")  # slices too thin for their label stay unlabelled (hover shows them)
        fig.update_layout(uniformtext_minsize=10, uniformtext_mode="hide")
        return fig
    if kind == "count":  # the costliest op is not the most called: sort the count chart by count
        table = table.sort_values(["count", key], ascending=[False, True], kind="stable")
    fig = px.bar(table, x=key, y=column, title=title, labels={column: label}, hover_data=hover)
    fig.update_layout(xaxis_tickangle=-45 if len(table) > 8 else 0)
    return fig


def timeline(df, run=None, file=None, title=None):
    """One run's kernel events on a time axis (ms from the run's start), a lane per op type,
    hovering shows the node and its shapes. run: the run index (default: the frame's first run)."""
    px = need("plotly.express")
    events = df if file is None else df[df["file"] == file]
    if run is None:
        run = int(events["run"].iloc[0])
    events = events[events["run"] == run]
    if events.empty:
        raise ValueError(f"timeline: the frame has no events of run {run}")
    events = events[events["file"] == events["file"].iloc[0]]
    start = min(r["start_us"] for r in frames._runs_of(df) if r["run"] == run and r["file"] == events["file"].iloc[0])
    pd = need("pandas")
    rows = pd.DataFrame({"op_type": events["op_type"].replace("", "(unknown)"), "node": events["node"],
                         "start_ms": (events["start_us"] - start) / 1000, "duration_ms": events["duration_us"] / 1000,
                         "inputs": events["inputs"], "outputs": events["outputs"]})
    order = rows.groupby("op_type")["duration_ms"].sum().sort_values(ascending=False).index.tolist()
    fig = px.bar(rows, x="duration_ms", base="start_ms", y="op_type", color="op_type", orientation="h",
                 hover_data=["node", "start_ms", "duration_ms", "inputs", "outputs"],
                 category_orders={"op_type": order}, title=title or f"run {run}: kernels in time (ms from the run's start)")
    fig.update_layout(showlegend=False, barmode="overlay", xaxis_title="ms from the run's start", yaxis_title="",
                      height=max(400, 120 + 22 * len(order)))  # a readable label per lane
    return fig


def compare(before, after, by="op", top=15, labels=("before", "after"), title=None):
    """Time per run of each op type (or node...) in two profiles, side by side bars, the largest
    first: the optimized model's fused operators appear, the ones they replaced vanish."""
    px = need("plotly.express")
    pd = need("pandas")
    table = frames.compare(before, after, by=by) if _is_events(before) else before
    if top:
        table = table.head(top)
    key = table.columns[0]
    long = pd.concat([pd.DataFrame({key: table[key], "ms per run": table["before_ms"], "profile": labels[0]}),
                      pd.DataFrame({key: table[key], "ms per run": table["after_ms"], "profile": labels[1]})])
    b, a = table.attrs.get("before"), table.attrs.get("after")
    if title is None and b is not None and a is not None:
        wb, wa = b.wall_ms / max(1, b.runs_used), a.wall_ms / max(1, a.runs_used)
        title = f"time per {key} per run: wall {wb:.3f} ms -> {wa:.3f} ms ({wb / wa if wa > 0 else 0:.2f}x)"
    fig = px.bar(long, x=key, y="ms per run", color="profile", barmode="group", title=title)
    fig.update_layout(xaxis_tickangle=-45 if len(table) > 8 else 0)
    return fig


def steps(df, title=None):
    """Latency of every run of a `refeval generate --profile` profile, per step (the prefill first,
    then one decode step per token), coloured by phase; untagged profiles by run index."""
    px = need("plotly.express")
    runs = frames.runs(df)
    tagged = (runs["step"] >= 0).any()
    runs = runs.assign(x=runs["step"] if tagged else runs["run"], phase=runs["phase"].replace("", "(untagged)"))
    fig = px.bar(runs, x="x", y="duration_ms", color="phase", hover_data=["run", "kernel_ms", "kv_cache_bytes"],
                 title=title or ("latency per generation step" if tagged else "latency per run"),
                 labels={"x": "step" if tagged else "run", "duration_ms": "ms"})
    return fig


def memory(df, run=None, file=None, title=None):
    """One run of a `refeval profile --memory` profile: the activation bytes alive while each
    main-graph node runs (MiB), the nodes in execution order, the peak marked and named; hovering
    shows the node, its op type and the bytes. run: the run index (default: the frame's first)."""
    px = need("plotly.express")
    events = df if file is None else df[df["file"] == file]
    if run is None:
        run = int(events["run"].iloc[0])
    events = events[(events["run"] == run) & (events["depth"] == 0)]
    if events.empty:
        raise ValueError(f"memory: the frame has no main-graph events of run {run}")
    events = events[events["file"] == events["file"].iloc[0]].sort_values("start_us", kind="stable")
    if events["live_bytes"].isna().all():
        raise ValueError("memory: the profile has no live_bytes (write it with refeval profile --memory)")
    pd = need("pandas")
    rows = pd.DataFrame({"position": range(len(events)), "node": events["node"].tolist(),
                         "op_type": events["op_type"].replace("", "(unknown)").tolist(),
                         "live_bytes": events["live_bytes"].tolist()})
    rows["live_mib"] = rows["live_bytes"] / 2**20
    peak = rows.loc[rows["live_bytes"].idxmax()]  # the first node at the peak
    fig = px.line(rows, x="position", y="live_mib", hover_name="node", hover_data={"op_type": True, "live_bytes": ":.0f",
                  "position": True, "live_mib": False}, labels={"position": "node (execution order)", "live_mib": "live activations (MiB)"},
                  title=title or f"run {run}: live activations per node, peak {peak['live_mib']:.2f} MiB at {peak['node']}")
    fig.update_traces(name="live", showlegend=False, line_shape="hv")  # a node's bytes hold until the next node
    fig.add_scatter(x=[peak["position"]], y=[peak["live_mib"]], mode="markers+text", name="peak", text=[peak["node"]],
                    textposition="top center", marker={"size": 11, "symbol": "diamond", "color": "crimson"},
                    hovertext=[f"peak: {peak['node']} ({peak['op_type']}) {int(peak['live_bytes'])} bytes"], hoverinfo="text")
    fig.update_layout(showlegend=False, yaxis_rangemode="tozero")
    return fig
