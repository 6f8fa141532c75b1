#!/usr/bin/python3
"""The models benchmarks/ort_forms times: for each pattern, shapes drawn from a seed and, per shape and
variant, one small ONNX model per written form of the same function (float32, opset 17 plus
com.microsoft 1), the inputs they all take (.npy) and OUT_DIR/manifest.json for time_forms.js.
  forms.py OUT_DIR [--seed 1] [--shapes 36] [--budget-ms 30] [--patterns attention,norm,gelu,rotary,decode]

Every model reads the same inputs, with the dynamic dims a torch export declares ('batch', 'seq',
'past'; ORT's fusions see what they would see in an exported model), and writes its real outputs
plus, per output, a one-element Slice of it named OUTPUT_probe. The timing fetches only the probes:
onnxruntime-node copies every fetched output into a fresh ArrayBuffer, which costs more than the
kernels themselves for outputs of a few MB on this VM (page faults). The check fetches the real ones.
Weights are random (seeded), stored once per shape in weights.bin and referenced as external data.
The sequence length (past length for decode) is drawn log-uniform first and kept; the rest of a draw
whose estimated one-thread run (FLOPs at 100 GFLOP/s plus bytes at 20 GB/s) exceeds the budget is redrawn."""
import argparse
import json
import math
import pathlib

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper as nh

MS = "com.microsoft"
HEAD_SIZES = (32, 48, 64, 80, 96, 128)
MAX_POS = 4096  # rotary tables


class Weights:
    """One shape's weights.bin: each named array written once (4 KiB aligned), shared by all its models."""

    def __init__(self, directory):
        self.file = open(directory / "weights.bin", "wb")
        self.arrays = {}  # name: (array, offset)

    def add(self, name, array):
        self.file.write(b"\0" * (-self.file.tell() % 4096))
        self.arrays[name] = (array, self.file.tell())
        self.file.write(np.ascontiguousarray(array).tobytes())
        return array

    def proto(self, name):  # an initializer referring to the array in weights.bin
        array, offset = self.arrays[name]
        t = onnx.TensorProto(name=name, data_type=onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype], dims=array.shape)
        t.data_location = TP.EXTERNAL
        for key, value in (("location", "weights.bin"), ("offset", offset), ("length", array.nbytes)):
            t.external_data.add(key=key, value=str(value))
        return t

    def close(self):
        self.file.close()


class Graph:
    """The nodes of one model. op() returns its output name(s): generated ones unless outputs= names them."""

    def __init__(self, weights, inputs):
        self.weights, self.inputs = weights, inputs
        self.nodes, self.inits, self.names = [], {}, 0

    def w(self, name):  # a weight of the shape's weights.bin
        self.inits.setdefault(name, self.weights.proto(name))
        return name

    def const(self, value, dtype=np.int64):  # a small constant, inline
        self.names += 1
        name = f"c{self.names}"
        self.inits[name] = nh.from_array(np.array(value, dtype), name)
        return name

    def op(self, op_type, inputs, n_out=1, outputs=None, domain="", **attrs):
        while inputs and inputs[-1] == "":  # absent trailing optional inputs
            inputs = inputs[:-1]
        if outputs is None:
            self.names += 1
            outputs = [f"t{self.names}_{i}" for i in range(n_out)]
        self.nodes.append(oh.make_node(op_type, inputs, outputs, domain=domain or None, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, outputs):
        """outputs: (name, elem_type, dims) of the real outputs; each also gets its NAME_probe."""
        probes = []
        for name, elem_type, dims in outputs:
            zeros, ones = self.const([0] * len(dims)), self.const([1] * len(dims))
            self.op("Slice", [name, zeros, ones], outputs=[f"{name}_probe"])
            probes.append((f"{name}_probe", elem_type, [1] * len(dims)))
        graph = oh.make_graph(self.nodes, "form", [oh.make_tensor_value_info(*i) for i in self.inputs],
                              [oh.make_tensor_value_info(*o) for o in outputs + probes], list(self.inits.values()))
        return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17), oh.make_opsetid(MS, 1)], ir_version=8)


# ---------------------------------------------------------------------------------------------
# Shared pieces, written as a torch export writes them.

def split_heads(g, x, n, h, perm=(0, 2, 1, 3)):
    """(B, S, n*h) -> (B, n, S, h); perm (0, 2, 3, 1) gives K's (B, n, h, S)."""
    return g.op("Transpose", [g.op("Reshape", [x, g.const([0, 0, n, h])])], perm=list(perm))


def merge_heads(g, x, d, out="Y"):
    return g.op("Reshape", [g.op("Transpose", [x], perm=[0, 2, 1, 3]), g.const([0, 0, d])], outputs=[out])


def linear(g, x, w, b=None):  # torch's Linear on a 3-D input: MatMul, then Add
    y = g.op("MatMul", [x, g.w(w)])
    return g.op("Add", [y, g.w(b)]) if b else y


def additive_mask(g):
    """HF's extended mask: mask[:, None, None, :], (1 - m) * -10000 -> (B, 1, 1, T) float.
    -10000 is also the contrib ops' mask_filter_value, so the fused forms compute the same numbers."""
    m = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", g.const([1, 2])])], to=TP.FLOAT)
    return g.op("Mul", [g.op("Sub", [g.const(1.0, np.float32), m]), g.const(-10000.0, np.float32)])


def mask_int32(g):
    return g.op("Cast", ["attention_mask"], to=TP.INT32)


def mask_lengths(g):
    """The 1-D mask index (B,) int32: the count of ones per row (right padding)."""
    return g.op("Cast", [g.op("ReduceSum", ["attention_mask", g.const([1])], keepdims=0)], to=TP.INT32)


# ---------------------------------------------------------------------------------------------
# 1. Encoder self-attention, X (B, S, D) -> Y (B, S, D), without the output projection.

def attention_unfused(g, s, mask):
    """HF BertSelfAttention (eager) as torch exports it: Q/K/V Linear, heads, Q·Kᵀ, Div by √h, mask, Softmax, ·V."""
    n, h = s["N"], s["h"]
    q = split_heads(g, linear(g, "X", "Wq", "bq"), n, h)
    k = split_heads(g, linear(g, "X", "Wk", "bk"), n, h, perm=(0, 2, 3, 1))
    v = split_heads(g, linear(g, "X", "Wv", "bv"), n, h)
    return attention_core(g, s, q, k, v, mask, g.const(math.sqrt(h), np.float32))


def attention_core(g, s, q, k, v, mask, divisor):
    scores = g.op("MatMul", [q, k])
    if divisor:
        scores = g.op("Div", [scores, divisor])
    if mask:
        scores = g.op("Add", [scores, additive_mask(g)])
    return merge_heads(g, g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v]), s["D"])


def attention_unfused_packed(g, s, mask):
    """One (D, 3D) MatMul + Add then Split (fewer, larger GEMMs), 1/√h folded into Wq and bq (no Div)."""
    n, h, d = s["N"], s["h"], s["D"]
    q, k, v = g.op("Split", [linear(g, "X", "Wqkv_scaled", "bqkv_scaled"), g.const([d, d, d])], n_out=3, axis=-1)
    return attention_core(g, s, split_heads(g, q, n, h), split_heads(g, k, n, h, perm=(0, 2, 3, 1)),
                          split_heads(g, v, n, h), mask, None)


def attention_op(g, s, mask, mask_1d=False):
    """com.microsoft Attention: does the QKV GEMM itself from the packed weight (prepacked per head).
    Its mask is the 2-D raw 0/1 mask (int32), or with mask_1d the (B,) lengths (right padding)."""
    index = (mask_lengths(g) if mask_1d else mask_int32(g)) if mask else ""
    return g.op("Attention", ["X", g.w("Wqkv"), g.w("bqkv"), index], outputs=["Y"], domain=MS, num_heads=s["N"])


def attention_mha(g, s, mask, bias_in_op=True, mask_form="2d", packed=False):
    """com.microsoft MultiHeadAttention on separate Q, K, V (B, S, D). bias_in_op: the three MatMuls have
    no Add, MHA gets the packed (3D) bias (one extra pass inside MHA); otherwise biases are added before.
    packed: Q/K/V from one (D, 3D) MatMul + Add and a Split. mask_form: '2d' key_padding_mask (B, S)
    int32, '1d' key_padding_mask (B,) lengths, 'bias' attention_bias (B, 1, S, S) float. Without any
    mask, bias or past, MHA's CPU kernel takes MLAS flash attention."""
    d = s["D"]
    bias = ""
    if packed:
        q, k, v = g.op("Split", [linear(g, "X", "Wqkv", "bqkv"), g.const([d, d, d])], n_out=3, axis=-1)
    elif bias_in_op:
        q, k, v, bias = linear(g, "X", "Wq"), linear(g, "X", "Wk"), linear(g, "X", "Wv"), g.w("bqkv")
    else:
        q, k, v = linear(g, "X", "Wq", "bq"), linear(g, "X", "Wk", "bk"), linear(g, "X", "Wv", "bv")
    padding = attn_bias = ""
    if mask and mask_form == "bias":
        # (B, 1, 1, S) expanded to (B, 1, S, S): Expand broadcasts it against (1, 1, S, 1)
        seq = g.op("Shape", ["attention_mask"], start=1, end=2)
        attn_bias = g.op("Expand", [additive_mask(g), g.op("Concat", [g.const([1, 1]), seq, g.const([1])], axis=0)])
    elif mask:
        padding = mask_lengths(g) if mask_form == "1d" else mask_int32(g)
    return g.op("MultiHeadAttention", [q, k, v, bias, padding, attn_bias], outputs=["Y"], domain=MS, num_heads=s["N"])


ATTENTION_FORMS = {
    "unfused": attention_unfused,
    "unfused_packed": attention_unfused_packed,
    "attention": attention_op,
    "attention_mask1d": lambda g, s, mask: attention_op(g, s, mask, mask_1d=True),
    "mha": attention_mha,
    "mha_biased": lambda g, s, mask: attention_mha(g, s, mask, bias_in_op=False),
    "mha_attn_bias": lambda g, s, mask: attention_mha(g, s, mask, bias_in_op=False, mask_form="bias"),
    "mha_mask1d": lambda g, s, mask: attention_mha(g, s, mask, bias_in_op=False, mask_form="1d"),
    "mha_packed": lambda g, s, mask: attention_mha(g, s, mask, packed=True),
}
MASK_ONLY = {"attention_mask1d", "mha_attn_bias", "mha_mask1d"}


def attention_case(rng, s, weights, feeds):
    d, h = s["D"], s["h"]
    w = {}
    for name in "qkv":
        w[f"W{name}"] = weights.add(f"W{name}", rng.standard_normal((d, d), np.float32) / np.float32(math.sqrt(d)))
        w[f"b{name}"] = weights.add(f"b{name}", rng.standard_normal(d, np.float32) * np.float32(0.1))
    weights.add("Wqkv", np.concatenate([w["Wq"], w["Wk"], w["Wv"]], axis=1))
    weights.add("bqkv", np.concatenate([w["bq"], w["bk"], w["bv"]]))
    scale = np.float32(1 / math.sqrt(h))
    weights.add("Wqkv_scaled", np.concatenate([w["Wq"] * scale, w["Wk"], w["Wv"]], axis=1))
    weights.add("bqkv_scaled", np.concatenate([w["bq"] * scale, w["bk"], w["bv"]]))
    b, t = s["B"], s["S"]
    feeds["X"] = rng.standard_normal((b, t, d), np.float32)
    # right padding: the last row always (when S > 1), each other row with probability 1/2
    lengths = [int(rng.integers(1, t)) if t > 1 and (i == b - 1 or rng.random() < 0.5) else t for i in range(b)]
    feeds["attention_mask"] = (np.arange(t)[None, :] < np.array(lengths)[:, None]).astype(np.int64)
    x = ("X", TP.FLOAT, ["batch", "seq", d])
    out = [("Y", TP.FLOAT, ["batch", "seq", d])]
    for variant, mask in (("none", False), ("mask", True)):
        inputs = [x] + ([("attention_mask", TP.INT64, ["batch", "seq"])] if mask else [])
        forms = {name: build(weights, inputs, out, lambda g, f=f: f(g, s, mask))
                 for name, f in ATTENTION_FORMS.items() if mask or name not in MASK_ONLY}
        yield variant, forms, [i[0] for i in inputs], {}


def attention_cost(s):
    b, t, d, n = s["B"], s["S"], s["D"], s["N"]
    return 2 * b * t * d * 3 * d + 4 * b * t * t * d, 3 * d * d * 4 + 3 * b * n * t * t * 4


# ---------------------------------------------------------------------------------------------
# 2. Residual + LayerNorm / RMSNorm, X and R (B, S, D).

def layer_norm(g, x, out="Y"):
    return g.op("LayerNormalization", [x, g.w("gamma"), g.w("beta")], outputs=[out], axis=-1, epsilon=1e-5)


def skip_ln(g, x, bias="", sum_out=None):
    outputs = ["Y"] + (["", "", sum_out] if sum_out else [])
    return g.op("SkipLayerNormalization", [x, "R", g.w("gamma"), g.w("beta"), bias], outputs=outputs, domain=MS,
                epsilon=1e-5)


def rms_unfused(g, x):
    """HF LlamaRMSNorm as torch exports it: x * rsqrt(mean(x²) + eps) * weight (rsqrt = Sqrt, Reciprocal)."""
    var = g.op("ReduceMean", [g.op("Pow", [x, g.const(2.0, np.float32)])], axes=[-1], keepdims=1)
    inv = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [var, g.const(1e-6, np.float32)])])])
    return g.op("Mul", [g.w("gamma"), g.op("Mul", [x, inv])], outputs=["Y"])


# sum_ln: the residual Add written as Sum, which ORT's SkipLayerNormFusion does not match (it matches Add
# only), so that the graph keeps ONNX LayerNormalization's vectorized kernel; SkipLayerNormalization's CPU
# kernel is a scalar loop over each row.
NORM_VARIANTS = {
    # post-LN (BERT): LN(X + R)
    "post": {
        "unfused": lambda g: layer_norm(g, g.op("Add", ["X", "R"])),
        "skip_ln": lambda g: skip_ln(g, "X"),
        "sum_ln": lambda g: layer_norm(g, g.op("Sum", ["X", "R"])),
    },
    # post-LN after the dense layer: LN(X·W + b + R); SkipLayerNormalization can take b as its bias input
    "post_bias": {
        "unfused": lambda g: layer_norm(g, g.op("Add", [linear(g, "X", "W", "b"), "R"])),
        "skip_ln": lambda g: skip_ln(g, linear(g, "X", "W", "b")),
        "skip_ln_bias": lambda g: skip_ln(g, linear(g, "X", "W"), bias=g.w("b")),
        "sum_ln": lambda g: layer_norm(g, g.op("Sum", [linear(g, "X", "W", "b"), "R"])),
    },
    # pre-LN (GPT-2): the sum S = X + R is also the next residual, a graph output in both forms
    "pre": {
        "unfused": lambda g: layer_norm(g, g.op("Add", ["X", "R"], outputs=["S"])),
        "skip_ln_out3": lambda g: skip_ln(g, "X", sum_out="S"),
    },
    # pre-RMSNorm (Llama), the sum an output too
    "rms_pre": {
        "unfused": lambda g: rms_unfused(g, g.op("Add", ["X", "R"], outputs=["S"])),
        # what ORT's SimplifiedLayerNormFusion makes of the decomposition (ai.onnx domain, an ORT kernel)
        "simplified_ln": lambda g: g.op("SimplifiedLayerNormalization", [g.op("Add", ["X", "R"], outputs=["S"]),
                                        g.w("gamma")], outputs=["Y"], axis=-1, epsilon=1e-6),
        "skip_simplified_ln_out3": lambda g: g.op("SkipSimplifiedLayerNormalization", ["X", "R", g.w("gamma")],
                                                  outputs=["Y", "", "", "S"], domain=MS, epsilon=1e-6),
    },
}


def norm_case(rng, s, weights, feeds):
    b, t, d = s["B"], s["S"], s["D"]
    weights.add("gamma", 1 + rng.standard_normal(d, np.float32) * np.float32(0.1))
    weights.add("beta", rng.standard_normal(d, np.float32) * np.float32(0.1))
    weights.add("W", rng.standard_normal((d, d), np.float32) / np.float32(math.sqrt(d)))
    weights.add("b", rng.standard_normal(d, np.float32) * np.float32(0.1))
    feeds["X"] = rng.standard_normal((b, t, d), np.float32)
    feeds["R"] = rng.standard_normal((b, t, d), np.float32)
    dims = ["batch", "seq", d]
    inputs = [("X", TP.FLOAT, dims), ("R", TP.FLOAT, dims)]
    for variant, forms in NORM_VARIANTS.items():
        out = [("Y", TP.FLOAT, dims)] + ([("S", TP.FLOAT, dims)] if variant in ("pre", "rms_pre") else [])
        yield variant, {name: build(weights, inputs, out, f) for name, f in forms.items()}, ["X", "R"], {}


def norm_cost(s):
    b, t, d = s["B"], s["S"], s["D"]
    return 2 * b * t * d * d, d * d * 4 + 8 * b * t * d * 4


# ---------------------------------------------------------------------------------------------
# 3. Gelu after the FFN's first Linear: X (B, S, D) · W (D, 4D) + b, then Gelu.

def gelu_erf_unfused(g):
    """torch's gelu export: Mul(Mul(x, Erf(x / √2) + 1), 0.5)."""
    x = linear(g, "X", "W", "b")
    erf = g.op("Erf", [g.op("Div", [x, g.const(math.sqrt(2), np.float32)])])
    return g.op("Mul", [g.op("Mul", [x, g.op("Add", [erf, g.const(1.0, np.float32)])]), g.const(0.5, np.float32)],
                outputs=["Y"])


def gelu_tanh_unfused(g):
    """torch's gelu(approximate='tanh') export: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x·x·x)))."""
    x = linear(g, "X", "W", "b")
    cube = g.op("Mul", [x, g.op("Mul", [x, x])])
    inner = g.op("Mul", [g.const(math.sqrt(2 / math.pi), np.float32),
                         g.op("Add", [x, g.op("Mul", [g.const(0.044715, np.float32), cube])])])
    one_plus = g.op("Add", [g.const(1.0, np.float32), g.op("Tanh", [inner])])
    return g.op("Mul", [g.const(0.5, np.float32), g.op("Mul", [x, one_plus])], outputs=["Y"])


GELU_VARIANTS = {
    "erf": {
        "unfused": gelu_erf_unfused,
        "bias_gelu": lambda g: g.op("BiasGelu", [linear(g, "X", "W"), g.w("b")], outputs=["Y"], domain=MS),
        "gelu": lambda g: g.op("Gelu", [linear(g, "X", "W", "b")], outputs=["Y"], domain=MS),
    },
    "tanh": {
        "unfused": gelu_tanh_unfused,
        "fast_gelu": lambda g: g.op("FastGelu", [linear(g, "X", "W"), g.w("b")], outputs=["Y"], domain=MS),
        "fast_gelu_nobias": lambda g: g.op("FastGelu", [linear(g, "X", "W", "b")], outputs=["Y"], domain=MS),
    },
}


def gelu_case(rng, s, weights, feeds):
    b, t, d = s["B"], s["S"], s["D"]
    weights.add("W", rng.standard_normal((d, 4 * d), np.float32) / np.float32(math.sqrt(d)))
    weights.add("b", rng.standard_normal(4 * d, np.float32) * np.float32(0.1))
    feeds["X"] = rng.standard_normal((b, t, d), np.float32)
    inputs = [("X", TP.FLOAT, ["batch", "seq", d])]
    out = [("Y", TP.FLOAT, ["batch", "seq", 4 * d])]
    for variant, forms in GELU_VARIANTS.items():
        yield variant, {name: build(weights, inputs, out, f) for name, f in forms.items()}, ["X"], {}


def gelu_cost(s):
    b, t, d = s["B"], s["S"], s["D"]
    return 8 * b * t * d * d, 4 * d * d * 4 + 6 * b * t * 4 * d * 4


# ---------------------------------------------------------------------------------------------
# 4. Rotary on Q: the projection's output Q (B, S, D) -> rotated (B, N, S, h), positions (B, S) int64.

def rotary_unfused(g, s, rot):
    """HF Llama (transformers < 4.38) as torch exports it: heads, then q·cos + rotate_half(q)·sin with
    cos/sin gathered by position_ids from (max_pos, rot) tables; a partial rotary (rot < h, Phi/NeoX)
    rotates the first rot channels and concatenates the rest."""
    h = s["h"]
    q = split_heads(g, "Q", s["N"], h)
    cos, sin = (g.op("Unsqueeze", [g.op("Gather", [g.w(f"{t}_table{rot}"), "position_ids"], axis=0), g.const([1])])
                for t in ("cos", "sin"))
    q_rot = g.op("Slice", [q, g.const([0]), g.const([rot]), g.const([3])]) if rot < h else q
    x1 = g.op("Slice", [q_rot, g.const([0]), g.const([rot // 2]), g.const([3])])
    x2 = g.op("Slice", [q_rot, g.const([rot // 2]), g.const([rot]), g.const([3])])
    rotated = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
    out = ["Y"] if rot == h else None
    y = g.op("Add", [g.op("Mul", [q_rot, cos]), g.op("Mul", [rotated, sin])], outputs=out)
    if rot < h:
        q_pass = g.op("Slice", [q, g.const([rot]), g.const([h]), g.const([3])])
        y = g.op("Concat", [y, q_pass], outputs=["Y"], axis=-1)
    return y


def rotary_op(g, x, s, rot, out=None):
    attrs = {"rotary_embedding_dim": rot, "num_heads": s["N"]} if rot < s["h"] else {}
    return g.op("RotaryEmbedding", [x, "position_ids", g.w(f"cos_cache{rot}"), g.w(f"sin_cache{rot}")], outputs=out,
                domain=MS, **attrs)


ROTARY_FORMS = {
    "unfused": rotary_unfused,
    # on (B, S, D) before the heads are split, as ORT's transformer optimizer and GenAI place it
    "rotary": lambda g, s, rot: g.op("Transpose", [g.op("Reshape", [rotary_op(g, "Q", s, rot),
                                     g.const([0, 0, s["N"], s["h"]])])], outputs=["Y"], perm=[0, 2, 1, 3]),
    # on the (B, N, S, h) heads, where the unfused graph rotates
    "rotary_bnsh": lambda g, s, rot: rotary_op(g, split_heads(g, "Q", s["N"], s["h"]), s, rot, out=["Y"]),
}


def rotary_case(rng, s, weights, feeds):
    b, t, n, h = s["B"], s["S"], s["N"], s["h"]
    feeds["Q"] = rng.standard_normal((b, t, n * h), np.float32)
    starts = rng.integers(0, MAX_POS - t + 1, size=b)
    feeds["position_ids"] = (starts[:, None] + np.arange(t)[None, :]).astype(np.int64)
    inputs = [("Q", TP.FLOAT, ["batch", "seq", n * h]), ("position_ids", TP.INT64, ["batch", "seq"])]
    out = [("Y", TP.FLOAT, ["batch", n, "seq", h])]
    for variant, rot in (("full", h), ("partial", h // 2)):
        inv_freq = 1.0 / (10000 ** (np.arange(0, rot, 2) / rot))
        freqs = np.arange(MAX_POS)[:, None] * inv_freq[None, :]
        for name, f in (("cos", np.cos), ("sin", np.sin)):  # HF's (max_pos, rot) tables, ORT's (max_pos, rot/2)
            weights.add(f"{name}_table{rot}", f(np.concatenate([freqs, freqs], axis=1)).astype(np.float32))
            weights.add(f"{name}_cache{rot}", f(freqs).astype(np.float32))
        forms = {name: build(weights, inputs, out, lambda g, f=f: f(g, s, rot)) for name, f in ROTARY_FORMS.items()}
        yield variant, forms, ["Q", "position_ids"], {}


def rotary_cost(s):
    return 0, 8 * s["B"] * s["S"] * s["D"] * 4


# ---------------------------------------------------------------------------------------------
# 5. One decode step with a KV cache (Llama, causal, no padding): q (B, 1, N·h), k and v (B, 1, Nkv·h),
# past_key/past_value (B, Nkv, P, h), attention_mask (B, P+1) of ones -> Y (B, 1, N·h) and
# present_key/present_value (B, Nkv, P+1, h). Rotary and projections are not part of it.

def decode_unfused(g, s):
    """HF LlamaAttention (eager) as torch exports it: Concat the cache, repeat_kv when Nkv < N
    (Unsqueeze, Expand, Reshape), Q·Kᵀ · 1/√h, the additive mask, Softmax, ·V."""
    n, nkv, h = s["N"], s["Nkv"], s["h"]
    q = split_heads(g, "q", n, h)
    k, v = (g.op("Concat", [past, split_heads(g, new, nkv, h)], outputs=[present], axis=2)
            for past, new, present in (("past_key", "k", "present_key"), ("past_value", "v", "present_value")))
    if nkv < n:
        k, v = (g.op("Reshape", [g.op("Expand", [g.op("Unsqueeze", [x, g.const([2])]),
                                                 g.const([1, 1, n // nkv, 1, 1])]), g.const([0, n, -1, h])])
                for x in (k, v))
    scores = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                          g.const(1 / math.sqrt(h), np.float32)])
    probs = g.op("Softmax", [g.op("Add", [scores, additive_mask(g)])], axis=-1)
    return merge_heads(g, g.op("MatMul", [probs, v]), n * h)


def decode_mha(g, s):
    """MultiHeadAttention with past_key/past_value (only for Nkv = N): the generic CPU path, past copied."""
    return g.op("MultiHeadAttention", ["q", "k", "v", "", mask_int32(g), "", "past_key", "past_value"],
                outputs=["Y", "present_key", "present_value"], domain=MS, num_heads=s["N"])


def decode_gqa(g, s):
    """GroupQueryAttention; seqlens_k (mask sum - 1) and total_sequence_length (mask width) from the
    mask, as GenAI's builder computes them. With past and present in separate buffers it copies the past."""
    seqlens = g.op("Cast", [g.op("Sub", [g.op("ReduceSum", ["attention_mask", g.const([1])], keepdims=0),
                                         g.const(1)])], to=TP.INT32)
    total = g.op("Cast", [g.op("Gather", [g.op("Shape", ["attention_mask"]), g.const(1)], axis=0)], to=TP.INT32)
    return g.op("GroupQueryAttention", ["q", "k", "v", "past_key", "past_value", seqlens, total],
                outputs=["Y", "present_key", "present_value"], domain=MS, num_heads=s["N"], kv_num_heads=s["Nkv"])


def decode_case(rng, s, weights, feeds):
    b, n, h, p = s["B"], s["N"], s["h"], s["P"]
    feeds["q"] = rng.standard_normal((b, 1, n * h), np.float32)
    feeds["attention_mask"] = np.ones((b, p + 1), np.int64)
    for variant, nkv in (("Nkv=N", n), ("Nkv=N/4", n // 4)):
        sv, t = dict(s, Nkv=nkv), tag(variant)
        for name in ("k", "v"):
            feeds[f"{name}_{t}"] = rng.standard_normal((b, 1, nkv * h), np.float32)
            past = rng.standard_normal((b, nkv, p, h), np.float32)
            feeds[f"past_{name}_{t}"] = past
            # gqa_shared's buffer: the past plus one free slot, which this step fills (max length P + 1)
            feeds[f"buffer_{name}_{t}"] = np.concatenate([past, np.zeros((b, nkv, 1, h), np.float32)], axis=2)
        inputs = [("q", TP.FLOAT, ["batch", 1, n * h]), ("k", TP.FLOAT, ["batch", 1, nkv * h]),
                  ("v", TP.FLOAT, ["batch", 1, nkv * h]), ("past_key", TP.FLOAT, ["batch", nkv, "past", h]),
                  ("past_value", TP.FLOAT, ["batch", nkv, "past", h]), ("attention_mask", TP.INT64, ["batch", "total"])]
        out = [("Y", TP.FLOAT, ["batch", 1, n * h]), ("present_key", TP.FLOAT, ["batch", nkv, "total", h]),
               ("present_value", TP.FLOAT, ["batch", nkv, "total", h])]
        forms = {"unfused": build(weights, inputs, out, lambda g: decode_unfused(g, sv))}
        if nkv == n:
            forms["mha"] = build(weights, inputs, out, lambda g: decode_mha(g, sv))
        forms["gqa"] = build(weights, inputs, out, lambda g: decode_gqa(g, sv))
        feed_files = {"q": "q", "k": f"k_{t}", "v": f"v_{t}", "past_key": f"past_k_{t}", "past_value": f"past_v_{t}",
                      "attention_mask": "attention_mask"}
        special = {
            # the gqa model, its presents pre-allocated by the caller (separate buffers): what gqa_shared
            # pays for onnxruntime-node's copy of pre-allocated outputs, without the sharing
            "gqa_prealloc": {"model": "gqa", "bind": {"present_key": "new", "present_value": "new"}},
            # the gqa model, past and present the same JS buffer (pre-allocated output = the input tensor)
            "gqa_shared": {"model": "gqa", "bind": {"present_key": "past_key", "present_value": "past_value"},
                           "feeds": {"past_key": f"buffer_k_{t}", "past_value": f"buffer_v_{t}"}},
        }
        yield variant, forms, feed_files, special


def decode_cost(s):
    b, n, h, t = s["B"], s["N"], s["h"], s["P"] + 1
    return 4 * b * n * t * h, 10 * b * n * t * h * 4


# ---------------------------------------------------------------------------------------------
# Shapes

def log_uniform(rng, lo, hi):
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def heads(rng, step=1, head_sizes=HEAD_SIZES):
    """N heads (a multiple of step in 4..32) of h channels with 256 <= D = N·h <= 4096."""
    while True:
        n, h = int(rng.integers(4 // step, 32 // step + 1)) * step, int(rng.choice(head_sizes))
        if 256 <= n * h <= 4096:
            return n, h


def encoder_shape(rng, length):
    n, h = heads(rng)
    return {"B": int(rng.integers(1, 9)), "S": length, "D": n * h, "N": n, "h": h}


def decode_shape(rng, length):
    n, h = heads(rng, step=4, head_sizes=(64, 128))
    return {"B": int(rng.integers(1, 5)), "S": 1, "D": n * h, "N": n, "h": h, "P": length}


PATTERNS = {  # name: (length range (S, or P for decode), shape drawer, cost (FLOPs, bytes), case builder)
    "attention": ((1, 512), encoder_shape, attention_cost, attention_case),
    "norm": ((1, 512), encoder_shape, norm_cost, norm_case),
    "gelu": ((1, 512), encoder_shape, gelu_cost, gelu_case),
    "rotary": ((1, 512), encoder_shape, rotary_cost, rotary_case),
    "decode": ((16, 2048), decode_shape, decode_cost, decode_case),
}


def draw(rng, lengths, drawer, cost, budget_ms):
    """The length log-uniform, then the rest redrawn until the estimated one-thread time fits the budget
    (the length is kept, so that long sequences are not rejected away)."""
    length = log_uniform(rng, *lengths)
    while True:
        s = drawer(rng, length)
        flops, nbytes = cost(s)
        if flops / 100e9 * 1e3 + nbytes / 20e9 * 1e3 <= budget_ms:
            return s


def tag(variant):  # a variant's name in file names
    return "".join(c for c in variant if c.isalnum())


def build(weights, inputs, outputs, body):
    g = Graph(weights, inputs)
    body(g)
    return g.model(outputs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--shapes", type=int, default=36)
    p.add_argument("--budget-ms", type=float, default=30)
    p.add_argument("--patterns", default=",".join(PATTERNS))
    a = p.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for pi, pattern in enumerate(PATTERNS):
        if pattern not in a.patterns.split(","):
            continue
        lengths, drawer, cost, case = PATTERNS[pattern]
        rng = np.random.default_rng([a.seed, pi])
        shapes = [draw(rng, lengths, drawer, cost, a.budget_ms) for _ in range(a.shapes)]
        smallest = min(range(len(shapes)), key=lambda i: cost(shapes[i])[1])
        for si, s in enumerate(shapes):
            directory = out / f"{pattern}-{si}"
            directory.mkdir(exist_ok=True)
            weights, feeds = Weights(directory), {}
            for variant, forms, feed_names, special in case(np.random.default_rng([a.seed, pi, si]), s, weights, feeds):
                for name, model in forms.items():
                    onnx.save(model, directory / f"{tag(variant)}-{name}.onnx")
                feed_files = feed_names if isinstance(feed_names, dict) else {n: n for n in feed_names}
                entries = [{"name": name, "model": f"{tag(variant)}-{name}.onnx"} for name in forms]
                for name, spec in special.items():
                    entries.append({"name": name, "model": f"{tag(variant)}-{spec['model']}.onnx", "bind": spec["bind"],
                                    "feeds": {k: f"{v}.npy" for k, v in spec.get("feeds", {}).items()}})
                shape = dict(s, Nkv=s["N"] if variant == "Nkv=N" else s["N"] // 4) if pattern == "decode" else s
                cases.append({"id": f"{pattern}-{si}/{variant}", "pattern": pattern, "variant": variant, "shape": shape,
                              "dir": str(directory), "feeds": {k: f"{v}.npy" for k, v in feed_files.items()},
                              "outputs": [o.name for o in next(iter(forms.values())).graph.output
                                          if not o.name.endswith("_probe")],
                              "forms": entries, "list_ops": si == smallest})
            weights.close()
            for name, array in feeds.items():
                np.save(directory / f"{name}.npy", array)
    (out / "manifest.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
