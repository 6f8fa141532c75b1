"""Profiles as pandas DataFrames: read_profile() gives one row per kernel event of the runs
`refeval report` reads, op_table() aggregates them as `report` does (same numbers), compare() puts
two profiles side by side as `report --compare`. pandas is imported when a function needs it, so
`import refeval` works without it."""
import html
import os

from . import _refeval
from ._optional import need

__all__ = ["read_profile", "op_table", "compare", "summary", "runs", "ProfileSummary"]

_BY = {"op": "op_type", "node": "node", "provider": "provider", "phase": "phase", "scope": "scope"}


def read_profile(path_or_paths, runs=None, include_warmup=False, phase=None):
    """One row per kernel event of ONNX Runtime's or refeval's profile JSON (every format `refeval
    report` reads: ORT 1.8 to 1.30, fences or not, files cut short), read by report's own parser.

    runs: "a:b" (or a slice) as report's --runs; include_warmup: keep run 0; phase: only the runs of
    that phase (`refeval generate --profile`). Several paths are read as one profile, each file's
    selection on its own. Columns: file, run, phase, step, node, op_type, provider, node_index,
    start_us, duration_us, duration_ms, depth (0: main graph), inputs / outputs ("float[1x9x768]+..."),
    input_shapes / output_shapes ([(type, shape), ...]), activation_size, parameter_size, output_size,
    live_bytes (`refeval profile --memory`: the activation bytes alive while a main-graph node ran;
    NaN for body nodes and profiles without it). The runs (wall time, phase, step, fence time) are
    in df.attrs["refeval"]; see refeval.runs()."""
    pd = need("pandas")
    paths = [os.fspath(path_or_paths)] if isinstance(path_or_paths, (str, os.PathLike)) else [os.fspath(p) for p in path_or_paths]
    if isinstance(runs, slice):
        runs = f"{'' if runs.start is None else runs.start}:{'' if runs.stop is None else runs.stop}"
    from . import _native
    data = _native(_refeval.profile_events, paths, runs or "", bool(include_warmup), phase or "")
    df = pd.DataFrame(data["columns"])
    df.insert(df.columns.get_loc("duration_us") + 1, "duration_ms", df["duration_us"] / 1000)
    df["live_bytes"] = pd.to_numeric(df["live_bytes"]).astype("float64")  # NaN where a file has none
    df.attrs["refeval"] = {"label": data["label"], "runs_in_files": data["runs_in_files"], "runs": data["runs"],
                           "warnings": list(data["warnings"])}
    return df


def _meta(df):
    meta = df.attrs.get("refeval")
    if meta is None:
        raise ValueError("not a profile frame: use refeval.read_profile() (its runs are in df.attrs['refeval'])")
    return meta


def _runs_of(df):
    """The frame's runs: those of the file that still have a row here, and those without kernels."""
    meta = _meta(df)
    present = set(zip(df["file"], df["run"]))
    return [r for r in meta["runs"] if (r["file"], r["run"]) in present or r["kernel_events"] == 0]


def runs(df):
    """The runs of a profile frame, one row each: file, run, phase, step, start_us, duration_us,
    duration_ms, kernel_ms (the main graph's nodes), fence_us, kv_cache_bytes (-1 when untagged)."""
    pd = need("pandas")
    out = pd.DataFrame(_runs_of(df), columns=["file", "run", "phase", "step", "start_us", "duration_us", "kv_cache_bytes",
                                              "top_level_kernel_us", "fence_us", "fence_events", "kernel_events"])
    out.insert(out.columns.get_loc("duration_us") + 1, "duration_ms", out["duration_us"] / 1000)
    out["kernel_ms"] = out["top_level_kernel_us"] / 1000
    return out


def _scope(node):
    # An exporter's node path: "/transformer/h.0/attn/MatMul" is in scope "/transformer/h.0/attn".
    return node.rsplit("/", 1)[0] if "/" in node.strip("/") else "(top)"


def _keys(df, by):
    if by == "op":
        return [t or "(unknown)" for t in df["op_type"]]
    if by == "provider":
        return [p or "(unknown)" for p in df["provider"]]
    if by == "phase":
        return [p or "(untagged)" for p in df["phase"]]
    if by == "scope":
        return [_scope(n) for n in df["node"]]
    return list(df["node"])


class ProfileSummary:
    """What the runs of a profile frame add up to, as `refeval report` prints above its table;
    text in a terminal, a small table in Jupyter."""

    def __init__(self, path, runs_in_file, runs_used, first_run, phase, wall_ms, kernel_ms, fence_ms, kernel_events,
                 fence_events, providers, top=None):
        self.path, self.runs_in_file, self.runs_used, self.first_run = path, runs_in_file, runs_used, first_run
        self.phase, self.wall_ms, self.kernel_ms, self.fence_ms = phase, wall_ms, kernel_ms, fence_ms
        self.kernel_events, self.fence_events, self.providers = kernel_events, fence_events, providers
        self.top = top  # the op table's first rows, for the HTML view

    @property
    def other_ms(self):
        return self.wall_ms - self.kernel_ms - self.fence_ms

    def _runs_text(self):
        last = self.first_run + self.runs_used - 1
        runs = f"run {self.first_run}" if self.runs_used == 1 else f"runs {self.first_run}-{last}"
        note = f" (phase {self.phase})" if self.phase else " (run 0, the warm-up, left out)" if self.first_run == 1 else ""
        return f"{runs} of {self.runs_in_file}{note}"

    def __str__(self):
        share = 100 * self.kernel_ms / self.wall_ms if self.wall_ms > 0 else 0.0
        return (f"{self.path}: {self._runs_text()}\nwall {self.wall_ms:.3f} ms (model_run), kernel {self.kernel_ms:.3f} ms "
                f"({share:.1f}%), fence {self.fence_ms:.3f} ms ({self.fence_events} events), other {self.other_ms:.3f} ms\n")

    __repr__ = __str__

    def _repr_html_(self):
        e = html.escape
        per_run = self.wall_ms / max(1, self.runs_used)
        rows = [("profile", e(self.path)), ("runs", e(self._runs_text())),
                ("wall", f"{self.wall_ms:.3f} ms ({per_run:.3f} ms per run)"),
                ("kernel", f"{self.kernel_ms:.3f} ms ({100 * self.kernel_ms / self.wall_ms if self.wall_ms > 0 else 0:.1f}%)"),
                ("fence", f"{self.fence_ms:.3f} ms ({self.fence_events} events)"), ("other", f"{self.other_ms:.3f} ms"),
                ("kernel events", str(self.kernel_events)), ("providers", e(", ".join(self.providers)))]
        out = "<table><tbody>" + "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>"
                                         for k, v in rows) + "</tbody></table>"
        if self.top is not None:
            out += "<p>costliest operators</p>" + self.top.to_html(index=False)
        return out


def _summary(df, runs_used):
    meta = _meta(df)
    wall = 0.0
    for r in runs_used:  # summed in run order, as report does
        wall += r["duration_us"] / 1000
    top_us = int(df.loc[df["depth"] == 0, "duration_us"].sum())
    fence_us = sum(r["fence_us"] for r in runs_used)
    phases = {r["phase"] for r in runs_used}
    return ProfileSummary(path=meta["label"], runs_in_file=meta["runs_in_files"], runs_used=len(runs_used),
                          first_run=runs_used[0]["run"] if runs_used else 0, phase=phases.pop() if len(phases) == 1 else "",
                          wall_ms=wall, kernel_ms=top_us / 1000, fence_ms=fence_us / 1000, kernel_events=len(df),
                          fence_events=sum(r["fence_events"] for r in runs_used),
                          providers=sorted({p for p in df["provider"] if p}))


def op_table(df, by="op", top=None):
    """The aggregated table of `refeval report --by BY` with its columns and numbers: the key
    (op_type, node, provider or phase; "scope", the node name's path, is Python's only), then for
    by="node" op_type and provider, then total_ms, count, mean_ms and pct (share of the kernel time
    of all rows, 0-100), costliest first. Sums are exact integer microseconds, as report's. The
    summary (wall, kernel and fence time) is in table.attrs["summary"] (refeval.summary(df))."""
    pd = need("pandas")
    if by not in _BY:
        raise ValueError(f"by: '{by}' is not op, node, provider, phase or scope")
    keys = _keys(df, by)
    micros, count, first = {}, {}, {}
    for i, (key, us) in enumerate(zip(keys, df["duration_us"].tolist())):
        if key not in micros:
            micros[key], count[key], first[key] = 0, 0, i
        micros[key] += us
        count[key] += 1
    all_us = sum(micros.values())
    rows = []
    for key in sorted(micros, key=lambda k: (-micros[k], k.encode())):  # report: by total, ties by key (bytes)
        total = micros[key] / 1000
        row = {_BY[by]: key}
        if by == "node":
            row["op_type"], row["provider"] = df["op_type"].iat[first[key]], df["provider"].iat[first[key]]
        row.update(total_ms=total, count=count[key], mean_ms=total / count[key], pct=100.0 * micros[key] / all_us if all_us else 0.0)
        rows.append(row)
    columns = [_BY[by]] + (["op_type", "provider"] if by == "node" else []) + ["total_ms", "count", "mean_ms", "pct"]
    table = pd.DataFrame(rows, columns=columns)
    if top:
        table = table.head(top)
    table.attrs["summary"] = _summary(df, _runs_of(df))
    table.attrs["by"] = by
    return table


def summary(df, top=10):
    """The profile's summary (`report`'s first lines): text in a terminal; in Jupyter a table of the
    wall / kernel / fence times and the `top` costliest operators."""
    s = _summary(df, _runs_of(df))
    s.top = op_table(df, "op", top=top) if top else None
    return s


def compare(before, after, by="op", top=None):
    """`refeval report BEFORE --compare AFTER --by BY` as a DataFrame: per run (the sides may hold
    different numbers of runs) before_ms, before_count, after_ms, after_count, delta_ms, speedup
    (before / after, NaN when a side is 0) and status ("vanished", "appeared" or "")."""
    pd = need("pandas")
    b, a = op_table(before, by), op_table(after, by)
    key = _BY[by]
    nb, na = max(1, b.attrs["summary"].runs_used), max(1, a.attrs["summary"].runs_used)
    extra = ["op_type"] if by == "node" else []
    rows = {}
    for r in b.to_dict("records"):
        rows[r[key]] = {key: r[key], **{c: r[c] for c in extra}, "before_ms": r["total_ms"] / nb, "before_count": r["count"] / nb,
                        "after_ms": 0.0, "after_count": 0.0, "status": "vanished"}
    for r in a.to_dict("records"):
        row = rows.setdefault(r[key], {key: r[key], **{c: r[c] for c in extra}, "before_ms": 0.0, "before_count": 0.0,
                                       "status": "appeared"})
        if row["status"] == "vanished":
            row["status"] = ""
        if extra and not row["op_type"]:
            row["op_type"] = r["op_type"]
        row["after_ms"], row["after_count"] = r["total_ms"] / na, r["count"] / na
    ordered = sorted(rows.values(), key=lambda r: (-max(r["before_ms"], r["after_ms"]), r[key].encode()))
    out = pd.DataFrame(ordered, columns=[key, *extra, "before_ms", "before_count", "after_ms", "after_count", "status"])
    out.insert(len(out.columns) - 1, "delta_ms", out["after_ms"] - out["before_ms"])
    out.insert(len(out.columns) - 1, "speedup", [x / y if x > 0 and y > 0 else float("nan")
                                                  for x, y in zip(out["before_ms"], out["after_ms"])])
    if top:
        out = out.head(top)
    out.attrs["before"], out.attrs["after"], out.attrs["by"] = b.attrs["summary"], a.attrs["summary"], by
    return out
