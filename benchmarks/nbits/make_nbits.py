#!/usr/bin/python3
"""Writes a one-node com.microsoft MatMulNBits model, Y = A · dequant(B)ᵀ with random int4 (or
int2/int8) weights as initializers, its input A.npy, and ONNX Runtime's output as the expected one
in the backend-test layout (tests/data/ort/fixture.py), so `refeval test OUT_DIR` checks refeval.
Needs Debian's python3-onnx and numpy, and onnxruntime-node in benchmarks/ort.
Usage: make_nbits.py OUT_DIR --M 1 --K 768 --N 2304 [--bits 4] [--block 32] [--zp] [--level 0]"""
import argparse
import pathlib
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "ort"))
import fixture  # noqa: E402

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("out")
p.add_argument("--M", type=int, default=1)
p.add_argument("--K", type=int, default=768)
p.add_argument("--N", type=int, default=768)
p.add_argument("--bits", type=int, default=4)
p.add_argument("--block", type=int, default=32)
p.add_argument("--zp", action="store_true", help="asymmetric: packed uint8 zero points")
p.add_argument("--level", type=int, default=0, help="accuracy_level")
a = p.parse_args()
rng = np.random.default_rng(0)
k_blocks = (a.K + a.block - 1) // a.block
per = 8 // a.bits


def pack(values):  # (rows, count) -> (rows, count / per) bytes, low bits first
    v = values.reshape(values.shape[0], -1, per).astype(np.uint16)
    return sum(v[..., i] << (a.bits * i) for i in range(per)).astype(np.uint8)


inits = [numpy_helper.from_array(pack(rng.integers(0, 2**a.bits, (a.N, k_blocks * a.block))).reshape(a.N, k_blocks, -1), "B"),
         numpy_helper.from_array((rng.random((a.N, k_blocks)) * 0.02 + 0.001).astype(np.float32), "scales")]
inputs = ["A", "B", "scales"]
if a.zp:
    zp = np.zeros((a.N, (k_blocks * a.bits + 7) // 8 * per), np.int64)
    zp[:, :k_blocks] = rng.integers(0, 2**a.bits, (a.N, k_blocks))
    inits.append(numpy_helper.from_array(pack(zp), "zero_points"))
    inputs.append("zero_points")
node = helper.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft", K=a.K, N=a.N, bits=a.bits,
                        block_size=a.block, accuracy_level=a.level)
graph = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [a.M, a.K])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [a.M, a.N])], inits)
model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
out = pathlib.Path(a.out).resolve()
fixture.OUT = out.parent
x = rng.standard_normal((a.M, a.K)).astype(np.float32)
fixture.write_case("", out.name, model, {"A": x})
np.save(out / "A.npy", x)
