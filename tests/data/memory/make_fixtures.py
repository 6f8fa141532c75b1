#!/usr/bin/python3
"""The models of tests/cli/profile_memory_test.sh, written at test time (the decoder and ResNet are
too large to commit):

    make_fixtures.py OUT if          OUT/if_capture.onnx + cond.npy, X.npy
    make_fixtures.py OUT decoder     OUT/decoder/model.onnx + input_ids.npy, position_ids.npy
                     [--hidden 768 --heads 12 --kv-heads 4 --intermediate 2048 --vocab 32000 --prefill 32]
    make_fixtures.py OUT resnet18    OUT/resnet18_b1/, OUT/resnet18_b2/ (torchvision, random weights)

if_capture: an If whose branches read main-graph values from the outer scope only (A directly,
C only through an If nested in the then-branch), a value nobody reads (D, live only while its
producer runs), a graph output made early (E, kept to the end) and an unnamed node (Mul_5). Its
live bytes per node, worked by hand (float32 [64, 64] = 16384 bytes):

    #  node   alive (bytes)                                   live_bytes
    0  relu   X 16384, cond 1, A 16384                        32769
    1  big    X, cond, A, C 65536 (Tile 4x1)                  98305
    2  dead   X, cond, A, C, D 8192 (float16, never read)     106497
    3  early  X, cond, A, C, E 16384                          114689
    4  if     cond, A, C, E, Y 32768                          131073   <- peak
    5  Mul_5  E, Y, Z 32768                                   81920

Without the captures A and C would die at their producers (the peak would be big's 98305), D kept
to the end would add 8192 from node 3 on, E dropped after its producer would take 16384 off node 4.

decoder: benchmarks/llm/make_decoder.py's torch form (Llama-style: GQA through repeat_kv, rotary,
RMSNorm as plain ops), 12 layers, fed a prefill of 32 token ids and positions 0-31 (the mask is
--fill attention_mask=1, the past KV is --dim past_sequence_length=0).
Needs Debian's python3-onnx and numpy; resnet18 also python3-torch and python3-torchvision."""
import argparse
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SRC = pathlib.Path(__file__).resolve().parents[3]


def if_capture(out):
    f = TensorProto.FLOAT
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    # the inner If (inside then_branch) reads C, two scopes out
    inner = helper.make_node("If", ["cond"], ["c_row"], name="inner_if",
                             then_branch=helper.make_graph([helper.make_node("ReduceMean", ["C"], ["c_mean"], axes=[0], keepdims=0)],
                                                           "inner_then", [], [helper.make_tensor_value_info("c_mean", f, None)]),
                             else_branch=helper.make_graph([helper.make_node("ReduceMax", ["C"], ["c_max"], axes=[0], keepdims=0)],
                                                           "inner_else", [], [helper.make_tensor_value_info("c_max", f, None)]))
    then_branch = helper.make_graph(
        [inner, helper.make_node("Add", ["A", "c_row"], ["t_sum"]), helper.make_node("Concat", ["A", "t_sum"], ["t_out"], axis=0)],
        "then", [], [helper.make_tensor_value_info("t_out", f, None)])
    else_branch = helper.make_graph(
        [helper.make_node("Mul", ["A", "A"], ["e_sq"]), helper.make_node("Concat", ["A", "e_sq"], ["e_out"], axis=0)],
        "else", [], [helper.make_tensor_value_info("e_out", f, None)])
    nodes = [
        helper.make_node("Relu", ["X"], ["A"], name="relu"),
        helper.make_node("Tile", ["X", "reps"], ["C"], name="big"),
        helper.make_node("Cast", ["X"], ["D"], name="dead", to=TensorProto.FLOAT16),
        helper.make_node("Neg", ["X"], ["E"], name="early"),
        helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Mul", ["Y", "Y"], ["Z"]),  # unnamed: its event is Mul_5
    ]
    graph = helper.make_graph(nodes, "if_capture",
                              [helper.make_tensor_value_info("X", f, [64, 64]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("Z", f, [128, 64]), helper.make_tensor_value_info("E", f, [64, 64])],
                              [i64("reps", [4, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, out / "if_capture.onnx")
    np.save(out / "X.npy", np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    np.save(out / "cond.npy", np.array(True))


def decoder(out, a):
    d = out / "decoder"
    subprocess.run([sys.executable, str(SRC / "benchmarks/llm/make_decoder.py"), str(d), "torch", "--layers", "12",
                    "--hidden", str(a.hidden), "--heads", str(a.heads), "--kv-heads", str(a.kv_heads),
                    "--intermediate", str(a.intermediate), "--vocab", str(a.vocab)], check=True)
    rng = np.random.default_rng(1)
    np.save(d / "input_ids.npy", rng.integers(0, a.vocab, (1, a.prefill), dtype=np.int64))
    np.save(d / "position_ids.npy", np.arange(a.prefill, dtype=np.int64)[None, :])


def resnet18(out):
    for batch in (1, 2):
        subprocess.run([sys.executable, str(SRC / "benchmarks/vision/make_torchvision.py"), str(out / f"resnet18_b{batch}"),
                        "resnet18", "--batch", str(batch)], check=True, stdout=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("what", choices=["if", "decoder", "resnet18"])
    for name, default in (("hidden", 768), ("heads", 12), ("kv-heads", 4), ("intermediate", 2048), ("vocab", 32000), ("prefill", 32)):
        p.add_argument(f"--{name}", type=int, default=default)
    a = p.parse_args()
    out = pathlib.Path(a.out)
    os.makedirs(out, exist_ok=True)
    {"if": lambda: if_capture(out), "decoder": lambda: decoder(out, a), "resnet18": lambda: resnet18(out)}[a.what]()


if __name__ == "__main__":
    main()
