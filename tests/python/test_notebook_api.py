"""The notebook functions of the refeval package (read_profile, op_table, compare, summary, runs,
plot, show, check_fusion, Jupyter display) against the command line: the same profile files give
the same numbers as `refeval report --format csv`."""
import csv
import io
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import refeval

SOURCE = os.environ.get("REFEVAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("REFEVAL_CLI", os.path.join(SOURCE, "build", "refeval"))
PROFILES = os.path.join(SOURCE, "tests", "data", "profiles")
FIXTURES = sorted(os.path.join(PROFILES, f) for f in os.listdir(PROFILES) if f.endswith(".json"))
LINREG = os.path.join(SOURCE, "examples", "linreg.onnx")
X = np.load(os.path.join(SOURCE, "examples", "X.npy"))
GPT2 = os.path.join(SOURCE, "tests", "data", "optimize", "hf_gpt2_opset17")
GPT2_PAST = os.path.join(SOURCE, "tests", "data", "optimize", "hf_gpt2_past_opset17", "model.onnx")

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


def report_csv(*args):
    out = subprocess.run([CLI, "-q", "report", *args, "--format", "csv"], check=True, capture_output=True, text=True).stdout
    return list(csv.reader(io.StringIO(out)))


def table_as_report_csv(table):
    """An op_table() as report's CSV cells: ms with 3 decimals, mean 6, pct 2."""
    formats = {"total_ms": "{:.3f}", "mean_ms": "{:.6f}", "pct": "{:.2f}", "count": "{}"}
    rows = [list(table.columns)]
    for r in table.to_dict("records"):
        rows.append([formats.get(c, "{}").format(r[c]) for c in table.columns])
    return rows


def compare_as_report_csv(table):
    def cell(c, v):
        if c in ("before_ms", "after_ms"):
            return f"{v:.3f}"
        if c in ("before_count", "after_count"):
            return f"{round(v * 1000) / 1000:g}"
        if c == "delta_ms":
            return f"{v:+.3f}"
        if c == "speedup":
            return "" if np.isnan(v) else f"{v:.2f}x"
        return str(v)
    return [list(table.columns)] + [[cell(c, r[c]) for c in table.columns] for r in table.to_dict("records")]


def gpt2_feeds(folder=GPT2):
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    feeds = {}
    for k, i in enumerate(model.graph.input):
        t = onnx.TensorProto()
        with open(os.path.join(folder, "test_data_set_0", f"input_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[i.name] = numpy_helper.to_array(t)
    return feeds


@needs_pandas
@pytest.fixture(scope="module")
def gpt2_profile(tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "gpt2.json"
    refeval.profile(os.path.join(GPT2, "model.onnx"), gpt2_feeds(), warmup=1, repeat=3, path=path)
    return str(path)


# --- read_profile / op_table / compare against `refeval report` ---

@needs_pandas
@needs_cli
@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
@pytest.mark.parametrize("by", ["op", "node", "provider"])
def test_op_table_of_ort_fixtures_is_report_csv(path, by):
    assert table_as_report_csv(refeval.op_table(refeval.read_profile(path), by=by)) == report_csv(path, "--by", by)


@needs_pandas
@needs_cli
@pytest.mark.parametrize("by", ["op", "node", "provider"])
def test_op_table_of_a_refeval_profile_is_report_csv(gpt2_profile, by):
    assert table_as_report_csv(refeval.op_table(refeval.read_profile(gpt2_profile), by=by)) == report_csv(gpt2_profile, "--by", by)


@needs_pandas
@needs_cli
@pytest.mark.parametrize("selection", [{"include_warmup": True}, {"runs": "2:"}, {"runs": slice(0, -1)}, {"runs": "-1:"}])
def test_run_selection_is_reports(selection):
    path = os.path.join(PROFILES, "ort-1.30-linreg-disabled.json")
    args = ["--include-warmup"] if "include_warmup" in selection else []
    if "runs" in selection:
        r = selection["runs"]
        args = [f"--runs={r if isinstance(r, str) else f'{r.start}:{r.stop}'}"]
    df = refeval.read_profile(path, **selection)
    assert table_as_report_csv(refeval.op_table(df)) == report_csv(path, *args)


@needs_pandas
@needs_cli
def test_several_files_are_read_as_one_profile():
    paths = [os.path.join(PROFILES, "ort-1.30-linreg-disabled.json"), os.path.join(PROFILES, "ort-1.30-linreg-all.json")]
    df = refeval.read_profile(paths)
    assert set(df["file"]) == set(paths)
    assert table_as_report_csv(refeval.op_table(df, by="node")) == report_csv(*paths, "--by", "node")
    assert refeval.summary(df).runs_used == 6


@needs_pandas
@needs_cli
@pytest.mark.parametrize("by", ["op", "node"])
def test_compare_is_report_compare(by):
    before, after = (os.path.join(PROFILES, f"ort-1.30-linreg-{level}.json") for level in ("disabled", "all"))
    table = refeval.compare(refeval.read_profile(before), refeval.read_profile(after), by=by)
    assert compare_as_report_csv(table) == report_csv(before, "--compare", after, "--by", by)
    assert set(table["status"]) == {"", "vanished", "appeared"}


@needs_pandas
@needs_cli
def test_a_fresh_ort_profile_of_gpt2_is_report_csv(tmp_path):
    """ORT 1.30 (onnxruntime-node) profiles the bundled GPT-2 export now; op_table equals report."""
    node = shutil.which("node")
    script = os.path.join(SOURCE, "benchmarks", "ort", "profile_ort.js")
    modules = os.path.join(SOURCE, "benchmarks", "ort", "node_modules")
    if not node or not os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        pytest.skip("node or benchmarks/ort/node_modules/onnxruntime-node is missing")
    feeds = []
    for name, value in gpt2_feeds().items():
        np.save(tmp_path / f"{name}.npy", value)
        feeds.append(f"{name}={tmp_path / f'{name}.npy'}")
    for level in ("disabled", "all"):
        out = tmp_path / f"ort_{level}.json"
        subprocess.run([node, script, os.path.join(GPT2, "model.onnx"), level, "3", str(out), *feeds], check=True,
                       capture_output=True, env={**os.environ, "NODE_PATH": modules})
        df = refeval.read_profile(out)
        assert (df["provider"] == "CPUExecutionProvider").all() and len(df) > 100
        for by in ("op", "node"):
            assert table_as_report_csv(refeval.op_table(df, by=by)) == report_csv(str(out), "--by", by)


@needs_pandas
@needs_cli
@pytest.mark.skipif(not os.environ.get("REFEVAL_GPT2_ORT_PROFILES"), reason="REFEVAL_GPT2_ORT_PROFILES (ORT profiles of GPT-2 small, "
                    "benchmarks/profile_gpt2_check.sh writes them) is not set")
@needs_pandas
def test_held_out_ort_profiles_of_gpt2_small_are_report_csv():
    for path in os.environ["REFEVAL_GPT2_ORT_PROFILES"].split(os.pathsep):
        df = refeval.read_profile(path)
        for by in ("op", "node", "provider"):
            assert table_as_report_csv(refeval.op_table(df, by=by)) == report_csv(path, "--by", by)


@needs_pandas
def test_the_frame_has_one_row_per_kernel_event_of_the_selected_runs():
    path = os.path.join(PROFILES, "ort-web-1.16.3-linreg-fences.json")
    df = refeval.read_profile(path)
    import json
    with open(path) as f:
        events = json.load(f)
    kernels = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    assert len(df) == len(kernels) * 3 // 4  # 4 runs, the warm-up left out
    assert list(df.columns[:8]) == ["file", "run", "phase", "step", "node", "op_type", "provider", "node_index"]
    assert sorted(set(df["run"])) == [1, 2, 3]
    assert (df["duration_ms"] == df["duration_us"] / 1000).all()
    matmul = df[df["op_type"] == "MatMul"].iloc[0]
    # ORT lists the activations only, not the initializer coef
    assert matmul["inputs"] == "float[3x10]" and matmul["input_shapes"] == [("float", (3, 10))]
    assert matmul["outputs"] == "float[3x1]" and matmul["output_size"] == 12
    assert refeval.summary(df).fence_events == refeval.runs(df)["fence_events"].sum() == 2 * len(df)  # before and after each
    assert len(refeval.read_profile(path, include_warmup=True)) == len(kernels)


@needs_pandas
@needs_cli
def test_summary_is_reports_first_lines_and_renders_as_html():
    path = os.path.join(PROFILES, "ort-1.30-linreg-all.json")
    text = subprocess.run([CLI, "-q", "report", path], check=True, capture_output=True, text=True).stdout
    s = refeval.summary(refeval.read_profile(path))
    assert str(s) == "".join(text.splitlines(keepends=True)[:2])
    page = s._repr_html_()
    assert "<table" in page and "Gemm" in page and "warm-up" in page


@needs_pandas
@needs_cli
def test_a_generate_profile_by_phase_and_its_steps(tmp_path):
    profile = tmp_path / "gen.json"
    refeval.generate(GPT2_PAST, [[5, 6, 7, 8]], new_tokens=6, profile=profile)
    df = refeval.read_profile(profile)
    assert table_as_report_csv(refeval.op_table(df, by="phase")) == report_csv(str(profile), "--by", "phase")
    assert table_as_report_csv(refeval.op_table(refeval.read_profile(profile, phase="decode"))) == \
        report_csv(str(profile), "--phase", "decode")
    runs = refeval.runs(df)
    assert list(runs["step"]) == list(range(6)) and list(runs["phase"]) == ["prefill"] + ["decode"] * 5
    assert (runs["kv_cache_bytes"] > 0).all()


@needs_pandas
def test_profile_can_return_the_frame(tmp_path):
    df = refeval.profile(LINREG, {"X": X}, repeat=4, path=tmp_path / "p.json", frame=True)
    assert sorted(set(df["run"])) == [1, 2, 3, 4]
    table = refeval.op_table(df)
    assert dict(zip(table["op_type"], table["count"])) == {"Add": 8, "Sqrt": 4, "MatMul": 4}


@needs_pandas
def test_op_table_by_scope_and_bad_arguments(gpt2_profile):
    df = refeval.read_profile(gpt2_profile)
    scopes = refeval.op_table(df, by="scope")
    assert "/h.0/mlp" in set(scopes["scope"]) and scopes["count"].sum() == len(df)
    assert abs(scopes["pct"].sum() - 100) < 1e-9
    assert len(refeval.op_table(df, top=3)) == 3
    with pytest.raises(ValueError, match="not op, node, provider, phase or scope"):
        refeval.op_table(df, by="kernel")
    with pytest.raises(ValueError, match="not a profile frame"):
        refeval.op_table(pd.DataFrame({"duration_us": [1], "op_type": ["A"], "node": ["a"], "provider": [""], "depth": [0]}))
    with pytest.raises(refeval.InputError, match="missing.json"):
        refeval.read_profile("missing.json")
    with pytest.raises(refeval.UsageError, match="--runs"):
        refeval.read_profile(FIXTURES[0], runs="x")


# --- charts ---

@needs_plotly
def test_plot_ops_draws_one_bar_per_op_type(gpt2_profile):
    df = refeval.read_profile(gpt2_profile)
    table = refeval.op_table(df)
    fig = refeval.plot.ops(df)
    assert isinstance(fig, plotly.graph_objects.Figure) and len(fig.data) == 1 and fig.data[0].type == "bar"
    assert list(fig.data[0].x) == list(table["op_type"]) and np.allclose(fig.data[0].y, table["total_ms"])
    count = refeval.plot.ops(table, kind="count")
    assert sorted(count.data[0].y, reverse=True) == list(count.data[0].y) and sum(count.data[0].y) == len(df)
    share = refeval.plot.ops(df, kind="share")
    assert share.data[0].type == "pie" and len(share.data[0].labels) == len(table)
    assert len(refeval.plot.ops(df, top=5).data[0].x) == 5
    with pytest.raises(ValueError, match="not duration, count or share"):
        refeval.plot.ops(df, kind="mean")


@needs_plotly
def test_plot_timeline_compare_and_steps(gpt2_profile, tmp_path):
    df = refeval.read_profile(gpt2_profile)
    fig = refeval.plot.timeline(df, run=2)
    assert {t.name for t in fig.data} == set(df["op_type"]) and sum(len(t.x) for t in fig.data) == (df["run"] == 2).sum()
    assert min(min(t.base) for t in fig.data) >= 0
    with pytest.raises(ValueError, match="no events of run 9"):
        refeval.plot.timeline(df, run=9)
    optimized = refeval.optimize(os.path.join(GPT2, "model.onnx"), tmp_path / "opt.onnx", model_type="gpt2")["path"]
    after = refeval.profile(optimized, gpt2_feeds(), repeat=3, path=tmp_path / "opt.json", frame=True)
    fig = refeval.plot.compare(df, after, top=None)
    table = refeval.compare(df, after)
    assert [t.name for t in fig.data] == ["before", "after"] and list(fig.data[1].x) == list(table["op_type"])
    assert "Attention" in set(fig.data[1].x) or "MultiHeadAttention" in set(fig.data[1].x)
    gen = tmp_path / "gen.json"
    refeval.generate(GPT2_PAST, [[1, 2, 3]], new_tokens=5, profile=gen)
    fig = refeval.plot.steps(refeval.read_profile(gen))
    assert {t.name for t in fig.data} == {"prefill", "decode"} and sum(len(t.x) for t in fig.data) == 5


def test_import_refeval_works_without_pandas_and_plotly():
    code = ("import sys\n"
            "sys.modules['pandas'] = None\nsys.modules['plotly'] = None\nsys.modules['plotly.express'] = None\n"
            "import numpy as np, refeval\n"
            f"X = np.load({os.path.join(SOURCE, 'examples', 'X.npy')!r})\n"
            f"print(refeval.ReferenceEvaluator({LINREG!r}).run(None, {{'X': X}})[0].shape)\n"
            "for call in (lambda: refeval.read_profile('p.json'), lambda: refeval.plot.ops(None)):\n"
            "    try:\n        call()\n    except ImportError as e:\n        print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "(3, 1)"
    assert "apt-get install python3-pandas" in lines[1] and "apt-get install python3-plotly" in lines[2]


# --- show, check_fusion, evaluators in Jupyter ---

def test_show_gives_the_viewer_page_in_an_iframe(tmp_path):
    view = refeval.show(LINREG)
    assert view.html.startswith("<!DOCTYPE html>") and "<svg" in view.html
    frame = view._repr_html_()
    assert frame.startswith("<iframe") and "srcdoc=" in frame and "<svg" not in frame  # escaped: the page cannot leak out
    assert "bytes of HTML" in repr(view)
    assert view.save(tmp_path / "v.html") and (tmp_path / "v.html").read_text() == view.html
    optimized = refeval.optimize(LINREG, tmp_path / "opt.onnx")["path"]
    assert "Gemm" in refeval.show(LINREG, diff=optimized).html
    with pytest.raises(refeval.ModelError):
        refeval.show(tmp_path / "missing.onnx")


def fused_linreg(tmp_path):
    """linreg with Add + Sqrt fused into chapter:AddSqrt, whose model-local function is the original pair."""
    m = onnx.load(LINREG)
    add, sqrt = m.graph.node[0], m.graph.node[1]
    fused = helper.make_node("AddSqrt", list(add.input), list(sqrt.output), name="add_sqrt", domain="chapter")
    body = [helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Sqrt", ["s"], ["y"])]
    function = helper.make_function("chapter", "AddSqrt", ["x", "b"], ["y"], body, [helper.make_opsetid("", 13)])
    graph = helper.make_graph([fused] + list(m.graph.node[2:]), "fused", list(m.graph.input), list(m.graph.output),
                              list(m.graph.initializer))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("chapter", 1)],
                              functions=[function])
    path = tmp_path / "fused.onnx"
    onnx.save(model, path)
    return str(path)


class AddSqrt(refeval.OpRun):
    op_domain = "chapter"

    def _run(self, x, b):
        with np.errstate(invalid="ignore"):  # the negative input set: NaN on both sides
            return (np.sqrt(x + b),)


class AddSqrtWrong(refeval.OpRun):  # forgets the bias
    op_domain = "chapter"

    def _run(self, x, b):
        return (np.sqrt(np.abs(x)),)


AddSqrtWrong.__name__ = "AddSqrt"


def test_check_fusion_of_a_python_operator(tmp_path):
    fused = fused_linreg(tmp_path)
    result = refeval.check_fusion(fused, {"X": np.abs(X)}, op="chapter:AddSqrt", new_ops=[AddSqrt], repeat=1)
    assert result.equivalent and len(result) == 1
    check = result[0]
    assert check.subject.startswith("node 'add_sqrt'") and "model-local function" in check.report["unfused"]
    assert [s["set"] for s in check.sets][:3] == ["given", "random 1", "random 2"]
    assert "equivalent:" in repr(result) and "color:#080" in result._repr_html_()
    wrong = refeval.check_fusion(fused, {"X": np.abs(X)}, node="add_sqrt", new_ops=[AddSqrtWrong], repeat=1)
    assert not wrong.equivalent and "NOT equivalent" in repr(wrong) and "NOT equivalent" in wrong._repr_html_()
    models = refeval.check_fusion(fused=fused, unfused=LINREG, feeds={"X": np.abs(X)}, new_ops=[AddSqrt], repeat=1)
    assert models.equivalent and "variable" in [o["name"] for o in models[0].sets[0]["outputs"]]
    with pytest.raises(TypeError, match="either model"):
        refeval.check_fusion(fused, fused=fused)
    with pytest.raises(refeval.UsageError, match="no node matches"):
        refeval.check_fusion(fused, {"X": X}, node="no_such_node", new_ops=[AddSqrt])


def test_an_evaluator_shows_its_inputs_outputs_and_python_ops():
    sess = refeval.ReferenceEvaluator(LINREG)
    assert repr(sess).splitlines()[1:] == ["  inputs:  X", "  outputs: variable", "  opsets:  ai.onnx 13"]
    page = refeval.ReferenceEvaluator(onnx.load(LINREG), new_ops=[AddSqrt])._repr_html_()
    assert "<table" in page and "chapter:AddSqrt" in page and "variable" in page
