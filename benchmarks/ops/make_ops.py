#!/usr/bin/python3
"""Writes one-node models on typical shapes, one per case, for benchmarks/ops/compare.sh: every
operator family refeval has a kernel for that matters for speed (MatMul, Gemm, convolutions,
pooling, elementwise unary and binary with broadcasting, normalisations, reductions, data
movement, Cast, Where, the recurrent cells with their options, Attention-23 and the com.microsoft
operators). OUT_DIR/<case>/model.onnx, with one <input>.npy per graph input; weights are
initializers, as an exported model holds them; with --ort-outputs also ORT's outputs as
test_data_set_0, so `refeval test OUT_DIR/<case>` checks that both compute the same thing.
Needs Debian's python3-onnx and python3-numpy (and onnxruntime-node for --ort-outputs).
Usage: make_ops.py OUT_DIR [--filter REGEX] [--list] [--ort-outputs]"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, mapping, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "ort"))
import fixture  # noqa: E402  (ORT's outputs as a backend-test data set)

CASES = {}


def case(fn):
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


RNG = np.random.default_rng(0)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def elem(dtype):
    return mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


def model(op, feeds, inits=None, attrs=None, outputs=1, domain="", opset=22, inputs=None, types=None):
    """One node `op`; its inputs are `inputs` (default: the feeds then the initializers, in
    order; "" for an absent optional input) and its outputs y0, y1, ... of numpy dtypes `types`
    (default: every output of the first input's type)."""
    inits = inits or {}
    names = inputs if inputs is not None else list(feeds) + list(inits)
    outs = [f"y{k}" for k in range(outputs)] if isinstance(outputs, int) else outputs
    first = dict(feeds, **inits)[names[0]].dtype
    types = types or [first] * len(outs)
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(k, elem(v.dtype), v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, elem(t), None) for o, t in zip(outs, types)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", opset if domain == "" else 22)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10), feeds


# A floor: one tiny node, the fixed cost of a run in each runtime.
@case
def floor_relu_8():
    return model("Relu", {"x": rand(1, 8)})


# --- linear algebra
@case
def matmul_small_8x64x64():
    return model("MatMul", {"a": rand(8, 64)}, {"b": rand(64, 64)})


@case
def matmul_32x768x768():
    return model("MatMul", {"a": rand(1, 32, 768)}, {"b": rand(768, 768)})


@case
def matmul_large_256x1024x1024():
    return model("MatMul", {"a": rand(256, 1024)}, {"b": rand(1024, 1024)})


@case
def matmul_batched_12x128x64x128():
    return model("MatMul", {"a": rand(1, 12, 128, 64), "b": rand(1, 12, 64, 128)})


@case
def matmul_lmhead_1x768x32000():
    return model("MatMul", {"a": rand(1, 1, 768)}, {"b": rand(768, 32000, scale=0.05)})


# The decoder's products (issue 26): a prompt of M tokens (1: a decode step) against a constant
# 768-row weight, N = 768 (attention output), 2304 (GPT-2's fused QKV), 3072 (MLP).
def _decoder_matmul(m, n):
    return lambda: model("MatMul", {"a": rand(1, m, 768)}, {"b": rand(768, n, scale=0.05)})


for _m in (1, 8, 32, 128):
    for _n in (768, 2304, 3072):
        CASES[f"matmul-decoder-{_m}x768x{_n}"] = _decoder_matmul(_m, _n)


@case
def gemm_32x768x3072_transB_bias():
    return model("Gemm", {"a": rand(32, 768)}, {"b": rand(3072, 768), "c": rand(3072)}, {"transB": 1})


@case
def gemm_1x512x1000_classifier():
    return model("Gemm", {"a": rand(1, 512)}, {"b": rand(1000, 512), "c": rand(1000)}, {"transB": 1})


@case
def gemm_1x1024x1000_densenet_classifier():  # B (4 MB) larger than L2
    return model("Gemm", {"a": rand(1, 1024)}, {"b": rand(1000, 1024), "c": rand(1000)}, {"transB": 1})


# --- convolutions (NCHW)
@case
def conv_3x3_64x56x56():
    return model("Conv", {"x": rand(1, 64, 56, 56)}, {"w": rand(64, 64, 3, 3, scale=0.05), "b": rand(64)}, {"pads": [1, 1, 1, 1]})


@case
def conv_3x3_s2_stem_3x224x224():
    return model("Conv", {"x": rand(1, 3, 224, 224)}, {"w": rand(32, 3, 3, 3), "b": rand(32)}, {"pads": [1, 1, 1, 1], "strides": [2, 2]})


@case
def conv_1x1_128x28x28_to_256():
    return model("Conv", {"x": rand(1, 128, 28, 28)}, {"w": rand(256, 128, 1, 1, scale=0.05), "b": rand(256)})


@case
def conv_depthwise_3x3_144x56x56():
    return model("Conv", {"x": rand(1, 144, 56, 56)}, {"w": rand(144, 1, 3, 3), "b": rand(144)}, {"pads": [1, 1, 1, 1], "group": 144})


@case
def conv_depthwise_3x3_s2_96x112x112():
    return model("Conv", {"x": rand(1, 96, 112, 112)}, {"w": rand(96, 1, 3, 3), "b": rand(96)},
                 {"pads": [1, 1, 1, 1], "group": 96, "strides": [2, 2]})


@case
def conv_1d_k3_256x512():
    return model("Conv", {"x": rand(1, 256, 512)}, {"w": rand(256, 256, 3, scale=0.05), "b": rand(256)}, {"pads": [1, 1]})


@case
def conv_transpose_4x4_s2_64x28x28():
    return model("ConvTranspose", {"x": rand(1, 64, 28, 28)}, {"w": rand(64, 32, 4, 4, scale=0.05)}, {"strides": [2, 2], "pads": [1, 1, 1, 1]})


# --- pooling
@case
def maxpool_3x3_s2_64x112x112():
    return model("MaxPool", {"x": rand(1, 64, 112, 112)}, attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})


@case
def maxpool_2x2_128x56x56():
    return model("MaxPool", {"x": rand(1, 128, 56, 56)}, attrs={"kernel_shape": [2, 2], "strides": [2, 2]})


@case
def averagepool_3x3_s1_256x28x28():
    return model("AveragePool", {"x": rand(1, 256, 28, 28)},
                 attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 0})


@case
def averagepool_2x2_s2_128x56x56():  # DenseNet's transitions
    return model("AveragePool", {"x": rand(1, 128, 56, 56)}, attrs={"kernel_shape": [2, 2], "strides": [2, 2]})


@case
def globalaveragepool_512x7x7():
    return model("GlobalAveragePool", {"x": rand(1, 512, 7, 7)})


@case
def globalaveragepool_128x56x56():
    return model("GlobalAveragePool", {"x": rand(1, 128, 56, 56)})


# --- elementwise unary on a transformer activation (1 x 128 x 768) and an image tensor
for _op in ["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Abs", "Neg", "Reciprocal", "Softplus", "Sin"]:
    def _unary(op=_op):
        x = rand(1, 128, 768)
        if op in ("Log", "Sqrt", "Reciprocal"):
            x = np.abs(x) + 0.1
        return model(op, {"x": x})
    CASES[f"unary-{_op.lower()}-128x768"] = _unary


@case
def gelu_128x3072():
    return model("Gelu", {"x": rand(1, 128, 3072)})


@case
def gelu_tanh_128x3072():
    return model("Gelu", {"x": rand(1, 128, 3072)}, attrs={"approximate": "tanh"})


@case
def leakyrelu_64x56x56():
    return model("LeakyRelu", {"x": rand(1, 64, 56, 56)}, attrs={"alpha": 0.1})


@case
def hardswish_96x56x56():
    return model("HardSwish", {"x": rand(1, 96, 56, 56)})


@case
def hardsigmoid_96x56x56():
    return model("HardSigmoid", {"x": rand(1, 96, 56, 56)})


@case
def clip_relu6_96x56x56():
    return model("Clip", {"x": rand(1, 96, 56, 56)}, {"lo": np.array(0, np.float32), "hi": np.array(6, np.float32)})


@case
def elu_64x56x56():
    return model("Elu", {"x": rand(1, 64, 56, 56)})


# --- elementwise binary, same shape and broadcast
@case
def add_same_128x768():
    return model("Add", {"a": rand(1, 128, 768), "b": rand(1, 128, 768)})


@case
def add_bias_row_128x768():
    return model("Add", {"a": rand(1, 128, 768)}, {"b": rand(768)})


@case
def mul_channel_64x56x56_by_64x1x1():
    return model("Mul", {"a": rand(1, 64, 56, 56)}, {"b": rand(1, 64, 1, 1)})


@case
def add_outer_128x1_plus_1x768():
    return model("Add", {"a": rand(1, 128, 1), "b": rand(1, 1, 768)})


@case
def sub_scalar_128x768():
    return model("Sub", {"a": rand(1, 128, 768)}, {"b": np.array(0.5, np.float32)})


@case
def div_column_12x128x128_by_128x1():
    return model("Div", {"a": rand(1, 12, 128, 128), "b": np.abs(rand(1, 12, 128, 1)) + 0.5})


@case
def pow_square_128x768():
    return model("Pow", {"a": rand(1, 128, 768)}, {"b": np.array(2, np.float32)})


@case
def pow_tensor_128x768():
    return model("Pow", {"a": np.abs(rand(1, 128, 768)) + 0.1, "b": rand(1, 128, 768)})


@case
def max_same_64x56x56():
    return model("Max", {"a": rand(1, 64, 56, 56), "b": rand(1, 64, 56, 56)})


@case
def less_broadcast_12x128x128():
    return model("Less", {"a": rand(1, 12, 128, 128)}, {"b": rand(1, 1, 1, 128)}, types=[bool])


@case
def add_int64_128x768():
    return model("Add", {"a": np.arange(128 * 768, dtype=np.int64).reshape(1, 128, 768)}, {"b": np.arange(768, dtype=np.int64)})


# --- normalisations and softmax
@case
def softmax_last_12x128x128():
    return model("Softmax", {"x": rand(1, 12, 128, 128)}, attrs={"axis": -1}, opset=13)


@case
def softmax_axis1_1000x64():
    return model("Softmax", {"x": rand(8, 1000, 64)}, attrs={"axis": 1}, opset=13)


@case
def logsoftmax_last_32x32000():
    return model("LogSoftmax", {"x": rand(32, 32000)}, attrs={"axis": -1}, opset=13)


@case
def layernorm_128x768():
    return model("LayerNormalization", {"x": rand(1, 128, 768)}, {"g": rand(768), "b": rand(768)}, {"axis": -1, "epsilon": 1e-5})


@case
def layernorm_nobias_512x1024():
    return model("LayerNormalization", {"x": rand(1, 512, 1024)}, {"g": rand(1024)}, {"axis": -1})


@case
def rmsnorm_128x768():
    return model("RMSNormalization", {"x": rand(1, 128, 768)}, {"g": rand(768)}, {"axis": -1, "epsilon": 1e-6}, opset=23)


@case
def batchnorm_64x56x56():
    return model("BatchNormalization", {"x": rand(1, 64, 56, 56)},
                 {"s": rand(64), "b": rand(64), "m": rand(64), "v": np.abs(rand(64)) + 0.5})


@case
def instancenorm_64x56x56():
    return model("InstanceNormalization", {"x": rand(1, 64, 56, 56)}, {"s": rand(64), "b": rand(64)})


@case
def groupnorm_32g_128x32x32():
    return model("GroupNormalization", {"x": rand(1, 128, 32, 32)}, {"s": rand(128), "b": rand(128)}, {"num_groups": 32}, opset=21)


# --- reductions (opset 18: axes as an input)
def _reduce(op, shape, axes, keepdims=1):
    return lambda: model(op, {"x": rand(*shape)}, {"axes": np.array(axes, np.int64)}, {"keepdims": keepdims}, opset=18)


for _name, _op, _shape, _axes in [
        ("reducemean-last-128x768", "ReduceMean", (1, 128, 768), [-1]),
        ("reducesum-last-128x768", "ReduceSum", (1, 128, 768), [-1]),
        ("reducesum-middle-64x56x56-axis1", "ReduceSum", (1, 64, 56, 56), [1]),
        ("reducemax-last-12x128x128", "ReduceMax", (1, 12, 128, 128), [-1]),
        ("reducemin-spatial-64x56x56", "ReduceMin", (1, 64, 56, 56), [2, 3]),
        ("reducemean-spatial-256x28x28", "ReduceMean", (1, 256, 28, 28), [2, 3]),
        ("reducel2-last-128x768", "ReduceL2", (1, 128, 768), [-1]),
        ("reducesumsquare-last-128x768", "ReduceSumSquare", (1, 128, 768), [-1]),
        ("reducelogsumexp-last-32x32000", "ReduceLogSumExp", (32, 32000), [-1]),
        ("reduceprod-first-64x4096", "ReduceProd", (64, 4096), [0]),
        ("reducesum-all-1M", "ReduceSum", (1024, 1024), [0, 1])]:
    CASES[_name] = _reduce(_op, _shape, _axes)


@case
def argmax_last_32x32000():
    return model("ArgMax", {"x": rand(32, 32000)}, attrs={"axis": -1}, types=[np.int64])


@case
def topk_50_of_32000():
    return model("TopK", {"x": rand(4, 32000)}, {"k": np.array([50], np.int64)}, outputs=2, types=[np.float32, np.int64])


@case
def cumsum_last_64x4096():
    return model("CumSum", {"x": rand(64, 4096)}, {"axis": np.array(-1, np.int64)})


# --- data movement
@case
def transpose_heads_128x12x64():
    return model("Transpose", {"x": rand(1, 128, 12, 64)}, attrs={"perm": [0, 2, 1, 3]})


@case
def transpose_nchw_to_nhwc_64x56x56():
    return model("Transpose", {"x": rand(1, 64, 56, 56)}, attrs={"perm": [0, 2, 3, 1]})


@case
def transpose_2d_1024x1024():
    return model("Transpose", {"x": rand(1024, 1024)}, attrs={"perm": [1, 0]})


@case
def concat_last_3x128x256():
    return model("Concat", {"a": rand(1, 128, 256), "b": rand(1, 128, 256), "c": rand(1, 128, 256)}, attrs={"axis": -1})


@case
def concat_channels_2x64x56x56():
    return model("Concat", {"a": rand(1, 64, 56, 56), "b": rand(1, 64, 56, 56)}, attrs={"axis": 1})


@case
def concat_channels_192_32x56x56():  # a DenseNet layer's growth: unequal parts
    return model("Concat", {"a": rand(1, 192, 56, 56), "b": rand(1, 32, 56, 56)}, attrs={"axis": 1})


@case
def concat_kv_cache_12x127x64_plus_1():
    return model("Concat", {"a": rand(1, 12, 127, 64), "b": rand(1, 12, 1, 64)}, attrs={"axis": 2})


@case
def slice_qkv_last_128x2304():
    return model("Slice", {"x": rand(1, 128, 2304)},
                 {"s": np.array([768], np.int64), "e": np.array([1536], np.int64), "a": np.array([-1], np.int64)})


@case
def slice_step2_spatial_64x112x112():
    return model("Slice", {"x": rand(1, 64, 112, 112)}, {"s": np.array([0, 0], np.int64), "e": np.array([112, 112], np.int64),
                                                         "a": np.array([2, 3], np.int64), "p": np.array([2, 2], np.int64)})


@case
def split_3_last_128x2304():
    return model("Split", {"x": rand(1, 128, 2304)}, attrs={"axis": -1, "num_outputs": 3}, outputs=3, opset=18)


@case
def gather_embedding_32000x768_128ids():
    return model("Gather", {"ids": np.random.default_rng(1).integers(0, 32000, (1, 128)).astype(np.int64)},
                 {"table": rand(32000, 768)}, {"axis": 0}, inputs=["table", "ids"])


@case
def gather_axis1_12x128x128_64ids():
    return model("Gather", {"x": rand(1, 12, 128, 128)}, {"i": np.arange(0, 128, 2, dtype=np.int64)}, {"axis": 2})


@case
def gatherelements_last_12x128x128():
    idx = np.random.default_rng(2).integers(0, 128, (1, 12, 128, 128)).astype(np.int64)
    return model("GatherElements", {"x": rand(1, 12, 128, 128)}, {"i": idx}, {"axis": -1})


@case
def scatternd_rows_1024x768_128():
    idx = np.random.default_rng(7).permutation(1024)[:128].reshape(128, 1).astype(np.int64)
    return model("ScatterND", {"x": rand(1024, 768), "u": rand(128, 768)}, {"i": idx}, inputs=["x", "i", "u"])


@case
def scatternd_kv_cache_12x512x64_8():
    idx = np.stack(np.meshgrid(np.arange(12), np.arange(100, 108), indexing="ij"), -1).reshape(1, 12, 8, 2)
    return model("ScatterND", {"x": rand(1, 12, 512, 64)[0], "u": rand(12, 8, 64)}, {"i": idx.reshape(12, 8, 2).astype(np.int64)},
                 inputs=["x", "i", "u"])


@case
def reshape_128x768_to_heads():
    return model("Reshape", {"x": rand(1, 128, 768)}, {"s": np.array([1, 128, 12, 64], np.int64)})


@case
def flatten_512x7x7():
    return model("Flatten", {"x": rand(1, 512, 7, 7)})


@case
def expand_row_to_128x768():
    return model("Expand", {"x": rand(1, 1, 768)}, {"s": np.array([1, 128, 768], np.int64)})


@case
def tile_2x2_64x56x56():
    return model("Tile", {"x": rand(1, 64, 56, 56)}, {"r": np.array([1, 1, 2, 2], np.int64)})


@case
def pad_constant_64x56x56():
    return model("Pad", {"x": rand(1, 64, 56, 56)}, {"p": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)})


@case
def pad_zero_128x56x56():  # what a dynamic-shape export writes before a pool: pads all 0
    return model("Pad", {"x": rand(1, 128, 56, 56)}, {"p": np.zeros(8, np.int64)})


@case
def pad_reflect_64x56x56():
    return model("Pad", {"x": rand(1, 64, 56, 56)}, {"p": np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64)}, {"mode": "reflect"})


@case
def where_mask_12x128x128():
    cond = np.tril(np.ones((128, 128), bool)).reshape(1, 1, 128, 128)
    return model("Where", {"x": rand(1, 12, 128, 128)}, {"c": cond, "y": np.array(-1e4, np.float32)}, inputs=["c", "x", "y"], types=[np.float32])


@case
def cast_float_to_float16_128x768():
    return model("Cast", {"x": rand(1, 128, 768)}, attrs={"to": TensorProto.FLOAT16}, types=[np.float16])


@case
def cast_int64_to_float_128x768():
    return model("Cast", {"x": np.arange(128 * 768, dtype=np.int64).reshape(1, 128, 768)}, attrs={"to": TensorProto.FLOAT}, types=[np.float32])


@case
def cast_float_to_int32_64x56x56():
    return model("Cast", {"x": rand(1, 64, 56, 56, scale=100)}, attrs={"to": TensorProto.INT32}, types=[np.int32])


@case
def resize_nearest_2x_64x56x56():
    return model("Resize", {"x": rand(1, 64, 56, 56)}, {"scales": np.array([1, 1, 2, 2], np.float32)},
                 {"mode": "nearest"}, inputs=["x", "", "scales"], opset=19)


@case
def resize_linear_2x_64x56x56():
    return model("Resize", {"x": rand(1, 64, 56, 56)}, {"scales": np.array([1, 1, 2, 2], np.float32)},
                 {"mode": "linear"}, inputs=["x", "", "scales"], opset=19)


# --- quantisation
@case
def quantizelinear_128x768():
    return model("QuantizeLinear", {"x": rand(1, 128, 768)}, {"s": np.array(0.02, np.float32), "z": np.array(128, np.uint8)}, types=[np.uint8])


@case
def dequantizelinear_128x768():
    q = np.random.default_rng(3).integers(0, 256, (1, 128, 768)).astype(np.uint8)
    return model("DequantizeLinear", {"q": q}, {"s": np.array(0.02, np.float32), "z": np.array(128, np.uint8)},
                 types=[np.float32])


@case
def dynamicquantizelinear_128x768():
    return model("DynamicQuantizeLinear", {"x": rand(1, 128, 768)}, outputs=3, types=[np.uint8, np.float32, np.uint8])


@case
def matmulinteger_128x768x768():
    a = np.random.default_rng(4).integers(0, 256, (128, 768)).astype(np.uint8)
    b = np.random.default_rng(5).integers(0, 256, (768, 768)).astype(np.uint8)
    return model("MatMulInteger", {"a": a}, {"b": b, "za": np.array(128, np.uint8), "zb": np.array(128, np.uint8)},
                 types=[np.int32])


# --- recurrent cells: the user's GRU, the LSTM of benchmarks/rnn, and each option but layout 1
# (batch first), which ORT's CPU cells refuse.
def _recurrent(op, seq, batch, inp, hidden, direction="forward", layout=0, lens=False, initial=False, peephole=False,
               **attrs):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    d = 2 if direction == "bidirectional" else 1
    x = rand(seq, batch, inp) if layout == 0 else rand(batch, seq, inp)
    # R scaled to a spectral radius below 1: a Relu RNN's errors then do not grow step after step
    inits = {"w": rand(d, gates * hidden, inp, scale=inp ** -0.5), "r": rand(d, gates * hidden, hidden, scale=0.8 * hidden ** -0.5),
             "b": rand(d, 2 * gates * hidden, scale=0.1)}
    names = ["x", "w", "r", "b", "", ""]
    if lens:
        inits["lens"] = np.array([seq - (k % 3) for k in range(batch)], np.int32)
        names[4] = "lens"
    if initial:
        shape = (d, batch, hidden) if layout == 0 else (batch, d, hidden)
        inits["h0"] = rand(*shape)
        names[5] = "h0"
        if op == "LSTM":
            inits["c0"] = rand(*shape)
            names.append("c0")
    if peephole:
        names += [""] * (7 - len(names)) + ["p"]
        inits["p"] = rand(d, 3 * hidden, scale=0.1)
    outputs = ["y", "y_h", "y_c"] if op == "LSTM" else ["y", "y_h"]
    attrs = dict(attrs, hidden_size=hidden, direction=direction, layout=layout)
    return model(op, {"x": x}, inits, attrs, outputs=outputs, inputs=names)


for _name, _args, _kw in [
        ("gru-user-s20-b2-i32-h64", ("GRU", 20, 2, 32, 64), {}),
        ("gru-lbr-s20-b2-i32-h64", ("GRU", 20, 2, 32, 64), {"linear_before_reset": 1}),
        ("gru-s64-b1-i128-h256", ("GRU", 64, 1, 128, 256), {}),
        ("gru-bidir-s32-b4-i64-h128", ("GRU", 32, 4, 64, 128), {"direction": "bidirectional"}),
        ("gru-b16-s32-i64-h128", ("GRU", 32, 16, 64, 128), {"linear_before_reset": 1}),
        ("lstm-s64-b1-i128-h256", ("LSTM", 64, 1, 128, 256), {}),
        ("lstm-s20-b2-i32-h64", ("LSTM", 20, 2, 32, 64), {}),
        ("lstm-s32-b8-i128-h256", ("LSTM", 32, 8, 128, 256), {}),
        ("lstm-bidir-lens-s32-b4-i64-h128", ("LSTM", 32, 4, 64, 128), {"direction": "bidirectional", "lens": True}),
        ("lstm-peephole-clip-s32-b2-i64-h128", ("LSTM", 32, 2, 64, 128), {"peephole": True, "clip": 3.0, "initial": True}),
        ("lstm-reverse-s32-b3-i64-h128", ("LSTM", 32, 3, 64, 128), {"direction": "reverse"}),
        ("gru-reverse-lens-init-s32-b3-i64-h128", ("GRU", 32, 3, 64, 128), {"direction": "reverse", "lens": True, "initial": True}),
        ("gru-bidir-lbr-init-s20-b2-i32-h64", ("GRU", 20, 2, 32, 64),
         {"direction": "bidirectional", "linear_before_reset": 1, "initial": True}),
        ("gru-lens-clip-s32-b4-i64-h128", ("GRU", 32, 4, 64, 128), {"lens": True, "clip": 2.0}),
        ("lstm-bidir-init-s20-b2-i32-h64", ("LSTM", 20, 2, 32, 64), {"direction": "bidirectional", "initial": True}),
        ("lstm-bidir-init-s20-b2-i128-h64", ("LSTM", 20, 2, 128, 64), {"direction": "bidirectional", "initial": True}),
        ("lstm-input-forget-s32-b2-i64-h128", ("LSTM", 32, 2, 64, 128), {"input_forget": 1}),
        ("rnn-s20-b2-i32-h64", ("RNN", 20, 2, 32, 64), {}),
        ("rnn-reverse-lens-init-s32-b3-i64-h128", ("RNN", 32, 3, 64, 128), {"direction": "reverse", "lens": True, "initial": True}),
        ("rnn-relu-s64-b1-i128-h256", ("RNN", 64, 1, 128, 256), {"activations": ["Relu"]}),
        ("rnn-bidir-s32-b8-i64-h128", ("RNN", 32, 8, 64, 128), {"direction": "bidirectional"})]:
    CASES[_name] = (lambda a, k: lambda: _recurrent(*a, **k))(_args, _kw)


# --- attention (ONNX Attention-23: Q, K, V as [batch, heads, seq, head_size])
@case
def attention23_12h_128x64():
    return model("Attention", {"q": rand(1, 12, 128, 64), "k": rand(1, 12, 128, 64), "v": rand(1, 12, 128, 64)}, opset=23)


@case
def attention23_causal_12h_128x64():
    return model("Attention", {"q": rand(1, 12, 128, 64), "k": rand(1, 12, 128, 64), "v": rand(1, 12, 128, 64)},
                 attrs={"is_causal": 1}, opset=23)


@case
def attention23_gqa_decode_32q_8kv_1x512():
    return model("Attention", {"q": rand(1, 32, 1, 64), "k": rand(1, 8, 512, 64), "v": rand(1, 8, 512, 64)}, opset=23)


@case
def attention23_3d_mask_128x768():
    mask = np.tril(np.ones((128, 128), bool))
    return model("Attention", {"q": rand(1, 128, 768), "k": rand(1, 128, 768), "v": rand(1, 128, 768)}, {"m": mask},
                 {"q_num_heads": 12, "kv_num_heads": 12}, opset=23)


# --- com.microsoft (not BiasAdd: ORT has no CPU kernel for it)
MS = "com.microsoft"


@case
def ms_attention_128x768():
    return model("Attention", {"x": rand(1, 128, 768)}, {"w": rand(768, 2304, scale=0.03), "b": rand(2304)},
                 {"num_heads": 12}, domain=MS)


@case
def ms_multiheadattention_128x768():
    return model("MultiHeadAttention", {"q": rand(1, 128, 768), "k": rand(1, 128, 768), "v": rand(1, 128, 768)},
                 attrs={"num_heads": 12}, domain=MS)


@case
def ms_skiplayernorm_128x768():
    return model("SkipLayerNormalization", {"x": rand(1, 128, 768), "skip": rand(1, 128, 768)},
                 {"g": rand(768), "b": rand(768), "bias": rand(768)}, {"epsilon": 1e-5}, domain=MS)


@case
def ms_skipsimplifiedlayernorm_128x768():
    return model("SkipSimplifiedLayerNormalization", {"x": rand(1, 128, 768), "skip": rand(1, 128, 768)}, {"g": rand(768)},
                 {"epsilon": 1e-5}, domain=MS)


@case
def ms_simplifiedlayernorm_128x768():
    return model("SimplifiedLayerNormalization", {"x": rand(1, 128, 768)}, {"g": rand(768)}, {"axis": -1, "epsilon": 1e-5},
                 domain="")


@case
def ms_gelu_128x3072():
    return model("Gelu", {"x": rand(1, 128, 3072)}, domain=MS)


@case
def ms_biasgelu_128x3072():
    return model("BiasGelu", {"x": rand(1, 128, 3072)}, {"b": rand(3072)}, domain=MS)


@case
def ms_fastgelu_bias_128x3072():
    return model("FastGelu", {"x": rand(1, 128, 3072)}, {"b": rand(3072)}, domain=MS)


@case
def ms_quickgelu_128x3072():
    return model("QuickGelu", {"x": rand(1, 128, 3072)}, attrs={"alpha": 1.702}, domain=MS)


@case
def ms_fusedmatmul_transB_128x768x768():
    return model("FusedMatMul", {"a": rand(1, 128, 768)}, {"b": rand(768, 768)}, {"transB": 1, "alpha": 0.5}, domain=MS)


@case
def ms_fusedmatmul_128x768x768():
    return model("FusedMatMul", {"a": rand(1, 128, 768)}, {"b": rand(768, 768)}, {"alpha": 0.5}, domain=MS)


@case
def ms_fusedmatmul_transA_batched_12x64x128x128():
    return model("FusedMatMul", {"a": rand(1, 12, 64, 128), "b": rand(1, 12, 64, 128)}, attrs={"transA": 1}, domain=MS)


@case
def ms_groupqueryattention_prefill_32q_8kv_128x64():
    return model("GroupQueryAttention", {"q": rand(1, 128, 2048), "k": rand(1, 128, 512), "v": rand(1, 128, 512),
                                         "pk": rand(1, 8, 0, 64), "pv": rand(1, 8, 0, 64)},
                 {"sl": np.array([127], np.int32), "tl": np.array(128, np.int32)}, {"num_heads": 32, "kv_num_heads": 8},
                 domain=MS, outputs=3)


@case
def ms_groupqueryattention_decode_32q_8kv_past255():
    return model("GroupQueryAttention", {"q": rand(1, 1, 2048), "k": rand(1, 1, 512), "v": rand(1, 1, 512),
                                         "pk": rand(1, 8, 255, 64), "pv": rand(1, 8, 255, 64)},
                 {"sl": np.array([255], np.int32), "tl": np.array(256, np.int32)}, {"num_heads": 32, "kv_num_heads": 8},
                 domain=MS, outputs=3)


def _matmul_nbits(m, k, n, block=32):
    q = np.random.default_rng(8).integers(0, 256, (n, k // block, block // 2)).astype(np.uint8)
    scales = (np.abs(rand(n * (k // block))) * 0.02 + 0.001).astype(np.float32)
    return model("MatMulNBits", {"a": rand(1, m, k)}, {"b": q, "s": scales}, {"K": k, "N": n, "bits": 4, "block_size": block},
                 domain=MS)


@case
def ms_matmulnbits_decode_1x768x3072():
    return _matmul_nbits(1, 768, 3072)


@case
def ms_matmulnbits_prefill_32x768x768():
    return _matmul_nbits(32, 768, 768)


@case
def ms_rotaryembedding_12h_128x64():
    pos = np.arange(128, dtype=np.int64).reshape(1, 128)
    inv = 1.0 / (10000 ** (np.arange(0, 64, 2) / 64))
    ang = np.outer(np.arange(512), inv)
    return model("RotaryEmbedding", {"x": rand(1, 128, 768), "pos": pos},
                 {"cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32)}, {"num_heads": 12}, domain=MS)


@case
def ms_embedlayernorm_128x768():
    ids = np.random.default_rng(6).integers(0, 30522, (1, 128)).astype(np.int32)
    seg = np.zeros((1, 128), np.int32)
    return model("EmbedLayerNormalization", {"ids": ids, "seg": seg},
                 {"word": rand(30522, 768), "pos": rand(512, 768), "segw": rand(2, 768), "g": rand(768), "b": rand(768)},
                 {"epsilon": 1e-12}, outputs=2, domain=MS, types=[np.float32, np.int32])


# --- com.microsoft at LLM decoder sizes (the fused nodes of `refeval optimize` on GPT-2 / Llama:
# a few tokens per call, so a kernel's fixed costs matter as much as its per-value cost)
@case
def ms_fastgelu_8x3072():
    return model("FastGelu", {"x": rand(1, 8, 3072)}, domain=MS)


@case
def ms_fastgelu_bias_8x3072():
    return model("FastGelu", {"x": rand(1, 8, 3072)}, {"b": rand(3072)}, domain=MS)


@case
def ms_gelu_8x3072():
    return model("Gelu", {"x": rand(1, 8, 3072)}, domain=MS)


@case
def ms_biasgelu_8x3072():
    return model("BiasGelu", {"x": rand(1, 8, 3072)}, {"b": rand(3072)}, domain=MS)


@case
def ms_quickgelu_7x2048():
    return model("QuickGelu", {"x": rand(1, 7, 2048)}, attrs={"alpha": 1.702}, domain=MS)


def _rotary_llama(seq, first):
    pos = np.arange(first, first + seq, dtype=np.int64).reshape(1, seq)
    inv = 1.0 / (10000 ** (np.arange(0, 64, 2) / 64))
    ang = np.outer(np.arange(2048), inv)
    return model("RotaryEmbedding", {"x": rand(1, 12, seq, 64), "pos": pos},
                 {"cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32)}, domain=MS)


@case
def ms_rotaryembedding_bnsh_prefill_12x7x64():
    return _rotary_llama(7, 0)


@case
def ms_rotaryembedding_bnsh_decode_12x1x64():
    return _rotary_llama(1, 7)


@case
def ms_simplifiedlayernorm_7x768():
    return model("SimplifiedLayerNormalization", {"x": rand(1, 7, 768)}, {"g": rand(768)}, {"axis": -1, "epsilon": 1e-6},
                 domain="")


@case
def ms_skipsimplifiedlayernorm_7x768():
    return model("SkipSimplifiedLayerNormalization", {"x": rand(1, 7, 768), "skip": rand(1, 7, 768)}, {"g": rand(768)},
                 {"epsilon": 1e-6}, domain=MS)


@case
def ms_skiplayernorm_8x768():
    return model("SkipLayerNormalization", {"x": rand(1, 8, 768), "skip": rand(1, 8, 768)},
                 {"g": rand(768), "b": rand(768)}, {"epsilon": 1e-5}, domain=MS)


@case
def ms_multiheadattention_causal_7x768():
    return model("MultiHeadAttention", {"q": rand(1, 7, 768), "k": rand(1, 7, 768), "v": rand(1, 7, 768)},
                 attrs={"num_heads": 12, "unidirectional": 1}, domain=MS)


@case
def ms_multiheadattention_decode_past7_768():
    return model("MultiHeadAttention", {"q": rand(1, 1, 768), "k": rand(1, 1, 768), "v": rand(1, 1, 768),
                                        "pk": rand(1, 12, 7, 64), "pv": rand(1, 12, 7, 64)},
                 attrs={"num_heads": 12}, domain=MS, inputs=["q", "k", "v", "", "", "", "pk", "pv"], outputs=3)


@case
def ms_attention_gpt2_causal_8x768():
    return model("Attention", {"x": rand(1, 8, 768)}, {"w": rand(768, 2304, scale=0.03), "b": rand(2304)},
                 {"num_heads": 12, "unidirectional": 1}, domain=MS)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?")
    p.add_argument("--filter", default="", help="only the cases whose name matches this regex")
    p.add_argument("--list", action="store_true", help="print the case names and exit")
    p.add_argument("--ort-outputs", action="store_true",
                   help="also write test_data_set_0 with ORT's outputs (tests/data/ort/fixture.py), for `refeval test`")
    a = p.parse_args()
    names = [n for n in CASES if re.search(a.filter, n)]
    if a.list or not a.out:
        print("\n".join(names))
        return
    for name in names:
        m, feeds = CASES[name]()
        folder = os.path.join(a.out, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(m.SerializeToString())
        for key, value in feeds.items():
            np.save(os.path.join(folder, f"{key}.npy"), value)
        if a.ort_outputs:
            try:
                fixture.add_data_set(pathlib.Path(folder), m, feeds)
            except subprocess.CalledProcessError:
                print(f"{name}: ORT cannot run it", file=sys.stderr)


if __name__ == "__main__":
    main()
