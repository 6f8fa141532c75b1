#!/usr/bin/python3
"""Writes a one-node few-row product model, Y = X · W with X an input (M, K) and W a random, seeded
float32 initializer, and its input X.npy, for benchmarks/gemv/sweep.sh. Kinds:
  matmul  MatMul(X, W), W stored (K, N) float32
  gemm    Gemm(X, W, transB=1), W stored (N, K) float32
  f16     MatMul(X, Cast(W16, to=float)), W16 stored (K, N) float16 (half the bytes on disk)
  half    MatMul(X16, W16) in float16 (a float16 model's layer): X, W and Y float16
--chain MIB makes a chain of such products instead, each with a weight of its own (K x N, then N x
K, ...), until the weights make MIB MiB: small weights as a decode step meets them, read from
memory rather than cache (a key or value projection after the layers before it).
--draw COUNT instead prints COUNT shapes "MxKxN", one a line, from a generator seeded by --seed: M in
{1, 2, 4, 8}, K and N log-uniform in [256, 160000], every other shape's K and N odd and the rest
multiples of 64, both scaled down together when the float32 weight would exceed --max-mb MiB.
--draw-small COUNT draws small weights as decoders' key and value projections have them: K (the width)
log-uniform in [256, 4096], N (kv heads x head size) in [64, 1024], K x N in [2^14, 2^18) values
(64 KiB to 1 MiB), M in {1, 2}.
Needs Debian's python3-onnx and numpy.
Usage: make_gemv.py OUT_DIR --M 1 --K 4096 --N 11008 [--kind matmul|gemm|f16|half] [--seed 0] [--chain MIB]
       make_gemv.py --draw 12 [--seed 1] [--max-mb 1024]
       make_gemv.py --draw-small 6 [--seed 1]"""
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
p.add_argument("--draw-small", type=int, metavar="COUNT", help="print COUNT random small-weight shapes instead")
p.add_argument("--chain", type=float, metavar="MIB", help="a chain of products over MIB MiB of weights")
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

if a.draw_small is not None:
    rng = np.random.default_rng(1 if a.seed is None else a.seed)
    printed = 0
    while printed < a.draw_small:
        k = int(math.exp(rng.uniform(math.log(256), math.log(4096))))
        n = int(math.exp(rng.uniform(math.log(64), math.log(1024))))
        m = int(rng.choice([1, 2]))
        if 2**14 <= k * n < 2**18:
            print(f"{m}x{k}x{n}")
            printed += 1
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
elif a.chain:
    if a.kind != "matmul":
        p.error("--chain makes MatMul chains only")
    layers = max(2, math.ceil(a.chain * 2**20 / (a.K * a.N * 4)))
    inits, nodes, y = [], [], "X"
    for i in range(layers):
        w_i = (rng.standard_normal(shape if i % 2 == 0 else shape[::-1], dtype=np.float32)
               * np.float32(1 / math.sqrt(a.K if i % 2 == 0 else a.N)))
        inits.append(numpy_helper.from_array(w_i, f"W{i}"))
        nodes.append(helper.make_node("MatMul", [y, f"W{i}"], [f"Y{i}"]))
        y = f"Y{i}"
    nodes[-1].output[0] = "Y"
else:
    inits = [numpy_helper.from_array(w, "W")]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"])]
del w
io = TensorProto.FLOAT16 if a.kind == "half" else TensorProto.FLOAT
y_width = a.K if a.chain and len(nodes) % 2 == 0 else a.N
graph = helper.make_graph(nodes, "gemv", [helper.make_tensor_value_info("X", io, [a.M, a.K])],
                          [helper.make_tensor_value_info("Y", io, [a.M, y_width])], inits)
model = helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)])
out = pathlib.Path(a.out)
out.mkdir(parents=True, exist_ok=True)
onnx.save(model, str(out / "model.onnx"))
(out / "weight_bytes").write_text(str(sum(len(t.raw_data) for t in inits)))
np.save(out / "X.npy", x)
