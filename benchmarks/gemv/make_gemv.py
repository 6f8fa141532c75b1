#!/usr/bin/python3
"""Writes a one-node few-row product model, Y = X · W with X an input (M, K) and W a random, seeded
float32 initializer, and its input X.npy, for benchmarks/gemv/sweep.sh. Kinds:
  matmul  MatMul(X, W), W stored (K, N) float32
  gemm    Gemm(X, W, transB=1), W stored (N, K) float32
  f16     MatMul(X, Cast(W16, to=float)), W16 stored (K, N) float16 (half the bytes on disk)
  half    MatMul(X16, W16) in float16 (a float16 model's layer): X, W and Y float16
--draw COUNT instead prints COUNT shapes "MxKxN", one a line, from a generator seeded by --seed: M in
{1, 2, 4, 8}, K and N log-uniform in [256, 160000], every other shape's K and N odd and the rest
multiples of 64, both scaled down together when the float32 weight would exceed --max-mb MiB.
Needs Debian's python3-onnx and numpy.
Usage: make_gemv.py OUT_DIR --M 1 --K 4096 --N 11008 [--kind matmul|gemm|f16|half] [--seed 0]
       make_gemv.py --draw 12 [--seed 1] [--max-mb 1024]"""
import argparse
import math
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("out", nargs="?")
p.add_argument("--M", type=int, default=1)
p.add_argument("--K", type=int, default=768)
p.add_argument("--N", type=int, default=768)
p.add_argument("--kind", choices=["matmul", "gemm", "f16", "half"], default="matmul")
p.add_argument("--seed", type=int, default=None, help="weights' seed (default 0) or --draw's (default 1)")
p.add_argument("--draw", type=int, metavar="COUNT", help="print COUNT random shapes instead")
p.add_argument("--max-mb", type=float, default=1024, help="--draw: largest float32 weight, MiB")
a = p.parse_args()

if a.draw is not None:
    rng = np.random.default_rng(1 if a.seed is None else a.seed)
    lo, hi, cap = math.log(256), math.log(160000), a.max_mb * 2**20 / 4
    for i in range(a.draw):
        m = int(rng.choice([1, 2, 4, 8]))
        k, n = (math.exp(rng.uniform(lo, hi)) for _ in range(2))
        if k * n > cap:
            s = math.sqrt(cap / (k * n))
            k, n = k * s, n * s
        if i % 2 == 0:  # odd sizes: no vector width divides them
            k, n = (min(159999, max(257, int(v) | 1)) for v in (k, n))
            while k * n > cap:
                k, n = (k - 2, n) if k > n else (k, n - 2)
        else:
            k, n = (min(159936, max(256, int(v) // 64 * 64)) for v in (k, n))
        print(f"{m}x{k}x{n}")
    raise SystemExit(0)

if a.out is None:
    p.error("OUT_DIR is required (or --draw)")
rng = np.random.default_rng(0 if a.seed is None else a.seed)
shape = (a.N, a.K) if a.kind == "gemm" else (a.K, a.N)
w = rng.standard_normal(shape, dtype=np.float32)
w *= np.float32(1 / math.sqrt(a.K))
x = rng.standard_normal((a.M, a.K), dtype=np.float32)
if a.kind == "f16":
    inits = [numpy_helper.from_array(w.astype(np.float16), "W16")]
    nodes = [helper.make_node("Cast", ["W16"], ["W"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["X", "W"], ["Y"])]
elif a.kind == "half":
    inits = [numpy_helper.from_array(w.astype(np.float16), "W")]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"])]
    x = x.astype(np.float16)
elif a.kind == "gemm":
    inits = [numpy_helper.from_array(w, "W")]
    nodes = [helper.make_node("Gemm", ["X", "W"], ["Y"], transB=1)]
else:
    inits = [numpy_helper.from_array(w, "W")]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"])]
del w
io = TensorProto.FLOAT16 if a.kind == "half" else TensorProto.FLOAT
graph = helper.make_graph(nodes, "gemv", [helper.make_tensor_value_info("X", io, [a.M, a.K])],
                          [helper.make_tensor_value_info("Y", io, [a.M, a.N])], inits)
model = helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)])
out = pathlib.Path(a.out)
out.mkdir(parents=True, exist_ok=True)
onnx.save(model, str(out / "model.onnx"))
np.save(out / "X.npy", x)
