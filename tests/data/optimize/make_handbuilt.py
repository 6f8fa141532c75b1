#!/usr/bin/python3
"""Hand-built encoder self-attention in the graph forms of exporters other than torch, written
node by node with onnx.helper, as backend-test folders
<out>/handbuilt_<name>/model.onnx + test_data_set_<k>/input_<i>.pb, output_<j>.pb.
The expected outputs are ONNX Runtime's on the unoptimized model (ort_outputs.js: graph
optimizations disabled, one thread), an oracle independent of refeval. Run with Debian's python3
(onnx 1.12, numpy) from anywhere; node and benchmarks/ort/node_modules must be there:
  /usr/bin/python3 tests/data/optimize/make_handbuilt.py [--only NAME...] [--out DIR]
Writing to this folder (the default) without --only also replaces the handbuilt_* lines of
encoder_forms.txt (<folder> <family> <expected_type> <layers> <opset>). Byte-identical on a rerun.

Every model: hidden 32, 4 heads of 8, float32, weights normal with std 0.2 (seeded per form),
opset 17, `batch` and `sequence` dynamic (except handbuilt_fixed_shapes_vit). Each block is
self-attention + output projection + residual + LayerNorm (LayerNormalization, or decomposed where
the form says so); no feed-forward.
Data sets (k), forms with a padding mask (7 tokens):
  0  batch 1, mask all ones
  1  batch 2, row 1 right-padded by 2
  2  batch 2, row 1 left-padded by 2
Forms without a mask: 0 batch 1, 1 batch 3 (7 tokens); handbuilt_fixed_shapes_vit: its one
shape, batch 2 x 5 tokens. Hidden-state inputs are normal (std 1); token ids are drawn from
[3, vocab) with 0 on pads; segment ids are 1 on the last 3 positions and 0 elsewhere and on pads.
"""
import argparse
import os
import pathlib
import shutil
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OPSET = 17
D, HEADS, HEAD = 32, 4, 8
TOKENS = 7
SCALE = np.float32(1 / np.sqrt(HEAD))  # 0.35355339
FLOAT_MIN = np.float32(-3.4028235e38)


class Graph:
    """A GraphProto under construction: op() adds a node and returns its output name(s), const()
    an initializer (tf2onnx, like most non-torch producers, keeps constants as initializers)."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.names = set()

    def _unique(self, name):
        base, k = name, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def input(self, name, elem_type, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, name, value, shape):
        """Renames the output `value` of its node to `name` (no Identity) and makes it a graph output."""
        for node in self.nodes:
            node.output[:] = [name if o == value else o for o in node.output]
            node.input[:] = [name if i == value else i for i in node.input]
        self.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))

    def const(self, name, value, dtype=np.float32):
        name = self._unique(name)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, name, values):
        return self.const(name, values, np.int64)

    def weight(self, name, shape, std=0.2):
        return self.const(name, self.rng.normal(0.0, std, shape))

    def op(self, op_type, inputs, name, n_out=1, out=None, **attrs):
        name = self._unique(name)
        outputs = out or [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, name):
        graph = helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="make_handbuilt.py")
        onnx.checker.check_model(model, full_check=True)
        return model


# ---- pieces shared by several forms ----

def dense(g, x, n_in, n_out, prefix):
    """x @ W + b as MatMul + Add (what every producer writes for a dense layer on 3-D input)."""
    w = g.weight(f"{prefix}/kernel", (n_in, n_out))
    b = g.weight(f"{prefix}/bias", (n_out,))
    return g.op("Add", [g.op("MatMul", [x, w], name=f"{prefix}/MatMul"), b], name=f"{prefix}/BiasAdd")


def layer_norm(g, x, prefix, eps=1e-5):
    """LayerNormalization (opset 17) over the last axis, gamma 1 + 0.1 noise, beta 0.1 noise."""
    gamma = g.const(f"{prefix}/gamma", 1 + 0.1 * g.rng.standard_normal(D))
    beta = g.const(f"{prefix}/beta", 0.1 * g.rng.standard_normal(D))
    return g.op("LayerNormalization", [x, gamma, beta], name=f"{prefix}/LayerNormalization",
                axis=-1, epsilon=eps)


def layer_norm_decomposed_tf(g, x, prefix, eps=1e-12):
    """tf2onnx's LayerNorm of a TF BERT: ReduceMean, Sub, the square as Mul(d, d) (TF's
    SquaredDifference; never Pow), ReduceMean, Add eps, Sqrt + Reciprocal (TF's Rsqrt), Mul, then
    Mul gamma, Add beta."""
    gamma = g.const(f"{prefix}/gamma", 1 + 0.1 * g.rng.standard_normal(D))
    beta = g.const(f"{prefix}/beta", 0.1 * g.rng.standard_normal(D))
    mean = g.op("ReduceMean", [x], name=f"{prefix}/moments/mean", axes=[-1], keepdims=1)
    d = g.op("Sub", [x, mean], name=f"{prefix}/moments/Sub")
    sq = g.op("Mul", [d, d], name=f"{prefix}/moments/SquaredDifference")
    var = g.op("ReduceMean", [sq], name=f"{prefix}/moments/variance", axes=[-1], keepdims=1)
    var = g.op("Add", [var, g.const(f"{prefix}/epsilon", eps)], name=f"{prefix}/batchnorm/add")
    inv = g.op("Reciprocal", [g.op("Sqrt", [var], name=f"{prefix}/batchnorm/Rsqrt/Sqrt")],
               name=f"{prefix}/batchnorm/Rsqrt")
    y = g.op("Mul", [d, inv], name=f"{prefix}/batchnorm/mul")
    y = g.op("Mul", [y, gamma], name=f"{prefix}/batchnorm/mul_1")
    return g.op("Add", [y, beta], name=f"{prefix}/batchnorm/add_1")


def heads_4d(g, x, perm, prefix):
    """(B, S, 32) -> Reshape (0, 0, 4, 8) (0 copies the dim) -> Transpose perm."""
    r = g.op("Reshape", [x, g.ints(f"{prefix}/heads_shape", [0, 0, HEADS, HEAD])], name=f"{prefix}/Reshape")
    return g.op("Transpose", [r], name=f"{prefix}/transpose", perm=perm)


def merge_heads_4d(g, ctx, prefix, perm=(0, 2, 1, 3)):
    """(B, N, S, h) -> Transpose perm -> Reshape (0, 0, 32)."""
    t = g.op("Transpose", [ctx], name=f"{prefix}/context/transpose", perm=list(perm))
    return g.op("Reshape", [t, g.ints(f"{prefix}/context/shape", [0, 0, D])], name=f"{prefix}/context/Reshape")


def shape_dim(g, x, axis, prefix):
    """Shape(x)[axis:axis + 1], a 1-D int64 of one dim, as exporters compute run-time dims."""
    shape = g.op("Shape", [x], name=f"{prefix}/Shape")
    return g.op("Slice", [shape, g.ints(f"{prefix}/dim_start", [axis]), g.ints(f"{prefix}/dim_end", [axis + 1]),
                          g.ints(f"{prefix}/dim_axes", [0])], name=f"{prefix}/dim{axis}")


def additive_key_mask(g, mask, prefix, value=-10000.0):
    """(B, T) 0/1 int -> (1 - Cast(float, Unsqueeze(mask, [1, 2]))) * value: (B, 1, 1, T)."""
    m = g.op("Unsqueeze", [mask, g.ints(f"{prefix}/axes", [1, 2])], name=f"{prefix}/Unsqueeze")
    m = g.op("Cast", [m], name=f"{prefix}/Cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const(f"{prefix}/one", 1.0), m], name=f"{prefix}/Sub")
    return g.op("Mul", [m, g.const(f"{prefix}/value", value)], name=f"{prefix}/Mul")


def bert_block(g, x, mask_add, prefix, merge_perm=(0, 2, 1, 3)):
    """The transformers BERT block the traps are variations of: separate q/k/v dense, heads
    Reshape + Transpose (k perm (0, 2, 3, 1)), MatMul -> Mul 1/sqrt(h) -> Add mask_add -> Softmax(-1)
    -> MatMul v -> merge -> output dense -> Add residual -> LayerNormalization."""
    q = heads_4d(g, dense(g, x, D, D, f"{prefix}/query"), [0, 2, 1, 3], f"{prefix}/query")
    k = heads_4d(g, dense(g, x, D, D, f"{prefix}/key"), [0, 2, 3, 1], f"{prefix}/key")
    v = heads_4d(g, dense(g, x, D, D, f"{prefix}/value"), [0, 2, 1, 3], f"{prefix}/value")
    s = g.op("MatMul", [q, k], name=f"{prefix}/scores/MatMul")
    s = g.op("Mul", [s, g.const(f"{prefix}/scale", SCALE)], name=f"{prefix}/scores/Mul")
    s = g.op("Add", [s, mask_add], name=f"{prefix}/scores/Add")
    p = g.op("Softmax", [s], name=f"{prefix}/Softmax", axis=-1)
    ctx = g.op("MatMul", [p, v], name=f"{prefix}/context/MatMul")
    o = dense(g, merge_heads_4d(g, ctx, prefix, merge_perm), D, D, f"{prefix}/output")
    return layer_norm(g, g.op("Add", [o, x], name=f"{prefix}/output/residual"), f"{prefix}/output/LayerNorm")


# ---- data sets ----

def masks():
    """The (B, T) 0/1 masks of data sets 0, 1, 2."""
    return [np.ones((1, TOKENS), np.int64),
            np.array([[1] * TOKENS, [1] * (TOKENS - 2) + [0] * 2], np.int64),
            np.array([[1] * TOKENS, [0] * 2 + [1] * (TOKENS - 2)], np.int64)]


def hidden(rng, batch, tokens=TOKENS):
    return rng.standard_normal((batch, tokens, D)).astype(np.float32)


def hidden_and_mask_sets(seed, mask_of):
    """[[hidden states, mask_of(mask)]] for sets 0..2."""
    rng = np.random.RandomState(seed)
    return [[hidden(rng, m.shape[0]), mask_of(m)] for m in masks()]


# ---- the fusable forms ----

def tf2onnx_bert():
    """tf2onnx (TF 1.x google-research BERT / TF2 Keras BERT frozen graphs): int32 inputs
    input_ids, input_mask, segment_ids; the embeddings Gather(word) + Gather(token type) + the
    position table (32, 32) sliced [0:S] by a Slice whose end is Shape(input_ids)[1] (TF's
    tf.slice(full_position_embeddings, [0, 0], [seq_length, -1])); LayerNorm decomposed as tf2onnx
    writes TF's moments + Rsqrt (ReduceMean, Sub, Mul(d, d), ReduceMean, Add 1e-12, Sqrt, Reciprocal,
    Mul, Mul gamma, Add beta); the mask `(1 - Cast(float, Reshape(input_mask, (B, 1, 1, T)))) *
    -10000` with the shape Concat'ed from Shape slices (tf.shape + tf.stack); separate q/k/v dense,
    heads Reshape (0, 0, 4, 8) + Transpose (0, 2, 1, 3), k Transpose (0, 2, 3, 1) (tf.matmul
    transpose_b folded into the head transpose); scores MatMul -> Mul 0.35355339 -> Add mask ->
    Softmax(axis=3, positive) -> MatMul v -> Transpose (0, 2, 1, 3) -> Reshape (0, 0, 32); output
    dense, residual Add, LayerNorm. 2 blocks; output sequence_output.
    Two simplifications of what tf2onnx really writes for google-research BERT: its token-type
    lookup is a OneHot + MatMul there (a Gather here), and tf.contrib.layers.layer_norm goes through
    tf.nn.batch_normalization, x * inv + (beta - mean * inv) with inv = Rsqrt(var + eps) * gamma
    (here (x - mean) * inv * gamma + beta)."""
    g = Graph(101)
    vocab, types, max_pos = 64, 2, 32
    ids = g.input("input_ids", TensorProto.INT32, ["batch", "sequence"])
    mask = g.input("input_mask", TensorProto.INT32, ["batch", "sequence"])
    seg = g.input("segment_ids", TensorProto.INT32, ["batch", "sequence"])
    word = g.op("Gather", [g.weight("bert/embeddings/word_embeddings", (vocab, D)), ids],
                name="bert/embeddings/GatherV2", axis=0)
    token_type = g.op("Gather", [g.weight("bert/embeddings/token_type_embeddings", (types, D)), seg],
                      name="bert/embeddings/GatherV2_1", axis=0)
    x = g.op("Add", [word, token_type], name="bert/embeddings/add")
    seq_len = shape_dim(g, ids, 1, "bert/embeddings")
    pos = g.op("Slice", [g.weight("bert/embeddings/position_embeddings", (max_pos, D)),
                         g.ints("bert/embeddings/Slice/begin", [0]), seq_len, g.ints("bert/embeddings/Slice/axes", [0])],
               name="bert/embeddings/Slice")
    x = g.op("Add", [x, pos], name="bert/embeddings/add_1")
    x = layer_norm_decomposed_tf(g, x, "bert/embeddings/LayerNorm")

    batch = shape_dim(g, mask, 0, "bert/encoder/mask_batch")
    to_len = shape_dim(g, mask, 1, "bert/encoder/mask_len")
    mask_shape = g.op("Concat", [batch, g.ints("bert/encoder/ones", [1, 1]), to_len], name="bert/encoder/stack", axis=0)
    m = g.op("Reshape", [mask, mask_shape], name="bert/encoder/Reshape")
    m = g.op("Cast", [m], name="bert/encoder/Cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const("bert/encoder/sub/x", 1.0), m], name="bert/encoder/sub")
    mask_add = g.op("Mul", [m, g.const("bert/encoder/mul/y", -10000.0)], name="bert/encoder/mul")

    for layer in range(2):
        p = f"bert/encoder/layer_{layer}/attention/self"
        q = heads_4d(g, dense(g, x, D, D, f"{p}/query"), [0, 2, 1, 3], f"{p}/query")
        k = heads_4d(g, dense(g, x, D, D, f"{p}/key"), [0, 2, 3, 1], f"{p}/key")
        v = heads_4d(g, dense(g, x, D, D, f"{p}/value"), [0, 2, 1, 3], f"{p}/value")
        s = g.op("MatMul", [q, k], name=f"{p}/MatMul")
        s = g.op("Mul", [s, g.const(f"{p}/Mul/y", SCALE)], name=f"{p}/Mul")
        s = g.op("Add", [s, mask_add], name=f"{p}/add")
        probs = g.op("Softmax", [s], name=f"{p}/Softmax", axis=3)
        ctx = g.op("MatMul", [probs, v], name=f"{p}/MatMul_1")
        o = dense(g, merge_heads_4d(g, ctx, p), D, D, f"bert/encoder/layer_{layer}/attention/output/dense")
        o = g.op("Add", [o, x], name=f"bert/encoder/layer_{layer}/attention/output/add")
        x = layer_norm_decomposed_tf(g, o, f"bert/encoder/layer_{layer}/attention/output/LayerNorm")
    g.output("sequence_output", x, ["batch", "sequence", D])

    rng = np.random.RandomState(1101)
    sets = []
    for m in masks():
        b = m.shape[0]
        ids_v = np.where(m == 1, rng.randint(3, vocab, (b, TOKENS)), 0).astype(np.int32)
        seg_v = ((np.arange(TOKENS) >= TOKENS - 3).astype(np.int32)[None, :] * m).astype(np.int32)
        sets.append([ids_v, m.astype(np.int32), seg_v])
    return g.model("tf2onnx_bert"), ("handbuilt", "bert", 2), sets


def float_mask_input():
    """A graph whose mask arrives already additive, as hand-written ONNX graphs and tf2onnx
    exports of Keras models whose caller precomputes the extended mask take it: float input
    attention_bias (B, 1, 1, T) holding 0 or -10000; input
    hidden_states (B, S, 32), no embeddings. Packed QKV: one MatMul (32, 96) + Add, Split [32, 32,
    32] on axis 2; heads Reshape (0, 0, 4, 8) + Transpose (0, 2, 1, 3); q Div sqrt(8) before the
    product; k's transpose for the product is its own Transpose (0, 1, 3, 2) after the head
    Transpose (tf.matmul(q, k, transpose_b=True) as tf2onnx writes it); Softmax(-1); post-LN
    LayerNormalization. 2 blocks."""
    g = Graph(102)
    x = g.input("hidden_states", TensorProto.FLOAT, ["batch", "sequence", D])
    bias = g.input("attention_bias", TensorProto.FLOAT, ["batch", 1, 1, "sequence"])
    for layer in range(2):
        p = f"encoder/layer_{layer}/attention"
        qkv = dense(g, x, D, 3 * D, f"{p}/qkv")
        q, k, v = g.op("Split", [qkv, g.ints(f"{p}/split_sizes", [D, D, D])], name=f"{p}/split", n_out=3, axis=2)
        q = heads_4d(g, q, [0, 2, 1, 3], f"{p}/query")
        k = heads_4d(g, k, [0, 2, 1, 3], f"{p}/key")
        v = heads_4d(g, v, [0, 2, 1, 3], f"{p}/value")
        q = g.op("Div", [q, g.const(f"{p}/sqrt_head", np.sqrt(HEAD))], name=f"{p}/query/scale")
        kt = g.op("Transpose", [k], name=f"{p}/key/transpose_b", perm=[0, 1, 3, 2])
        s = g.op("MatMul", [q, kt], name=f"{p}/scores/MatMul")
        s = g.op("Add", [s, bias], name=f"{p}/scores/add_bias")
        probs = g.op("Softmax", [s], name=f"{p}/Softmax", axis=-1)
        ctx = g.op("MatMul", [probs, v], name=f"{p}/context/MatMul")
        o = dense(g, merge_heads_4d(g, ctx, p), D, D, f"{p}/output")
        x = layer_norm(g, g.op("Add", [o, x], name=f"{p}/residual"), f"{p}/LayerNorm")
    g.output("last_hidden_state", x, ["batch", "sequence", D])
    sets = hidden_and_mask_sets(1102, lambda m: ((1.0 - m) * -10000.0).astype(np.float32)[:, None, None, :])
    return g.model("float_mask_input"), ("handbuilt", "bert", 2), sets


def bool_mask_where():
    """A boolean keep-mask applied with Where, as JAX/Flax writes it
    (flax.linen.dot_product_attention_weights: `jnp.where(mask, attn_weights, finfo.min)`), which
    jax2onnx or tf2onnx of a jax2tf SavedModel turn into a Where: input keep (B, T) bool, True = keep;
    scores MatMul (k Transpose (0, 2, 3, 1)) -> Div sqrt(8) -> Where(Unsqueeze(keep, [1, 2]),
    scores, -3.4028235e38) (the condition keeps the score: the opposite polarity of
    distilbert's masked_fill) -> Softmax(-1); heads Reshape (0, 0, 4, -1). 1 block."""
    g = Graph(103)
    x = g.input("hidden_states", TensorProto.FLOAT, ["batch", "sequence", D])
    keep = g.input("keep", TensorProto.BOOL, ["batch", "sequence"])
    p = "block_0/attention"
    cond = g.op("Unsqueeze", [keep, g.ints(f"{p}/mask/axes", [1, 2])], name=f"{p}/mask/Unsqueeze")

    def heads(t, perm, name):
        r = g.op("Reshape", [t, g.ints(f"{p}/{name}/shape", [0, 0, HEADS, -1])], name=f"{p}/{name}/Reshape")
        return g.op("Transpose", [r], name=f"{p}/{name}/Transpose", perm=perm)

    q = heads(dense(g, x, D, D, f"{p}/query"), [0, 2, 1, 3], "query")
    k = heads(dense(g, x, D, D, f"{p}/key"), [0, 2, 3, 1], "key")
    v = heads(dense(g, x, D, D, f"{p}/value"), [0, 2, 1, 3], "value")
    s = g.op("MatMul", [q, k], name=f"{p}/scores/MatMul")
    s = g.op("Div", [s, g.const(f"{p}/sqrt_head", np.sqrt(HEAD))], name=f"{p}/scores/Div")
    s = g.op("Where", [cond, s, g.const(f"{p}/mask/min", FLOAT_MIN)], name=f"{p}/scores/Where")
    probs = g.op("Softmax", [s], name=f"{p}/Softmax", axis=-1)
    ctx = g.op("MatMul", [probs, v], name=f"{p}/context/MatMul")
    o = dense(g, merge_heads_4d(g, ctx, p), D, D, f"{p}/output")
    x = layer_norm(g, g.op("Add", [o, x], name=f"{p}/residual"), f"{p}/LayerNorm", eps=1e-6)
    g.output("last_hidden_state", x, ["batch", "sequence", D])
    sets = hidden_and_mask_sets(1103, lambda m: m.astype(bool))
    return g.model("bool_mask_where"), ("handbuilt", "bert", 1), sets


def fixed_shapes_vit():
    """A vision-style pre-LN encoder over patch tokens with every shape fixed, as any exporter
    writes a model saved with a static batch (tf2onnx of a Keras ViT, an export without dynamic
    axes): input hidden_states (2, 5, 32), no mask, no Conv (the patch embedding is outside, so this
    is not detectable as vit); heads Reshape to the constant (2, 5, 4, 8); the scale where Keras'
    MultiHeadAttention puts it, on the (B, S, N, h) projection before the heads are transposed
    (Keras scales q; here k): Mul 0.35355339 of the reshaped k before its Transpose (0, 2, 3, 1);
    Softmax(-1); merge Transpose (0, 2, 1, 3) +
    Reshape (2, 5, 32). Blocks: x + out(attention(LayerNorm(x))) (pre-LN), a final LayerNorm.
    2 blocks."""
    g = Graph(104)
    batch, tokens = 2, 5
    x = g.input("hidden_states", TensorProto.FLOAT, [batch, tokens, D])
    for layer in range(2):
        p = f"encoder/block_{layer}"
        h = layer_norm(g, x, f"{p}/norm1", eps=1e-6)

        def heads(t, name):
            return g.op("Reshape", [t, g.ints(f"{p}/attn/{name}/shape", [batch, tokens, HEADS, HEAD])],
                        name=f"{p}/attn/{name}/Reshape")

        q = g.op("Transpose", [heads(dense(g, h, D, D, f"{p}/attn/query"), "query")], name=f"{p}/attn/query/Transpose",
                 perm=[0, 2, 1, 3])
        k = g.op("Mul", [heads(dense(g, h, D, D, f"{p}/attn/key"), "key"), g.const(f"{p}/attn/key/scale", SCALE)],
                 name=f"{p}/attn/key/Mul")
        k = g.op("Transpose", [k], name=f"{p}/attn/key/Transpose", perm=[0, 2, 3, 1])
        v = g.op("Transpose", [heads(dense(g, h, D, D, f"{p}/attn/value"), "value")], name=f"{p}/attn/value/Transpose",
                 perm=[0, 2, 1, 3])
        s = g.op("MatMul", [q, k], name=f"{p}/attn/scores/MatMul")
        probs = g.op("Softmax", [s], name=f"{p}/attn/Softmax", axis=-1)
        ctx = g.op("MatMul", [probs, v], name=f"{p}/attn/context/MatMul")
        ctx = g.op("Transpose", [ctx], name=f"{p}/attn/context/Transpose", perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, g.ints(f"{p}/attn/context/shape", [batch, tokens, D])], name=f"{p}/attn/context/Reshape")
        o = dense(g, ctx, D, D, f"{p}/attn/output")
        x = g.op("Add", [x, o], name=f"{p}/residual")
    x = layer_norm(g, x, "encoder/norm", eps=1e-6)
    g.output("last_hidden_state", x, [batch, tokens, D])
    rng = np.random.RandomState(1104)
    return g.model("fixed_shapes_vit"), ("handbuilt", "bert", 2), [[hidden(rng, batch, tokens)]]


def three_d_heads():
    """Heads as (B * N, S, h), the bmm form of fairseq-style attention (HF BART's and CLIP's
    `view(*proj_shape)`), with every shape Concat'ed from Shape slices at run time as tf2onnx
    (tf.shape + tf.stack) and hand-written graphs compute them rather than folded: q/k/v Reshape (B, S, 4, 8) -> Transpose (0, 2, 1, 3) -> Reshape (-1, S,
    8); k Transpose (0, 2, 1); 3-D scores MatMul -> Mul 0.35355339 -> Add mask -> Softmax(-1) ->
    MatMul v -> Reshape (B, 4, S, 8) -> Transpose (0, 2, 1, 3) -> Reshape (B, S, 32). The mask:
    attention_mask (B, T) int64 -> (1 - Cast float) * -1e9 -> Unsqueeze [1, 2] -> Expand to (B, 4,
    1, T) -> Reshape (-1, 1, T). 1 block."""
    g = Graph(105)
    x = g.input("hidden_states", TensorProto.FLOAT, ["batch", "sequence", D])
    mask = g.input("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    p = "layer_0/attention"
    b = shape_dim(g, x, 0, f"{p}/batch")
    s_len = shape_dim(g, x, 1, f"{p}/sequence")
    t_len = shape_dim(g, mask, 1, f"{p}/mask/keys")
    c = lambda name, v: g.ints(f"{p}/{name}", v)  # noqa: E731
    shape4 = g.op("Concat", [b, s_len, c("heads_const", [HEADS, HEAD])], name=f"{p}/shape_bsnh", axis=0)
    shape3 = g.op("Concat", [c("minus_one", [-1]), s_len, c("head_const", [HEAD])], name=f"{p}/shape_3d", axis=0)

    m = g.op("Cast", [mask], name=f"{p}/mask/Cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const(f"{p}/mask/one", 1.0), m], name=f"{p}/mask/Sub")
    m = g.op("Mul", [m, g.const(f"{p}/mask/value", -1e9)], name=f"{p}/mask/Mul")
    m = g.op("Unsqueeze", [m, c("mask/axes", [1, 2])], name=f"{p}/mask/Unsqueeze")
    m = g.op("Expand", [m, g.op("Concat", [b, c("mask/n1", [HEADS, 1]), t_len], name=f"{p}/mask/expand_shape", axis=0)],
             name=f"{p}/mask/Expand")
    mask3 = g.op("Reshape", [m, g.op("Concat", [c("mask/m1_1", [-1, 1]), t_len], name=f"{p}/mask/shape_3d", axis=0)],
                 name=f"{p}/mask/Reshape")

    def heads(t, name):
        r = g.op("Reshape", [t, shape4], name=f"{p}/{name}/Reshape")
        r = g.op("Transpose", [r], name=f"{p}/{name}/Transpose", perm=[0, 2, 1, 3])
        return g.op("Reshape", [r, shape3], name=f"{p}/{name}/Reshape_3d")

    q = heads(dense(g, x, D, D, f"{p}/query"), "query")
    k = g.op("Transpose", [heads(dense(g, x, D, D, f"{p}/key"), "key")], name=f"{p}/key/Transpose_b", perm=[0, 2, 1])
    v = heads(dense(g, x, D, D, f"{p}/value"), "value")
    s = g.op("MatMul", [q, k], name=f"{p}/scores/MatMul")
    s = g.op("Mul", [s, g.const(f"{p}/scale", SCALE)], name=f"{p}/scores/Mul")
    s = g.op("Add", [s, mask3], name=f"{p}/scores/Add")
    probs = g.op("Softmax", [s], name=f"{p}/Softmax", axis=-1)
    ctx = g.op("MatMul", [probs, v], name=f"{p}/context/MatMul")
    ctx = g.op("Reshape", [ctx, g.op("Concat", [b, c("context/n", [HEADS]), s_len, c("context/h", [HEAD])],
                                     name=f"{p}/context/shape_4d", axis=0)], name=f"{p}/context/Reshape_4d")
    ctx = g.op("Transpose", [ctx], name=f"{p}/context/Transpose", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.op("Concat", [b, s_len, c("context/d", [D])], name=f"{p}/context/shape", axis=0)],
               name=f"{p}/context/Reshape")
    o = dense(g, ctx, D, D, f"{p}/output")
    x = layer_norm(g, g.op("Add", [o, x], name=f"{p}/residual"), f"{p}/LayerNorm")
    g.output("last_hidden_state", x, ["batch", "sequence", D])
    return g.model("3d_heads"), ("handbuilt", "bert", 1), hidden_and_mask_sets(1105, lambda m: m)


# ---- traps: look like a BERT block, compute something else; must stay unfused ----

def trap_mask_on_queries():
    """The padding mask added along the QUERY axis: attention_mask (B, S) -> Unsqueeze [1, 3] ->
    (B, 1, S, 1) -> (1 - m) * -10000 -> Add to the (B, 4, S, T) scores, otherwise bert_block. A
    row shift leaves the Softmax unchanged (up to the rounding of -10000 + score), so the true
    output is (almost) the unmasked attention; a fusion that takes this for a key padding mask
    would hide keys 5, 6 (set 1) or 0, 1 (set 2) of row 1. 1 block."""
    g = Graph(106)
    x = g.input("hidden_states", TensorProto.FLOAT, ["batch", "sequence", D])
    mask = g.input("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    p = "layer_0/attention"
    m = g.op("Unsqueeze", [mask, g.ints(f"{p}/mask/axes", [1, 3])], name=f"{p}/mask/Unsqueeze")
    m = g.op("Cast", [m], name=f"{p}/mask/Cast", to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const(f"{p}/mask/one", 1.0), m], name=f"{p}/mask/Sub")
    m = g.op("Mul", [m, g.const(f"{p}/mask/value", -10000.0)], name=f"{p}/mask/Mul")
    g.output("last_hidden_state", bert_block(g, x, m, p), ["batch", "sequence", D])
    return g.model("trap_mask_on_queries"), ("trap", "bert", 1), hidden_and_mask_sets(1106, lambda m: m)


def trap_heads_mixed():
    """The head merge interleaves the heads wrongly: the context (B, 4, S, 8) goes through
    Transpose (0, 2, 3, 1) -> (B, S, 8, 4) before Reshape (0, 0, 32), so output feature j * 4 + n
    is head n's feature j (the correct merge, Transpose (0, 2, 1, 3), puts it at n * 8 + j). Every
    shape is valid for any S; the rest is bert_block with the usual key padding mask. A fusion that
    does not check the merge's perm writes the heads in the wrong order. 1 block."""
    g = Graph(107)
    x = g.input("hidden_states", TensorProto.FLOAT, ["batch", "sequence", D])
    mask = g.input("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    p = "layer_0/attention"
    m = additive_key_mask(g, mask, f"{p}/mask")
    g.output("last_hidden_state", bert_block(g, x, m, p, merge_perm=(0, 2, 3, 1)), ["batch", "sequence", D])
    return g.model("trap_heads_mixed"), ("trap", "bert", 1), hidden_and_mask_sets(1107, lambda m: m)


def trap_mask_wrong_batch():
    """The padding mask of the wrong batch row: attention_mask (B, T) reversed along the BATCH
    axis (Slice starts -1, ends INT64_MIN, axis 0, step -1) before the usual (1 - m) * -10000 key
    mask, so row b is masked with row B - 1 - b's padding (a (B, T) mask of the right shape from
    the right input, but not row-aligned). Set 0 (batch 1) is unaffected; in sets 1 and 2 row 0
    hides row 1's pads and row 1 hides nothing. A fusion that ignores the Slice masks the rows
    the other way round. 1 block."""
    g = Graph(108)
    x = g.input("hidden_states", TensorProto.FLOAT, ["batch", "sequence", D])
    mask = g.input("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    p = "layer_0/attention"
    rev = g.op("Slice", [mask, g.ints(f"{p}/mask/starts", [-1]), g.ints(f"{p}/mask/ends", [np.iinfo(np.int64).min]),
                         g.ints(f"{p}/mask/axes", [0]), g.ints(f"{p}/mask/steps", [-1])], name=f"{p}/mask/reverse_batch")
    m = additive_key_mask(g, rev, f"{p}/mask")
    g.output("last_hidden_state", bert_block(g, x, m, p), ["batch", "sequence", D])
    return g.model("trap_mask_wrong_batch"), ("trap", "bert", 1), hidden_and_mask_sets(1108, lambda m: m)


FORMS = {
    "tf2onnx_bert": tf2onnx_bert,
    "float_mask_input": float_mask_input,
    "bool_mask_where": bool_mask_where,
    "fixed_shapes_vit": fixed_shapes_vit,
    "3d_heads": three_d_heads,
    "trap_mask_on_queries": trap_mask_on_queries,
    "trap_heads_mixed": trap_heads_mixed,
    "trap_mask_wrong_batch": trap_mask_wrong_batch,
}


def write_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def make(name, out):
    model, (family, expected_type, layers), sets = FORMS[name]()
    folder = out / f"handbuilt_{name}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    onnx.save(model, str(folder / "model.onnx"))
    input_names = [i.name for i in model.graph.input]
    for k, inputs in enumerate(sets):
        data = folder / f"test_data_set_{k}"
        data.mkdir()
        for i, (n, t) in enumerate(zip(input_names, inputs)):
            write_pb(data / f"input_{i}.pb", t, n)
    env = dict(os.environ, NODE_PATH=str(ROOT / "benchmarks" / "ort" / "node_modules"))
    subprocess.run(["node", str(HERE / "ort_outputs.js"), str(folder)], check=True, env=env, stdout=subprocess.DEVNULL)
    for k in range(len(sets)):
        for j, o in enumerate(model.graph.output):
            t = numpy_helper.to_array(onnx.load_tensor(str(folder / f"test_data_set_{k}" / f"output_{j}.pb")))
            if not np.isfinite(t).all():
                raise RuntimeError(f"{folder.name} set {k}: ORT's output {o.name} is not finite")
    kb = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e3
    print(f"{folder}: {len(model.graph.node)} nodes, {kb:.0f} kB, {len(sets)} data sets", flush=True)
    return folder.name, family, expected_type, layers, OPSET


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(HERE), help="output folder (default: this folder)")
    p.add_argument("--only", nargs="+", metavar="NAME", choices=sorted(FORMS), help="only these forms")
    a = p.parse_args()
    out = pathlib.Path(a.out)
    rows = [make(name, out) for name in a.only or FORMS]
    if out == HERE and not a.only:
        forms = HERE / "encoder_forms.txt"
        kept = [line for line in forms.read_text().splitlines() if not line.startswith("handbuilt_")]
        forms.write_text("\n".join(kept + [" ".join(map(str, r)) for r in rows]) + "\n")


if __name__ == "__main__":
    main()
