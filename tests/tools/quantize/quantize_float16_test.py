#!/usr/bin/env python3
"""`refeval quantize --float16` against ONNX Runtime's float16 converter's conventions
(transformers/float16.py, docs in ../../../docs/cli/quantize.md): float initializers and constants
clamped to [5.96e-08, 65504] in magnitude and rounded to float16 as numpy does, blocked ops (TopK)
and the nodes a calibration run finds out of float16's range kept in float between Casts, graph
inputs and outputs kept in float with --keep-io-types; the written models run in ONNX Runtime 1.30
against refeval, and against the float model at the SNR float16 allows.

  tests/tools/quantize/quantize_float16_test.py REFEVAL SOURCE_DIR
"""
import pathlib
import re
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from checks import check, finish
from checks import run as run_refeval

REFEVAL, SRC = sys.argv[1], pathlib.Path(sys.argv[2])
sys.path.insert(0, str(SRC / "tests" / "data" / "ort"))
K = 32


def run(*args):
    return run_refeval(REFEVAL, *args)


def model(rng):
    """y = LayerNorm(x W + b) * 2 + ConstantOfShape zeros, and TopK of it (blocked: its values
    come back as a second output); z = (x * 1e5) / 1e5 + x: its Mul leaves float16's range, so
    the Mul and the Div stay in float and so does 1e5, which only they read; big_out = big, tiny
    values and a mask's filler clamped."""
    w = rng.standard_normal((K, K)).astype(np.float32) * 0.3
    w[0, 0] = 1e-9  # clamped to 5.96e-08
    b = rng.standard_normal(K).astype(np.float32)
    big = np.array([1e-9, -3.4028235e38, 0.0, -np.inf, 1.5, 3.0], np.float32)  # a mask's filler clamps to -65504
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"], name="proj"),
        helper.make_node("Add", ["xw", "b"], ["h"], name="bias"),
        helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["n"], name="norm", axis=-1),
        helper.make_node("Constant", [], ["two"], name="two", value_float=2.0),
        helper.make_node("Mul", ["n", "two"], ["n2"], name="double"),
        helper.make_node("Shape", ["n2"], ["shape"], name="shape"),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name="zeros"),
        helper.make_node("Add", ["n2", "zeros"], ["y"], name="plus_zeros"),
        helper.make_node("TopK", ["y", "k"], ["top", "top_i"], name="topk", axis=-1),
        helper.make_node("Mul", ["x", "scale_up"], ["up"], name="up"),
        helper.make_node("Div", ["up", "scale_up"], ["down"], name="down"),
        helper.make_node("Add", ["down", "x"], ["z"], name="z"),
        helper.make_node("Identity", ["big"], ["big_out"], name="big_out"),
    ]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.ones(K, np.float32), "gamma"), numpy_helper.from_array(np.zeros(K, np.float32), "beta"),
             numpy_helper.from_array(np.array([3], np.int64), "k"), numpy_helper.from_array(np.array(1e5, np.float32), "scale_up"),
             numpy_helper.from_array(big, "big")]
    graph = helper.make_graph(
        nodes, "f", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", K]),
         helper.make_tensor_value_info("top", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", K]),
         helper.make_tensor_value_info("big_out", TensorProto.FLOAT, [6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), {i.name: numpy_helper.to_array(i) for i in inits}


def float16_reference(a):
    """ORT's clamp, then numpy's rounding to float16."""
    a = a.astype(np.float32).copy()
    finite = np.isfinite(a) & (a != 0)
    a[finite & (np.abs(a) < 5.96e-08)] = np.copysign(np.float32(5.96e-08), a[finite & (np.abs(a) < 5.96e-08)])
    a[finite & (np.abs(a) > 65504)] = np.copysign(np.float32(65504), a[finite & (np.abs(a) > 65504)])
    return a.astype(np.float16)


def elem_type(vi):
    return vi.type.tensor_type.elem_type


def main():
    rng = np.random.default_rng(13)
    work = pathlib.Path(tempfile.mkdtemp(prefix="refeval-float16-"))
    m, inits = model(rng)
    src = work / "float.onnx"
    onnx.save(m, src)
    for keep in (True, False):
        label = "keep-io-types" if keep else "float16 inputs and outputs"
        out = work / f"f16_{int(keep)}.onnx"
        r = run("quantize", src, "-o", out, "--float16", *(["--keep-io-types"] if keep else []), "--random-sets", 2, "--runs", 0)
        check(r.returncode == 0, f"{label}: exit 0 ({r.stderr.strip()[:300]})")
        check("kept in float: 'topk': TopK is in the block list" in r.stdout, f"{label}: TopK kept in float, named")
        check(re.search(r"kept in float: 'up': its output 'up' reaches \d\.\d+e\+0[45] on input set \d, beyond float16's 65504", r.stdout)
              and "kept in float: 'down': its input 'up' reaches" in r.stdout, f"{label}: the out-of-range Mul and the Div after it kept in float")
        snrs = [float(v) for v in re.findall(r"^(?:y|z|top)\s+\S+\s+\S+\s+(\S+)", r.stdout, re.M)]
        check(len(snrs) == 3 and min(snrs) > 40, f"{label}: SNR above 40 dB on y, z and top ({snrs})")
        q = onnx.load(out)
        qi = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
        for name in ("W", "b", "gamma", "beta", "big"):
            want = float16_reference(inits[name])
            check(qi[name].dtype == np.float16 and qi[name].tobytes() == want.tobytes(), f"{label}: {name} is the clamped float16 reference")
        check(qi["scale_up"].dtype == np.float32 and qi["scale_up"] == 1e5, f"{label}: 1e5, read only by nodes kept in float, stays float")
        io = {vi.name: elem_type(vi) for vi in list(q.graph.input) + list(q.graph.output)}
        want_io = TensorProto.FLOAT if keep else TensorProto.FLOAT16
        check(all(t == want_io for t in io.values()), f"{label}: inputs and outputs are {'float' if keep else 'float16'} ({io})")
        names = {n.name for n in q.graph.node}
        if keep:
            check({"graph_input_cast0", "graph_output_cast0"} <= names, f"{label}: the graph's Casts named as ORT names them")
        # Its values are a graph output: kept in float, they are written in float, without a Cast.
        check("topk_input_cast0" in names and ("topk_output_cast0" in names) != keep, f"{label}: TopK between Casts, named as ORT names them")
        const = next(n for n in q.graph.node if n.name == "two")
        check(numpy_helper.to_array(const.attribute[0].t).dtype == np.float16, f"{label}: the Constant's value is float16")
        ort_agrees(q, label, work, keep)
    integers(work)
    sequences(work)
    decoder(work)
    r = run("quantize", src, "-o", work / "x.onnx", "--int8", "--keep-io-types")
    check(r.returncode == 2 and "--keep-io-types goes with --float16" in r.stderr, "--keep-io-types without --float16: exit 2")
    r = run("quantize", src, "-o", work / "x.onnx", "--float16", "--exclude", "proj")
    check(r.returncode == 2 and "--float16-block" in r.stderr, "--float16 --exclude: exit 2 naming --float16-block")
    r = run("quantize", src, "-o", work / "blocked.onnx", "--float16", "--float16-block", "norm", "--runs", 0)
    check(r.returncode == 0 and "kept in float: 'norm': named in --float16-block" in r.stdout, "--float16-block by node name")
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "then", [], [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
    body = helper.make_graph([helper.make_node("If", ["c"], ["o"], then_branch=then, else_branch=then, name="branch")], "g",
                             [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])])
    onnx.save(helper.make_model(body, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), work / "if.onnx")
    r = run("quantize", work / "if.onnx", "-o", work / "x.onnx", "--float16")
    check(r.returncode == 2 and "'branch' (If) has a body graph" in r.stderr, "a model with an If body: exit 2 naming the node")
    shutil.rmtree(work)
    finish()


def integers(work):
    """Only float values become float16: an int64 graph input (token ids), an int64 graph output
    and an int64 initializer (a Reshape's shape) keep their type, inputs and outputs in float16 or
    not; the model still type-checks."""
    nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"], name="embed", axis=0),
             helper.make_node("Reshape", ["rows", "flat"], ["y"], name="flatten"),
             helper.make_node("Identity", ["ids"], ["ids_out"], name="echo")]
    inits = [numpy_helper.from_array(np.arange(4 * K, dtype=np.float32).reshape(4, K) / K, "table"),
             numpy_helper.from_array(np.array([-1], np.int64), "flat")]
    graph = helper.make_graph(nodes, "ids", [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3 * K]),
                               helper.make_tensor_value_info("ids_out", TensorProto.INT64, [3])], inits)
    src = work / "ids.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), src)
    for keep in (True, False):
        out = work / f"ids_{int(keep)}.onnx"
        r = run("quantize", src, "-o", out, "--float16", *(["--keep-io-types"] if keep else []), "--fill", "ids=1", "--random-sets", 1, "--runs", 0)
        check(r.returncode == 0, f"integers, keep {keep}: exit 0 ({r.stderr.strip()[:300]})")
        q = onnx.load(out)
        qi = {i.name: i.data_type for i in q.graph.initializer}
        io = [elem_type(q.graph.input[0]), elem_type(q.graph.output[1])]
        check(io == [TensorProto.INT64] * 2 and qi == {"table": TensorProto.FLOAT16, "flat": TensorProto.INT64},
              f"integers, keep {keep}: the ids input and output and the shape stay int64, the table is float16 ({io}, {qi})")
        error = ""
        try:
            onnx.checker.check_model(q, full_check=True)
        except onnx.checker.ValidationError as e:
            error = str(e)
        check(not error, f"integers, keep {keep}: the model type-checks ({error[:200]})")


def sequences(work):
    """A sequence between two nodes (SequenceConstruct, ConcatFromSequence) is no tensor for the
    overflow check to read; the model converts and keeps its values, and has no weights to say."""
    nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["s"], name="pair"),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], name="stack", axis=0)]
    graph = helper.make_graph(nodes, "seq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    src = work / "seq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), src)
    r = run("quantize", src, "-o", work / "seq16.onnx", "--float16", "--runs", 0)
    snr = re.search(r"^y\s+\S+\s+\S+\s+(\S+)", r.stdout, re.M)
    check(r.returncode == 0 and "converted 2 of 2 nodes to float16" in r.stdout and "weights: none" in r.stdout
          and snr and float(snr.group(1)) > 60, f"sequences: converted, y within float16's rounding ({r.stdout.strip()[-200:]} {r.stderr.strip()[:200]})")


def decoder(work):
    """A Llama-style torch export with its KV cache (tests/data/optimize/hf_llama_opset17), in
    float16 with float inputs and outputs: torch's outputs within 20 float16 roundings (2^-11 each)
    of each row's largest magnitude in refeval on every set, and in ONNX Runtime on the positions a
    left-padded row's mask keeps (where every key is hidden, runtimes differ by design)."""
    data = SRC / "tests" / "data" / "optimize" / "hf_llama_opset17"
    folder = work / "llama_f16"
    shutil.copytree(data, folder)
    r = run("quantize", data / "model.onnx", "-o", folder / "model.onnx", "--float16", "--keep-io-types",
            "--inputs", data / "test_data_set_0", "--random-sets", 1, "--runs", 0)
    snr = re.search(r"^logits\s+\S+\s+\S+\s+(\S+)", r.stdout, re.M)
    check(r.returncode == 0 and snr and float(snr.group(1)) > 40, f"decoder: converted, logits' SNR above 40 dB ({snr.group(1) if snr else r.stderr.strip()[-300:]})")
    tolerance = 20 * 2.0 ** -11
    r = run("test", folder, "--rtol", 0, "--atol", 0, "--row-rtol", tolerance)
    check(r.returncode == 0, f"decoder: torch's outputs within {tolerance:.3g} of each row's largest in refeval ({r.stdout.strip()[-300:]})")
    modules = SRC / "benchmarks" / "ort" / "node_modules"
    if modules.is_dir():
        import os
        import subprocess
        r = subprocess.run(["node", str(SRC / "tests" / "data" / "optimize" / "check_ort.js"), "--atol", "0.02",
                            "--skip-hidden-queries", "attention_mask", str(folder)],
                           capture_output=True, text=True, env=dict(os.environ, NODE_PATH=str(modules)))
        check(r.returncode == 0, f"decoder: ONNX Runtime runs it, torch's outputs within 0.02 on kept positions ({(r.stdout + r.stderr).strip()[-300:]})")


def ort_agrees(q, label, work, keep):
    """ORT runs the float16 model; refeval's outputs equal ORT's within what float16 arithmetic
    allows: the product of K = 32 terms rounded to float16 (2^-11 relative) once per term at most,
    relative to each row's largest magnitude."""
    if not (SRC / "benchmarks/ort/node_modules/onnxruntime-node").is_dir():
        check(False, "onnxruntime-node is installed (npm install in benchmarks/ort)")
        return
    import fixture
    fixture.OUT = work / "ort"
    x = np.random.default_rng(2).standard_normal((3, K)).astype(np.float32)
    folder = fixture.write_case("float16", f"keep{int(keep)}", q, {"x": x if keep else x.astype(np.float16)})
    row_rtol = K * 2.0 ** -11
    r = run("test", folder, "--rtol", 0, "--atol", 0, "--row-rtol", row_rtol)
    check(r.returncode == 0, f"{label}: ORT's outputs equal refeval's within {row_rtol:.3g} of each row's largest ({(r.stdout + r.stderr).strip()[-300:]})")


main()
