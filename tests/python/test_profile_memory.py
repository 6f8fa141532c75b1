"""`refeval profile --memory` in Python: read_profile's live_bytes column is the file's
args.live_bytes, and plot.memory draws it with the peak marked at the peak node. The model is
tests/data/memory/make_fixtures.py's if_capture, whose live bytes are worked by hand there."""
import importlib.util
import json
import os
import subprocess

import numpy as np
import pytest

import refeval

SOURCE = os.environ.get("REFEVAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("REFEVAL_CLI", os.path.join(SOURCE, "build", "refeval"))
FIXTURES = os.path.join(SOURCE, "tests", "data", "memory", "make_fixtures.py")
# make_fixtures.py's table: relu, big, dead, early, if (the peak), Mul_5 (unnamed)
HAND_WORKED = {"relu": 32769, "big": 98305, "dead": 106497, "early": 114689, "if": 131073, "Mul_5": 81920}

try:
    import pandas as pd
except ImportError:
    pd = None
try:
    import plotly.graph_objects
except ImportError:
    plotly = None
needs_pandas = pytest.mark.skipif(pd is None, reason="python3-pandas is not installed")
needs_plotly = pytest.mark.skipif(pd is None or plotly is None, reason="python3-pandas or python3-plotly is not installed")
needs_cli = pytest.mark.skipif(not os.path.exists(CLI), reason=f"the refeval command line is not built ({CLI})")


@pytest.fixture(scope="module")
def if_capture(tmp_path_factory):
    """The if_capture model profiled with and without --memory: (memory.json, plain.json)."""
    out = tmp_path_factory.mktemp("memory")
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES)
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    fixtures.if_capture(out)
    profiles = []
    for name, extra in (("memory.json", ["--memory"]), ("plain.json", [])):
        subprocess.run([CLI, "-q", "profile", str(out / "if_capture.onnx"), "--input", f"X={out / 'X.npy'}",
                        "--input", f"cond={out / 'cond.npy'}", "--repeat", "3", "-o", str(out / name), *extra],
                       check=True, capture_output=True)
        profiles.append(str(out / name))
    return profiles


def kernel_events(path):
    """(run, node) -> args of every kernel event of the profiled runs, from the JSON itself."""
    with open(path, encoding="utf-8") as f:
        events = json.load(f)
    starts = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    out = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            run = sum(s <= e["ts"] for s in starts) - 1
            out[(run, e["name"][: -len("_kernel_time")])] = e["args"]
    return out


@needs_pandas
@needs_cli
def test_live_bytes_column_is_the_files(if_capture):
    memory, _ = if_capture
    df = refeval.read_profile(memory)
    assert df["live_bytes"].dtype == np.float64
    args = kernel_events(memory)
    for run, node, depth, live in zip(df["run"], df["node"], df["depth"], df["live_bytes"]):
        if depth == 0:
            assert live == args[(run, node)]["live_bytes"], (run, node)
        else:  # a body's node (inside its If's time) has none
            assert np.isnan(live) and "live_bytes" not in args[(run, node)], (run, node)
    # every run: the hand-worked bytes of make_fixtures.py
    for run in (1, 2, 3):
        rows = df[(df["run"] == run) & (df["depth"] == 0)]
        assert dict(zip(rows["node"], rows["live_bytes"].astype(int))) == HAND_WORKED


@needs_pandas
@needs_cli
def test_without_memory_the_column_is_nan(if_capture):
    _, plain = if_capture
    df = refeval.read_profile(plain)
    assert len(df) > 0 and df["live_bytes"].isna().all()


@needs_plotly
@needs_cli
def test_plot_memory_marks_the_peak_node(if_capture):
    memory, plain = if_capture
    df = refeval.read_profile(memory)
    fig = refeval.plot.memory(df, run=2)
    assert isinstance(fig, plotly.graph_objects.Figure)
    line, peak = fig.data
    assert [t.name for t in fig.data] == ["live", "peak"]
    # the nodes in execution order, their bytes in MiB; hovering names each node
    assert list(line.x) == list(range(6)) and list(line.hovertext) == list(HAND_WORKED)
    assert np.allclose(line.y, [b / 2**20 for b in HAND_WORKED.values()])
    # the peak marker sits on the If, the node the oracle and make_fixtures.py's table name
    assert list(peak.x) == [list(HAND_WORKED).index("if")] and list(peak.text) == ["if"]
    assert np.isclose(peak.y[0], 131073 / 2**20) and "131073 bytes" in peak.hovertext[0]
    assert "peak 0.13 MiB at if" in fig.layout.title.text
    with pytest.raises(ValueError, match="no live_bytes"):
        refeval.plot.memory(refeval.read_profile(plain))
    with pytest.raises(ValueError, match="no main-graph events of run 9"):
        refeval.plot.memory(df, run=9)
