#!/usr/bin/python3
"""Differential test of refeval and its optimizer against ONNX Runtime on generated transformer blocks.

  differential.py REFEVAL SOURCE_DIR [--variants N] [--seed S] [--only SEED...] [--keep DIR [--keep-all]]
                  [--jobs J] [--set KNOB=VALUE ...] [--allow CLASS,...]

Draws N variants (default 300) from the families the optimizer fuses: each a small ONNX graph
written node by node with onnx.helper (hidden 16-64, 1-2 layers, vocab 24, random weights, all
seeded by the variant's seed S * 100000 + i), its knobs drawn independently: embeddings from
input_ids (learned positions from Range(0, S), Range(offset, offset + S) or a position_ids input;
Range positions as (1, S) or expanded to (B, S)) or a hidden_states input; a key padding mask from a
2-D attention_mask (int64, int32, bool or float) written as (1 - m) * -10000 or * finfo.min,
Where(m, 0, -inf | finfo.min | -10000) added, or masked_fill Where(m == 0, filler, scores) (-inf on
the keys only without a causal mask: a left-padded causal row would have no finite score, NaN in
every runtime); a causal mask from a constant lower-triangular bool buffer (Where on the scores), a
constant additive triangle, or built from Range / Less (added or as a Where); the masks applied
causal first, padding first, or summed first (nested); the scale on the scores, on q or on k; rotary
on q and k (rotate-half on (B, N, S, h), or interleaved pairs on (B, S, N, h) as Meta's llama, the
pair split by Gather on axis 4 or -1; full or partial; cos/sin gathered from tables or computed from
inv_freq and the positions: Unsqueeze then Cast (Phi-3), Cast then Unsqueeze, or Hugging Face's
inv_freq[None, :, None] (maybe expanded to B) @ positions); GQA (KV heads < heads, repeat_kv by
Unsqueeze / Expand / Reshape); 1, 2, 4 or 8 heads of 2-64 features; 4-D (B, N, S, h) or 3-D (B * N,
S, h) heads (the masks on a (B, N, S, T) view, one round trip for all or one per mask, as BART and
CLIP; rotary and GQA with 4-D heads only); pre-LN or post-LN (with an embedding LayerNorm);
LayerNorm (the operator at opset 17 or its decomposition) or RMSNorm; erf or tanh GELU, QuickGELU,
ReLU or SwiGLU feed-forward; with or without biases; q, k and v from three products or
one cut in three by Slices or a Split; one weight set shared by both layers; opset 14
or 17; an LM head or the hidden states as output. Each variant has two input sets (batch 1 or 2,
sequence 1-8, no padding, right or left padding; pads are token 0; position_ids, when an input, as
generate() computes them under left padding). --set KNOB=VALUE overrides a knob after it is drawn
(the names and values as the failure lines print them; sets as 1x5+left;2x3), to shrink a failing
variant.

Checks, per variant:
  ort        the original in refeval (`refeval run`) equals ORT's outputs of the original;
  CFG/verify `refeval optimize --verify` with CFG = ort (--forms cpu), ort-all (--forms all) and
             onnx (--target onnx): the optimized model equals the original in refeval (on the
             first input set with padding (else set 0) and the optimizer's own generated sets,
             every position; exit 3 otherwise);
  CFG/ort    the optimized model run in ORT equals ORT's outputs of the original on both sets
             (a model ORT cannot load or run is a failure too).
ORT runs in one node process per phase (differential_ort.js, one thread, graph optimizations
disabled), refeval's runs and optimizations on --jobs workers.

Tolerance (from the arithmetic, not fitted): each output y of each input set passes when
    max |a - b| <= rtol * max |b|         over the compared positions, with
    rtol = 2 * eps32 * n,   eps32 = 2^-23 = 2u (u the unit roundoff),
n the sum of the reduction lengths along the longest dependent chain from the input to the output:
per layer the norm (D), the q/k/v projection (D), the scores (h), the softmax and the context (2 T),
the output projection (D), the second norm (D), the two feed-forward products (D and F), plus the
final norm and the head (D each). A length-n sum in float32 is within gamma_n ~ n u sum|terms| of
the exact one (Higham), whatever the order; errors along a chain add to first order; two
implementations each within that differ by at most 2 n u; the remaining factor 2 covers the
element-wise functions (exp, erf, tanh, sqrt, division: a few ulps each); the output's scale
max|y| stands in for sum|terms| (outputs are normalized or projected from normalized states). For
refeval's --verify the same rtol is passed (--rtol R --atol R * max|y|). A real bug (a wrong mask,
rotation or head order) is of the order of max|y| itself.

Fully-masked rows: a query whose every visible key is a pad (with a causal mask: a left-padded row's
first positions) has a softmax over mask values only. ORT's unfused graph gives a uniform (or
score-shaped, for -10000) row there; fused kernels (a mask_index, a -10000 filler) may not. Those
positions (b, s) are left out of every comparison with ORT (the rows of every output with the
(batch, sequence) axes first); every other position, pads that see real keys included, is compared.
No other position depends on them: they are keys that every other query masks. refeval's --verify
compares every position (the optimizer means its attention bias to be exact there too); a --verify
failure is classified by comparing refeval's runs of the optimized and the original model on the
variant's sets with and without those positions.

Each failure prints one line: the variant's seed, the check, the worst difference and the knobs, and
with --keep DIR the variant's folder (model, feeds, optimized models, a repro.sh) is kept there;
`differential.py REFEVAL SOURCE_DIR --only SEED` reruns one variant. At the end a table counts, per
pass and configuration, the variants with a candidate and the variants where it fused (from
--explain), so a generator whose variants never fuse is visible, and the largest difference seen per
check as a fraction of its bound. Exit 1 on a failure (--allow CLASS,... only reports the failures
of those classes), 77 when node or onnxruntime-node is missing. Failure classes: ort (refeval vs ORT
on the original), ort-original (ORT cannot run the original), optimized-ort (the optimized model in
ORT vs ORT on the original, or ORT cannot run it), verify (`--verify` fails and refeval's optimized
outputs differ from the original's at compared positions of the variant's sets), verify-masked-rows
(they differ only at fully-masked rows), verify-generated-inputs (the variant's sets agree; one of
--verify's generated input sets differs, such as a float attention_mask that is not 0/1),
optimize-error (any other non-zero exit)."""
import argparse
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EPS32 = 2.0 ** -23
FMIN = float(np.finfo(np.float32).min)
VOCAB = 24
MAXPOS = 32  # position tables, causal buffers
CONFIGS = [("ort", []), ("ort-all", ["--forms", "all"]), ("onnx", ["--target", "onnx"])]
DTYPES = {"int64": (TensorProto.INT64, np.int64), "int32": (TensorProto.INT32, np.int32),
          "bool": (TensorProto.BOOL, np.bool_), "float": (TensorProto.FLOAT, np.float32)}


# ---------------------------------------------------------------------------------------------
# graph builder

class Graph:
    """A GraphProto under construction: op() adds a node and returns its output name(s), const()
    an initializer (kept by name: a shared weight is the same name read again)."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits, self.inputs, self.outputs = [], {}, [], []
        self.count = 0

    def input(self, name, elem_type, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def const(self, value, dtype=np.float32, name=None):
        if name is None:
            self.count += 1
            name = f"c{self.count}"
        if name not in self.inits:
            self.inits[name] = numpy_helper.from_array(np.asarray(value, dtype=dtype), name)
        return name

    def ints(self, values):
        return self.const(values, np.int64)

    def op(self, op_type, inputs, n_out=1, **attrs):
        self.count += 1
        name = f"{op_type}_{self.count}"
        outs = [f"{name}_o{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def output(self, value, name, elem_type, shape):
        for node in self.nodes:
            node.output[:] = [name if o == value else o for o in node.output]
            node.input[:] = [name if i == value else i for i in node.input]
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    def model(self, opset):
        graph = helper.make_graph(self.nodes, "differential", self.inputs, self.outputs, list(self.inits.values()))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="differential.py")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


# ---------------------------------------------------------------------------------------------
# knobs

def draw_knobs(rng):
    c = lambda options, p=None: options[rng.choice(len(options), p=p)]  # noqa: E731
    k = {}
    k["opset"] = c([14, 17])
    k["D"] = c([16, 32, 48, 64])
    k["heads"] = c([n for n in (1, 2, 4, 8) if k["D"] % n == 0 and (k["D"] // n) % 2 == 0 and k["D"] // n >= 4])
    h = k["D"] // k["heads"]
    k["layers"] = c([1, 2])
    k["shared"] = k["layers"] == 2 and rng.rand() < 0.35
    k["layout"] = c(["4d", "3d"], [0.75, 0.25])
    k["embed"] = c(["ids", "hidden"], [0.6, 0.4])
    k["causal"] = c(["none", "const_where", "const_add", "range_add", "range_where"], [0.4, 0.15, 0.15, 0.15, 0.15])
    k["pad"] = c(["none", "sub_mul", "where_add", "masked_fill"], [0.2, 0.35, 0.2, 0.25])
    k["mask_dtype"] = c(["int64", "int32", "bool", "float"], [0.4, 0.2, 0.2, 0.2]) if k["pad"] != "none" else "-"
    causal = k["causal"] != "none"
    if k["pad"] == "sub_mul":
        k["pad_fill"] = c([-10000.0, FMIN])
    elif k["pad"] != "none":
        # -inf on the keys would leave a left-padded causal row without a finite score (NaN in any runtime)
        k["pad_fill"] = c([FMIN, -10000.0] + ([] if causal else [float("-inf")]))
    else:
        k["pad_fill"] = 0.0
    k["causal_fill"] = c([FMIN, float("-inf"), -10000.0]) if causal else 0.0
    both_additive = k["pad"] in ("sub_mul", "where_add") and k["causal"] in ("const_add", "range_add")
    k["mask_order"] = c(["causal_first", "pad_first"] + (["nested"] if both_additive else []))
    k["mask_view"] = c(["one_view", "per_mask"]) if k["layout"] == "3d" else "-"
    k["scale"] = c(["div_scores", "mul_scores", "mul_q", "div_q", "mul_k"])
    k["k_transpose"] = c(["perm0231", "two_transposes"])
    k["rotary"] = c(["none", "half", "interleaved"], [0.5, 0.3, 0.2]) if k["layout"] == "4d" else "none"
    k["rot_dim"] = c([h, h // 2] if h % 4 == 0 else [h]) if k["rotary"] != "none" else 0
    # cos/sin: gathered from tables, or computed: Unsqueeze then Cast (Phi-3), Cast then Unsqueeze, or
    # Hugging Face's inv_freq[None, :, None] @ position_ids[:, None, :].float()
    k["rot_src"] = c(["table", "mul_uc", "mul_cu", "matmul", "matmul_expand"]) if k["rotary"] != "none" else "-"
    k["pair_axis"] = c([4, -1]) if k["rotary"] == "interleaved" else 0
    k["gqa"] = c([n for n in (1, 2, 4) if n < k["heads"] and k["heads"] % n == 0]) if (
        k["layout"] == "4d" and k["heads"] >= 2 and rng.rand() < 0.35) else 0
    # positions: learned absolute positions need input_ids; rotary needs positions of its own
    needs_pos = k["rotary"] != "none" or (k["embed"] == "ids" and rng.rand() < 0.7)
    k["pos"] = c(["range0", "range_offset", "input"]) if needs_pos else "none"
    k["pos_offset"] = int(rng.randint(1, 5)) if k["pos"] in ("range_offset", "input") else 0
    k["pos_batch"] = c(["expand", "1S"], [0.7, 0.3]) if k["pos"] in ("range0", "range_offset") else "-"
    k["abs_pos"] = k["embed"] == "ids" and k["rotary"] == "none" and k["pos"] != "none"
    k["norm"] = c(["ln", "rms"], [0.65, 0.35])
    k["ln_decomposed"] = k["norm"] == "ln" and (k["opset"] < 17 or rng.rand() < 0.3)
    k["prenorm"] = c([True, False])
    k["bias"] = c([True, False])
    k["ff"] = c(["gelu_erf", "gelu_tanh", "quick_gelu", "relu", "swiglu"])
    k["ff_dim"] = c([2, 4]) * k["D"]
    k["head"] = k["embed"] == "ids" and rng.rand() < 0.5
    # two input sets: (batch, sequence, padding)
    sets = []
    for _ in range(2):
        b = c([1, 2])
        s = c([1, 2, 3, 5, 8], [0.15, 0.15, 0.2, 0.25, 0.25])
        padding = c(["none", "right", "left"]) if k["pad"] != "none" and s >= 2 else "none"
        sets.append((b, s, padding))
    k["sets"] = sets
    # drawn last, so that the variants of a seed kept the knobs they had before it
    k["qkv"] = c(["separate", "packed_slice", "packed_split"], [0.5, 0.25, 0.25])
    return k


def parse_knob(text, like):
    """A --set value in the type of the drawn one (sets: 1x5+left;2x3)."""
    if isinstance(like, bool):
        return text in ("1", "True", "true", "yes")
    if isinstance(like, int):
        return int(text)
    if isinstance(like, float):
        return float(text)
    if isinstance(like, list):
        sets = []
        for part in text.split(";"):
            shape, _, padding = part.partition("+")
            b, s = shape.split("x")
            sets.append((int(b), int(s), padding or "none"))
        return sets
    return text


def knob_line(k):
    skip = {"sets"}
    parts = [f"{key}={v:g}" if isinstance(v, float) else f"{key}={v}" for key, v in k.items() if key not in skip]
    parts.append("sets=" + ";".join(f"{b}x{s}{'' if p == 'none' else '+' + p}" for b, s, p in k["sets"]))
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# the model

def build(k, rng):
    g = Graph(rng)
    D, N = k["D"], k["heads"]
    h = D // N
    NKV = k["gqa"] or N
    F = k["ff_dim"]
    std = lambda n_in: 0.8 / np.sqrt(n_in)  # noqa: E731  activations stay O(1)

    def weight(name, shape, scale):
        return g.const(rng.normal(0.0, scale, shape), name=name)

    if k["embed"] == "ids":
        ids = g.input("input_ids", TensorProto.INT64, ["batch", "sequence"])
        src = ids
        x = g.op("Gather", [weight("wte", (VOCAB, D), 1.0), ids], axis=0)
    else:
        x = g.input("hidden_states", TensorProto.FLOAT, ["batch", "sequence", D])
        src = x
    mask = g.input("attention_mask", DTYPES[k["mask_dtype"]][0], ["batch", "sequence"]) if k["pad"] != "none" else None
    pos_ids = g.input("position_ids", TensorProto.INT64, ["batch", "sequence"]) if k["pos"] == "input" else None

    shape = g.op("Shape", [src])
    B1 = g.op("Slice", [shape, g.ints([0]), g.ints([1]), g.ints([0])])      # (1,) batch
    S1 = g.op("Slice", [shape, g.ints([1]), g.ints([2]), g.ints([0])])      # (1,) sequence
    S0 = g.op("Gather", [shape, g.const(1, np.int64)], axis=0)              # scalar sequence

    # positions (1, S) or (B, S)
    pos = None
    if k["pos"] == "input":
        pos = pos_ids
    elif k["pos"] in ("range0", "range_offset"):
        if k["pos"] == "range0":
            r = g.op("Range", [g.const(0, np.int64), S0, g.const(1, np.int64)])
        else:
            off = g.const(k["pos_offset"], np.int64)
            r = g.op("Range", [off, g.op("Add", [S0, off]), g.const(1, np.int64)])
        pos = g.op("Unsqueeze", [r, g.ints([0])])
        if k["pos_batch"] == "expand":  # (B, S), as position_ids.expand(B, -1)
            pos = g.op("Expand", [pos, g.op("Concat", [B1, S1], axis=0)])
    if k["abs_pos"]:
        x = g.op("Add", [x, g.op("Gather", [weight("wpe", (MAXPOS, D), 0.5), pos], axis=0)])

    def norm(x, name):
        if k["norm"] == "rms":
            w = g.const(1 + 0.1 * rng.standard_normal(D), name=f"{name}.w")
            var = g.op("ReduceMean", [g.op("Pow", [x, g.const(2.0)])], axes=[-1], keepdims=1)
            inv = g.op("Div", [g.const(1.0), g.op("Sqrt", [g.op("Add", [var, g.const(1e-6)])])])
            return g.op("Mul", [w, g.op("Mul", [x, inv])])
        gamma = g.const(1 + 0.1 * rng.standard_normal(D), name=f"{name}.g")
        beta = g.const(0.1 * rng.standard_normal(D), name=f"{name}.b")
        if not k["ln_decomposed"]:
            return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)
        mean = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
        d = g.op("Sub", [x, mean])
        var = g.op("ReduceMean", [g.op("Pow", [d, g.const(2.0)])], axes=[-1], keepdims=1)
        y = g.op("Div", [d, g.op("Sqrt", [g.op("Add", [var, g.const(1e-5)])])])
        return g.op("Add", [g.op("Mul", [y, gamma]), beta])

    def dense(x, n_in, n_out, name, bias=None):
        y = g.op("MatMul", [x, weight(f"{name}.w", (n_in, n_out), std(n_in))])
        if k["bias"] if bias is None else bias:
            y = g.op("Add", [y, weight(f"{name}.b", (n_out,), 0.1)])
        return y

    if not k["prenorm"]:
        x = norm(x, "emb_ln")

    # ---- masks, built once and read by every layer ----
    pad_add = pad_cond = None
    if k["pad"] != "none":
        dt = k["mask_dtype"]
        if k["pad"] == "sub_mul":
            m = g.op("Unsqueeze", [mask, g.ints([1, 2])])
            if dt != "float":
                m = g.op("Cast", [m], to=TensorProto.FLOAT)
            pad_add = g.op("Mul", [g.op("Sub", [g.const(1.0), m]), g.const(k["pad_fill"])])
        elif k["pad"] == "where_add":
            keep = mask if dt == "bool" else g.op("Cast", [mask], to=TensorProto.BOOL)
            pad_add = g.op("Where", [g.op("Unsqueeze", [keep, g.ints([1, 2])]), g.const(0.0), g.const(k["pad_fill"])])
        else:  # masked_fill: Where(pad, filler, scores)
            if dt == "bool":
                padc = g.op("Not", [mask])
            else:
                padc = g.op("Equal", [mask, g.const(0, DTYPES[dt][1])])
            pad_cond = g.op("Unsqueeze", [padc, g.ints([1, 2])])
    causal_add = causal_cond = None
    if k["causal"] in ("const_where", "const_add"):
        tri = np.tril(np.ones((MAXPOS, MAXPOS), bool))
        if k["causal"] == "const_where":
            buf = g.const(tri[None, None], np.bool_, name="causal_buffer")
            causal_cond = g.op("Slice", [buf, g.ints([0, 0]), g.op("Concat", [S1, S1], axis=0), g.ints([2, 3])])
        else:
            buf = g.const(np.where(tri, 0.0, k["causal_fill"]), name="causal_bias")
            causal_add = g.op("Slice", [buf, g.ints([0, 0]), g.op("Concat", [S1, S1], axis=0), g.ints([0, 1])])
    elif k["causal"] in ("range_add", "range_where"):
        r = g.op("Range", [g.const(0, np.int64), S0, g.const(1, np.int64)])
        cond = g.op("Less", [g.op("Unsqueeze", [r, g.ints([0])]),
                             g.op("Add", [g.op("Unsqueeze", [r, g.ints([1])]), g.const(1, np.int64)])])
        if k["causal"] == "range_add":
            causal_add = g.op("Where", [cond, g.const(0.0), g.const(k["causal_fill"])])
        else:
            causal_cond = cond
    nested = None
    if k["mask_order"] == "nested" and pad_add and causal_add:
        nested = g.op("Add", [causal_add, pad_add])

    def apply_masks(s, view):
        """The masks on (B, N, S, T) scores, in the knobs' order; view(s, to4) does 3-D round trips."""
        steps = []
        causal = (lambda t: g.op("Add", [t, causal_add])) if causal_add else (
            (lambda t: g.op("Where", [causal_cond, t, g.const(k["causal_fill"])])) if causal_cond else None)
        padf = (lambda t: g.op("Add", [t, pad_add])) if pad_add else (
            (lambda t: g.op("Where", [pad_cond, g.const(k["pad_fill"]), t])) if pad_cond else None)
        if nested:
            steps = [lambda t: g.op("Add", [t, nested])]
        else:
            order = [causal, padf] if k["mask_order"] != "pad_first" else [padf, causal]
            steps = [f for f in order if f]
        if not steps:
            return s
        if k["layout"] == "4d":
            for f in steps:
                s = f(s)
            return s
        if k["mask_view"] == "one_view":
            s = view(s, True)
            for f in steps:
                s = f(s)
            return view(s, False)
        for f in steps:
            s = view(f(view(s, True)), False)
        return s

    # ---- rotary ----
    cos = sin = None
    if k["rotary"] != "none":
        rd = k["rot_dim"]
        inv_freq = (1.0 / (10000.0 ** (np.arange(0, rd, 2) / rd))).astype(np.float32)

        def freqs():  # (B|1, S, rd/2)
            if k["rot_src"] in ("matmul", "matmul_expand"):
                inv = g.const(inv_freq[None, :, None], name="inv_freq")
                if k["rot_src"] == "matmul_expand":  # inv_freq[None, :, None].expand(B, -1, 1)
                    inv = g.op("Expand", [inv, g.op("Concat", [B1, g.ints([len(inv_freq), 1])], axis=0)])
                posf = g.op("Cast", [g.op("Unsqueeze", [pos, g.ints([1])])], to=TensorProto.FLOAT)
                return g.op("Transpose", [g.op("MatMul", [inv, posf])], perm=[0, 2, 1])
            if k["rot_src"] == "mul_uc":
                posf = g.op("Cast", [g.op("Unsqueeze", [pos, g.ints([2])])], to=TensorProto.FLOAT)
            else:
                posf = g.op("Unsqueeze", [g.op("Cast", [pos], to=TensorProto.FLOAT), g.ints([2])])
            return g.op("Mul", [posf, g.const(inv_freq, name="inv_freq")])

        if k["rotary"] == "half":
            if k["rot_src"] == "table":
                t = np.arange(MAXPOS)[:, None] * inv_freq[None, :]
                emb = np.concatenate([t, t], -1)
                cos = g.op("Gather", [g.const(np.cos(emb), name="cos_cache"), pos], axis=0)   # (B|1, S, rd)
                sin = g.op("Gather", [g.const(np.sin(emb), name="sin_cache"), pos], axis=0)
            else:
                fr = freqs()
                emb = g.op("Concat", [fr, fr], axis=-1)
                cos, sin = g.op("Cos", [emb]), g.op("Sin", [emb])
            cos = g.op("Unsqueeze", [cos, g.ints([1])])  # (B|1, 1, S, rd)
            sin = g.op("Unsqueeze", [sin, g.ints([1])])
        else:
            if k["rot_src"] == "table":
                t = np.arange(MAXPOS)[:, None] * inv_freq[None, :]
                cos = g.op("Gather", [g.const(np.cos(t), name="cos_cache"), pos], axis=0)     # (B|1, S, rd/2)
                sin = g.op("Gather", [g.const(np.sin(t), name="sin_cache"), pos], axis=0)
            else:
                fr = freqs()
                cos, sin = g.op("Cos", [fr]), g.op("Sin", [fr])
            cos = g.op("Unsqueeze", [cos, g.ints([2])])  # (B|1, S, 1, rd/2)
            sin = g.op("Unsqueeze", [sin, g.ints([2])])

    def split_last(t, a, b):
        return g.op("Slice", [t, g.ints([a]), g.ints([b]), g.ints([-1])])

    def rotate_half(t):  # t (B, N, S, h)
        rd = k["rot_dim"]
        rot = t if rd == h else split_last(t, 0, rd)
        x1, x2 = split_last(rot, 0, rd // 2), split_last(rot, rd // 2, rd)
        rh = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
        out = g.op("Add", [g.op("Mul", [rot, cos]), g.op("Mul", [rh, sin])])
        if rd != h:
            out = g.op("Concat", [out, split_last(t, rd, np.iinfo(np.int64).max)], axis=-1)
        return out

    def rotate_pairs(t):  # t (B, S, n, h), Meta's llama: neighbour pairs
        rd = k["rot_dim"]
        rot = t if rd == h else split_last(t, 0, rd)
        xr = g.op("Reshape", [rot, g.ints([0, 0, 0, -1, 2])])
        x0 = g.op("Gather", [xr, g.const(0, np.int64)], axis=k["pair_axis"])
        x1 = g.op("Gather", [xr, g.const(1, np.int64)], axis=k["pair_axis"])
        o0 = g.op("Sub", [g.op("Mul", [x0, cos]), g.op("Mul", [x1, sin])])
        o1 = g.op("Add", [g.op("Mul", [x0, sin]), g.op("Mul", [x1, cos])])
        st = g.op("Concat", [g.op("Unsqueeze", [o0, g.ints([-1])]), g.op("Unsqueeze", [o1, g.ints([-1])])], axis=-1)
        out = g.op("Reshape", [st, g.ints([0, 0, 0, rd])])
        if rd != h:
            out = g.op("Concat", [out, split_last(t, rd, np.iinfo(np.int64).max)], axis=-1)
        return out

    scale = np.float32(1.0 / np.sqrt(h))

    def attention(x, name):
        if k["qkv"] == "separate":
            q = dense(x, D, D, f"{name}.q")
            kk = dense(x, D, NKV * h, f"{name}.k")
            v = dense(x, D, NKV * h, f"{name}.v")
        else:  # one product cut in three on the last axis (nn.MultiheadAttention's in_proj, torch.split)
            widths = [D, NKV * h, NKV * h]
            packed = dense(x, D, sum(widths), f"{name}.qkv")
            if k["qkv"] == "packed_split":
                q, kk, v = g.op("Split", [packed, g.ints(widths)], n_out=3, axis=-1)
            else:
                q, kk, v = (split_last(packed, a, a + w) for a, w in zip(np.cumsum([0] + widths[:2]), widths))
        if k["layout"] == "3d":
            shape4 = g.op("Concat", [B1, S1, g.ints([N, h])], axis=0)
            shape3 = g.op("Concat", [g.ints([-1]), S1, g.ints([h])], axis=0)

            def heads3(t):
                t = g.op("Transpose", [g.op("Reshape", [t, shape4])], perm=[0, 2, 1, 3])
                return g.op("Reshape", [t, shape3])
            q, kk, v = heads3(q), heads3(kk), heads3(v)
            if k["scale"] in ("mul_q", "div_q"):
                q = g.op("Mul" if k["scale"] == "mul_q" else "Div",
                         [q, g.const(scale if k["scale"] == "mul_q" else 1 / scale)])
            if k["scale"] == "mul_k":
                kk = g.op("Mul", [kk, g.const(scale)])
            s = g.op("MatMul", [q, g.op("Transpose", [kk], perm=[0, 2, 1])])
            if k["scale"] in ("div_scores", "mul_scores"):
                s = g.op("Div" if k["scale"] == "div_scores" else "Mul",
                         [s, g.const(1 / scale if k["scale"] == "div_scores" else scale)])
            s4 = g.op("Concat", [B1, g.ints([N]), S1, S1], axis=0)
            s3 = g.op("Concat", [g.ints([-1]), S1, S1], axis=0)
            s = apply_masks(s, lambda t, to4: g.op("Reshape", [t, s4 if to4 else s3]))
            p = g.op("Softmax", [s], axis=-1)
            ctx = g.op("MatMul", [p, v])
            ctx = g.op("Reshape", [ctx, g.op("Concat", [B1, g.ints([N]), S1, g.ints([h])], axis=0)])
            ctx = g.op("Transpose", [ctx], perm=[0, 2, 1, 3])
            ctx = g.op("Reshape", [ctx, g.ints([0, 0, D])])
            return dense(ctx, D, D, f"{name}.o")
        q = g.op("Reshape", [q, g.ints([0, 0, N, h])])
        kk = g.op("Reshape", [kk, g.ints([0, 0, NKV, h])])
        v = g.op("Reshape", [v, g.ints([0, 0, NKV, h])])
        if k["rotary"] == "interleaved":
            q, kk = rotate_pairs(q), rotate_pairs(kk)
        q = g.op("Transpose", [q], perm=[0, 2, 1, 3])
        v = g.op("Transpose", [v], perm=[0, 2, 1, 3])
        if k["rotary"] == "half" or k["gqa"] or k["k_transpose"] == "two_transposes":
            kk = g.op("Transpose", [kk], perm=[0, 2, 1, 3])
            if k["rotary"] == "half":
                q, kk = rotate_half(q), rotate_half(kk)
            if k["gqa"]:
                rep = N // NKV

                def repeat_kv(t):
                    t = g.op("Unsqueeze", [t, g.ints([2])])
                    t = g.op("Expand", [t, g.op("Concat", [B1, g.ints([NKV, rep]), S1, g.ints([h])], axis=0)])
                    return g.op("Reshape", [t, g.op("Concat", [B1, g.ints([N]), S1, g.ints([h])], axis=0)])
                kk, v = repeat_kv(kk), repeat_kv(v)
            if k["scale"] == "mul_k":
                kk = g.op("Mul", [kk, g.const(scale)])
            kt = g.op("Transpose", [kk], perm=[0, 1, 3, 2])
        else:
            if k["scale"] == "mul_k":
                kk = g.op("Mul", [kk, g.const(scale)])
            kt = g.op("Transpose", [kk], perm=[0, 2, 3, 1])
        if k["scale"] in ("mul_q", "div_q"):
            q = g.op("Mul" if k["scale"] == "mul_q" else "Div",
                     [q, g.const(scale if k["scale"] == "mul_q" else 1 / scale)])
        s = g.op("MatMul", [q, kt])
        if k["scale"] in ("div_scores", "mul_scores"):
            s = g.op("Div" if k["scale"] == "div_scores" else "Mul",
                     [s, g.const(1 / scale if k["scale"] == "div_scores" else scale)])
        s = apply_masks(s, None)
        p = g.op("Softmax", [s], axis=-1)
        ctx = g.op("MatMul", [p, v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), g.ints([0, 0, D])])
        return dense(ctx, D, D, f"{name}.o")

    def ff(x, name):
        if k["ff"] == "swiglu":
            gate = dense(x, D, F, f"{name}.gate")
            up = dense(x, D, F, f"{name}.up")
            act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])
            return dense(act, F, D, f"{name}.down")
        y = dense(x, D, F, f"{name}.fc1")
        if k["ff"] == "gelu_erf":
            e = g.op("Erf", [g.op("Div", [y, g.const(np.sqrt(2.0))])])
            y = g.op("Mul", [g.op("Mul", [y, g.const(0.5)]), g.op("Add", [e, g.const(1.0)])])
        elif k["ff"] == "gelu_tanh":
            inner = g.op("Add", [y, g.op("Mul", [g.op("Pow", [y, g.const(3.0)]), g.const(0.044715)])])
            t = g.op("Tanh", [g.op("Mul", [inner, g.const(np.sqrt(2 / np.pi))])])
            y = g.op("Mul", [g.op("Mul", [y, g.const(0.5)]), g.op("Add", [t, g.const(1.0)])])
        elif k["ff"] == "quick_gelu":
            y = g.op("Mul", [y, g.op("Sigmoid", [g.op("Mul", [y, g.const(1.702)])])])
        else:
            y = g.op("Relu", [y])
        return dense(y, F, D, f"{name}.fc2")

    for layer in range(k["layers"]):
        name = "layer0" if k["shared"] else f"layer{layer}"
        if k["prenorm"]:
            x = g.op("Add", [x, attention(norm(x, f"{name}.ln1"), f"{name}.attn")])
            x = g.op("Add", [x, ff(norm(x, f"{name}.ln2"), f"{name}.mlp")])
        else:
            x = norm(g.op("Add", [attention(x, f"{name}.attn"), x]), f"{name}.ln1")
            x = norm(g.op("Add", [ff(x, f"{name}.mlp"), x]), f"{name}.ln2")
    if k["prenorm"]:
        x = norm(x, "final_ln")
    if k["head"]:
        x = dense(x, D, VOCAB, "lm_head", bias=False)
        g.output(x, "logits", TensorProto.FLOAT, ["batch", "sequence", VOCAB])
    else:
        g.output(x, "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", D])
    return g.model(k["opset"])


def chain_length(k):
    """n of the tolerance rule (module docstring): the reduction lengths along the longest chain."""
    D, h, T = k["D"], k["D"] // k["heads"], max(s for _, s, _ in k["sets"])
    per_layer = D + D + h + 2 * T + D + D + D + k["ff_dim"]
    return k["layers"] * per_layer + 2 * D


def make_sets(k, rng):
    """[(feeds dict, keep (B, S) bool: the positions compared with ORT)] for the knobs' sets."""
    out = []
    for b, s, padding in k["sets"]:
        feeds = {}
        m = np.ones((b, s), np.int64)
        if padding != "none":
            for row in range(b):
                if row == b - 1 or rng.rand() < 0.5:  # the last row always padded
                    npad = int(rng.randint(1, s))
                    if padding == "right":
                        m[row, s - npad:] = 0
                    else:
                        m[row, :npad] = 0
        if k["embed"] == "ids":
            feeds["input_ids"] = np.where(m == 1, rng.randint(1, VOCAB, (b, s)), 0).astype(np.int64)
        else:
            feeds["hidden_states"] = rng.standard_normal((b, s, k["D"])).astype(np.float32)
        if k["pad"] != "none":
            feeds["attention_mask"] = m.astype(DTYPES[k["mask_dtype"]][1])
        if k["pos"] == "input":
            if padding == "left":  # as generate() computes them: cumsum of the mask - 1, 1 on pads
                p = np.where(m == 1, np.cumsum(m, 1) - 1, 1)
            else:
                p = np.broadcast_to(np.arange(s) + k["pos_offset"], (b, s))
            feeds["position_ids"] = np.ascontiguousarray(p, dtype=np.int64)
        # a query whose every visible key is a pad: its softmax sees mask values only
        keep = np.ones((b, s), bool)
        if k["pad"] != "none":
            for row in range(b):
                for q in range(s):
                    visible = m[row, : q + 1] if k["causal"] != "none" else m[row]
                    keep[row, q] = visible.any()
        out.append((feeds, keep))
    return out


# ---------------------------------------------------------------------------------------------
# running

def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def read_pb(path):
    return numpy_helper.to_array(onnx.load_tensor(str(path)))


def compare(a, b, keep, rtol):
    """(ok, worst |a - b|, bound) over the kept positions; a, b (B, S, ...) outputs."""
    if a.shape != b.shape:
        return False, float("inf"), 0.0
    a = a[keep].astype(np.float64)
    b = b[keep].astype(np.float64)
    if a.size == 0:
        return True, 0.0, 0.0
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        same = np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[~np.isfinite(a)], b[~np.isfinite(b)])
        if not same:
            return False, float("nan"), 0.0
        fin = np.isfinite(a)
        a, b = a[fin], b[fin]
        if a.size == 0:
            return True, 0.0, 0.0
    worst = float(np.abs(a - b).max())
    bound = rtol * float(np.abs(b).max())
    return worst <= bound, worst, bound


EXPLAIN = re.compile(r"^explain: (\S+): (\d+) candidates?, (\d+) fused")


def refeval_task(refeval, v):
    """refeval's side of one variant: the original on each set, then the three optimizations."""
    t0 = time.time()
    d = v["dir"]
    res = {"run": [], "opt": {}}
    outs_names = v["outputs"]
    for i in range(len(v["sets"])):
        feeds = d / "feeds" / f"set_{i}"
        out = d / "refeval" / f"set_{i}"
        args = [refeval, "run", str(d / "model.onnx"), "-v", "0", "--save-outputs", str(out)]
        for name in v["input_names"]:
            args += ["--input", f"{name}={feeds / (name + '.npy')}"]
        p = run(args)
        if p.returncode != 0:
            res["run"].append(("error", p.stdout.strip().splitlines()[-1:] or ["?"]))
            continue
        res["run"].append(("ok", [read_pb(out / f"output_{j}.pb") for j in range(len(outs_names))]))
    scale = max([float(np.abs(o).max()) for st, outs in res["run"] if st == "ok" for o in outs] + [1.0])
    # verify on the set with padding if any (the interesting one), else set 0
    vset = next((i for i, (_, _, p) in enumerate(v["knobs"]["sets"]) if p != "none"), 0)
    feeds = d / "feeds" / f"set_{vset}"
    for cfg, extra in CONFIGS:
        out = d / f"opt_{cfg}.onnx"
        args = [refeval, "optimize", str(d / "model.onnx"), "-o", str(out), "--explain", "--verify",
                "--rtol", f"{v['rtol']:.3g}", "--atol", f"{v['rtol'] * scale:.3g}"] + extra
        for name in v["input_names"]:
            args += ["--input", f"{name}={feeds / (name + '.npy')}"]
        p = run(args)
        explain = {}
        for line in p.stdout.splitlines():
            mm = EXPLAIN.match(line)
            if mm:
                explain[mm.group(1)] = (int(mm.group(2)), int(mm.group(3)))
        ops = ""
        for line in p.stdout.splitlines():
            if line.startswith("operators:"):
                ops = line
        res["opt"][cfg] = {"rc": p.returncode, "explain": explain, "ops": ops, "written": out.exists(),
                           "log": p.stdout if p.returncode != 0 else "", "runs": None}
        if p.returncode == 3 and out.exists():
            # not equivalent: the optimized model's outputs on every set, to tell whether only the
            # fully-masked rows differ
            res["opt"][cfg]["runs"] = []
            for i in range(len(v["sets"])):
                so = d / f"refeval_{cfg}" / f"set_{i}"
                args = [refeval, "run", str(out), "-v", "0", "--save-outputs", str(so)]
                for name in v["input_names"]:
                    args += ["--input", f"{name}={d / 'feeds' / f'set_{i}' / (name + '.npy')}"]
                q = run(args)
                res["opt"][cfg]["runs"].append(
                    [read_pb(so / f"output_{j}.pb") for j in range(len(outs_names))] if q.returncode == 0 else None)
    res["seconds"] = time.time() - t0
    return res


def ort_run(list_lines, work, tag, env):
    lst = work / f"ort_{tag}.txt"
    lst.write_text("".join("\t".join(map(str, line)) + "\n" for line in list_lines))
    return subprocess.Popen(["node", str(pathlib.Path(__file__).resolve().parent / "differential_ort.js"), str(lst)],
                            env=env)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("refeval")
    ap.add_argument("source_dir")
    ap.add_argument("--variants", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", type=int, nargs="+", metavar="SEED", help="only these variant seeds")
    ap.add_argument("--keep", metavar="DIR", help="keep failing variants' folders here")
    ap.add_argument("--keep-all", action="store_true", help="with --keep: keep every variant")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--set", action="append", type=lambda t: tuple(t.split("=", 1)), metavar="KNOB=VALUE",
                    help="override a knob in every variant (after drawing it; repeatable), e.g. --set layers=1")
    ap.add_argument("--allow", metavar="CLASS,...",
                    help="report failures of these classes without failing: ort, ort-original, optimized-ort, verify, "
                         "verify-masked-rows, verify-generated-inputs, optimize-error")
    a = ap.parse_args()
    t0 = time.time()
    refeval = str(pathlib.Path(a.refeval).resolve())
    src = pathlib.Path(a.source_dir).resolve()
    env = dict(os.environ, NODE_PATH=str(src / "benchmarks" / "ort" / "node_modules"))
    if not (src / "benchmarks" / "ort" / "node_modules" / "onnxruntime-node").exists() or not shutil.which("node"):
        print("differential: node or onnxruntime-node (benchmarks/ort/node_modules) missing; skipped")
        return 77  # ctest's SKIP_RETURN_CODE
    seeds = a.only or [a.seed * 100000 + i for i in range(a.variants)]
    work = pathlib.Path(tempfile.mkdtemp(prefix="refeval-differential-"))
    try:
        return run_all(a, refeval, seeds, work, env, t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(a, refeval, seeds, work, env, t0):
    variants = []
    for seed in seeds:
        rng = np.random.RandomState(seed)
        k = draw_knobs(rng)
        for key, value in a.set or []:
            if key not in k:
                raise SystemExit(f"differential: --set {key}: no such knob ({', '.join(k)})")
            k[key] = parse_knob(value, k[key])
        model = build(k, rng)
        d = work / f"v{seed}"
        (d / "feeds").mkdir(parents=True)
        onnx.save(model, str(d / "model.onnx"))
        sets = make_sets(k, rng)
        for i, (feeds, _) in enumerate(sets):
            (d / "feeds" / f"set_{i}").mkdir()
            for name, value in feeds.items():
                np.save(d / "feeds" / f"set_{i}" / f"{name}.npy", value)
        variants.append({"seed": seed, "knobs": k, "dir": d, "sets": sets, "rtol": 2 * EPS32 * chain_length(k),
                         "input_names": [i.name for i in model.graph.input],
                         "outputs": [o.name for o in model.graph.output]})
    t_gen = time.time() - t0
    # ORT on the originals, in the background while refeval works
    ort0 = ort_run([(v["dir"] / "model.onnx", v["dir"] / "feeds", v["dir"] / "ort_orig") for v in variants],
                   work, "orig", env)
    results = [None] * len(variants)
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(refeval_task, refeval, v): i for i, v in enumerate(variants)}
        for n, f in enumerate(concurrent.futures.as_completed(futures), 1):
            results[futures[f]] = f.result()
            if n % 50 == 0 and n < len(variants):
                print(f"  {n}/{len(variants)} variants through refeval ({time.time() - t0:.0f} s)", flush=True)
    t_refeval = time.time() - t0
    if ort0.wait() != 0:
        raise SystemExit("differential: differential_ort.js failed on the originals")
    t_ort0 = time.time() - t0
    lines = [(v["dir"] / f"opt_{cfg}.onnx", v["dir"] / "feeds", v["dir"] / f"ort_{cfg}")
             for v, r in zip(variants, results) for cfg, _ in CONFIGS if r["opt"][cfg]["written"]]
    if ort_run(lines, work, "opt", env).wait() != 0:
        raise SystemExit("differential: differential_ort.js failed on the optimized models")
    t_ort1 = time.time() - t0

    failures = []
    margins = {}  # check -> largest worst / bound seen
    skipped = [0, 0]  # fully-masked positions left out, positions compared

    def margin(check, worst, bound):
        ratio = worst / bound if bound > 0 else (0.0 if worst == 0 else float("inf"))
        margins[check] = max(margins.get(check, 0.0), ratio)

    for v, r in zip(variants, results):
        d = v["dir"]
        fails = []  # (class, text)

        def ort_outputs(tag, i):
            err = d / tag / "error.txt"
            if err.exists():
                return None, err.read_text().strip()
            return [np.load(d / tag / f"set_{i}" / f"{n}.npy") for n in v["outputs"]], ""

        for cfg, _ in CONFIGS:
            o = r["opt"][cfg]
            if o["rc"] == 0:
                continue
            last = [ln.strip() for ln in o["log"].splitlines() if "NOT equivalent" in ln or "error" in ln]
            last = last[-1:] or [ln.strip() for ln in o["log"].splitlines() if ln.strip()][-1:]
            cls = "optimize-error"
            if o["runs"] is not None and all(st == "ok" for st, _ in r["run"]):
                # where refeval's optimized and original outputs differ, on the variant's own sets
                all_ok = kept_ok = True
                for j, (_, keep_j) in enumerate(v["sets"]):
                    if o["runs"][j] is None:
                        all_ok = kept_ok = False
                        continue
                    for x, y in zip(o["runs"][j], r["run"][j][1]):
                        all_ok &= compare(x, y, np.ones_like(keep_j), v["rtol"])[0]
                        kept_ok &= compare(x, y, keep_j, v["rtol"])[0]
                cls = ("verify-masked-rows" if kept_ok and not all_ok else "verify" if not kept_ok else
                       "verify-generated-inputs")
            fails.append((cls, f"{cfg}/verify: exit {o['rc']}: {' | '.join(last)}"))

        for i, (feeds, keep) in enumerate(v["sets"]):
            skipped[0] += int((~keep).sum())
            skipped[1] += int(keep.sum())
            ref, err = ort_outputs("ort_orig", i)
            if ref is None:
                fails.append(("ort-original", f"ORT failed on the original: {err}"))
                break
            st, outs = r["run"][i]
            if st != "ok":
                fails.append(("ort", f"ort: refeval run failed on set {i}: {outs[0]}"))
            else:
                for name, x, y in zip(v["outputs"], outs, ref):
                    ok, worst, bound = compare(x, y, keep, v["rtol"])
                    margin("refeval vs ORT (original)", worst, bound)
                    if not ok:
                        fails.append(("ort", f"ort: set {i} {name}: max|refeval - ort| {worst:.3g} > {bound:.3g}"))
            for cfg, _ in CONFIGS:
                o = r["opt"][cfg]
                if not o["written"]:
                    continue
                got, err = ort_outputs(f"ort_{cfg}", i)
                if got is None:
                    if i == 0:
                        fails.append(("optimized-ort", f"{cfg}/ort: ORT failed on the optimized model: {err}"))
                    continue
                for name, x, y in zip(v["outputs"], got, ref):
                    ok, worst, bound = compare(x, y, keep, v["rtol"])
                    margin(f"ORT optimized ({cfg}) vs ORT original", worst, bound)
                    if not ok:
                        fails.append(("optimized-ort", f"{cfg}/ort: set {i} {name}: "
                                      f"max|ort(optimized) - ort| {worst:.3g} > {bound:.3g}"))
        if fails:
            failures.append((v, fails))
        if a.keep and (fails or a.keep_all):
            keep_dir = pathlib.Path(a.keep) / f"v{v['seed']}"
            shutil.rmtree(keep_dir, ignore_errors=True)
            shutil.copytree(d, keep_dir)
            vset = next((i for i, (_, _, p) in enumerate(v["knobs"]["sets"]) if p != "none"), 0)
            feeds0 = keep_dir / "feeds" / f"set_{vset}"
            sets_arg = "".join(f" --set {key}={val}" for key, val in a.set or [])
            (keep_dir / "repro.sh").write_text(
                "#!/bin/sh\n# REFEVAL=path/to/refeval; run from the source dir\n"
                f"# knobs: {knob_line(v['knobs'])}\n"
                f"/usr/bin/python3 tests/tools/optimize/differential.py \"$REFEVAL\" . --only {v['seed']}{sets_arg}"
                " --keep /tmp/differential\n"
                f"\"$REFEVAL\" optimize {keep_dir}/model.onnx -o /tmp/opt.onnx --verify --explain "
                + " ".join(f"--input {n}={feeds0}/{n}.npy" for n in v["input_names"]) + "\n")

    allowed = set(a.allow.split(",")) if a.allow else set()
    classes = {}
    hard = 0
    for v, fails in failures:
        hard += any(cls not in allowed for cls, _ in fails)
        for cls, f in fails:
            classes[cls] = classes.get(cls, 0) + 1
            tag = "ALLOWED" if cls in allowed else "FAIL"
            print(f"{tag} seed={v['seed']} [{cls}] {f} :: {knob_line(v['knobs'])}", flush=True)

    # fusion summary: per pass, variants with a candidate / variants where it fused, per config
    passes = {}
    for r in results:
        for cfg, _ in CONFIGS:
            for pname, (cand, fused) in r["opt"][cfg]["explain"].items():
                row = passes.setdefault(pname, {c: [0, 0] for c, _ in CONFIGS})
                row[cfg][0] += cand > 0
                row[cfg][1] += fused > 0
    print(f"\nfusions over {len(variants)} variants (variants with a candidate / variants fused):")
    print(f"  {'pass':34s}" + "".join(f"{cfg:>16s}" for cfg, _ in CONFIGS))
    for pname in sorted(passes):
        row = passes[pname]
        print(f"  {pname:34s}" + "".join(f"{row[c][0]:>9d} /{row[c][1]:>5d}" for c, _ in CONFIGS))
    ops = {}
    for r in results:
        for cfg, _ in CONFIGS:
            for op in set(re.findall(r"(\w+) \d+", r["opt"][cfg]["ops"].replace("operators:", ""))):
                ops.setdefault(op, {c: 0 for c, _ in CONFIGS})[cfg] += 1
    fused_ops = [op for op in sorted(ops) if op in FUSED_OPS]
    print("variants whose optimized model holds the operator:")
    print(f"  {'operator':34s}" + "".join(f"{cfg:>16s}" for cfg, _ in CONFIGS))
    for op in fused_ops:
        print(f"  {op:34s}" + "".join(f"{ops[op][c]:>16d}" for c, _ in CONFIGS))
    # attention and rotary fused (--target ort) per value of the knobs that shape them
    print("by knob value (--target ort): variants/attention fused[/rotary fused 'of' variants with rotary]:")
    for knob in ("layout", "causal", "pad", "mask_dtype", "mask_order", "scale", "rotary", "rot_src", "pos",
                 "pos_batch", "gqa", "heads", "prenorm", "opset"):
        cells = []
        values = sorted({str(v["knobs"][knob]) for v in variants})
        for value in values:
            sel = [(v, r) for v, r in zip(variants, results) if str(v["knobs"][knob]) == value]
            att = sum(r["opt"]["ort"]["explain"].get("attention", (0, 0))[1] > 0 for _, r in sel)
            rot = [r["opt"]["ort"]["explain"].get("rotary-embedding", (0, 0))[1] > 0 for v, r in sel
                   if v["knobs"]["rotary"] != "none"]
            cells.append(f"{value} {len(sel)}/{att}" + (f"/{sum(rot)}of{len(rot)}" if rot else ""))
        print(f"  {knob:12s} " + ", ".join(cells))
    n_fail = hard
    print("\nlargest |a - b| / bound over the compared outputs (1 = at the tolerance):")
    for check in sorted(margins):
        print(f"  {check:44s} {margins[check]:.3g}")
    print(f"positions compared with ORT: {skipped[1]}; left out as fully-masked rows: {skipped[0]}")
    if classes:
        print("failures by class (variant x check): " + ", ".join(f"{c} {n}" for c, n in sorted(classes.items())))
    more = f" ({len(failures) - hard} more only in allowed classes)" if len(failures) > hard else ""
    print(f"\n{len(variants)} variants, {n_fail} failing{more}; seconds: generated {t_gen:.1f}, "
          f"refeval done {t_refeval:.1f} (sum over variants {sum(r['seconds'] for r in results):.1f}), "
          f"ORT originals done {t_ort0:.1f}, ORT optimized done {t_ort1:.1f}, total {time.time() - t0:.1f}")
    return 1 if n_fail else 0


FUSED_OPS = {"Attention", "MultiHeadAttention", "GroupQueryAttention", "RotaryEmbedding", "SkipLayerNormalization",
             "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization",
             "LayerNormalization", "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "EmbedLayerNormalization", "Sum",
             "FusedMatMul"}


if __name__ == "__main__":
    sys.exit(main())
