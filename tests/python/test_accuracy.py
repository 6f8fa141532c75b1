"""refeval.accuracy: the planted (x + 1e4) - 1e4 network (tests/cli/accuracy_test.sh's) against
its float64 oracle and numpy, and the QDQ CNN of tests/cli/accuracy_models.py against its float
original with qdq_loss_debug's SQNR computed in numpy."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import refeval

SOURCE = os.environ.get("REFEVAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def planted():
    rng = np.random.default_rng(1)
    W1 = rng.standard_normal((16, 8)).astype(np.float32)
    b1 = rng.standard_normal(8).astype(np.float32)
    W2 = (0.05 * rng.standard_normal((8, 4))).astype(np.float32)
    x = rng.random((4, 16), dtype=np.float32)
    inits = [nh.from_array(W1, "W1"), nh.from_array(b1, "b1"), nh.from_array(W2, "W2"), nh.from_array(np.array(1e4, np.float32), "big")]
    nodes = [h.make_node("MatMul", ["X", "W1"], ["m1"], name="mm1"), h.make_node("Add", ["m1", "b1"], ["a1"], name="bias"),
             h.make_node("Tanh", ["a1"], ["t1"], name="tanh"), h.make_node("Add", ["t1", "big"], ["p"], name="add_big"),
             h.make_node("Sub", ["p", "big"], ["q"], name="sub_big"), h.make_node("MatMul", ["q", "W2"], ["m2"], name="mm2"),
             h.make_node("Sigmoid", ["m2"], ["Y"], name="sig")]
    g = h.make_graph(nodes, "planted", [h.make_tensor_value_info("X", T.FLOAT, [4, 16])], [h.make_tensor_value_info("Y", T.FLOAT, [4, 4])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    X = x.astype(np.float64)
    q = (np.tanh(X @ W1.astype(np.float64) + b1.astype(np.float64)) + 1e4) - 1e4
    return m, x, 1 / (1 + np.exp(-(q @ W2.astype(np.float64))))


def test_planted_add_ranks_first_and_output_error_matches_numpy():
    m, x, oracle = planted()
    table = refeval.accuracy(m, {"X": x})
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    assert rows[0]["node"] == "add_big" and rows[0]["op_type"] == "Add"
    assert rows[0]["contribution_rms"] > 100 * max(r["contribution_rms"] or 0 for r in rows[1:])
    sub = next(r for r in rows if r["node"] == "sub_big")
    assert sub["local_rms"] == 0 and (sub["contribution_rms"] is None or np.isnan(sub["contribution_rms"]))
    doc = refeval.accuracy(m, {"X": x}, raw=True)
    (y,) = refeval.ReferenceEvaluator(m).run(None, {"X": x})
    d = np.abs(y.astype(np.float64) - oracle)
    acc = doc["outputs"][0]["accumulated"]
    assert acc["max_abs"] == pytest.approx(d.max(), rel=1e-6)
    assert acc["rms"] == pytest.approx(np.sqrt((d * d).mean()), rel=1e-6)
    assert doc["oracle"] == "float64" and doc["nodes"][0]["node"] == "add_big"


def test_pandas_or_list():
    m, x, _ = planted()
    table = refeval.accuracy(m, {"X": x}, local=False)
    try:
        import pandas  # noqa: F401
        assert list(table.columns)[:4] == ["node", "op_type", "output", "dtype"] and len(table) == 7
        assert table["contribution_rms"].isna().all()
    except ImportError:
        assert isinstance(table, list) and len(table) == 7


def test_qdq_reference_sqnr_matches_numpy(tmp_path):
    subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "cli", "accuracy_models.py"), str(tmp_path)], check=True)
    want = json.load(open(tmp_path / "want_sqnr.json"))
    x = np.load(tmp_path / "xc.npy")
    table = refeval.accuracy(tmp_path / "cnn_qdq.onnx", {"X": x}, reference=tmp_path / "cnn.onnx")
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    got = {r["name"]: r for r in rows}
    assert set(got) == set(want)
    for name, (base, sqnr) in want.items():
        assert got[name]["reference"] == base
        assert abs(got[name]["sqnr_db"] - sqnr) <= 0.1, name
    assert rows[0]["name"] == "conv2_out_DequantizeLinear_Output"  # worst SQNR first


def test_errors_are_refeval_errors(tmp_path):
    m, x, _ = planted()
    with pytest.raises(refeval.InputError):
        refeval.accuracy(m, {"X": x[:, :3]})
