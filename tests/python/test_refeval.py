"""The refeval Python package as a user of onnx.reference.ReferenceEvaluator would use it."""
import os
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import refeval

SOURCE = os.environ.get("REFEVAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("REFEVAL_SHARED_DIR", os.path.join(SOURCE, "..", "shared"))
LINREG = os.path.join(SOURCE, "examples", "linreg.onnx")
X = np.load(os.path.join(SOURCE, "examples", "X.npy"))


def linreg_expected():
    m = onnx.load(LINREG)
    w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    return np.sqrt(X + w["offset"]) @ w["coef"] + w["intercept"]


def test_a_model_from_a_path_bytes_or_a_model_proto_gives_the_same_outputs():
    expected = linreg_expected()
    with open(LINREG, "rb") as f:
        data = f.read()
    for proto in (LINREG, data, onnx.load(LINREG)):
        sess = refeval.ReferenceEvaluator(proto)
        (y,) = sess.run(None, {"X": X})
        assert y.dtype == np.float32 and y.shape == (3, 1)
        np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert sess.input_names == ["X"] and sess.output_names == ["variable"] and sess.opsets == {"": 13}


@pytest.mark.parametrize("level", [2, 3, 4])
def test_verbose_prints_the_python_reference_trace_byte_for_byte(level, capsys):
    golden = os.path.join(SHARED, "docs", "verbose-golden")
    sess = refeval.ReferenceEvaluator(os.path.join(golden, "linreg.onnx"), verbose=level)
    sess.run(None, {"X": np.load(os.path.join(golden, "X.npy"))})
    with open(os.path.join(golden, f"verbose_{level}.txt"), encoding="utf-8") as f:
        assert capsys.readouterr().out == f.read()


def test_intermediate_returns_every_value():
    sess = refeval.ReferenceEvaluator(LINREG)
    values = sess.run(None, {"X": X}, intermediate=True)
    assert list(values) == ["coef", "intercept", "offset", "X", "/Add_output_0", "/Sqrt_output_0", "/MatMul_output_0", "variable"]
    np.testing.assert_array_equal(values["/Add_output_0"], X + 2)
    np.testing.assert_array_equal(values["variable"], sess.run(None, {"X": X})[0])
    assert sess.run(["/Sqrt_output_0"], {"X": X})[0].shape == (3, 10)


class Scale(refeval.OpRun):
    op_domain = "test.python"

    def _run(self, x, alpha=1.0, bias=0.0):
        return (x * np.float32(alpha) + np.float32(bias),)


class Fails(refeval.OpRun):
    op_domain = "test.python"

    def _run(self, x):
        raise ValueError("no luck")


def scale_model(attrs):
    nodes = [helper.make_node("Relu", ["X"], ["r"]), helper.make_node("Scale", ["r"], ["Y"], domain="test.python", **attrs)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("test.python", 1)])


def test_a_python_operator_with_an_attribute_runs_inside_a_model():
    x = np.array([-1, 0, 1, 2], dtype=np.float32)
    (y,) = refeval.ReferenceEvaluator(scale_model({"alpha": 2.5}), new_ops=[Scale]).run(None, {"X": x})
    np.testing.assert_array_equal(y, np.array([0, 0, 2.5, 5], dtype=np.float32))
    (y,) = refeval.ReferenceEvaluator(scale_model({}), new_ops=[Scale]).run(None, {"X": x})  # defaults from _run
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_a_python_operator_that_raises_is_an_evaluation_error_naming_the_node():
    m = scale_model({})
    m.graph.node[1].op_type = "Fails"
    with pytest.raises(refeval.EvaluationError, match="Fails.*no luck"):
        refeval.ReferenceEvaluator(m, new_ops=[Fails]).run(None, {"X": np.zeros(4, np.float32)})


def test_bad_input_raises_clear_exceptions():
    with pytest.raises(refeval.ModelError, match="not a valid ONNX model"):
        refeval.ReferenceEvaluator(b"\x08\x07garbage")
    sess = refeval.ReferenceEvaluator(LINREG)
    with pytest.raises(refeval.InputError, match="'X'.*element type differs"):
        sess.run(None, {"X": X.astype(np.float64)})
    with pytest.raises(refeval.InputError, match="X"):
        sess.run(None, {})
    with pytest.raises(refeval.ModelError, match="Scale"):
        refeval.ReferenceEvaluator(scale_model({}))  # no operator for test.python:Scale
    with pytest.raises(TypeError):
        refeval.ReferenceEvaluator(LINREG, new_ops=[int])


def test_graph_node_and_function_protos():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    a, b = np.arange(3, dtype=np.float32), np.ones(3, dtype=np.float32)
    (c,) = refeval.ReferenceEvaluator(node).run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(c, a + b)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in "ab"],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [3])])
    (c,) = refeval.ReferenceEvaluator(graph, opsets={"": 18}).run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(c, a + b)
    fn = helper.make_function("local", "AddMul", ["x", "y"], ["z"],
                              [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Mul", ["s", "y"], ["z"])],
                              [helper.make_opsetid("", 18)])
    (z,) = refeval.ReferenceEvaluator(fn).run(None, {"x": a, "y": b + 1})
    np.testing.assert_array_equal(z, (a + b + 1) * (b + 1))
    # A function attribute given at run time, as onnx.reference's run(..., attributes=...).
    scaled = helper.make_function("local", "Scaled", ["x"], ["y"],
                                  [helper.make_node("Constant", [], ["k"], value_float=0.0),
                                   helper.make_node("CastLike", ["alpha_t", "x"], ["a"]), helper.make_node("Mul", ["x", "a"], ["y"])],
                                  [helper.make_opsetid("", 18)], ["alpha"])
    scaled.node[0].CopyFrom(helper.make_node("Constant", [], ["alpha_t"]))
    ref = onnx.AttributeProto(name="value_float", type=onnx.AttributeProto.FLOAT, ref_attr_name="alpha")
    scaled.node[0].attribute.append(ref)
    sess = refeval.ReferenceEvaluator(scaled)
    np.testing.assert_array_equal(sess.run(None, {"x": a}, attributes={"alpha": 2.0})[0], a * 2)
    np.testing.assert_array_equal(sess.run(None, {"x": a}, attributes={"alpha": 3.0})[0], a * 3)
    with pytest.raises(TypeError):
        refeval.ReferenceEvaluator(node).run(None, {"a": a, "b": b}, attributes={"alpha": 1.0})


def test_sequences_optionals_and_narrow_types():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]), helper.make_node("Cast", ["a"], ["h"], to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["a"], ["bf"], to=TensorProto.BFLOAT16)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "ab"],
                              [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2]),
                               helper.make_tensor_value_info("bf", TensorProto.BFLOAT16, [2])])
    sess = refeval.ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    a, b = np.array([1.5, -2], np.float32), np.array([3, 4], np.float32)
    s, h, bf = sess.run(None, {"a": a, "b": b})
    assert isinstance(s, list) and len(s) == 2
    np.testing.assert_array_equal(s[1], b)
    assert h.dtype == np.float16 and list(h) == [1.5, -2]
    try:
        import ml_dtypes  # noqa: F401
        assert bf.dtype.name == "bfloat16"
    except ImportError:
        assert bf.dtype == np.uint16 and list(bf) == [0x3FC0, 0xC000]  # raw bfloat16 bits
    (back,) = refeval.ReferenceEvaluator(helper.make_node("Identity", ["x"], ["y"])).run(None, {"x": h})
    assert back.dtype == np.float16


def test_the_gil_is_released_while_the_model_runs():
    n = 256
    nodes = [helper.make_node("MatMul", ["X" if i == 0 else f"m{i - 1}", "W"], [f"m{i}" if i < 39 else "Y"]) for i in range(40)]
    w = numpy_helper.from_array(np.eye(n, dtype=np.float32), "W")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, n])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, n])], [w])
    sess = refeval.ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    x = np.ones((n, n), np.float32)
    done = []
    t = threading.Thread(target=lambda: [sess.run(None, {"X": x}) for _ in range(5)] and done.append(1))
    ticks = 0
    t.start()
    while t.is_alive():
        ticks += 1
        time.sleep(0.0005)
    t.join()
    assert done and ticks > 5  # the main thread kept running while the evaluator did


@pytest.mark.skipif(not os.environ.get("REFEVAL_EXAMPLE_PLUGIN"), reason="the example plugin's path is given by ctest")
def test_a_plugin_library_serves_a_custom_operator():
    fused = os.path.join(SOURCE, "examples", "custom_op", "fused.onnx")
    unfused = os.path.join(SOURCE, "examples", "custom_op", "unfused.onnx")
    plain = refeval.ReferenceEvaluator(unfused)
    feeds = {"X": np.linspace(-2, 2, 64 * 64, dtype=np.float32).reshape(64, 64)}
    with_plugin = refeval.ReferenceEvaluator(fused, custom_ops=[os.environ["REFEVAL_EXAMPLE_PLUGIN"]])
    # The unfused x * 0.5 * (1 + erf(x / sqrt 2)) cancels near x = -2 (1 + erf is 0.05 there): an
    # ulp of erf, 1.2e-7, shows in full in the small result. Two float32 Gelus agree to that, not
    # to 1e-6 relative (erf rounded from double, 0.52 ulp, and the plugin differ by one such ulp).
    np.testing.assert_allclose(with_plugin.run(["Y"], feeds)[0], plain.run(["Y"], feeds)[0], rtol=1e-6, atol=1.5e-7)


def test_profile_and_optimize_from_python(tmp_path):
    result = refeval.profile(LINREG, {"X": X}, repeat=3, path=tmp_path / "p.json")
    assert result["runs"] == 3 and result["path"].endswith("p.json")
    assert {r["op_type"]: r["count"] for r in result["by_op"]} == {"Add": 6, "Sqrt": 3, "MatMul": 3}
    import json
    events = json.load(open(result["path"]))
    assert sum(e["name"] == "model_run" for e in events) == 4  # the warm-up run is in the file
    out = refeval.optimize(LINREG, tmp_path / "opt.onnx", level="basic")
    assert out["nodes_before"] == 4 and out["nodes_after"] <= 4
    before = refeval.ReferenceEvaluator(LINREG).run(None, {"X": X})[0]
    after = refeval.ReferenceEvaluator(out["path"]).run(None, {"X": X})[0]
    np.testing.assert_allclose(after, before, rtol=1e-6)
    with pytest.raises(refeval.UsageError, match="not basic, extended or all"):
        refeval.optimize(LINREG, tmp_path / "x.onnx", level="max")


def test_optimize_a_llama_export_and_read_why(tmp_path):
    # A torch export of a Llama-style decoder with a KV cache (tests/data/optimize/README.md).
    folder = os.path.join(SOURCE, "tests", "data", "optimize", "hf_llama_opset17")
    out = refeval.optimize(os.path.join(folder, "model.onnx"), tmp_path / "opt.onnx")
    assert out["model_type"] == "llama"
    ops = out["operators"]
    assert ops["GroupQueryAttention"] == 2 and ops["RotaryEmbedding"] == 4 and "Softmax" not in ops and "Neg" not in ops
    assert out["candidates"]["attention"] == (2, 2)
    standard = refeval.optimize(os.path.join(folder, "model.onnx"), tmp_path / "std.onnx", target="onnx")
    assert standard["operators"]["RMSNormalization"] == 5 and "SimplifiedLayerNormalization" not in standard["operators"]
    trap = os.path.join(SOURCE, "tests", "data", "optimize", "trap_ln_eps_outside_opset17", "model.onnx")
    why = refeval.optimize(trap, tmp_path / "trap.onnx")["not_fused"]
    assert any("epsilon is added outside the square root" in line for line in why)


def test_quantize_a_matmul_to_int4_and_int8_and_run_both(tmp_path):
    # y = x @ W with W 64 x 16: int4 blocks (MatMulNBits) and dynamic int8 (MatMulInteger), each
    # run by the evaluator against numpy's float product, within what the scheme loses.
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, 16)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="proj")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])], [numpy_helper.from_array(w, "W")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "float.onnx")
    x = rng.standard_normal((2, 64)).astype(np.float32)
    for scheme, options, ops in (("int4", {"block_size": 16}, {"MatMulNBits"}), ("int4", {"block_size": 16, "algo": "hqq"}, {"MatMulNBits"}),
                                 ("int8", {"per_channel": True}, {"DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul"})):
        out = refeval.quantize(tmp_path / "float.onnx", tmp_path / f"{scheme}.onnx", scheme=scheme, **options)
        assert out["quantized"] == ["proj"] and out["not_quantized"] == {} and out["computed_products"] == 0 and out["tied_heads"] == {}
        assert out["weight_bytes_after"] < out["weight_bytes_before"] == w.nbytes
        model = onnx.load(tmp_path / f"{scheme}.onnx")
        assert {n.op_type for n in model.graph.node} == ops
        y = refeval.ReferenceEvaluator(model).run(None, {"x": x})[0]
        snr = 10 * np.log10((x @ w).var() / (y - x @ w).var())
        assert snr > (15 if scheme == "int4" else 30), (scheme, snr)
    with pytest.raises(refeval.UsageError, match="no MatMul to quantize .*'proj': excluded"):
        refeval.quantize(tmp_path / "float.onnx", tmp_path / "none.onnx", scheme="int8", exclude=["MatMul"])


def test_quantize_with_gptq_loses_less_than_rtn_on_inputs_like_the_calibration(tmp_path):
    # y = x @ W with x's 64 columns mixed from 8 factors (activations are correlated): GPTQ,
    # calibrated on feeds drawn like the test inputs, moves each row's rounding error onto rows it
    # can be undone by, so its error on fresh inputs of the same distribution is below RTN's.
    rng = np.random.default_rng(5)
    w = rng.standard_normal((64, 16)).astype(np.float32)
    mix = rng.standard_normal((8, 64)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="proj")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 16])], [numpy_helper.from_array(w, "W")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "float.onnx")
    draw = lambda: (rng.standard_normal((32, 8)) @ mix + 0.05 * rng.standard_normal((32, 64))).astype(np.float32)
    calibration = [{"x": draw()} for _ in range(4)]
    x = draw()
    errors = {}
    for algo in ("rtn", "gptq"):
        out = refeval.quantize(tmp_path / "float.onnx", tmp_path / f"{algo}.onnx", algo=algo, block_size=16,
                               feeds=calibration if algo == "gptq" else None)
        assert out["quantized"] == ["proj"]
        y = refeval.ReferenceEvaluator(onnx.load(tmp_path / f"{algo}.onnx")).run(None, {"x": x})[0]
        errors[algo] = float(np.mean((y - x @ w) ** 2))
    assert errors["gptq"] < 0.8 * errors["rtn"], errors
    with pytest.raises(refeval.UsageError, match="needs feeds"):
        refeval.quantize(tmp_path / "float.onnx", tmp_path / "x.onnx", algo="gptq")


def test_quantize_a_tied_lm_head_shares_the_embedding_blocks(tmp_path):
    # logits = table[ids] · tableᵀ: with embeddings=True the head reads the Gather's int4 blocks.
    table = np.random.default_rng(4).standard_normal((24, 32)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["h"], name="embed"),
                               helper.make_node("Transpose", ["table"], ["table_t"], perm=[1, 0]),
                               helper.make_node("MatMul", ["h", "table_t"], ["logits"], name="lm_head")], "g",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 3])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 3, 24])], [numpy_helper.from_array(table, "table")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "tied.onnx")
    for embeddings, how in ((True, "shared"), (False, "copied")):
        out = refeval.quantize(tmp_path / "tied.onnx", tmp_path / "q.onnx", scheme="int4", embeddings=embeddings)
        assert out["tied_heads"] == {"lm_head": how}
        ids = np.array([[0, 5, 23]], np.int64)
        logits = refeval.ReferenceEvaluator(onnx.load(tmp_path / "q.onnx")).run(None, {"ids": ids})[0]
        exact = table[ids] @ table.T
        assert 10 * np.log10(exact.var() / (logits - exact).var()) > 15


def test_quantize_to_float16_keeps_an_overflowing_product_in_float(tmp_path):
    # y = (x @ W1) @ W2 with W2 large: x @ W1 fits float16, the product by W2 reaches ~1e6 on the
    # feeds given, so the second MatMul stays float; with keep_io_types x and y stay float. The
    # result is numpy's float16 computation of the first product and the float one of the second.
    rng = np.random.default_rng(4)
    w1 = rng.standard_normal((8, 8)).astype(np.float32)
    w2 = (rng.standard_normal((8, 4)) * 1e5).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W1"], ["h"], name="small"),
                               helper.make_node("MatMul", ["h", "W2"], ["y"], name="large")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "float.onnx")
    x = rng.standard_normal((2, 8)).astype(np.float32)
    out = refeval.quantize(tmp_path / "float.onnx", tmp_path / "half.onnx", scheme="float16", keep_io_types=True, feeds=[{"x": x}])
    assert list(out["kept_in_float"]) == ["large"] and "beyond float16's 65504" in out["kept_in_float"]["large"]
    model = onnx.load(tmp_path / "half.onnx")
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    h = (x.astype(np.float16) @ w1.astype(np.float16)).astype(np.float32)
    y = refeval.ReferenceEvaluator(model).run(None, {"x": x})[0]
    expected = h @ w2
    assert np.abs(y - expected).max() <= 1e-3 * np.abs(expected).max()
    with pytest.raises(refeval.UsageError, match="needs feeds"):
        refeval.quantize(tmp_path / "float.onnx", tmp_path / "none.onnx", scheme="float16")


def test_reduce_finds_the_node_that_makes_a_nan(tmp_path):
    # x -> Relu -> (Log of a negative constant, planted) * 0 + x -> Tanh: the Log alone is kept.
    nodes = [helper.make_node("Relu", ["X"], ["r"], name="relu"),
             helper.make_node("Log", ["neg"], ["bad"], name="planted_log"),
             helper.make_node("Mul", ["bad", "zero"], ["z"], name="times_zero"),
             helper.make_node("Add", ["r", "z"], ["s"], name="add"),
             helper.make_node("Tanh", ["s"], ["Y"], name="tanh")]
    inits = [numpy_helper.from_array(np.array([-1.0], np.float32), "neg"), numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = refeval.reduce(path, tmp_path / "small.onnx", nan=True, inputs={"X": np.array([1, -2, 3], np.float32)})
    assert result["original_nodes"] == 5 and result["nodes"] == 1
    assert any("planted_log" in k for k in result["kept"])
    with pytest.raises(refeval.UsageError, match="exactly one"):
        refeval.reduce(path, tmp_path / "x.onnx")


def test_threads_give_the_same_bits():
    n = 200
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"])]
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((n, 3 * n)).astype(np.float32), "W")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, n])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, 3 * n])], [w])
    sess = refeval.ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    x = rng.standard_normal((n, n)).astype(np.float32)
    assert refeval.threads() == 1
    (one,) = sess.run(None, {"X": x})
    refeval.set_threads(2)
    try:
        (two,) = sess.run(None, {"X": x})
    finally:
        refeval.set_threads(1)
    assert one.tobytes() == two.tobytes()
