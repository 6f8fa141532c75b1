#!/usr/bin/env python3
"""Every reason `refeval quantize` gives for leaving a node in float, each produced by a node made
for it, and every refusal of its options (one line, exit 2): a weight of another type, rank or
size, a Gemm whose transA, alpha or bias MatMulNBits cannot carry, a computed weight, an embedding
table that is not [vocab, hidden] float gathered by rows, a calibration that sees an all-zero
activation. Each written model runs, and its outputs (integer ones too) are measured.

  tests/tools/quantize/quantize_refusals_test.py REFEVAL SOURCE_DIR
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
K, N = 64, 32


def run(*args):
    return run_refeval(REFEVAL, *args)


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(nodes, inputs, outputs, inits, path):
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def products(work, rng):
    """Two products MatMulNBits takes (good, gemm_ok) beside one of each kind it cannot."""
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["good"], name="good"),
        helper.make_node("Relu", ["Wr"], ["r"], name="relu"),
        helper.make_node("MatMul", ["x", "r"], ["computed"], name="computed"),
        helper.make_node("MatMul", ["xi", "Wi"], ["integer"], name="integer"),
        helper.make_node("MatMul", ["x", "W3"], ["rank3"], name="rank3"),
        helper.make_node("MatMul", ["x", "We"], ["empty"], name="empty"),
        helper.make_node("Gemm", ["xt", "Wg"], ["gemm_ta"], name="gemm_ta", transA=1),
        helper.make_node("Gemm", ["x", "Wg"], ["gemm_alpha"], name="gemm_alpha", alpha=2.0),
        helper.make_node("Gemm", ["x", "Wg", "c2"], ["gemm_c2"], name="gemm_c2"),
        helper.make_node("Gemm", ["x", "r"], ["gemm_computed"], name="gemm_computed"),
        helper.make_node("Gemm", ["x", "Wg", "c"], ["gemm_ok"], name="gemm_ok"),
        helper.make_node("Sub", ["x", "x"], ["zeros"], name="zeros"),
        helper.make_node("MatMul", ["zeros", "W"], ["of_zeros"], name="of_zeros"),
    ]
    inits = {"W": normal(rng, K, N), "Wr": normal(rng, K, N), "Wi": np.ones((K, N), np.int64), "W3": normal(rng, 2, K, N),
             "We": normal(rng, K, 0), "Wg": normal(rng, K, N), "c2": normal(rng, 1, N), "c": normal(rng, N)}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", K]),
              helper.make_tensor_value_info("xi", TensorProto.INT64, ["b", K]),
              helper.make_tensor_value_info("xt", TensorProto.FLOAT, [K, "b"])]
    outputs = [helper.make_tensor_value_info(n.output[0], TensorProto.INT64 if n.name == "integer" else TensorProto.FLOAT, None)
               for n in nodes if n.op_type in ("MatMul", "Gemm")]
    return save(nodes, inputs, outputs, inits, work / "products.onnx")


def tables(work, rng):
    """Gathers of tables GatherBlockQuantized cannot take, beside the token table it can."""
    nodes = [helper.make_node("Gather", ["tokens", "ids"], ["embedded"], name="embed"),
             helper.make_node("Gather", ["ints", "ids"], ["from_ints"], name="embed_ints"),
             helper.make_node("Gather", ["cube", "ids"], ["from_cube"], name="embed_cube"),
             helper.make_node("Gather", ["tokens", "ids"], ["columns"], name="embed_columns", axis=1)]
    inits = {"tokens": normal(rng, 16, K), "ints": np.arange(16 * K, dtype=np.int64).reshape(16, K), "cube": normal(rng, 16, 2, K)}
    outputs = [helper.make_tensor_value_info(n.output[0], TensorProto.INT64 if n.name == "embed_ints" else TensorProto.FLOAT, None)
               for n in nodes]
    return save(nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])], outputs, inits, work / "tables.onnx")


def not_quantized(stdout):
    return dict(re.findall(r"^  not quantized: '(\w+)': (.+)$", stdout, re.M))


def main():
    rng = np.random.default_rng(5)
    work = pathlib.Path(tempfile.mkdtemp(prefix="refeval-quantize-refusals-"))
    src = products(work, rng)

    r = run("quantize", src, "-o", work / "q4.onnx", "--int4", "--runs", 0, "--fill", "xi=1")
    check(r.returncode == 0, f"int4: exit 0 ({r.stderr.strip()[-300:]})")
    check("quantized 3 of 10 MatMul and Gemm nodes with a weight" in r.stdout, "int4: 3 of 10 products quantized (good, gemm_ok, of_zeros)")
    want = {
        "integer": "B 'Wi' is int64, not float",
        "rank3": "B 'W3' has rank 3, not a 2-D weight",
        "empty": "B 'We' is empty",
        "gemm_ta": "A is transposed (transA = 1)",
        "gemm_alpha": "alpha 2 and beta 1 scale the product and C (MatMulNBits has neither)",
        "gemm_c2": "C 'c2' is not a float bias [32] (MatMulNBits' bias)",
        "gemm_computed": "B 'r' is computed, not a weight",
    }
    got = not_quantized(r.stdout)
    check(got == want, f"int4: each product left in float with its reason ({got})")
    check("1 MatMul nodes multiply two computed values" in r.stdout, "int4: the MatMul of a computed B counted apart")
    # The integer output is measured as numbers: unchanged, so max_abs 0.
    check(re.search(r"^integer\s+0\s", r.stdout, re.M), "int4: the int64 output measured, equal")
    q = onnx.load(work / "q4.onnx")
    kept = {n.name for n in q.graph.node if n.op_type in ("MatMul", "Gemm")}
    check(kept == set(want) | {"computed"}, f"int4: exactly the refused products stay MatMul or Gemm ({sorted(kept)})")

    r = run("quantize", src, "-o", work / "q8.onnx", "--int8", "--runs", 0, "--fill", "xi=1", "--exclude", "good")
    check(r.returncode == 0, f"int8: exit 0 ({r.stderr.strip()[-300:]})")
    got = not_quantized(r.stdout)
    check(got == {"good": "excluded by --exclude", "integer": want["integer"], "rank3": want["rank3"], "empty": want["empty"]},
          f"int8: each MatMul left in float with its reason ({got})")
    check("1 MatMul nodes multiply two computed values" in r.stdout, "int8: the MatMul of a computed B counted apart")

    # An activation that is zero on every set has no range: ORT's rule, scale 1 and zero point 0
    # (not a scale of 0, which QuantizeLinear would divide by).
    r = run("quantize", src, "-o", work / "qdq.onnx", "--int8", "--calibrate", "--runs", 0, "--fill", "xi=1")
    check(r.returncode == 0, f"int8 --calibrate: exit 0 ({r.stderr.strip()[-300:]})")
    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(work / "qdq.onnx").graph.initializer}
    check(inits.get("zeros_scale") == 1.0 and inits.get("zeros_zero_point") == 0,
          f"int8 --calibrate: the all-zero activation's scale 1, zero point 0 ({inits.get('zeros_scale')}, {inits.get('zeros_zero_point')})")
    check(0 < inits.get("x_scale", 0) < 1, f"int8 --calibrate: x's scale from its range ({inits.get('x_scale')})")

    r = run("quantize", tables(work, rng), "-o", work / "t4.onnx", "--int4", "--embeddings", "--runs", 0, "--fill", "ids=2")
    check(r.returncode == 0, f"int4 --embeddings: exit 0 ({r.stderr.strip()[-300:]})")
    got = not_quantized(r.stdout)
    check(got == {"embed_ints": "table 'ints' is int64, not float", "embed_cube": "table 'cube' has rank 3, not [vocab, hidden]",
                  "embed_columns": "it gathers along axis 1, not the rows"}, f"int4 --embeddings: each table left in float with its reason ({got})")
    ops = [n.op_type for n in onnx.load(work / "t4.onnx").graph.node]
    check(ops.count("GatherBlockQuantized") == 1 and ops.count("Gather") == 3, f"int4 --embeddings: one table quantized ({ops})")

    # A model with nothing to quantize says which product it looked at and why (here an invalid
    # one-input MatMul and Gemm, which the loader leaves to the run to refuse).
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, K])]
    y = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, K])]
    for op, why in (("MatMul", "not a two-input MatMul"), ("Gemm", "not a Gemm of A and B")):
        lone = save([helper.make_node(op, ["x"], ["y"], name="lone")], x, y, {}, work / f"lone_{op}.onnx")
        r = run("quantize", lone, "-o", work / "lone_q.onnx", "--int4", "--runs", 0)
        check(r.returncode == 2 and r.stderr.strip() == f"refeval: error: {lone}: no MatMul to quantize ('lone': {why})",
              f"a lone one-input {op}: exit 2, named with its reason ({r.stderr.strip()[:200]})")

    # Options refused in one line, exit 2, before anything is written.
    text = work / "text.txt"
    text.write_text("hello world")
    tokenizer = SRC / "tests" / "data" / "tokenizers" / "ascii96.json"
    np.save(work / "ids.npy", np.ones((2, 8), np.int64))
    for args, message in (
        (["--int4", "--accuracy-level", 5], "--accuracy-level 5: 0 to 4"),
        (["--int4", "--algo", "hqq", "--embeddings"], "--embeddings writes RTN blocks: --algo hqq quantizes MatMul weights only"),
        (["--int8", "--calibrate", "--calibrate-percentile", 0], "--calibrate-percentile: 0 is not in (0, 100]"),
        (["--int8", "--calibrate", "--calibrate-percentile", 101], "--calibrate-percentile: 101 is not in (0, 100]"),
        (["--int8", "--calibrate", "--calibrate-method", "entropy", "--calibrate-bins", 10],
         "--calibrate-bins: entropy needs at least 128 bins (its levels), not 10"),
        (["--int8", "--calibrate", "--calibrate-method", "percentile", "--calibrate-bins", -1], "--calibrate-bins: -1 is not a number of bins"),
        (["--int4", "--tokens", work / "ids.npy", "--text", text], "--tokens and --text: give one"),
        (["--int4", "--text", text], "--text needs --tokenizer T.json"),
        (["--int4", "--text", text, "--tokenizer", tokenizer], "--text needs --context N (the window length)"),
        (["--int4", "--text", work / "missing.txt", "--tokenizer", tokenizer, "--context", 4], "--text: cannot read '"),
        (["--int4", "--text", text, "--tokenizer", tokenizer, "--context", 64], "encodes to 11 tokens, fewer than one window of --context 64"),
    ):
        out = work / "refused.onnx"
        r = run("quantize", src, "-o", out, *args, "--runs", 0)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and message in lines[0] and not out.exists(),
              f"{' '.join(map(str, args))}: exit 2, one line naming it ({r.returncode}, {r.stderr.strip()[:200]})")
    shutil.rmtree(work)
    finish()


main()
