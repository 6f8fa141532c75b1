#!/usr/bin/python3
"""Look-alike models: graphs that look like a fusion (or a com.microsoft operator that --target onnx
rewrites) with one realistic difference that makes the rewrite invalid, so that the optimizer must
refuse it and say why. Each is one small `lookalikes/<name>.onnx`; `lookalikes/expected.txt` has a
row per reason, `<name>.onnx<TAB><target><TAB><reason>[<TAB><options>]`: `refeval optimize
--explain --target <target>` must print <reason> in a "not fused:" line. <options> are what the
run needs: --forms all for the passes --forms cpu leaves out (skip-layer-norm), --dim / --fill so
that --verify feeds real values (a symbolic dim's size, a shape or position input); "exit=2" first
marks a com.microsoft node the input has and --target onnx cannot rewrite, a usage error (exit 2,
the reason on stderr). tests/cli/optimize_lookalikes_test.sh checks every row and that the
optimized model is equivalent (--verify); tests/tools/optimize/refusals.py counts the reasons as
produced by a test.

Regenerate (Debian's python3 with onnx 1.12 and numpy; byte-identical on a rerun; --only writes
those models, expected.txt always whole):
  /usr/bin/python3 tests/data/optimize/make_lookalikes.py [--only NAME...] [--out DIR]

Sizes are small (hidden 16, 2 heads of 8, tables of 32 positions); weights are normal with std 0.2
from a seed per model, so every model and its optimized form can be compared on generated inputs.
"""
import argparse
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "lookalikes"
F32, F16, F64, I64, I32, BOOL = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT64,
                                 TensorProto.INT32, TensorProto.BOOL)
NP = {F32: np.float32, F16: np.float16, F64: np.float64, I64: np.int64, I32: np.int32}
CASES = []


def case(target, reason, extra=""):
    """Registers a builder: its model must make `refeval optimize --target <target> --explain`
    print `reason` (a string, or a tuple of reasons each given by a different candidate); `extra`
    are options the run needs (--forms all for the passes --forms cpu leaves out; for --verify,
    --dim and --fill)."""
    def register(build):
        CASES.append((build.__name__, target, (reason,) if isinstance(reason, str) else reason, extra, build))
        return build
    return register


class Graph:
    """A GraphProto under construction: op() adds a node and returns its output name(s); const()
    adds an initializer (seeded normal weights unless values are given)."""

    def __init__(self, seed=0):
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.count = {}

    def name(self, base):
        k = self.count.get(base, 0)
        self.count[base] = k + 1
        return base if k == 0 else f"{base}_{k}"

    def input(self, name, elem_type, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, name, elem_type=F32, shape=None):
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    def const(self, name, values=None, shape=None, dtype=np.float32, std=0.2):
        if values is None:
            values = self.rng.normal(0, std, shape)
        name = self.name(name)
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def ints(self, name, values):
        return self.const(name, values, dtype=np.int64)

    def op(self, op_type, inputs, outputs=1, name=None, domain="", **attrs):
        base = name or op_type
        node_name = self.name(f"/{base}")
        if isinstance(outputs, int):
            outs = [f"{node_name[1:]}_out{k}" if outputs > 1 else f"{node_name[1:]}_out" for k in range(outputs)]
        else:
            outs = list(outputs)
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=node_name, domain=domain or None, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def model(self, opset=17, microsoft=False):
        graph = helper.make_graph(self.nodes, "lookalike", self.inputs, self.outputs, self.inits)
        opsets = [helper.make_opsetid("", opset)]
        if microsoft:
            opsets.append(helper.make_opsetid("com.microsoft", 1))
        m = helper.make_model(graph, opset_imports=opsets, producer_name="make_lookalikes.py")
        m.ir_version = 8
        return m


# ---- LayerNorm decomposed (torch's nn.LayerNorm before opset 17; layer-norm pass) ----

def layer_norm(g, x, hidden, mean_axes=(-1,), var_axes=(-1,), keepdims=1, gamma=None, beta=True, eps=1e-5,
               cast_in=None, cast_out=None, opset=17):
    """ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div * gamma + beta as torch exports nn.LayerNorm at
    opset <= 16; the knobs are the ways the look-alikes differ. mean_axes None: no axes (every
    axis); a string: the axes input is that value (opset 18)."""
    def mean(v, axes, keep):
        if opset >= 18:
            axes_in = axes if isinstance(axes, str) else g.ints("axes", list(axes))
            return g.op("ReduceMean", [v, axes_in], name="ReduceMean", keepdims=keep)
        if axes is None:
            return g.op("ReduceMean", [v], name="ReduceMean", keepdims=keep)
        return g.op("ReduceMean", [v], name="ReduceMean", axes=list(axes), keepdims=keep)
    xf = g.op("Cast", [x], name="CastIn", to=cast_in) if cast_in else x
    m = mean(xf, mean_axes, keepdims)
    d = g.op("Sub", [xf, m])
    sq = g.op("Pow", [d, g.const("two", 2.0, dtype=NP.get(cast_in, np.float32) if cast_in else np.float32)])
    var = mean(sq, var_axes, 1)
    ve = g.op("Add", [var, g.const("eps", eps, dtype=NP.get(cast_in, np.float32) if cast_in else np.float32)])
    n = g.op("Div", [d, g.op("Sqrt", [ve])])
    if cast_out:
        n = g.op("Cast", [n], name="CastOut", to=cast_out)
    gamma = gamma or g.const("ln.weight", 1 + g.rng.normal(0, 0.1, hidden))
    y = g.op("Mul", [n, gamma])
    if beta:
        y = g.op("Add", [y, g.const("ln.bias", shape=(hidden,), dtype=NP[cast_out] if cast_out else np.float32)])
    return y


def ln_model(seed, shape, hidden, elem=F32, opset=17, **knobs):
    g = Graph(seed)
    x = g.input("x", elem, shape)
    y = layer_norm(g, x, hidden, opset=opset, **knobs)
    g.output(y)
    return g.model(opset)


@case("ort", "does not keep the reduced axis")
def ln_mean_keepdims0():
    # A Gram matrix (N, N) normalised row-wise, but the mean taken with keepdims=0: Sub then
    # broadcasts row j's mean over column j, which LayerNormalization would not do.
    return ln_model(1, [8, 8], 8, keepdims=0)


@case("ort", "are not a constant", "--fill norm_axes=-1")
def ln_axes_runtime():
    # Opset 18 with ReduceMean's axes fed at run time (a model taking the normalised axis as an
    # input): the pass cannot know it is the last one.
    g = Graph(2)
    x = g.input("x", F32, ["batch", 6, 16])
    axes = g.input("norm_axes", I64, [1])
    g.output(layer_norm(g, x, 16, mean_axes=axes, opset=18))
    return g.model(18)


@case("ort", ("reduces every axis, not the last axis", "'/Sub' subtracts the mean first: a LayerNorm, for the layer-norm pass"))
def ln_mean_all_axes():
    # The mean without axes is over every axis (a whole-tensor centring, as a hand-written
    # standardisation does); only the variance is per row.
    return ln_model(3, [2, 6, 16], 16, mean_axes=None)


@case("ort", "reduces axes [1, 2], not the last axis alone")
def ln_group_norm_axes():
    # nn.GroupNorm(1, C) written by hand on (B, C, L): statistics over (C, L), not per position.
    return ln_model(4, [2, 4, 8], 8, mean_axes=(1, 2), var_axes=(1, 2))


@case("ort", "reduces axis 2 of 'Reshape_out', whose rank is unknown", "--dim rank=3 --fill view=0")
def ln_axis_unknown_rank():
    # Hidden states viewed to a shape given at run time (a shape tensor input of dynamic length),
    # then normalised over axis 2 as the exporter wrote it: the rank, so whether 2 is the last
    # axis, is unknown here.
    g = Graph(5)
    x = g.input("x", F32, ["batch", 6, 16])
    view = g.input("view", I64, ["rank"])
    xs = g.op("Reshape", [x, view])
    g.output(layer_norm(g, xs, 16, mean_axes=(2,), var_axes=(2,)))
    return g.model(17)


@case("ort", "gamma 'Add_1_out' is not a constant")
def ln_adaptive_gamma():
    # Adaptive LayerNorm (DiT's adaLN): gamma is 1 + a projection of a conditioning vector.
    g = Graph(6)
    x = g.input("x", F32, ["batch", 6, 16])
    cond = g.input("cond", F32, ["batch", 1, 16])
    scale = g.op("MatMul", [cond, g.const("ada.weight", shape=(16, 16))])
    scale = g.op("Add", [scale, g.const("ada.bias", shape=(16,))])
    gamma = g.op("Add", [scale, g.const("one", 1.0)])
    g.output(layer_norm(g, x, 16, gamma=gamma, beta=False))
    return g.model(17)


@case("ort", "the last dim of 'x' is not known", "--dim hidden=16")
def ln_hidden_symbolic():
    # The hidden size exported as a dynamic axis: gamma's length cannot be checked against it.
    return ln_model(7, ["batch", 6, "hidden"], 16)


@case("ort", "turns float 'x' into double, not into the fused operator's compute type float")
def ln_stats_in_double():
    # The statistics computed in double (x.double() ... .float()): LayerNormalization computes a
    # float input in float.
    return ln_model(8, ["batch", 6, 16], 16, cast_in=F64, cast_out=F32)


@case("ort", "the result 'Add_1_out' is double, the input 'x' float16")
def ln_result_wider():
    # fp16 activations normalised in float and handed on in double (a float64 head): the fused
    # node's output would be x's type.
    g = Graph(9)
    x = g.input("x", F16, ["batch", 6, 16])
    g.output(layer_norm(g, x, 16, cast_in=F32, cast_out=F64,
                        gamma=g.const("ln.weight", shape=(16,), dtype=np.float64)), F64)
    return g.model(17)


@case("ort", "'x' is int32, not a float type")
def ln_integer_input():
    # Integer features (counts) cast to float and standardised, then stored as float16.
    g = Graph(10)
    x = g.input("x", I32, ["batch", 16])
    g.output(layer_norm(g, x, 16, cast_in=F32, cast_out=F16, beta=False,
                        gamma=g.const("ln.weight", shape=(16,), dtype=np.float16)), F16)
    return g.model(17)


@case("ort", "pattern node 'd' would be two different nodes")
def ln_other_tensor_spread():
    # x's deviations divided by the spread of a reference tensor y (a style-normalisation
    # look-alike): the variance is of y - mean(y), not of the numerator's x - mean(x).
    g = Graph(11)
    x = g.input("x", F32, ["batch", 6, 16])
    y = g.input("reference", F32, ["batch", 6, 16])
    dx = g.op("Sub", [x, g.op("ReduceMean", [x], axes=[-1], keepdims=1)])
    dy = g.op("Sub", [y, g.op("ReduceMean", [y], axes=[-1], keepdims=1)])
    var = g.op("ReduceMean", [g.op("Pow", [dy, g.const("two", 2.0)])], axes=[-1], keepdims=1)
    std = g.op("Sqrt", [g.op("Add", [var, g.const("eps", 1e-5)])])
    n = g.op("Div", [dx, std])
    g.output(g.op("Add", [g.op("Mul", [n, g.const("ln.weight", 1 + g.rng.normal(0, 0.1, 16))]), g.const("ln.bias", shape=(16,))]))
    return g.model(17)


# ---- the residual Add before a LayerNormalization (skip-layer-norm; --forms all) ----

def residual_norm(g, a, b, hidden, op="LayerNormalization", outputs=1, gamma_type=np.float32, **attrs):
    """LayerNormalization(a + b): a transformer block's residual then its norm."""
    s = g.op("Add", [a, b], name="Add")
    inputs = [s, g.const("ln.weight", 1 + g.rng.normal(0, 0.1, hidden), dtype=gamma_type)]
    if op == "LayerNormalization":
        inputs.append(g.const("ln.bias", shape=(hidden,), dtype=gamma_type))
    return g.op(op, inputs, outputs, name=op, **attrs)


@case("ort", "'x' and 'cond' are not (B, S, H) and a skip of that shape, (1, S, H) or (S, H)", "--forms all")
def skip_ln_per_batch_vector():
    # A per-sample conditioning vector (B, 1, H) (a diffusion model's time embedding) added to
    # the hidden states: SkipLayerNormalization's skip broadcasts only over the batch.
    g = Graph(20)
    x = g.input("x", F32, ["batch", 6, 16])
    cond = g.input("cond", F32, ["batch", 1, 16])
    g.output(residual_norm(g, x, cond, 16))
    return g.model(17)


@case("ort", "'/LayerNormalization' normalises from axis 1, not the last axis", "--forms all")
def skip_ln_axis1():
    # The norm over (S, H) of each sample (nn.LayerNorm([S, H])), axis=1.
    g = Graph(21)
    x = g.input("x", F32, ["batch", 6, 16])
    r = g.input("residual", F32, ["batch", 6, 16])
    s = g.op("Add", [x, r], name="Add")
    y = g.op("LayerNormalization", [s, g.const("ln.weight", shape=(6, 16)), g.const("ln.bias", shape=(6, 16))],
             name="LayerNormalization", axis=1)
    g.output(y)
    return g.model(17)


@case("ort", "the statistics outputs of '/LayerNormalization' are read", "--forms all")
def skip_ln_mean_read():
    # A training-style export that also returns the norm's mean (saved for backward).
    g = Graph(22)
    x = g.input("x", F32, ["batch", 6, 16])
    r = g.input("residual", F32, ["batch", 6, 16])
    y, mean = residual_norm(g, x, r, 16, outputs=2)
    g.output(y)
    g.output(mean)
    return g.model(17)


@case("ort", "the shape of 'Reshape_out' is not known", "--forms all --dim rank=3 --fill view=0")
def skip_ln_unknown_shape():
    # The residual viewed to a shape given at run time: its shape is unknown here.
    g = Graph(23)
    x = g.input("x", F32, ["batch", 6, 16])
    r = g.input("residual", F32, ["batch", 6, 16])
    view = g.input("view", I64, ["rank"])
    g.output(residual_norm(g, x, g.op("Reshape", [r, view]), 16))
    return g.model(17)


@case("ort", "gamma 'ln.weight' is float, 'x' float16: the fused operator takes one type", "--forms all")
def skip_rms_float_weight():
    # An fp16 Llama whose RMSNorm weight was kept in float (ORT's SimplifiedLayerNormalization
    # takes a scale of another type than x; the Skip form does not).
    g = Graph(24)
    x = g.input("x", F16, ["batch", 6, 16])
    r = g.input("residual", F16, ["batch", 6, 16])
    g.output(residual_norm(g, x, r, 16, op="SimplifiedLayerNormalization", epsilon=1e-6))
    return g.model(17)


# ---- HF Conv1D: Reshape -> Gemm -> Reshape (gemm-reshape) ----

def leading_dims(g, x, tail):
    """size_out = x.size()[:-1] + tail, as the Shape, Slice and Concat torch exports."""
    lead = g.op("Slice", [g.op("Shape", [x]), g.ints("zero", [0]), g.ints("minus_one", [-1])])
    return g.op("Concat", [lead, g.ints("tail", tail)], axis=0)


def conv1d(g, x, k, n, flat=None, out=None, dtype=np.float32, trans_b=0, bias_shape=None):
    """Hugging Face's Conv1D, addmm(bias, x.view(-1, K), W).view(.., N)."""
    flat = flat or g.ints("flat_shape", [-1, k])
    out = out or leading_dims(g, x, [n])
    w = g.const("c_fc.weight", shape=(n, k) if trans_b else (k, n), dtype=dtype)
    b = g.const("c_fc.bias", shape=bias_shape or (n,), dtype=dtype)
    h = g.op("Gemm", [g.op("Reshape", [x, flat]), w, b], transB=trans_b)
    return g.op("Reshape", [h, out])


@case("ort", "a transposed B that is not float32")
def gemm_fp16_trans_b():
    # A float16 export of nn.Linear on flattened rows: Gemm with transB=1 and float16 weights.
    g = Graph(30)
    x = g.input("x", F16, ["batch", 6, 16])
    g.output(conv1d(g, x, 16, 24, dtype=np.float16, trans_b=1), F16)
    return g.model(17)


@case("ort", "the Gemm's C is not a 1-D bias of 24")
def gemm_bias_2d():
    # A TensorFlow-style bias stored as (1, N).
    g = Graph(31)
    x = g.input("x", F32, ["batch", 6, 16])
    g.output(conv1d(g, x, 16, 24, bias_shape=(1, 24)))
    return g.model(17)


@case("ort", "the flattened input's shape is unknown", "--dim rank=3 --fill view=0")
def gemm_input_rank_unknown():
    # The hidden states viewed to a run-time shape before the projection.
    g = Graph(32)
    x = g.input("x", F32, ["batch", 6, 16])
    xv = g.op("Reshape", [x, g.input("view", I64, ["rank"])])
    g.output(conv1d(g, xv, 16, 24))
    return g.model(17)


@case("ort", "the first Reshape is not to (-1, 16)", "--dim width=16")
def gemm_flat_width_from_other():
    # x.view(-1, residual.size(-1)): the flattened width read from another tensor whose last dim
    # is dynamic, so not known to be x's.
    g = Graph(33)
    x = g.input("x", F32, ["batch", 6, 16])
    other = g.input("residual", F32, ["batch", 6, "width"])
    width = g.op("Slice", [g.op("Shape", [other]), g.ints("start", [-1]), g.ints("end", [2**62])])
    flat = g.op("Concat", [g.ints("minus_one", [-1]), width], axis=0)
    g.output(conv1d(g, x, 16, 24, flat=flat))
    g.output(g.op("Identity", [other]))
    return g.model(17)


@case("ort", "the second Reshape does not restore the input's leading dims")
def gemm_out_to_heads():
    # The projection viewed straight into heads (B, S, 4, h): not the input's leading dims + N.
    g = Graph(34)
    x = g.input("x", F32, ["batch", 6, 16])
    g.output(conv1d(g, x, 16, 24, out=leading_dims(g, x, [4, 6])))
    return g.model(17)


@case("ort", "the second Reshape's dim 0 is not the input's")
def gemm_out_swapped_dims():
    # A sequence-first model viewing the rows back as (S, B, N) from batch-first (B, S, K) input:
    # the same element count, another layout.
    g = Graph(35)
    x = g.input("x", F32, [2, 3, 16])
    g.output(conv1d(g, x, 16, 24, out=g.ints("out_shape", [3, 2, 24])))
    return g.model(17)


# ---- Transpose(x) -> MatMul -> [Add] -> Transpose back (transpose-sandwich) ----

def sandwich(g, x, perm_in, perm_out, w_shape, b_shape=None):
    t = g.op("Transpose", [x], perm=list(perm_in))
    y = g.op("MatMul", [t, g.const("proj.weight", shape=w_shape)])
    if b_shape:
        y = g.op("Add", [y, g.const("proj.bias", shape=b_shape)])
    return g.op("Transpose", [y], perm=list(perm_out))


@case("ort", "the two Transposes have different ranks")
def sandwich_bias_adds_axis():
    # A per-layer bias (L, 1, 1, N) broadcast onto the product (an ensemble of L output heads):
    # the Transpose back is 4-D.
    g = Graph(40)
    x = g.input("x", F32, [6, "batch", 16])
    g.output(sandwich(g, x, (1, 0, 2), (0, 2, 1, 3), (16, 8), (3, 1, 1, 8)))
    return g.model(17)


@case("ort", "the second Transpose does not undo the first")
def sandwich_same_perm_twice():
    # (N, B, S, h) rotated by the same perm twice: the second does not undo the first.
    g = Graph(41)
    x = g.input("x", F32, [2, 3, 4, 8])
    g.output(sandwich(g, x, (2, 0, 1, 3), (2, 0, 1, 3), (8, 8), (8,)))
    return g.model(17)


@case("ort", "the product's right operand is not a 2-D constant")
def sandwich_per_head_weights():
    # Per-head projections (N, h, h') on sequence-first heads (S, N, h): a batched product whose
    # weights differ per head, so the rows cannot be read in another order.
    g = Graph(42)
    x = g.input("x", F32, [6, 4, 8])
    g.output(sandwich(g, x, (1, 0, 2), (1, 0, 2), (4, 8, 8), (8,)))
    return g.model(17)


@case("ort", "the added value is not a 1-D bias of 8")
def sandwich_position_bias():
    # A learned (S, N) position table added after the product: it depends on the row's position.
    g = Graph(43)
    x = g.input("x", F32, [6, "batch", 16])
    g.output(sandwich(g, x, (1, 0, 2), (1, 0, 2), (16, 8), (6, 8)))
    return g.model(17)


@case("ort", "is not Transpose keeping the last axis last")
def sandwich_channels_first_in():
    # fairseq's wav2vec: conv features (B, C, L) permuted (2, 0, 1) to sequence-first (L, B, C),
    # projected, then back to batch-first: the first Transpose moves the last axis.
    g = Graph(44)
    x = g.input("x", F32, ["batch", 16, 6])
    g.output(sandwich(g, x, (2, 0, 1), (1, 0, 2), (16, 8), (8,)))
    return g.model(17)


# ---- Einsum as a batched MatMul (einsum-matmul) ----

@case("ort", "the operands' ranks are not known", "--dim rank=4 --fill view=0")
def einsum_rank_unknown():
    # MixFormer's einsum("bthd,bhsd->bhts") on a query viewed to a run-time shape.
    g = Graph(50)
    q = g.input("q", F32, [1, 6, 2, 8])
    k = g.input("k", F32, [1, 2, 6, 8])
    qv = g.op("Reshape", [q, g.input("view", I64, ["rank"])])
    g.output(g.op("Einsum", [qv, k], equation="bthd,bhsd->bhts"))
    return g.model(17)


@case("ort", "the product is not float, float16 or double")
def einsum_int_counts():
    # Co-occurrence counts of one-hot int64 features: an integer product.
    g = Graph(51)
    a = g.input("a", I64, ["batch", 6, 5])
    b = g.input("b", I64, ["batch", 6, 7])
    g.output(g.op("Einsum", [a, b], equation="bsi,bsj->bij"), I64)
    return g.model(17)


# ---- SiLU into QuickGelu (quick-gelu) ----

def swish(g, x, alpha):
    return g.op("Mul", [x, g.op("Sigmoid", [g.op("Mul", [x, alpha])])])


@case("ort", "alpha 'swish.beta' is not a scalar")
def swish_per_channel_beta():
    # Swish with a learned beta per channel: x * sigmoid(beta * x), beta of shape (H,).
    g = Graph(60)
    x = g.input("x", F32, ["batch", 6, 16])
    g.output(swish(g, x, g.const("swish.beta", 1 + g.rng.normal(0, 0.1, 16))))
    return g.model(17)


@case("ort", "alpha 'swish.beta' may broadcast 'x' to a higher rank")
def swish_beta_4d():
    # A learned scalar beta stored as (1, 1, 1, 1) (a conv model's parameter) on 3-D x: the
    # product is 4-D, QuickGelu's would be 3-D.
    g = Graph(61)
    x = g.input("x", F32, ["batch", 6, 16])
    g.output(swish(g, x, g.const("swish.beta", [[[[1.5]]]])))
    return g.model(17)


@case("ort", "'x' is double, not float or float16 (ORT's QuickGelu kernels)")
def silu_double():
    # nn.SiLU in a float64 model.
    g = Graph(62)
    x = g.input("x", F64, ["batch", 6, 16])
    g.output(g.op("Mul", [x, g.op("Sigmoid", [x])]), F64)
    return g.model(17)


# ---- Add(bias) -> Gelu (bias-gelu) ----

@case("ort", "the added 'fc.bias' is not a 1-D constant over the last axis of 'MatMul_out'")
def gelu_bias_3d():
    # A bias stored as (1, 1, H) by a Keras-style exporter before F.gelu (erf form).
    g = Graph(70)
    x = g.input("x", F32, ["batch", 6, 16])
    h = g.op("MatMul", [x, g.const("fc.weight", shape=(16, 32))])
    h = g.op("Add", [h, g.const("fc.bias", shape=(1, 1, 32))])
    erf = g.op("Erf", [g.op("Div", [h, g.const("sqrt2", np.sqrt(2.0))])])
    y = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, g.const("one", 1.0)])]), g.const("half", 0.5)])
    g.output(y)
    return g.model(17)


# ---- com.microsoft operators --target onnx cannot rewrite (standard-ops) ----
# Models ORT's transformer optimizer or model builder wrote. A com.microsoft node the input already
# has and --target onnx cannot rewrite is a usage error ("exit=2": the reason on stderr, nothing
# written, so nothing to verify).

MS = "com.microsoft"


def seeded(seed, n, dtype):
    """n normal values with std 0.2 from `seed`."""
    return np.random.RandomState(seed).normal(0, 0.2, n).astype(dtype)


def mha_model(seed, q_shape=("batch", 6, 16), kv_shape=("batch", 6, 16), dtype=F32, heads=2, bias=None, mask=None,
              past=(), outputs=1, extra_inputs=(), reshape_q=False, reshape_k=False, packed=False, **attrs):
    """One MultiHeadAttention as ORT's optimizer writes it (q, k, v projections done before)."""
    g = Graph(seed)
    q = g.input("query", dtype, list(q_shape))
    k = v = ""
    if not packed:
        k = g.input("key", dtype, list(kv_shape))
        v = g.input("value", dtype, list(kv_shape))
    if reshape_q or reshape_k:
        view = g.input("view", I64, ["rank"])
        q = g.op("Reshape", [q, view]) if reshape_q else q
        k = g.op("Reshape", [k, view]) if reshape_k else k
    inputs = [q, k, v, bias or "", mask or "", "", *past, *extra_inputs]
    while inputs and not inputs[-1]:
        inputs.pop()
    outs = g.op("MultiHeadAttention", inputs, outputs, domain=MS, num_heads=heads, **attrs)
    for o in [outs] if outputs == 1 else outs:
        g.output(o, dtype)
    return g.model(17, microsoft=True)


@case("onnx", "packed QKV or KV (no separate key and value) is not converted", "exit=2")
def mha_packed_qkv():
    # Packed QKV (B, S, N, 3, h): one query input, key and value absent.
    return mha_model(82, q_shape=("batch", 6, 2, 3, 8), packed=True)


@case("onnx", "the query is not known to be 3-D (B, S, D)", "exit=2 --dim rank=3 --fill view=0")
def mha_query_rank_unknown():
    # The query viewed to a run-time shape.
    return mha_model(83, reshape_q=True)


@case("onnx", "the key is not known to be 3-D or 4-D BNSH (packed KV is not converted)", "exit=2 --dim rank=3 --fill view=0")
def mha_key_rank_unknown():
    # The key viewed to a run-time shape.
    return mha_model(84, reshape_k=True)


@case("onnx", "the bias is not a 1-D constant with a query of known hidden size", "exit=2 --dim hidden=16")
def mha_bias_hidden_unknown():
    # The projections' bias left to the attention (ORT's form) with the hidden size dynamic.
    m = mha_model(85, q_shape=("batch", 6, "hidden"), kv_shape=("batch", 6, "hidden"), bias="qkv.bias")
    m.graph.initializer.append(numpy_helper.from_array(seeded(85, 48, np.float32), "qkv.bias"))
    return m


@case("onnx", "a bias other than float is not converted", "exit=2")
def mha_bias_fp16():
    # A float16 model with the projections' bias inside the attention.
    m = mha_model(86, dtype=F16, bias="qkv.bias")
    m.graph.initializer.append(numpy_helper.from_array(seeded(86, 48, np.float16), "qkv.bias"))
    return m


@case("onnx", "key_padding_mask 'key_lengths' is not (B, T) or (B, S, T)", "exit=2 --fill key_lengths=4")
def mha_mask_lengths():
    # The padding given as each row's key count (B) (ORT's mask_index form 1-D).
    m = mha_model(87, mask="key_lengths")
    m.graph.input.append(helper.make_tensor_value_info("key_lengths", I32, ["batch"]))
    return m


@case("onnx", "mask_index 'mask' has shape (B, 1), ORT's dummy mask", "exit=2 --fill mask=1")
def attention_dummy_mask():
    # ORT's Attention with the (B, 1) dummy mask_index its GPT-2 tools write.
    g = Graph(88)
    x = g.input("x", F32, ["batch", 6, 16])
    mask = g.input("mask", I32, ["batch", 1])
    y = g.op("Attention", [x, g.const("qkv.weight", shape=(16, 48)), g.const("qkv.bias", shape=(48,)), mask],
             domain=MS, num_heads=2)
    g.output(y)
    return g.model(17, microsoft=True)


@case("onnx", "past_key and past_value must be given together", "exit=2 invalid")
def mha_past_key_alone():
    # A malformed decoder step: past keys without past values.
    g = Graph(94)
    q, k, v = (g.input(n, F32, ["batch", 1, 16]) for n in ("query", "key", "value"))
    pk = g.input("past_key", F32, ["batch", 2, "past", 8])
    y, present = g.op("MultiHeadAttention", [q, k, v, "", "", "", pk], 2, domain=MS, num_heads=2)
    g.output(y)
    g.output(present)
    return g.model(17, microsoft=True)


@case("onnx", "the bias is shorter than twice the query's hidden size", "exit=2 invalid")
def mha_bias_short():
    # A malformed bias: q's and k's parts only (2 x 16), no room for v's.
    m = mha_model(95, bias="qk.bias")
    m.graph.initializer.append(numpy_helper.from_array(seeded(95, 32, np.float32), "qk.bias"))
    return m


def packed_attention(seed, weight_shape=(16, 48), sizes=None, past=False, present=False, extra=(), **attrs):
    """ORT's Attention (input, weights, bias, mask_index?, past?, ...) as its optimizer writes it."""
    g = Graph(seed)
    x = g.input("x", F32, ["batch", 6, 16])
    w = g.const("qkv.weight", shape=weight_shape) if all(isinstance(d, int) for d in weight_shape) \
        else g.input("qkv_weight", F32, list(weight_shape))
    width = sum(sizes) if sizes else 48
    inputs = [x, w, g.const("qkv.bias", shape=(width,)), ""]
    if past:
        inputs.append(g.input("past", F32, [2, "batch", 2, "past", (sizes or [16, 16, 16])[2] // 2]))
    inputs += list(extra)
    while not inputs[-1]:
        inputs.pop()
    if sizes:
        attrs["qkv_hidden_sizes"] = list(sizes)
    outs = g.op("Attention", inputs, 2 if present else 1, domain=MS, num_heads=2, **attrs)
    for o in outs if present else [outs]:
        g.output(o)
    return g


@case("onnx", "the weights' width is unknown", "exit=2 --dim width=48")
def attention_runtime_weights():
    # QKV weights fed at run time (adapter weights merged outside the model), width dynamic.
    return packed_attention(91, weight_shape=(16, "width")).model(17, microsoft=True)


@case("onnx", "seqlens_k gives per-row valid lengths and present holds max(total, past) rows", "exit=2 --fill attention_mask=1")
def gqa_model_builder():
    # ORT GenAI's model builder: GroupQueryAttention with seqlens_k and total_sequence_length
    # computed from the attention mask.
    g = Graph(93)
    q = g.input("query", F32, ["batch", 6, 16])
    k = g.input("key", F32, ["batch", 6, 8])
    v = g.input("value", F32, ["batch", 6, 8])
    mask = g.input("attention_mask", I64, ["batch", 6])
    pk = g.input("past_key", F32, ["batch", 1, 0, 8])
    pv = g.input("past_value", F32, ["batch", 1, 0, 8])
    seqlens = g.op("Cast", [g.op("Sub", [g.op("ReduceSum", [mask, g.ints("axis", [1])], keepdims=0), g.ints("one", 1)])],
                   to=I32)
    total = g.op("Cast", [g.op("Gather", [g.op("Shape", [mask]), g.ints("index", 1)], axis=0)], to=I32)
    y, k1, v1 = g.op("GroupQueryAttention", [q, k, v, pk, pv, seqlens, total], 3, domain=MS, num_heads=2, kv_num_heads=1)
    for o in (y, k1, v1):
        g.output(o)
    return g.model(17, microsoft=True)


def rotary_model(seed, x_shape=("batch", 6, 16), pos_shape=("batch", 6), reshape_pos=False, **attrs):
    """ORT's RotaryEmbedding (input, position_ids, cos_cache, sin_cache), tables of 32 positions."""
    g = Graph(seed)
    x = g.input("x", F32, list(x_shape))
    pos = g.input("position_ids", I64, list(pos_shape))
    if reshape_pos:
        pos = g.op("Reshape", [pos, g.input("view", I64, ["rank"])])
    angles = np.outer(np.arange(32), 1.0 / 10000 ** (np.arange(0, 8, 2) / 8))
    cos, sin = g.const("cos_cache", np.cos(angles)), g.const("sin_cache", np.sin(angles))
    g.output(g.op("RotaryEmbedding", [x, pos, cos, sin], domain=MS, **attrs))
    return g.model(17, microsoft=True)


@case("onnx", "the rank of position_ids 'Reshape_out' is unknown", "exit=2 --dim rank=2 --fill view=0 --fill position_ids=3")
def rotary_positions_rank_unknown():
    # Position ids viewed to a run-time shape.
    return rotary_model(95, reshape_pos=True, num_heads=2)


@case("onnx", "position_ids is a start offset (shape (1))", "exit=2 --fill position_ids=2")
def rotary_start_offset():
    # ORT's decoding form: position_ids (1) holds the first position.
    return rotary_model(96, pos_shape=(1,), num_heads=2)


@case("onnx", "num_heads is not given and the input's hidden size or the cache width is unknown", "exit=2 --dim hidden=16 --fill position_ids=1")
def rotary_hidden_unknown():
    # 3-D input with a dynamic hidden size and no num_heads attribute.
    return rotary_model(97, x_shape=("batch", 6, "hidden"))


@case("onnx", "transBatchA / transBatchB are not converted", "exit=2")
def fused_matmul_trans_batch():
    # ORT's FusedMatMul with transBatchB (its MatMul+Transpose fusion across the batch axis).
    g = Graph(98)
    a = g.input("a", F32, [3, 4, 8])
    b = g.input("b", F32, [8, 3, 5])
    g.output(g.op("FusedMatMul", [a, b], domain=MS, transBatchB=1))
    return g.model(17, microsoft=True)


@case("onnx", "transA is set and the rank of 'Reshape_out' is unknown", "exit=2 --dim rank=3 --fill view=0")
def fused_matmul_rank_unknown():
    # FusedMatMul(transA) on a value viewed to a run-time shape.
    g = Graph(99)
    a = g.input("a", F32, [3, 8, 4])
    b = g.input("b", F32, [3, 8, 5])
    av = g.op("Reshape", [a, g.input("view", I64, ["rank"])])
    g.output(g.op("FusedMatMul", [av, b], domain=MS, transA=1))
    return g.model(17, microsoft=True)


@case("onnx", "its InvStdDev (or Mean) output is read", "exit=2")
def rms_inv_std_read():
    # ORT's SimplifiedLayerNormalization with its InvStdDev output read (a training graph).
    g = Graph(100)
    x = g.input("x", F32, ["batch", 6, 16])
    y, inv = g.op("SimplifiedLayerNormalization", [x, g.const("norm.weight", 1 + g.rng.normal(0, 0.1, 16))], 2,
                  epsilon=1e-6)
    g.output(y)
    g.output(inv)
    return g.model(17)


# ---- rotary position embedding (rotary-embedding) ----
# Hugging Face Llama's rotate-half, q (B, N, S, h) with 2 heads of 8, tables of 32 positions;
# position_ids filled with 3 (any row of the tables) for --verify.
H, HALF, MAX_POS = 8, 4, 32
POS = "--fill position_ids=3"


def inv_freq(half=HALF):
    return 1.0 / 10000 ** (np.arange(0, 2 * half, 2) / (2 * half))


def rope_tables(half=HALF, rows=MAX_POS, width=None):
    """cos and sin of cat(freqs, freqs) (width h) or of freqs alone (width h/2)."""
    freqs = np.outer(np.arange(rows), inv_freq(half))
    emb = freqs if width == half else np.concatenate([freqs, freqs], -1)
    return np.cos(emb), np.sin(emb)


class Rope:
    """One rotary model under construction: the query input, the positions and the tables."""

    def __init__(self, seed, x_shape=("batch", 2, "seq", H), dtype=F32, pos_type=I64, pos_shape=("batch", "seq")):
        self.g = Graph(seed)
        self.dtype = dtype
        self.x = self.g.input("q", dtype, list(x_shape))
        self.pos = self.g.input("position_ids", pos_type, list(pos_shape))

    def table(self, name, values):
        return self.g.const(name, values, dtype=NP[self.dtype])

    def gathered(self, which="cos", width=None, axis=1, table=None, gather_axis=0, pos=None):
        """HF 4.36: Unsqueeze(cos_cached[position_ids], 1)."""
        g = self.g
        if table is None:
            cos, sin = rope_tables(width=width)
            table = self.table(f"{which}_cached", cos if which == "cos" else sin)
        c = g.op("Gather", [table, pos or self.pos], axis=gather_axis)
        return g.op("Unsqueeze", [c, g.ints("axis", [axis])]) if axis is not None else c

    def frequencies(self, half=HALF, transpose=True):
        """HF >= 4.38: (inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)."""
        g = self.g
        inv = g.const("inv_freq", inv_freq(half).reshape(1, half, 1))
        p = g.op("Cast", [g.op("Unsqueeze", [self.pos, g.ints("axis", [1])])], to=F32)
        f = g.op("MatMul", [inv, p])
        return g.op("Transpose", [f], perm=[0, 2, 1]) if transpose else f

    def computed(self, f, which="Cos", concat=True, axis=1):
        g = self.g
        emb = g.op("Concat", [f, f], axis=-1) if concat else f
        return g.op("Unsqueeze", [g.op(which, [emb]), g.ints("axis", [axis])])

    def halves(self, x, axis=-1, bounds=((0, HALF), (HALF, 2**62)), steps=None):
        g = self.g
        parts = []
        for (a, b), st in zip(bounds, steps or (None, None)):
            ins = [x, g.ints("start", [a]), g.ints("end", [b]), g.ints("axes", [axis])]
            if st:
                ins.append(g.ints("step", [st]))
            parts.append(g.op("Slice", ins))
        return parts

    def rotate_half(self, x, concat_axis=-1, **halves):
        x1, x2 = self.halves(x, **halves)
        return self.g.op("Concat", [self.g.op("Neg", [x2]), x1], axis=concat_axis)

    def apply(self, cos, sin, x=None, rot=None, x_cos=None):
        """x * cos + rotate_half(x) * sin."""
        g = self.g
        x = x or self.x
        rot = rot or self.rotate_half(x)
        return g.op("Add", [g.op("Mul", [x_cos or x, cos]), g.op("Mul", [rot, sin])])

    def model(self, y, elem=None):
        self.g.output(y, elem or self.dtype)
        return self.g.model(17)


def hf_rope(seed, **kw):
    r = Rope(seed, **kw)
    return r, r.gathered("cos"), r.gathered("sin")


@case("ort", "the rotated value 'q' is not known to be 4-D with an even head size", POS)
def rope_single_head_3d():
    # A single-head model: q is (B, S, h), cos/sin (B, S, h) gathered without Unsqueeze.
    r = Rope(110, x_shape=("batch", "seq", H))
    return r.model(r.apply(r.gathered("cos", axis=None), r.gathered("sin", axis=None)))


@case("ort", "the rotate-half Concat joins axis 1, not the last", POS)
def rope_halves_on_heads_axis():
    # rotate_half written for 3-D (B, S, h) with dim=1 and applied to 4-D heads: it swaps heads.
    r, cos, sin = hf_rope(111)
    return r.model(r.apply(cos, sin, rot=r.rotate_half(r.x, concat_axis=1, axis=1, bounds=((0, 1), (1, 2**62)))))


@case("ort", "does not split the last axis into two halves of 4", POS)
def rope_split_uneven():
    # rotate_half by torch.split(x, [3, 5], -1): not the halves.
    r, cos, sin = hf_rope(112)
    x1, x2 = r.g.op("Split", [r.x, r.g.ints("split", [3, 5])], 2, axis=-1)
    return r.model(r.apply(cos, sin, rot=r.g.op("Concat", [r.g.op("Neg", [x2]), x1], axis=-1)))


@case("ort", "is not a Slice of the last axis with known bounds", POS)
def rope_strided_halves():
    # GPT-J's x[..., ::2] and x[..., 1::2] concatenated as if they were halves.
    r, cos, sin = hf_rope(113)
    rot = r.rotate_half(r.x, bounds=((0, 2**62), (1, 2**62)), steps=(2, 2))
    return r.model(r.apply(cos, sin, rot=rot))


@case("ort", "does not multiply the rotated value 'q'", POS)
def rope_scaled_one_side():
    # q scaled by 1/sqrt(h) on the cos side only: (q / sqrt(h)) * cos + rotate_half(q) * sin.
    r, cos, sin = hf_rope(114)
    scaled = r.g.op("Mul", [r.x, r.g.const("scale", 1 / np.sqrt(H))])
    return r.model(r.apply(cos, sin, x_cos=scaled))


@case("ort", "the rotated value is DOUBLE; RotaryEmbedding takes float or float16", POS)
def rope_double():
    # A float64 Llama.
    r, cos, sin = hf_rope(115, dtype=F64)
    return r.model(r.apply(cos, sin))


@case("ort", "is not Unsqueeze(c, 1) or Unsqueeze(c, 2) of a (B, S, h) value", "--dim seq=5")
def rope_neox_sliced_cache():
    # Old GPT-NeoX: cos_cached (1, 1, max_pos, h) sliced to the sequence, no positions.
    r = Rope(116)
    seq = r.g.op("Slice", [r.g.op("Shape", [r.x]), r.g.ints("start", [2]), r.g.ints("end", [3])])
    cos, sin = rope_tables()
    tables = [r.g.op("Slice", [r.table(f"{w}_cached", t.reshape(1, 1, MAX_POS, H)), r.g.ints("zero", [0]), seq,
                               r.g.ints("axis", [2])]) for w, t in (("cos", cos), ("sin", sin))]
    r.g.inputs.pop()  # no position ids
    return r.model(r.apply(*tables))


@case("ort", "gathers the cos table along axis -2, not its rows", POS)
def rope_gather_axis_minus2():
    # torch.index_select(cos, -2, position_ids): Gather on axis -2.
    r = Rope(117)
    return r.model(r.apply(r.gathered("cos", gather_axis=-2), r.gathered("sin", gather_axis=-2)))


@case("ort", "is neither gathered from a constant table by position nor Cos / Sin of position frequencies", POS)
def rope_per_column_factor():
    # LongRoPE-style: the gathered cos/sin scaled per column (h,) before the Unsqueeze.
    r = Rope(118)
    cos, sin = rope_tables()
    ext = r.g.const("ext_factor", 1 + 0.1 * r.g.rng.rand(H))
    ops = []
    for w, t in (("cos", cos), ("sin", sin)):
        c = r.g.op("Mul", [r.g.op("Gather", [r.table(f"{w}_cached", t), r.pos]), ext])
        ops.append(r.g.op("Unsqueeze", [c, r.g.ints("axis", [1])]))
    return r.model(r.apply(*ops))


@case("ort", "the argument of Cos ('/Cos') is not Concat(f, f) on the last axis", POS)
def rope_freqs_interleaved():
    # GPT-J tables for a rotate-half: repeat_interleave(freqs, 2) instead of cat(freqs, freqs).
    r = Rope(119)
    f = r.frequencies()
    fu = r.g.op("Unsqueeze", [f, r.g.ints("axis", [-1])])
    emb = r.g.op("Reshape", [r.g.op("Concat", [fu, fu], axis=-1), r.g.ints("shape", [0, 0, H])])
    cos = r.g.op("Unsqueeze", [r.g.op("Cos", [emb]), r.g.ints("axis", [1])])
    sin = r.g.op("Unsqueeze", [r.g.op("Sin", [emb]), r.g.ints("axis", [1])])
    return r.model(r.apply(cos, sin))


@case("ort", "'freqs' is not computed by a standard operator", "--dim seq=5")
def rope_freqs_input():
    # The frequencies (B, S, h/2) computed by the host and fed as an input.
    r = Rope(120)
    r.g.inputs.pop()
    f = r.g.input("freqs", F32, ["batch", "seq", HALF])
    return r.model(r.apply(r.computed(f, "Cos"), r.computed(f, "Sin")))


def double_freqs(r, cast_before_concat):
    """Frequencies computed in float64 (inv_freq.double()), cast to float before or after cos."""
    g = r.g
    inv = g.const("inv_freq", inv_freq().reshape(1, HALF, 1), dtype=np.float64)
    p = g.op("Cast", [g.op("Unsqueeze", [r.pos, g.ints("axis", [1])])], to=F64)
    f = g.op("Transpose", [g.op("MatMul", [inv, p])], perm=[0, 2, 1])
    if cast_before_concat:
        f = g.op("Cast", [f], to=F32)
        return r.computed(f, "Cos"), r.computed(f, "Sin")
    outs = []
    for which in ("Cos", "Sin"):
        emb = g.op("Concat", [f, f], axis=-1)
        outs.append(g.op("Unsqueeze", [g.op("Cast", [g.op(which, [emb])], to=F32), g.ints("axis", [1])]))
    return outs


@case("ort", "'Transpose_out' is DOUBLE, not float", POS)
def rope_freqs_double():
    # Frequencies and their cos/sin in double, cast to float at the end.
    r = Rope(121)
    return r.model(r.apply(*double_freqs(r, False)))


@case("ort", "'/Cast_1' casts a DOUBLE value", POS)
def rope_freqs_cast_from_double():
    # Frequencies computed in double, cast to float before cat(freqs, freqs).
    r = Rope(122)
    return r.model(r.apply(*double_freqs(r, True)))


@case("ort", "does not contract a unit axis (not an outer product)", POS)
def rope_freqs_decode_matmul():
    # A one-token decode export (batch 1, 1 token): position_ids.float() @ inv_freq[None, :],
    # which contracts the sequence axis.
    r = Rope(123, x_shape=(1, 2, 1, H), pos_shape=(1, 1))
    f = r.g.op("MatMul", [r.g.op("Cast", [r.pos], to=F32), r.g.const("inv_freq", inv_freq().reshape(1, HALF))])
    return r.model(r.apply(r.computed(f, "Cos"), r.computed(f, "Sin")))


@case("ort", "is not an outer product of the position ids and inv_freq", POS)
def rope_freqs_missing_none():
    # position_ids.float() * inv_freq without [..., None]: equal sizes (4 tokens, 4 frequencies)
    # broadcast, so the export runs but multiplies elementwise.
    r = Rope(124, x_shape=(1, 2, HALF, H), pos_shape=(1, HALF))
    f = r.g.op("Mul", [r.g.op("Cast", [r.pos], to=F32), r.g.const("inv_freq", inv_freq())])
    return r.model(r.apply(r.computed(f, "Cos"), r.computed(f, "Sin")))


@case("ort", "have axes (batch, inv_freq, sequence), not (batch, sequence, inv_freq)", POS)
def rope_freqs_not_transposed():
    # HF 4.38's product without .transpose(1, 2): (B, h/2, S), which broadcasts only because the
    # export has 4 tokens and 4 frequencies.
    r = Rope(125, x_shape=("batch", 2, HALF, H), pos_shape=("batch", HALF))
    f = r.frequencies(transpose=False)
    return r.model(r.apply(r.computed(f, "Cos"), r.computed(f, "Sin")))


@case("ort", "the cos/sin table 'Cos_out' is computed by Cos ('/Cos'), not sliced from a constant", POS + " --dim seq=5")
def rope_table_per_length():
    # The table built for the current length (dynamic NTK's _set_cos_sin_cache(seq_len)): cos of
    # arange(S) x inv_freq, then gathered by position.
    r = Rope(126)
    g = r.g
    seq = g.op("Squeeze", [g.op("Slice", [g.op("Shape", [r.x]), g.ints("start", [2]), g.ints("end", [3])]),
                           g.ints("axis", [0])])
    t = g.op("Cast", [g.op("Range", [g.ints("zero", 0), seq, g.ints("one", 1)])], to=F32)
    freqs = g.op("Mul", [g.op("Unsqueeze", [t, g.ints("axis", [1])]), g.const("inv_freq", inv_freq())])
    emb = g.op("Concat", [freqs, freqs], axis=-1)
    cos, sin = (g.op("Unsqueeze", [g.op("Gather", [g.op(w, [emb]), r.pos]), g.ints("axis", [1])]) for w in ("Cos", "Sin"))
    return r.model(r.apply(cos, sin))


@case("ort", "the cos/sin table 'cos_table' is not a constant (.., max_pos, h) with leading dims 1", POS)
def rope_table_input():
    # The cos/sin tables fed as inputs (max_pos, h).
    r = Rope(127)
    cos = r.g.input("cos_table", F32, [MAX_POS, H])
    sin = r.g.input("sin_table", F32, [MAX_POS, H])
    return r.model(r.apply(r.gathered(table=cos), r.gathered(table=sin)))


def seq_len(r, plus=0):
    """x.shape[2] (+ plus) as a 1-D tensor: the slice end of a table cut to the sequence."""
    s = r.g.op("Slice", [r.g.op("Shape", [r.x]), r.g.ints("start", [2]), r.g.ints("end", [3])])
    return r.g.op("Add", [s, r.g.ints("plus", [plus])]) if plus else s


@case("ort", "does not squeeze leading unit dims of the cos/sin table", POS + " --dim seq=5")
def rope_table_squeeze_all():
    # HF Llama 4.2x: cos_cached (1, 1, max_pos, h)[:, :, :seq_len] squeezed by cos.squeeze()
    # (no axes) before the Gather by position.
    r = Rope(128)
    cos, sin = rope_tables()
    tabs = [r.g.op("Squeeze", [r.g.op("Slice", [r.table(f"{w}_cached", t.reshape(1, 1, MAX_POS, H)), r.g.ints("zero", [0]),
                                                seq_len(r), r.g.ints("axis", [2])])]) for w, t in (("cos", cos), ("sin", sin))]
    return r.model(r.apply(r.gathered(table=tabs[0]), r.gathered(table=tabs[1])))


@case("ort", "the cos/sin table gathered from 'Squeeze_out' is 3-D, not (max_pos, h)", "--fill position_ids=0")
def rope_table_squeezed_once():
    # cos_cached (1, 1, max_pos, h)[:, :, :seq_len].squeeze(1): the batch axis of 1 stays, so
    # cos[position_ids] indexes it (only position 0 runs) instead of the table's rows.
    r = Rope(127, x_shape=(1, 2, 2, H), pos_shape=(1, 2))
    cos, sin = rope_tables()
    tabs = [r.g.op("Squeeze", [r.g.op("Slice", [r.table(f"{w}_cached", t.reshape(1, 1, MAX_POS, H)), r.g.ints("zero", [0]),
                                                seq_len(r), r.g.ints("axis", [2])]), r.g.ints("axis", [1])])
            for w, t in (("cos", cos), ("sin", sin))]
    return r.model(r.apply(r.gathered(table=tabs[0]), r.gathered(table=tabs[1])))


@case("ort", "does not slice the cos/sin table's rows from 0", POS + " --dim seq=5")
def rope_table_rows_from_1():
    # fairseq-style positions counted from 1: the table's rows cut to [1, S + 1) before the Gather.
    r = Rope(129)
    cos, sin = rope_tables(rows=MAX_POS + 1)
    tabs = [r.g.op("Slice", [r.table(f"{w}_cached", t), r.g.ints("start", [1]), seq_len(r, 1),
                             r.g.ints("axis", [0])]) for w, t in (("cos", cos), ("sin", sin))]
    return r.model(r.apply(r.gathered(table=tabs[0]), r.gathered(table=tabs[1])))


@case("ort", "the cos/sin tables (32, 8) and (64, 8) are not (max_pos, 8) both", POS)
def rope_tables_different_rows():
    # The sin table built for a longer context than the cos table.
    r = Rope(130)
    cos, _ = rope_tables()
    _, sin = rope_tables(rows=2 * MAX_POS)
    return r.model(r.apply(r.gathered(table=r.table("cos_cached", cos)), r.gathered(table=r.table("sin_cached", sin))))


@case("ort", "cos and sin use different position ids ('position_ids', 'sin_position_ids')",
      POS + " --fill sin_position_ids=5")
def rope_sin_other_positions():
    # sin gathered by another position tensor than cos.
    r = Rope(131)
    other = r.g.input("sin_position_ids", I64, ["batch", "seq"])
    return r.model(r.apply(r.gathered("cos"), r.gathered("sin", pos=other)))


@case("ort", "cos and sin are unsqueezed at different axes", POS)
def rope_unsqueeze_mismatch():
    # cos.unsqueeze(1) but sin.unsqueeze(2), broadcasting only because heads = tokens = 2.
    r = Rope(132, x_shape=(1, 2, 2, H), pos_shape=(1, 2))
    return r.model(r.apply(r.gathered("cos", axis=1), r.gathered("sin", axis=2)))


@case("ort", "cos and sin are not computed from the same frequencies", POS)
def rope_cos_table_sin_computed():
    # cos gathered from a table, sin computed on the fly.
    r = Rope(133)
    return r.model(r.apply(r.gathered("cos"), r.computed(r.frequencies(), "Sin")))


@case("ort", "the position ids 'position_ids' are INT32 (batch, seq), not int64 (B, S)", POS)
def rope_int32_positions():
    # Position ids as int32 (a TensorFlow export).
    r = Rope(134, pos_type=I32)
    return r.model(r.apply(r.gathered("cos"), r.gathered("sin")))


@case("ort", "x is (B, S, N, h) with an unknown head count N", POS + " --dim heads=2")
def rope_bsnh_heads_dynamic():
    # Rotation before the head transpose, q (B, S, N, h), cos/sin unsqueezed at 2, N dynamic.
    r = Rope(135, x_shape=("batch", "seq", "heads", H))
    return r.model(r.apply(r.gathered("cos", axis=2), r.gathered("sin", axis=2)))


@case("ort", "the rotation's result does not have the rotated value's shape (cos or sin broadcasts it)", POS)
def rope_scaling_broadcasts():
    # attention_scaling kept as a (1, 1, 1, 1, 1) tensor: the products become 5-D.
    r = Rope(136)
    scale = r.g.const("attention_scaling", np.ones((1, 1, 1, 1, 1)))
    cos = r.g.op("Mul", [r.gathered("cos"), scale])
    sin = r.g.op("Mul", [r.gathered("sin"), scale])
    return r.model(r.apply(cos, sin))


# GPT-NeoX's partial rotary: q[..., :rd] rotated, q[..., rd:] joined back.

def neox_partial(seed, rd=HALF, x_shape=("batch", 2, "seq", H), pass_bounds=None, concat_axis=-1, split3=False,
                 split2=False):
    r = Rope(seed, x_shape=x_shape)
    g = r.g
    if split2:
        q_rot, q_pass = g.op("Split", [r.x, g.ints("split", [rd, H - rd])], 2, axis=-1)
    elif split3:
        q_rot, q_pass, q_rest = g.op("Split", [r.x, g.ints("split", [rd, 2, H - rd - 2])], 3, axis=-1)
    else:
        q_rot = g.op("Slice", [r.x, g.ints("zero", [0]), g.ints("rd", [rd]), g.ints("axes", [-1])])
        a, b = pass_bounds or (rd, 2**62)
        q_pass = g.op("Slice", [r.x, g.ints("start", [a]), g.ints("end", [b]), g.ints("axes", [-1])])
    cos, sin = rope_tables(half=rd // 2)
    c = r.gathered(table=r.table("cos_cached", cos))
    s_ = r.gathered(table=r.table("sin_cached", sin))
    rot = r.rotate_half(q_rot, bounds=((0, rd // 2), (rd // 2, 2**62)))
    y = g.op("Concat", [r.apply(c, s_, x=q_rot, rot=rot), q_pass], axis=concat_axis)
    return r.model(y)


@case("ort", "the head count of 'q' is not known; RotaryEmbedding needs num_heads with rotary_embedding_dim",
      POS + " --dim heads=2")
def rope_partial_heads_dynamic():
    # Partial rotary with the head count exported as a dynamic axis.
    return neox_partial(141, x_shape=("batch", "heads", "seq", H))


@case("ort", "joins axis 1, not the last", POS)
def rope_partial_concat_heads():
    # torch.cat((q_rot, q_pass), dim=1): the parts joined on the heads axis (rd = h/2).
    return neox_partial(142, concat_axis=1)


@case("ort", "the parts of 'q' are not [0, rd) and [rd, 8) of the last axis", POS)
def rope_partial_gap():
    # q[..., 6:] joined back after q[..., :4]: two columns dropped.
    return neox_partial(143, pass_bounds=(6, 2**62))


@case("ort", "does not split the last axis of 'q' into two parts of known sizes", POS)
def rope_partial_split3():
    # q split in three (rotated, passed, and two columns dropped), as torch.split(q, [4, 2, 2]) with
    # the last part unused.
    return neox_partial(144, split3=True)


@case("ort", "'q' is not 4-D with a known head size", POS + " --dim head=8")
def rope_partial_head_dynamic():
    # Partial rotary with the head size exported as a dynamic axis.
    return neox_partial(145, x_shape=("batch", 2, "seq", "head"))


# Rotations written pair by pair: MixFormer's Phi on the halves (x[..., :h/2], x[..., h/2:]) and
# Meta's llama model.py on neighbours (x viewed as (.., h/2, 2)), cos/sin tables of h/2 columns.

def pair_products(g, a, b, cos, sin):
    """a * cos - b * sin and a * sin + b * cos."""
    even = g.op("Sub", [g.op("Mul", [a, cos]), g.op("Mul", [b, sin])])
    odd = g.op("Add", [g.op("Mul", [a, sin]), g.op("Mul", [b, cos])])
    return even, odd


def half_tables(r, width=HALF, half=HALF, rows=MAX_POS):
    cos, sin = rope_tables(half=half, rows=rows, width=half)
    if width != half:
        cos, sin = cos[:, :width], sin[:, :width]
    return r.gathered(table=r.table("cos_cached", cos)), r.gathered(table=r.table("sin_cached", sin))


def mixformer(seed, x_shape=("batch", 2, "seq", H), bounds=((0, HALF), (HALF, 2**62)), other=None, concat_axis=-1,
              extra=None, width=HALF, tables=None):
    """MixFormer's apply_rotary: Concat(x1 * c - x2 * s, x1 * s + x2 * c) on the halves."""
    r = Rope(seed, x_shape=x_shape)
    g = r.g
    a, b = r.halves(r.x, bounds=bounds)
    if other is not None:  # b cut from another value
        b = r.halves(g.input(other, F32, list(x_shape)), bounds=bounds)[1]
    cos, sin = tables(r) if tables else half_tables(r, width=width)
    parts = list(pair_products(g, a, b, cos, sin))
    if extra:
        parts.append(extra(r))
    return r.model(g.op("Concat", parts, axis=concat_axis))


@case("ort", "does not join the rotated halves on the last axis", POS)
def pairs_concat_heads_axis():
    # torch.cat([x1', x2'], dim=1) on (B, N, S, h/2): the halves joined on the heads axis.
    return mixformer(150, concat_axis=1)


@case("ort", "the products do not read two parts of one value", POS)
def pairs_halves_of_two_values():
    # The second half cut from k instead of q (a copy-paste slip).
    return mixformer(151, other="k")


@case("ort", "'q' is not 4-D with a known even head size", POS)
def pairs_single_head_3d():
    # A single-head (B, S, h) query rotated pair by pair on its halves.
    r = Rope(152, x_shape=("batch", "seq", H))
    a, b = r.halves(r.x)
    cos, sin = (r.g.op("Gather", [r.table(f"{w}_cached", t), r.pos]) for w, t in
                zip(("cos", "sin"), rope_tables(width=HALF)))
    return r.model(r.g.op("Concat", list(pair_products(r.g, a, b, cos, sin)), axis=-1))


@case("ort", "the products read [0, 4) and [2, 6) of the last axis of 'q', not its halves [0, 4) and [4, 8)", POS)
def pairs_overlapping_parts():
    # x[..., 2:6] as the second part: overlapping, not the halves.
    return mixformer(153, bounds=((0, HALF), (2, 6)))


@case("ort", "joins 'Slice_2_out' to the rotated columns, not the rest of the value they were cut from", POS)
def pairs_joins_other_columns():
    # Concat(x1', x2', k[..., 4:]): a third part from another value than the rotated one.
    def tail(r):
        k = r.g.input("k", F32, ["batch", 2, "seq", H])
        return r.g.op("Slice", [k, r.g.ints("start", [HALF]), r.g.ints("end", [2**62]), r.g.ints("axes", [-1])])
    return mixformer(154, extra=tail)


@case("ort", "the head size (9) is not a known even size", POS)
def pairs_partial_odd_head():
    # Phi-style partial rotary on an odd head size 9: q[..., :4] rotated on its halves, q[..., 4:]
    # joined back.
    r = Rope(156, x_shape=("batch", 2, "seq", 9))
    g = r.g
    q_rot = g.op("Slice", [r.x, g.ints("zero", [0]), g.ints("rd", [HALF]), g.ints("axes", [-1])])
    q_pass = g.op("Slice", [r.x, g.ints("start", [HALF]), g.ints("end", [2**62]), g.ints("axes", [-1])])
    a, b = r.halves(q_rot, bounds=((0, 2), (2, 2**62)))
    cos, sin = rope_tables(half=2, width=2)
    c = r.gathered(table=r.table("cos_cached", cos))
    s_ = r.gathered(table=r.table("sin_cached", sin))
    return r.model(g.op("Concat", [*pair_products(g, a, b, c, s_), q_pass], axis=-1))


def meta_llama(seed, x_shape=("batch", 2, "seq", H), pairs_shape=(0, 0, 0, HALF, 2), two_sources=False, unsq_axis=-1,
               stack_axis=-1, width=HALF, out_shape=(0, 0, 0, H)):
    """Meta's llama with real arithmetic: pairs = x.view(.., h/2, 2), a = pairs[..., 0],
    b = pairs[..., 1], y = stack([a', b'], -1).flatten(3)."""
    r = Rope(seed, x_shape=x_shape)
    g = r.g
    pairs = g.op("Reshape", [r.x, g.ints("pairs_shape", list(pairs_shape))])
    other = g.op("Reshape", [g.input("k", F32, list(x_shape)), g.ints("pairs_shape", list(pairs_shape))]) if two_sources else pairs
    a = g.op("Gather", [pairs, g.ints("zero", 0)], axis=-1)
    b = g.op("Gather", [other, g.ints("one", 1)], axis=-1)
    cos, sin = half_tables(r, width=width)
    even, odd = pair_products(g, a, b, cos, sin)
    st = g.op("Concat", [g.op("Unsqueeze", [even, g.ints("axis", [unsq_axis])]), g.op("Unsqueeze", [odd, g.ints("axis", [unsq_axis])])],
              axis=stack_axis)
    return r.model(g.op("Reshape", [st, g.ints("out_shape", list(out_shape))]))


@case("ort", "the products do not read the two elements of one pairs value", POS)
def neighbours_two_sources():
    # pairs[..., 0] of q with pairs[..., 1] of k.
    return meta_llama(160, two_sources=True)


@case("ort", "is not a Reshape of a 4-D value with a known head size into pairs", POS)
def neighbours_single_head_3d():
    # A single-head (B, S, h) query viewed as (B, S, h/2, 2).
    r = Rope(161, x_shape=("batch", "seq", H))
    g = r.g
    pairs = g.op("Reshape", [r.x, g.ints("pairs_shape", [0, 0, HALF, 2])])
    a = g.op("Gather", [pairs, g.ints("zero", 0)], axis=-1)
    b = g.op("Gather", [pairs, g.ints("one", 1)], axis=-1)
    cos, sin = (g.op("Gather", [r.table(f"{w}_cached", t), r.pos]) for w, t in zip(("cos", "sin"), rope_tables(width=HALF)))
    even, odd = pair_products(g, a, b, cos, sin)
    st = g.op("Concat", [g.op("Unsqueeze", [even, g.ints("axis", [-1])]), g.op("Unsqueeze", [odd, g.ints("axis", [-1])])], axis=-1)
    return r.model(g.op("Reshape", [st, g.ints("out_shape", [0, 0, H])]))


@case("ort", "does not cut the last axis of 8 into 4 pairs (.., 4, 2)", POS)
def neighbours_pairs_transposed_view():
    # x.view(.., 2, h/2): elements 0 and 1 of each (h/2)-long row, not neighbours.
    return meta_llama(162, pairs_shape=(0, 0, 0, 2, HALF), width=2, out_shape=(0, 0, 0, HALF))


@case("ort", "changes more than the last axis", POS)
def neighbours_view_mixes_heads():
    # x (1, 2, 4, h) viewed as (1, 4, 2, h/2, 2): heads and tokens mixed by the view.
    return meta_llama(163, x_shape=(1, 2, 4, H), pairs_shape=(1, 4, 2, HALF, 2))


@case("ort", "does not add the last axis the pairs are stacked on", POS)
def neighbours_stack_dim_minus2():
    # torch.stack([a', b'], dim=-2): the rotated values laid out as halves, not pairs.
    return meta_llama(164, unsq_axis=3, stack_axis=3)


@case("ort", "does not stack the pair on the last axis", POS)
def neighbours_concat_not_stack():
    # Unsqueezed on the last axis but concatenated on axis 3: (.., h, 1), the halves again.
    return meta_llama(165, stack_axis=3)


# ---- attention around a Softmax (attention) ----
# A BERT-style self-attention block as Hugging Face exports it: hidden 16, 2 heads of 8,
# q/k/v = x @ W + b viewed (B, S, 2, 8) and transposed, scores q @ k^T / sqrt(8), softmax, context
# transposed back and viewed (B, S, 16), output projection.
D, NH, HD = 16, 2, 8


class Att:
    """One attention model under construction."""

    def __init__(self, seed, x_shape=("batch", "seq", D)):
        self.g = Graph(seed)
        self.x = self.g.input("x", F32, list(x_shape))

    def proj(self, x=None, width=D, name="proj"):
        g = self.g
        h = g.op("MatMul", [x or self.x, g.const(f"{name}.weight", shape=(D, width))])
        return g.op("Add", [h, g.const(f"{name}.bias", shape=(width,))])

    def split(self, v, shape=(0, 0, NH, HD), perm=(0, 2, 1, 3)):
        """view(B, S, N, h).permute(perm); `shape` a value name: a view computed in the graph."""
        view = shape if isinstance(shape, str) else self.g.ints("view_shape", list(shape))
        return self.g.op("Transpose", [self.g.op("Reshape", [v, view])], perm=list(perm))

    def qkv(self, k_perm=(0, 2, 3, 1)):
        """q (B, N, S, h), k^T (B, N, h, S) and v (B, N, S, h)."""
        return self.split(self.proj(name="q")), self.split(self.proj(name="k"), perm=k_perm), self.split(self.proj(name="v"))

    def scores(self, q, kt, scale=True):
        s = self.g.op("MatMul", [q, kt])
        return self.g.op("Div", [s, self.g.const("sqrt_head", np.sqrt(HD))]) if scale else s

    def softmax(self, s, v):
        return self.g.op("MatMul", [self.g.op("Softmax", [s], axis=-1), v])

    def merge(self, ctx, shape=(0, 0, D), perm=(0, 2, 1, 3)):
        g = self.g
        t = g.op("Transpose", [ctx], perm=list(perm)) if perm else ctx
        view = g.ints("merge_shape", list(shape)) if not isinstance(shape, str) else shape
        return g.op("Reshape", [t, view])

    def out(self, y, width=D):
        h = self.g.op("MatMul", [y, self.g.const("o.weight", shape=(width, D))])
        self.g.output(h)
        return self.g.model(17)

    def block(self, mask=lambda s: s):
        """The whole block with `mask` applied to the scaled scores."""
        q, kt, v = self.qkv()
        return self.out(self.merge(self.softmax(mask(self.scores(q, kt)), v)))


@case("ort", "'Reshape_out' is not the Transpose of a head split")
def att_query_view_without_transpose():
    # q.view(B, N, S, h) instead of view(B, S, N, h).transpose(1, 2): heads cut across tokens.
    a = Att(170)
    q = a.g.op("Reshape", [a.proj(name="q"), a.g.op("Concat", [a.g.op("Slice", [a.g.op("Shape", [a.x]), a.g.ints("s0", [0]), a.g.ints("s1", [1])]),
                                                              a.g.ints("heads", [NH, -1, HD])], axis=0)])
    _, kt, v = a.qkv()
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "has perm 0 2 1 3 for a head split")
def att_key_not_transposed():
    # q @ k with k transposed like q (forgotten transpose(-1, -2)): runs only because the export has
    # as many tokens as the head size (8).
    a = Att(171, x_shape=("batch", HD, D))
    q, k, v = a.qkv(k_perm=(0, 2, 1, 3))
    return a.out(a.merge(a.softmax(a.scores(q, k), v)))


@case("ort", "the head split '/Reshape' is not (B, S, N, h) of a (B, S, N*h) input", "--dim hidden=16")
def att_hidden_dynamic():
    # Attention on the hidden states themselves (no projections), the hidden size a dynamic axis.
    a = Att(172, x_shape=("batch", "seq", "hidden"))
    q, kt, v = a.split(a.x), a.split(a.x, perm=(0, 2, 3, 1)), a.split(a.x)
    return a.out(a.merge(a.softmax(a.scores(q, kt), v), shape=(0, 0, -1)))


@case("ort", "changes the batch or sequence dims")
def att_view_swaps_batch_and_tokens():
    # Batch-first (2, 6, D) states viewed as (6, 2, N, h): a sequence-first view of batch-first data.
    a = Att(173, x_shape=(2, 6, D))
    split = lambda v, perm=(0, 2, 1, 3): a.split(v, shape=(6, 2, NH, HD), perm=perm)
    q, kt, v = split(a.proj(name="q")), split(a.proj(name="k"), (0, 2, 3, 1)), split(a.proj(name="v"))
    y = a.merge(a.softmax(a.scores(q, kt), v))
    return a.out(a.g.op("Reshape", [y, a.g.ints("back", [2, 6, D])]))


def seq_first(a, q_view=None, k_view=None, v_view=None, merge=None, S=4, B=2, mask=None):
    """torch nn.MultiheadAttention: (S, B, E) viewed (S, B*N, h), transposed 1 0 2 (K 1 2 0)."""
    g = a.g
    def heads(v, view, perm):
        return g.op("Transpose", [g.op("Reshape", [v, g.ints("view", list(view or (S, B * NH, HD)))])], perm=list(perm))
    q = heads(a.proj(name="q"), q_view, (1, 0, 2))
    kt = heads(a.proj(name="k"), k_view, (1, 2, 0))
    v = heads(a.proj(name="v"), v_view, (1, 0, 2))
    s = a.scores(q, kt)
    if mask:
        s = mask(s)
    ctx = g.op("Transpose", [a.softmax(s, v)], perm=[1, 0, 2])
    return g.op("Reshape", [ctx, g.ints("merge", list(merge or (S * B, D)))])


@case("ort", "is not (S, B*N, h) of an (S, B, N*h) input")
def att_seq_first_view_mixes_tokens():
    # nn.MultiheadAttention's view with the sequence and batch*heads sizes exchanged: (8, 2, 8) for
    # (S, B*N, h) = (4, 4, 8) of (4, 2, 16) states.
    a = Att(174, x_shape=(4, 2, D))
    view = (8, 2, HD)
    y = seq_first(a, view, view, view, merge=(8, D))
    return a.out(a.g.op("Reshape", [y, a.g.ints("back", [4, 2, D])]))


@case("ort", "is not (S, B, N, h) of an (S, B, N*h) input")
def att_fairseq_view_batch_first():
    # fairseq's view(T, B, H, h).permute(1, 2, 0, 3) written as view(B, T, H, h) of the (T, B, E)
    # states (the batch and time sizes exchanged).
    a = Att(175, x_shape=(4, 2, D))
    split = lambda v, perm: a.split(v, shape=(2, 4, NH, HD), perm=perm)
    q, kt, v = split(a.proj(name="q"), (1, 2, 0, 3)), split(a.proj(name="k"), (1, 2, 3, 0)), split(a.proj(name="v"), (1, 2, 0, 3))
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "concatenates the past on axis 0, not the sequence")
def att_prefix_on_batch_axis():
    # A prefix of keys and values concatenated on the batch axis instead of the sequence (batch 1):
    # the scores broadcast to two batch rows.
    a = Att(176, x_shape=(1, "seq", D))
    g = a.g
    q = a.split(a.proj(name="q"))
    k = g.op("Concat", [g.input("prefix_key", F32, [1, NH, "seq", HD]), a.split(a.proj(name="k"))], axis=0)
    v = g.op("Concat", [g.input("prefix_value", F32, [1, NH, "seq", HD]), a.split(a.proj(name="v"))], axis=0)
    kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "the probabilities are not only multiplied by V")
def att_weights_returned():
    # output_attentions=True: the probabilities are also a graph output.
    a = Att(177)
    q, kt, v = a.qkv()
    p = a.g.op("Softmax", [a.scores(q, kt)], axis=-1)
    a.g.output(p)
    return a.out(a.merge(a.g.op("MatMul", [p, v])))


@case("ort", "the (S, B*N, h) context is not merged to (S*B, N*h) or (S, B, N*h)")
def att_seq_first_heads_kept():
    # nn.MultiheadAttention's context kept in heads (S, B, N, h) for a later per-head step.
    a = Att(178, x_shape=(4, 2, D))
    y = seq_first(a, merge=(4, 2, NH, HD))
    return a.out(a.g.op("Reshape", [y, a.g.ints("back", [4, 2, D])]))


@case("ort", "the (B*N, S, h) context is neither viewed as (B, N, S, h) nor transposed to (S, B*N, h)")
def att_multi_query_bigcode():
    # GPTBigCode's multi-query attention: the queries of every head as rows (B, S*N, h) against one
    # key head (B, h, T), the context (B, S*N, h) viewed straight back to (B, S, N*h).
    a = Att(179)
    g = a.g
    q = g.op("Reshape", [a.proj(name="q"), g.ints("rows", [0, -1, HD])])
    k = a.proj(width=HD, name="k")
    v = a.proj(width=HD, name="v")
    s = a.scores(q, g.op("Transpose", [k], perm=[0, 2, 1]))
    ctx = a.softmax(s, v)
    return a.out(g.op("Reshape", [ctx, g.ints("merge", [0, -1, D])]))


@case("ort", "the transposed context is not only reshaped")
def att_context_flattened():
    # The context transposed back and flattened to 2-D rows by Flatten(axis=2) (a Keras-style
    # dense head on (B*S, N*h)).
    a = Att(180)
    q, kt, v = a.qkv()
    t = a.g.op("Transpose", [a.softmax(a.scores(q, kt), v)], perm=[0, 2, 1, 3])
    flat = a.g.op("Flatten", [t], axis=2)
    return a.out(flat)


@case("ort", "the transposed context 'Transpose_4_out' has an unknown shape", "--dim lead=2 --fill lead_dims=0")
def att_values_view_runtime():
    # The values viewed with a run-time shape (leading dims given as an input, heads constant):
    # the context's shape is unknown.
    a = Att(181)
    g = a.g
    q, kt, _ = a.qkv()
    view = g.op("Concat", [g.input("lead_dims", I64, ["lead"]), g.ints("heads", [NH, HD])], axis=0)
    v = a.split(a.proj(name="v"), shape=view)
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "has an unknown or non-3-D target")
def att_merge_to_rows():
    # The context merged to 2-D rows (B*S, N*h) for a dense layer.
    a = Att(182)
    q, kt, v = a.qkv()
    return a.out(a.merge(a.softmax(a.scores(q, kt), v), shape=(-1, D)))


@case("ort", "is not (B, S, N*h)")
def att_merge_half_width():
    # The context merged as (B, -1, 8): two rows per token (a wrong hidden size in the view).
    a = Att(183)
    q, kt, v = a.qkv()
    return a.out(a.merge(a.softmax(a.scores(q, kt), v), shape=(0, -1, HD)), width=HD)


@case("ort", "the scores do not come from a product of Q and K")
def att_scores_given():
    # Similarity scores computed outside and fed in (a retrieval head): no q @ k^T.
    a = Att(184)
    v = a.split(a.proj(name="v"))
    s = a.g.input("scores", F32, ["batch", NH, "seq", "seq"])
    return a.out(a.merge(a.softmax(a.g.op("Div", [s, a.g.const("temperature", 2.0)]), v)))


@case("ort", "the scores 'Div_out' are read elsewhere")
def att_logits_returned():
    # The scaled scores (pre-softmax logits) also returned.
    a = Att(185)
    q, kt, v = a.qkv()
    s = a.scores(q, kt)
    a.g.output(s)
    return a.out(a.merge(a.softmax(s, v)))


@case("ort", "'/Tanh' has too few inputs")
def att_gemma2_softcap():
    # Gemma-2's logit soft-capping: softmax(tanh(scores / 50) * 50).
    a = Att(186)
    cap = lambda s: a.g.op("Mul", [a.g.op("Tanh", [a.g.op("Div", [s, a.g.const("cap", 50.0)])]), a.g.const("cap", 50.0)])
    return a.block(cap)


@case("ort", "the scale '/Mul' is not positive")
def att_negative_scale():
    # Attention by distance: softmax(-scores * s), a negative factor.
    a = Att(187)
    return a.block(lambda s: a.g.op("Mul", [s, a.g.const("neg_scale", -0.5)]))


@case("ort", "does not choose between the scores and a constant", "--fill keep=1")
def att_where_full_like():
    # masked_fill written torch.where(mask, w, torch.full_like(w, min)): the filler is a tensor.
    a = Att(188)
    keep = a.g.input("keep", BOOL, ["batch", 1, "seq", "seq"])
    def mask(s):
        filler = a.g.op("Expand", [a.g.const("min", -3.4e38), a.g.op("Shape", [s])])
        return a.g.op("Where", [keep, s, filler])
    return a.block(mask)


@case("ort", "fills -100, not a hiding value")
def att_where_soft_fill():
    # A soft mask: masked_fill(~mask, -100), which leaves the hidden keys some weight.
    a = Att(189)
    keep = a.g.input("keep", BOOL, ["batch", 1, "seq", "seq"])
    return a.block(lambda s: a.g.op("Where", [keep, s, a.g.const("fill", -100.0)]))


@case("ort", "is not causal (key j <= query i + past) and its shape is not (.., 1, S, T)")
def att_where_per_head_mask():
    # A run-time boolean mask per head (B, N, S, T).
    a = Att(190)
    keep = a.g.input("keep", BOOL, ["batch", NH, "seq", "seq"])
    return a.block(lambda s: a.g.op("Where", [keep, s, a.g.const("min", -3.4e38)]))


@case("ort", "is a second Where mask, or a run-time mask of 3-D scores not read as key padding")
def att_two_where_masks():
    # Two run-time boolean masks applied one after the other.
    a = Att(191)
    k1 = a.g.input("keep", BOOL, ["batch", 1, "seq", "seq"])
    k2 = a.g.input("keep_too", BOOL, ["batch", 1, "seq", "seq"])
    m = lambda s: a.g.op("Where", [k2, a.g.op("Where", [k1, s, a.g.const("min", -3.4e38)]), a.g.const("min", -3.4e38)])
    return a.block(m)


@case("ort", "neither operand of '/Add_3' is the scores")
def att_scores_upcast():
    # fp16 scores upcast to float before the mask is added: Add(Cast(scores), mask).
    a = Att(192)
    mask = a.g.input("attention_bias", F32, ["batch", 1, 1, "seq"])
    m = lambda s: a.g.op("Add", [a.g.op("Cast", [a.g.op("Cast", [s], to=F16)], to=F32), mask])
    return a.block(m)


@case("ort", "adds a mask to scores a Where already masks with key padding", "--fill attention_mask=1")
def att_bias_around_padding():
    # A position bias added before masked_fill(key padding) and a causal bias after it.
    a = Att(193)
    g = a.g
    am = g.input("attention_mask", I64, ["batch", "seq"])
    pad = g.op("Unsqueeze", [g.op("Equal", [am, g.ints("zero", 0)]), g.ints("axes", [1, 2])])
    def m(s):
        s = g.op("Add", [s, g.input("position_bias", F32, [1, NH, "seq", "seq"])])
        s = g.op("Where", [pad, g.const("min", -3.4e38), s])
        return g.op("Add", [s, g.input("causal_bias", F32, [1, 1, "seq", "seq"])])
    return a.block(m)


@case("ort", "the bias 'alibi' has an unknown head axis", "--dim heads=2")
def att_alibi_heads_dynamic():
    # An ALiBi bias fed as an input whose head axis is dynamic.
    a = Att(194)
    return a.block(lambda s: a.g.op("Add", [s, a.g.input("alibi", F32, [1, "heads", "seq", "seq"])]))


@case("ort", "a run-time Where mask and an additive bias together")
def att_where_and_bias():
    # A run-time boolean mask and an ALiBi bias on the same scores.
    a = Att(195, x_shape=("batch", 6, D))
    keep = a.g.input("keep", BOOL, ["batch", 1, 6, 6])
    m = lambda s: a.g.op("Where", [keep, a.g.op("Add", [s, a.g.const("alibi", shape=(1, NH, 6, 6))]), a.g.const("min", -3.4e38)])
    return a.block(m)


@case("ort", "Q has a past or repeats")
def att_memory_queries():
    # A recurrent-memory model: memory tokens are concatenated before the queries too.
    a = Att(196)
    g = a.g
    mem = lambda name: g.input(name, F32, ["batch", NH, "mem", HD])
    q = g.op("Concat", [mem("mem_query"), a.split(a.proj(name="q"))], axis=2)
    k = g.op("Concat", [mem("mem_key"), a.split(a.proj(name="k"))], axis=2)
    v = g.op("Concat", [mem("mem_value"), a.split(a.proj(name="v"))], axis=2)
    s = a.scores(q, g.op("Transpose", [k], perm=[0, 1, 3, 2]))
    y = a.merge(a.softmax(s, v))
    return a.out(y)


@case("ort", "K or V has other heads than Q")
def att_multi_query_broadcast():
    # Multi-query attention by broadcasting: one key/value head (B, 1, T, h) for 2 query heads.
    a = Att(197)
    q = a.split(a.proj(name="q"))
    kt = a.split(a.proj(width=HD, name="k"), shape=(0, 0, 1, HD), perm=(0, 2, 3, 1))
    v = a.split(a.proj(width=HD, name="v"), shape=(0, 0, 1, HD))
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


def repeat_kv(a, v, reps):
    """HF's repeat_kv: v[:, :, None].expand(B, Nkv, reps, T, h).reshape(B, Nkv * reps, T, h)."""
    g = a.g
    u = g.op("Unsqueeze", [v, g.ints("axis", [2])])
    e = g.op("Expand", [u, g.ints("expand", [1, 1, reps, 1, 1])])
    return g.op("Reshape", [e, g.ints("repeat_shape", [0, reps, -1, HD])])


@case("ort", "K and V differ in past or repeats")
def att_keys_repeated_values_not():
    # Keys from one head repeated to 2 (repeat_kv), values projected to 2 heads directly.
    a = Att(198)
    q = a.split(a.proj(name="q"))
    k = repeat_kv(a, a.split(a.proj(width=HD, name="k"), shape=(0, 0, 1, HD)), NH)
    v = a.split(a.proj(name="v"))
    s = a.scores(q, a.g.op("Transpose", [k], perm=[0, 1, 3, 2]))
    return a.out(a.merge(a.softmax(s, v)))


def grouped_with_past(seed, heads, head, mask=lambda a, s: s):
    """Grouped-query attention of a decoder step: `heads` query heads of `head` over one key and
    value head, each appended to its per-layer past (B, 1, P, head), a present output, and
    repeated to `heads` (repeat_kv) for the product; `mask` applied to the scaled scores."""
    a = Att(seed)
    g = a.g
    q = a.split(a.proj(name="q"), shape=(0, 0, heads, head))
    def cached(name):
        new = a.split(a.proj(width=head, name=name), shape=(0, 0, 1, head))
        kv = g.op("Concat", [g.input(f"past_{name}", F32, ["batch", 1, "past", head]), new], axis=2)
        g.output(kv)
        u = g.op("Unsqueeze", [kv, g.ints("axis", [2])])
        e = g.op("Expand", [u, g.ints("expand", [1, 1, heads, 1, 1])])
        return g.op("Reshape", [e, g.ints("repeat_shape", [0, heads, -1, head])])
    k, v = cached("k"), cached("v")
    s = g.op("Div", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), g.const("sqrt_head", np.sqrt(head))])
    y = g.op("Reshape", [g.op("Transpose", [a.softmax(mask(a, s), v)], perm=[0, 2, 1, 3]), g.ints("merge_shape", [0, 0, D])])
    return a.out(y)


@case("ort", "not GroupQueryAttention: head size 4 (ORT's CPU kernel needs a multiple of 8)", "--dim past=3")
def att_grouped_heads_of_4():
    # Four query heads of 4 over one cached key/value head: MultiHeadAttention on the repeats.
    return grouped_with_past(204, 4, 4)


@case("ort", "not GroupQueryAttention: a key padding mask without a causal one", "--dim past=3")
def att_grouped_padding_only():
    # Two query heads of 8 over one cached key/value head, a key padding mask and no causal one
    # (a prefix language model's step): MultiHeadAttention on the repeats with the raw mask.
    def padding(a, s):
        am = a.g.input("attention_mask", I64, ["batch", "total"])
        keep = a.g.op("Unsqueeze", [a.g.op("Cast", [am], to=F32), a.g.ints("axes", [1, 2])])
        hide = a.g.op("Mul", [a.g.op("Sub", [a.g.const("one", 1.0), keep]), a.g.const("min", -3.4e38)])
        return a.g.op("Add", [s, hide])
    return grouped_with_past(205, NH, HD, padding)


@case("ort", "'Concat_out' is not the Transpose of a head split", "--dim past=3")
def att_values_shared_by_layers():
    # Values shared across layers (SVFormer-style): the second layer attends with its own queries
    # and cached keys over the first layer's cached values. The first layer fuses and writes the
    # value present; the second would need the nodes the first took, which the pass says in its
    # first round (pass_guards_test checks it); --explain keeps the next round's reason, where the
    # values are the fused node's output.
    a = Att(215)
    g = a.g
    def cached(name, x=None):
        kv = g.op("Concat", [g.input(f"past_{name}", F32, ["batch", NH, "past", HD]), a.split(a.proj(x, name=name))], axis=2)
        g.output(kv)
        return kv
    v = cached("v")
    def layer(x, n):
        q, k = a.split(a.proj(x, name=f"q{n}")), cached(f"k{n}", x)
        return a.merge(a.softmax(a.scores(q, g.op("Transpose", [k], perm=[0, 1, 3, 2])), v))
    return a.out(layer(layer(None, 1), 2))


@case("ort", "do not have Q's 2 heads of 8")
def att_shared_memory_one_head():
    # Memory keys and values shared by the batch (batch 1, one head), expanded over the batch of 2
    # by repeat_kv's Expand with n_rep = 1: one key/value head broadcast over 2 query heads.
    a = Att(199, x_shape=(2, "seq", D))
    g = a.g
    mem = g.input("memory", F32, [1, "mem", D])
    def kv(name):
        heads = a.split(a.proj(mem, width=HD, name=name), shape=(0, 0, 1, HD))
        u = g.op("Unsqueeze", [heads, g.ints("axis", [2])])
        e = g.op("Expand", [u, g.ints("expand", [2, 1, 1, 1, 1])])
        return g.op("Reshape", [e, g.ints("repeat_shape", [2, 1, -1, HD])])
    q = a.split(a.proj(name="q"))
    k, v = kv("k"), kv("v")
    s_ = a.scores(q, g.op("Transpose", [k], perm=[0, 1, 3, 2]))
    return a.out(a.merge(a.softmax(s_, v)))


@case("ort", "the queries 'query_heads' are a graph input, not a head split")
def att_queries_given():
    # Queries given already in heads (B, N, S, h) (a decoder split across models).
    a = Att(200)
    q = a.g.input("query_heads", F32, ["batch", NH, "seq", HD])
    _, kt, v = a.qkv()
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "K and V are not both given in heads (B, N, T, h) with no past, repeat or rotation")
def att_keys_given_values_split():
    # Cached cross-attention keys given in heads, the values computed from the states.
    a = Att(201)
    q = a.split(a.proj(name="q"))
    k = a.g.input("key_heads", F32, ["batch", NH, "seq", HD])
    v = a.split(a.proj(name="v"))
    s = a.scores(q, a.g.op("Transpose", [k], perm=[0, 1, 3, 2]))
    return a.out(a.merge(a.softmax(s, v)))


@case("ort", "Q, K and V are not all split the same way (batch-first and sequence-first)")
def att_mixed_layouts():
    # Sequence-first queries (S, 1, E) against batch-first keys and values (1, T, E), batch 1.
    a = Att(202, x_shape=(1, "seq", D))
    g = a.g
    xs = g.input("x_seq_first", F32, ["seq", 1, D])
    q = g.op("Transpose", [g.op("Reshape", [a.proj(xs, name="q"), g.ints("view", [0, NH, HD])])], perm=[1, 0, 2])
    kt = a.split(a.proj(name="k"), perm=(0, 2, 3, 1))
    v = a.split(a.proj(name="v"))
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "the context is not merged to N*h")
def att_seq_first_merge_narrow():
    # nn.MultiheadAttention's context merged to (2*S*B, h): rows of one head.
    a = Att(203, x_shape=(4, 2, D))
    y = seq_first(a, merge=(16, HD))
    return a.out(a.g.op("Reshape", [y, a.g.ints("back", [4, 2, D])]))


@case("ort", "an intermediate is read elsewhere: 'Transpose_2_out' is a graph output")
def att_values_returned():
    # The value heads also returned (a cache written by hand, without a past input).
    a = Att(204)
    q, kt, v = a.qkv()
    a.g.output(v)
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "is also read by '/ReduceMean'")
def att_query_heads_read_twice():
    # The query heads also read by a statistics head (mean query per head).
    a = Att(205)
    q, kt, v = a.qkv()
    a.g.output(a.g.op("ReduceMean", [q], axes=[2], keepdims=0))
    return a.out(a.merge(a.softmax(a.scores(q, kt), v)))


@case("ort", "the past keys and values are not graph inputs (ORT's stacked past is not supported here)")
def att_prefix_tuning():
    # Prefix tuning: learned prefix keys and values (constants) concatenated before the sequence.
    a = Att(206, x_shape=(1, "seq", D))
    g = a.g
    q = a.split(a.proj(name="q"))
    k = g.op("Concat", [g.const("prefix.key", shape=(1, NH, 3, HD)), a.split(a.proj(name="k"))], axis=2)
    v = g.op("Concat", [g.const("prefix.value", shape=(1, NH, 3, HD)), a.split(a.proj(name="v"))], axis=2)
    s = a.scores(q, g.op("Transpose", [k], perm=[0, 1, 3, 2]))
    return a.out(a.merge(a.softmax(s, v)))


@case("ort", "the scores' shape is unknown or not (B, N, S, T) or (B*N, S, T)")
def att_classifier_softmax():
    # A classifier's softmax over (B, classes) logits: not attention.
    g = Graph(210)
    x = g.input("x", F32, ["batch", D])
    logits = g.op("MatMul", [x, g.const("classifier.weight", shape=(D, 5))])
    g.output(g.op("Softmax", [logits], axis=-1))
    return g.model(17)


@case("ort", "the bias 'rel_bias' has 4 heads, not 1 or 1")
def att_single_head_four_head_bias():
    # A single-head model (h = 16) with a 4-head relative-position bias: the scores broadcast to
    # 4 heads, which one head's projections do not have.
    a = Att(211, x_shape=("batch", 6, D))
    g = a.g
    q = a.split(a.proj(name="q"), shape=(0, 0, 1, D))
    kt = a.split(a.proj(name="k"), shape=(0, 0, 1, D), perm=(0, 2, 3, 1))
    v = a.split(a.proj(name="v"), shape=(0, 0, 1, D))
    s_ = g.op("Add", [g.op("Div", [g.op("MatMul", [q, kt]), g.const("sqrt_head", 4.0)]), g.const("rel_bias", shape=(1, 4, 6, 6))])
    return a.out(a.merge(a.softmax(s_, v), shape=(0, 0, 4 * D)), width=4 * D)


@case("ort", "the scores or heads are viewed with 4 heads, the projections split 2")
def att_scores_viewed_four_heads():
    # GPT-NeoX's baddbmm on 3-D heads (B*N, S, h), batch 2 x 2 heads, the scores then viewed as
    # (1, 4, S, T) for the mask and softmax: batch rows taken for heads.
    a = Att(212, x_shape=(2, "seq", D))
    g = a.g
    three = lambda v: g.op("Reshape", [v, g.ints("bn_shape", [4, -1, HD])])
    q, k, v = (three(a.split(a.proj(name=n))) for n in ("q", "k", "v"))
    s_ = a.scores(q, g.op("Transpose", [k], perm=[0, 2, 1]))
    s_ = g.op("Reshape", [s_, g.op("Concat", [g.ints("one_four", [1, 4]), g.op("Slice", [g.op("Shape", [s_]), g.ints("start", [1]),
                                                                                     g.ints("end", [3])])], axis=0)])
    ctx = g.op("MatMul", [g.op("Softmax", [s_], axis=-1), v])
    return a.out(a.merge(ctx, shape=(0, 0, 4 * HD)), width=4 * HD)


@case("ort", "the padding mask of '/Add_3' has other heads than the scores", "--fill attention_mask=1")
def att_padding_rows_of_other_heads():
    # GPT-NeoX-style 3-D heads (B*N, S, h), batch 2 x 2 heads, with a key padding mask of one row
    # repeated over 4 heads and merged to (4, 1, T): the 4 rows broadcast against the scores' 4
    # (batch, head) rows, but as 1 x 4, not 2 x 2.
    a = Att(216, x_shape=(2, 6, D))
    g = a.g
    three = lambda v: g.op("Reshape", [v, g.ints("bn_shape", [4, -1, HD])])
    q, k, v = (three(a.split(a.proj(name=n))) for n in ("q", "k", "v"))
    s_ = a.scores(q, g.op("Transpose", [k], perm=[0, 2, 1]))
    keep = g.op("Cast", [g.input("attention_mask", I64, [1, 6])], to=F32)
    hide = g.op("Mul", [g.op("Sub", [g.const("one", 1.0), keep]), g.const("min", -3.4e38)])
    rows = g.op("Expand", [g.op("Unsqueeze", [hide, g.ints("axes", [1, 2])]), g.ints("heads_4", [1, 4, 1, 6])])
    s_ = g.op("Add", [s_, g.op("Reshape", [rows, g.ints("rows_shape", [4, 1, 6])])])
    ctx = g.op("Reshape", [g.op("MatMul", [g.op("Softmax", [s_], axis=-1), v]), g.ints("heads_shape", [2, NH, 6, HD])])
    return a.out(a.merge(ctx))


@case("ort", "'/Reshape_8' reshapes the scores other than (B*N, S, T) <-> (B, N, S, T)")
def att_scores_batch_and_heads_merged():
    # 3-D heads (B*N, S, h) of batch 2 x 2 heads multiplied as one batch of 4 heads (1, 4, S, h),
    # the scores viewed back to (4, S, T) for the softmax and the context to (2, 2, S, h): the
    # scores' view takes 4 heads where the context's takes 2.
    a = Att(217, x_shape=(2, "seq", D))
    g = a.g
    three = lambda v: g.op("Reshape", [v, g.ints("bn_shape", [4, -1, HD])])
    four = lambda v: g.op("Reshape", [v, g.ints("one_batch", [1, 4, -1, HD])])
    q, k, v = (three(a.split(a.proj(name=n))) for n in ("q", "k", "v"))
    s4 = a.scores(four(q), g.op("Transpose", [four(k)], perm=[0, 1, 3, 2]))
    rows = g.op("Concat", [g.ints("rows", [4]), g.op("Slice", [g.op("Shape", [s4]), g.ints("start", [2]), g.ints("end", [4])])], axis=0)
    ctx = g.op("MatMul", [g.op("Softmax", [g.op("Reshape", [s4, rows])], axis=-1), v])
    return a.out(a.merge(g.op("Reshape", [ctx, g.ints("heads_shape", [2, NH, -1, HD])])))


@case("ort", "V is rotated", "--fill position_ids=3")
def att_values_rotated():
    # RoPE applied to the values too (q, k and v rotated alike).
    a = Att(213)
    g = a.g
    pos = g.input("position_ids", I64, ["batch", "seq"])
    cos_t, sin_t = rope_tables()
    tables = [g.const("cos_cached", cos_t), g.const("sin_cached", sin_t)]
    cos, sin = (g.op("Unsqueeze", [g.op("Gather", [t, pos]), g.ints("axis", [1])]) for t in tables)
    def rope(x):
        x1 = g.op("Slice", [x, g.ints("zero", [0]), g.ints("half", [HALF]), g.ints("axes", [-1])])
        x2 = g.op("Slice", [x, g.ints("half", [HALF]), g.ints("end", [2**62]), g.ints("axes", [-1])])
        rot = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rot, sin])])
    q, k, v = (rope(a.split(a.proj(name=n))) for n in ("q", "k", "v"))
    s_ = a.scores(q, g.op("Transpose", [k], perm=[0, 1, 3, 2]))
    return a.out(a.merge(a.softmax(s_, v)))


def write(out, only):
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, target, reasons, extra, build in CASES:
        if not only or name in only:
            onnx.save(build(), str(out / f"{name}.onnx"))
        rows += [f"{name}.onnx\t{target}\t{reason}\t{extra}".rstrip("\t") for reason in reasons]
    (out / "expected.txt").write_text("\n".join(rows) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args()
    write(args.out, set(args.only or []))


if __name__ == "__main__":
    main()
