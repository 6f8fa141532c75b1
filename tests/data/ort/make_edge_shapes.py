#!/usr/bin/python3
"""Writes the suite edge_shapes: standard ai.onnx operators (opset 17, ir_version 8; the groups
opset11 and opset18..21 hold other opsets' forms) on the shapes and values an evaluator's fast
paths tend to get wrong, with ONNX Runtime 1.30's outputs as the expected ones (fixture.py: CPU, one thread, graph
optimizations disabled).

  /usr/bin/python3 tests/data/ort/make_edge_shapes.py             # the suite
  /usr/bin/python3 tests/data/ort/make_edge_shapes.py --flat DIR  # a folder per node, to look into a failure

Why: refeval's kernels take shortcuts (a scalar or one-element operand, equal shapes, a constant
exponent, vector loops with scalar tails, a parallel split past 2 x 2^14 elements) that bypass the
general broadcasting and shape code; each must give the general path's shape, element type and
values. (Pow of a rank-0 x by a (1,)-shaped exponent 2 once kept x's () shape instead of (1,): the
group pow fails on a refeval built before that fix.) The nodes, float32 unless about another type:
  - elementwise binary (Add Sub Mul Div Pow Mod, Equal Less Greater And Or) and variadic (Max Min
    Mean Sum) and Where: rank-0 operands on either side, (1,) against () (the result is (1,)),
    size-1 broadcasting on every side and in the middle ((3,1,5) with (1,4,1)), a second operand of
    larger rank, empty dims, lengths 7 / 17 / 33 / 67 (vector tails), int64, int32, float16 and
    double where ORT's CPU kernels take them; Pow with exponents 2, 3, 0.5, -1 and 1.5 as () and (1,)
    initializers, graph inputs and full tensors, integer Pow, mixed base / exponent types; Mod with
    fmod 0 / 1 and negative operands; Add's rank-0 / (1,) cases fed as graph inputs;
  - unary (Abs Neg Sqrt Exp Log Tanh Sigmoid Relu LeakyRelu Erf Not Clip Cast) on (), (1,), 7, 17,
    33, (0, 3), (2, 3, 4) and (2, 67); Clip with min / max omitted, either alone, min > max, int64;
    Cast between float, float16, double, int64, int32, int8, uint8 and bool (negative fractions
    truncate toward zero, float16 rounding and overflow);
  - Softmax / LogSoftmax (axis -1, 0, a middle axis, a size-1 axis, an empty row set, opset-11's
    coercion to 2-D); the reductions (ReduceSum with its axes input and noop_with_empty_axes; Mean
    Max Min Prod L2 SumSquare LogSumExp with the axes attribute): keepdims 0 / 1, negative axes, a
    size-1 axis, all axes, rank-0 input, empty sets (0, 1, -inf, the identities); ArgMax / ArgMin
    with ties, select_last_index 0 / 1, keepdims 0; LayerNormalization (axis -1, axis 1 of rank 3,
    a normalised size of 1, epsilon, all three outputs, float16);
  - data movement: Gather (negative and rank-0 indices, axis -1, empty indices), GatherElements,
    Transpose (rank 0..5, dims 7, 9, 17 and 1), Slice (negative starts / ends, steps -1, 2, 3, -7,
    ends past the dim, INT64_MAX / INT64_MIN, empty results, int32 parameters), Concat (negative
    axis, empty inputs), Split (uneven, a zero-size part), Expand ((1,) to () is (1,), a shape of
    lower rank), Tile, Reshape (0, -1, allowzero, to and from rank 0), Squeeze / Unsqueeze
    (negative and unsorted axes); the group width repeats them for 1-, 2- and 8-byte elements;
  - MatMul (1-D x 2-D, 2-D x 1-D, 1-D x 1-D, batched broadcast (2,1,3,4) x (5,4,6), K = 1,
    K = 0, M = 0, dims 7 / 17 / 33, int32, int64, float16), Gemm (transA / transB, alpha / beta,
    C of shape (), (1,), (N,), (M, 1), (1, 1), (M, N), absent);
  - CumSum (exclusive, reverse, int32 axis), TopK (ties, largest 0, k 0, inf), Range, Trilu;
  - ident: x * 1, x + 0, x ** 1, x ** 0 and a constant Where condition that must still broadcast;
    special / vec: IEEE values (+-0, +-inf, nan) through every unary op and the exponent
    shortcuts (pow(-inf, 0.5) = +inf where sqrt gives nan), placed in vector bodies and tails;
    alias / alias_chain: a value read twice by one node and by several, which an in-place kernel
    must not overwrite;
  - act / misc: the other activations and unary ops (PRelu's slope in every broadcast form,
    HardSigmoid, Celu, Selu, trigonometric, IsNaN / IsInf, Round's halves) and other operators at
    their edges (Shape start / end, Size, Flatten, ConstantOfShape of an empty shape, NonZero of a
    scalar, EyeLike, Compress, GatherND, ScatterElements / ScatterND reductions, Pad modes,
    DepthToSpace, OneHot, ReverseSequence, Einsum, Det, normalizations);
  - conv / convtranspose / pool / bn / resize: Conv's 1x1, padded, strided, dilated, auto_pad,
    depthwise and grouped forms in 1-D, 2-D and 3-D, ConvTranspose, Max / Average / Lp / global
    pools with ceil_mode, count_include_pad and the Indices output, BatchNormalization, Resize;
  - opset11, opset18 .. opset21: Split-18's num_outputs with a shorter last part, the opset-18
    reductions' axes input and noop_with_empty_axes, Pad-18 axes, ScatterElements-18 max / min,
    Mish, Bitwise*, CenterCropPad, Resize axes; Pad-19 wrap, AveragePool-19 dilations; Gelu-20;
    GroupNormalization-18 / -21; opset-11 attribute forms and Softmax / LogSoftmax / Hardmax
    coercion to 2-D;
  - large: (9, 4099) operands (past refeval's parallel threshold with --threads 2 or more; the
    ctest runs one thread) built in the graph from Range with exactly rounded arithmetic, so the
    models stay small, each result checked through a weighted row sum (MatMul by a (4099,) weight).

Layout: one fixture folder per group (an operator, or ident / special / vec / alias / width /
large), its nodes' outputs gathered by element type into one SequenceConstruct output each (a
file per type rather than per node keeps the suite near 2 MB on disk); `refeval test` reports the
first differing item ("output 'float': item K"): item K is the Kth input of that SequenceConstruct
node, named after the case; --flat writes every node as its own folder for a full list.

Data are random with a fixed seed, in ranges where summation order stays well inside the suite's
tolerance (ReduceProd and Pow on modest magnitudes, divisors and logarithms away from 0).

refeval failures this suite found (each in a group of its own): act_nan_hardsigmoid and
act_nan_celu, HardSigmoid(NaN) gave 1 and Celu(NaN) gave 0 where ORT and the schema's numpy
reference (max(0, min(1, alpha x + beta)); max(0, x) + min(0, alpha (exp(x / alpha) - 1))) give
NaN: std::max and std::min return their first argument when the other is NaN (fixed in f113f2e).

Left out, with the reason:
  - ORT refuses: Where on bool or int8 X / Y, Trilu on uint8 / int8 ("Could not find an
    implementation"); Mean of double (no kernel); Sum / Mean of integers (the schema is float-only);
    Pad of a rank-0 tensor.
  - ORT disagrees with the specification or numpy, refeval agrees with them:
    LayerNormalization of rows with a large common offset (x = randn + 1000): ORT's one-pass
    variance E[x^2] - E[x]^2 in float loses ~1e-4 relative; the schema's function body is two-pass
    (refeval matches a float64 computation); ReduceMax / ReduceMin / ArgMax over a row with NaN:
    ORT ignores or keeps the NaN depending on its position (onnxruntime issue 10514), numpy and
    refeval propagate it (ArgMax: the first NaN's index; MaxPool over a window with NaN alike); Cast double -> float16 of a value just
    past a half-way point (2049.0000001): ORT rounds through float (2048), numpy and refeval round
    once (2050); Slice with a negative step and ends = INT64_MAX: ORT slices to the start of the
    axis (x[-1:INT64_MAX:-2] of 7 values gives 4), the specification clamps ends to dim - 1 for a
    negative step and numpy and refeval give no element; reductions over two or more axes of an
    empty tensor with keepdims 0 (ReduceL1 of (2, 17, 0) over axes (-1, 1): ORT (2, 0), numpy and
    refeval (2,)); ArgMax over an empty axis (ORT gives an empty (1, 0) for keepdims 1, refeval
    refuses as numpy does); LayerNormalization over 2 nearly equal values (variance well under
    epsilon: float32 noise amplified past the tolerance, refeval matches float64).
  - Not opset 17: ScatterElements reduction "max" (opset 18; ORT accepts it in an opset-17 model,
    refeval refuses it per the schema).
  - Undefined: ReduceMean of an empty set (ONNX PR 5568: "undefined"; ORT 0, refeval nan); integer
    Pow with a negative integer exponent (ORT truncates 2 ** -1 to 0; refeval refuses, as numpy).
"""
import pathlib
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

import fixture

SUITE = "edge_shapes"
RNG = np.random.default_rng(1717)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
        np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL,
        np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
I64_MAX, I64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
CASES = []  # (name, model, feeds)


class C:
    """An input written as an initializer (a constant the evaluator sees before running)."""
    def __init__(self, value):
        self.value = np.asarray(value)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def pos(*shape, lo=0.5, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def away(*shape):
    """Random sign, magnitude in [0.5, 2): safe divisors."""
    return (pos(*shape) * RNG.choice([-1.0, 1.0], shape)).astype(np.float32)


def ints(*shape, lo=-5, hi=6, dtype=np.int64):
    return RNG.integers(lo, hi, shape).astype(dtype)


def boolean(*shape):
    return RNG.random(shape) < 0.5


def i64(*v):
    return C(np.array(v, dtype=np.int64))


class In:
    """An input written as a graph input (fed from test_data_set_0) rather than an initializer."""
    def __init__(self, value):
        self.value = np.asarray(value)


class Ref:
    """An input that is another node's output (the group "large" builds its data in the graph)."""
    def __init__(self, name):
        self.name = name


def case(name, op, inputs, attrs=None, outputs=1, opset=17, group=None, hidden=False):
    """One node, added to the group (the fixture folder) named by name's first word. inputs:
    arrays or C(array) (initializers: the suite stays small, one file per case and output), In(array)
    (a graph input) or None (an absent optional input) in the operator's order; outputs: how many,
    named name (or name_K for K > 0)."""
    assert name not in NAMES, name
    NAMES.add(name)
    group = group or (name if FLAT else name.split("_")[0] if opset == 17 else f"opset{opset}")
    GROUPS.setdefault(group, {"opset": opset, "nodes": []})["nodes"].append((name, op, inputs, attrs, outputs, hidden))


GROUPS = {}
NAMES = set()
FLAT = "--flat" in sys.argv  # --flat DIR: a folder per node, its outputs unpacked (to look into a failure)


def group_model(group):
    g = GROUPS[group]
    nodes, infos, inits, feeds, outs, seen = [], [], [], {}, [], {}
    for name, op, inputs, attrs, outputs, hidden in g["nodes"]:
        names = []
        for k, x in enumerate(inputs):
            if x is None or isinstance(x, Ref):
                names.append("" if x is None else x.name)
                continue
            n = f"{name}_in{k}"
            names.append(n)
            if isinstance(x, In):  # one graph input per In object (alias_chain's x is read by several nodes)
                if id(x) in seen:
                    names[-1] = seen[id(x)]
                    continue
                seen[id(x)] = n
                feeds[n] = x.value
                infos.append(helper.make_tensor_value_info(n, ELEM[x.value.dtype], list(x.value.shape)))
            else:  # one initializer per distinct value
                v = x.value if isinstance(x, C) else np.asarray(x)
                key = (v.dtype.str, v.shape, v.tobytes())
                if key in seen:
                    names[-1] = seen[key]
                else:
                    seen[key] = n
                    inits.append(numpy_helper.from_array(v, n))
        while names and names[-1] == "":
            names.pop()
        o = [name] + [f"{name}_{k}" for k in range(1, outputs)]
        if not hidden:
            outs += o
        nodes.append(helper.make_node(op, names, o, name=name, **(attrs or {})))
    graph = helper.make_graph(nodes, group, infos, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", g["opset"])], ir_version=8,
                              producer_name="refeval make_edge_shapes.py")
    # Output element types from onnx's shape inference (beyond opset 17: the node's first input's,
    # or bool / int64 for the ops that give those); the shapes stay undeclared.
    inferred = shape_inference.infer_shapes(model) if g["opset"] <= 17 else model
    types = {v.name: v.type.tensor_type.elem_type for v in list(inferred.graph.output) + list(inferred.graph.value_info)}
    if g["opset"] > 17:
        elems = {i.name: i.data_type for i in inits} | {i.name: i.type.tensor_type.elem_type for i in infos}
        for node in nodes:
            for o in node.output:
                types[o] = {"IsInf": TensorProto.BOOL, "IsNaN": TensorProto.BOOL}.get(node.op_type, elems.get(node.input[0]))
    del model.graph.output[:]
    for o in outs:
        elem = types.get(o, TensorProto.UNDEFINED)
        if elem == TensorProto.UNDEFINED:
            raise ValueError(f"{group}: no inferred element type for {o}")
        model.graph.output.append(helper.make_tensor_value_info(o, elem, None))
    return model, feeds


def sh(shape):
    return "s" if shape == () else "x".join(map(str, shape))


# ---------------------------------------------------------------- elementwise binary
BROADCAST = [((), ()), ((), (1,)), ((1,), ()), ((), (7,)), ((17,), ()), ((1,), (33,)), ((33,), (1,)), ((1,), (1,)),
             ((3, 1, 5), (1, 4, 1)), ((4, 1), (3, 1, 5)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)), ((2, 3, 4), (3, 1)),
             ((1,), (2, 3)), ((2, 0, 3), (3,)), ((0,), ()), ((2, 0, 3), (2, 1, 1)), ((1, 1), (1,)), ((7,), (7,)),
             ((17,), (17,)), ((2, 67), (2, 67)), ((2, 67), (67,)), ((2, 67), (2, 1)), ((1, 17), (5, 1)),
             ((2, 1, 3, 1), (1, 5, 1, 7)), ((5, 1, 7), (1, 1, 1))]


def binary_cases():
    for op in ["Add", "Sub", "Mul", "Div"]:
        for a, b in BROADCAST:
            y = away(*b) if op == "Div" else f32(*b)
            if op != "Add" and 67 in a:
                continue  # Add has the 2x67 ones (and the group "large" more)
            x = f32(*a)
            fed = op == "Add" and (a, b) in BROADCAST[:8]  # a few as graph inputs, most as initializers
            case(f"{op.lower()}_{sh(a)}_{sh(b)}", op, [In(x), In(y)] if fed else [x, y])
        # the second operand as a constant
        case(f"{op.lower()}_17_const_s", op, [f32(17), C(away() if op == "Div" else f32())])
        case(f"{op.lower()}_s_const_1", op, [f32(), C(away(1) if op == "Div" else f32(1))])
        case(f"{op.lower()}_const_1_s", op, [C(f32(1)), away() if op == "Div" else f32()])
        for dt, tag in [(np.int64, "i64"), (np.int32, "i32")]:
            for a, b in [((), (1,)), ((7,), ()), ((3, 1, 5), (1, 4, 1)), ((17,), (17,))]:
                y = ints(*b, lo=1, hi=6, dtype=dt) * np.where(RNG.random(b) < 0.5, -1, 1).astype(dt) if op == "Div" else ints(*b, dtype=dt)
                case(f"{op.lower()}_{tag}_{sh(a)}_{sh(b)}", op, [ints(*a, lo=-20, hi=21, dtype=dt), y])
        for a, b in [((), (1,)), ((17,), (17,)), ((3, 1, 5), (1, 4, 1))]:
            y = away(*b) if op == "Div" else f32(*b)
            case(f"{op.lower()}_f16_{sh(a)}_{sh(b)}", op, [f32(*a).astype(np.float16), y.astype(np.float16)])

    # Pow: exponents as () / (1,) initializers, as graph inputs, full tensors
    for e in [2.0, 3.0, 0.5, -1.0, 1.5]:
        et = str(e).replace(".", "p").replace("-", "m")
        for a in [(), (1,), (7,), (17,), (2, 3, 33)] + ([(2, 67)] if e in (2.0, 0.5) else []):
            x = pos(*a) if e in (0.5, 1.5) else away(*a)
            for b in [(), (1,)]:
                case(f"pow_{et}_{sh(a)}_const_{sh(b)}", "Pow", [x, C(np.full(b, e, np.float32))])
            if a in [(), (1,)] and e in (2.0, 0.5):
                for b in [(), (1,)]:
                    case(f"pow_{et}_{sh(a)}_input_{sh(b)}", "Pow", [In(x), In(np.full(b, e, np.float32))])
        case(f"pow_{et}_s_const_1x1x1", "Pow", [pos() if e in (0.5, 1.5) else away(), C(np.full((1, 1, 1), e, np.float32))])
        case(f"pow_{et}_0x3_const_s", "Pow", [f32(0, 3), C(np.float32(e))])
    case("pow_full_2x3x4", "Pow", [pos(2, 3, 4), f32(2, 3, 4)])
    case("pow_s_by_17", "Pow", [pos(), f32(17)])
    case("pow_3x1_by_1x4", "Pow", [pos(3, 1), f32(1, 4)])
    case("pow_1_by_s_const", "Pow", [pos(1), C(np.float32(2.0))])
    case("pow_negbase_int_exps", "Pow", [away(2, 5), np.array([[2, 3, -1, 0, 1]] * 2, np.float32)])
    case("pow_i64_i64_2", "Pow", [ints(17, lo=-9, hi=10), C(np.int64(2))])
    case("pow_i64_i64_3_1", "Pow", [ints(7, lo=-9, hi=10), C(np.array([3], np.int64))])
    case("pow_i64_s_i64_1", "Pow", [ints(lo=-9, hi=10), C(np.array([2], np.int64))])
    case("pow_i32_i32", "Pow", [ints(3, 4, lo=-5, hi=6, dtype=np.int32), ints(4, lo=0, hi=4, dtype=np.int32)])
    case("pow_f32_i64_exp", "Pow", [away(17), C(np.array([3], np.int64))])
    case("pow_f32_i64_exp_s", "Pow", [away(), C(np.int64(2))])
    case("pow_i64_f32_exp", "Pow", [ints(7, lo=0, hi=10), C(np.array([2.0], np.float32))])
    case("pow_i64_f32_exp_half", "Pow", [ints(9, lo=0, hi=30), C(np.float32(0.5))])
    case("pow_i64_f32_exp_1p5", "Pow", [ints(9, lo=0, hi=30), C(np.array([1.5], np.float32))])
    case("pow_i32_f32_exp_m1", "Pow", [ints(7, lo=1, hi=5, dtype=np.int32), C(np.float32(-1.0))])
    case("pow_i64_s_f32_3", "Pow", [ints(lo=-5, hi=6), C(np.array([3.0], np.float32))])
    case("pow_f64_s_by_1_2", "Pow", [np.float64(-1.25), C(np.array([2.0], np.float64))])
    case("pow_f64_7_by_s_3", "Pow", [away(7).astype(np.float64), C(np.float64(3.0))])
    case("pow_f64_3_by_1_05", "Pow", [pos(3).astype(np.float64), C(np.array([0.5], np.float64))])
    case("pow_f16_s_by_1_2", "Pow", [np.float16(-1.5), C(np.array([2.0], np.float16))])
    case("pow_f16_17_by_s_05", "Pow", [pos(17).astype(np.float16), C(np.float16(0.5))])
    case("pow_f16_x_f32_exp", "Pow", [away(7).astype(np.float16), C(np.float32(3.0))])
    case("pow_f32_f16_exp", "Pow", [away(7), C(np.array([2.0], np.float16))])
    case("pow_f32_i32_exp_s", "Pow", [pos(), C(np.array([3], np.int32))])

    # Mod
    case("mod_i64_neg", "Mod", [ints(17, lo=-20, hi=21), ints(17, lo=1, hi=7) * np.where(RNG.random(17) < 0.5, -1, 1)])
    case("mod_i64_s_1", "Mod", [ints(lo=-20, hi=21), C(np.array([-3], np.int64))])
    case("mod_i64_7_s", "Mod", [ints(7, lo=-20, hi=21), C(np.int64(4))])
    case("mod_i32_bcast", "Mod", [ints(3, 1, 5, lo=-20, hi=21, dtype=np.int32), ints(1, 4, 1, lo=1, hi=6, dtype=np.int32)])
    case("mod_i64_fmod1", "Mod", [ints(17, lo=-20, hi=21), ints(17, lo=1, hi=7) * np.where(RNG.random(17) < 0.5, -1, 1)], {"fmod": 1})
    case("mod_i32_fmod1_s", "Mod", [ints(7, lo=-20, hi=21, dtype=np.int32), C(np.int32(-3))], {"fmod": 1})
    case("mod_f32_fmod1", "Mod", [f32(17, scale=5), away(17)], {"fmod": 1})
    case("mod_f32_fmod1_s_1", "Mod", [f32(scale=5), C(np.array([-1.5], np.float32))], {"fmod": 1})
    case("mod_f32_fmod1_bcast", "Mod", [f32(3, 1, 5, scale=5), away(1, 4, 1)], {"fmod": 1})

    # comparisons (ties from small integers) and logic
    for op in ["Equal", "Less", "Greater"]:
        for a, b in [((), ()), ((), (1,)), ((1,), ()), ((17,), ()), ((3, 1, 5), (1, 4, 1)), ((2, 3, 4), (4,)), ((0, 3), (3,)),
                     ((33,), (33,))]:
            case(f"{op.lower()}_{sh(a)}_{sh(b)}", op, [ints(*a, lo=-2, hi=3).astype(np.float32), ints(*b, lo=-2, hi=3).astype(np.float32)])
        case(f"{op.lower()}_i64_7_s", op, [ints(7, lo=-2, hi=3), C(np.int64(0))])
        case(f"{op.lower()}_i32_bcast", op, [ints(3, 1, lo=-2, hi=3, dtype=np.int32), ints(1, 4, lo=-2, hi=3, dtype=np.int32)])
    case("equal_bool", "Equal", [boolean(3, 1, 5), boolean(1, 4, 1)])
    for op in ["And", "Or"]:
        for a, b in [((), ()), ((), (1,)), ((17,), ()), ((3, 1, 5), (1, 4, 1)), ((33,), (33,)), ((0, 2), (2,)), ((2, 67), (2, 1))]:
            case(f"{op.lower()}_{sh(a)}_{sh(b)}", op, [boolean(*a), boolean(*b)])
    for a in [(), (1,), (17,), (0, 3), (2, 67)]:
        case(f"not_{sh(a)}", "Not", [boolean(*a)])


def variadic_cases():
    for op in ["Max", "Min", "Mean", "Sum"]:
        for shapes in [[(7,)], [()], [(), (1,)], [(1,), ()], [(3, 1, 5), (1, 4, 1), (5,)], [(1,), (), (2, 3)], [(2, 0, 3), (3,)],
                       [(2, 67), (67,), ()], [(17,), (17,), (17,)], [(2, 3), (4, 2, 3)], [(), (), ()]]:
            case(f"{op.lower()}_" + "_".join(sh(s) for s in shapes), op, [f32(*s) for s in shapes])
    for op in ["Max", "Min"]:  # Sum and Mean are float-only in the schema
        case(f"{op.lower()}_i64_bcast", op, [ints(3, 1), ints(1, 4), ints()])
        case(f"{op.lower()}_i32_s_1", op, [ints(dtype=np.int32), ints(1, dtype=np.int32)])
    for op in ["Max", "Min", "Mean", "Sum"]:
        case(f"{op.lower()}_f16_bcast", op, [f32(3, 1).astype(np.float16), f32(1, 17).astype(np.float16)])
    # ties between the operands
    for op in ["Max", "Min", "Sum"]:  # (ORT has no double Mean)
        case(f"{op.lower()}_f64_s_1", op, [f32().astype(np.float64), f32(1).astype(np.float64)])
    case("max_ties", "Max", [ints(17, lo=-2, hi=3).astype(np.float32), ints(17, lo=-2, hi=3).astype(np.float32)])

    for shapes in [[(), (3,), (3,)], [(3, 1), (1, 4), ()], [(2, 1, 5), (5,), (2, 3, 1)], [(1,), (), ()], [(), (), ()],
                   [(0, 3), (3,), (1,)], [(2, 67), (2, 67), (2, 67)], [(2, 67), (), (67,)], [(17,), (17,), (1,)],
                   [(), (33,), ()]]:
        case("where_" + "_".join(sh(s) for s in shapes), "Where", [boolean(*shapes[0]), f32(*shapes[1]), f32(*shapes[2])])
    case("where_i64", "Where", [boolean(3, 1), ints(1, 4), ints()])
    case("where_i32_s_1", "Where", [boolean(1), ints(dtype=np.int32), ints(7, dtype=np.int32)])
    case("where_f64", "Where", [boolean(3, 1), f32(1, 4).astype(np.float64), f32().astype(np.float64)])
    case("where_f16", "Where", [boolean(2, 1), f32(1, 17).astype(np.float16), f32(2, 1).astype(np.float16)])
    case("where_const_xy", "Where", [boolean(3, 1, 5), C(np.float32(-1e9)), C(f32(1, 4, 1))])


# ---------------------------------------------------------------- unary
UNARY_SHAPES = [(), (1,), (7,), (17,), (33,), (0, 3), (2, 3, 4), (2, 67)]


def unary_cases():
    gens = {"Abs": f32, "Neg": f32, "Sqrt": lambda *s: pos(*s, lo=0.0, hi=4.0), "Exp": lambda *s: f32(*s, scale=3),
            "Log": lambda *s: pos(*s, lo=0.01, hi=10.0), "Tanh": lambda *s: f32(*s, scale=3), "Sigmoid": lambda *s: f32(*s, scale=4),
            "Relu": f32, "LeakyRelu": f32, "Erf": lambda *s: f32(*s, scale=2)}
    for op, gen in gens.items():
        for s in UNARY_SHAPES:
            case(f"{op.lower()}_{sh(s)}", op, [gen(*s)])
    case("leakyrelu_alpha_0p2_17", "LeakyRelu", [f32(17)], {"alpha": 0.2})
    case("leakyrelu_alpha_neg_7", "LeakyRelu", [f32(7)], {"alpha": -1.5})
    case("sigmoid_saturated", "Sigmoid", [np.array([-100, -88, -40, -20, -10, 0, 10, 20, 40, 88, 100], np.float32)])
    case("tanh_saturated", "Tanh", [np.array([-100, -20, -9, -5, -1e-4, 0, 1e-4, 5, 9, 20, 100], np.float32)])
    case("exp_extremes", "Exp", [np.array([-100, -87, -20, 0, 20, 80, 88], np.float32)])
    case("erf_extremes", "Erf", [np.array([-10, -4, -3, -1e-3, 0, 1e-3, 3, 4, 10], np.float32)])
    case("sqrt_zero", "Sqrt", [np.array([0, 1e-30, 1, 4, 1e30], np.float32)])
    case("log_edge", "Log", [np.array([1e-30, 1, 1e30, 0.5], np.float32)])
    for op in ["Abs", "Neg"]:
        case(f"{op.lower()}_i64_17", op, [ints(17, lo=-100, hi=100)])
        case(f"{op.lower()}_i32_s", op, [ints(dtype=np.int32)])
        case(f"{op.lower()}_f16_33", op, [f32(33).astype(np.float16)])
    for op in ["Relu", "Sigmoid", "Tanh", "Exp", "Sqrt"]:
        x = pos(17).astype(np.float16) if op == "Sqrt" else f32(17).astype(np.float16)
        case(f"{op.lower()}_f16_17", op, [x])

    # Clip
    for s in [(), (1,), (17,), (0, 3), (2, 67)]:
        case(f"clip_minmax_{sh(s)}", "Clip", [f32(*s), C(np.float32(-0.5)), C(np.float32(0.7))])
    case("clip_none_17", "Clip", [f32(17)])
    case("clip_min_only_17", "Clip", [f32(17), C(np.float32(0.1))])
    case("clip_max_only_17", "Clip", [f32(17), None, C(np.float32(-0.1))])
    case("clip_max_only_s", "Clip", [f32(), None, C(np.float32(0.0))])
    case("clip_min_gt_max", "Clip", [f32(7), C(np.float32(1.0)), C(np.float32(-1.0))])
    case("clip_minmax_inputs", "Clip", [In(f32(2, 3, 4)), In(np.float32(-1.0)), In(np.float32(1.0))])
    case("clip_i64", "Clip", [ints(17, lo=-10, hi=10), C(np.int64(-3)), C(np.int64(4))])
    case("clip_i32_min_only", "Clip", [ints(7, lo=-10, hi=10, dtype=np.int32), C(np.int32(0))])
    case("clip_f16", "Clip", [f32(17).astype(np.float16), C(np.float16(-0.5)), C(np.float16(0.5))])

    # Cast
    frac = np.array([-2.7, -2.5, -1.5, -0.5, -0.2, -0.0, 0.0, 0.2, 0.5, 1.5, 2.5, 2.7, 100.9, -100.9, 65504.0, 1e-8, 3.0], np.float32)
    to = {"i64": TensorProto.INT64, "i32": TensorProto.INT32, "bool": TensorProto.BOOL, "f16": TensorProto.FLOAT16,
          "f32": TensorProto.FLOAT, "i8": TensorProto.INT8, "u8": TensorProto.UINT8, "f64": TensorProto.DOUBLE}
    for t in ["i64", "i32", "bool", "f16", "f64"]:
        case(f"cast_f32_to_{t}_17", "Cast", [frac], {"to": to[t]})
        case(f"cast_f32_to_{t}_s", "Cast", [np.float32(-3.75)], {"to": to[t]})
        case(f"cast_f32_to_{t}_0x3", "Cast", [f32(0, 3)], {"to": to[t]})
    case("cast_f32_to_i8", "Cast", [np.array([-100.7, -1.5, 0, 1.5, 100.7], np.float32)], {"to": to["i8"]})
    case("cast_f32_to_u8", "Cast", [np.array([0, 1.5, 100.7, 254.9], np.float32)], {"to": to["u8"]})
    case("cast_f32_to_f16_rounding", "Cast", [np.array([1.0, 1.00048828125, 1.000732421875, 1e-8, 6e-5, 70000.0, -70000.0, 2049.0, 2051.0],
                                                     np.float32)], {"to": to["f16"]})
    case("cast_f32_to_f32_17", "Cast", [f32(17)], {"to": to["f32"]})
    case("cast_f32_to_i64_2x67", "Cast", [f32(2, 67, scale=100)], {"to": to["i64"]})
    case("cast_f16_to_f32_33", "Cast", [f32(33).astype(np.float16)], {"to": to["f32"]})
    case("cast_f16_to_i64", "Cast", [frac[:13].astype(np.float16)], {"to": to["i64"]})
    case("cast_i64_to_f32_17", "Cast", [ints(17, lo=-1000, hi=1000)], {"to": to["f32"]})
    case("cast_i64_to_f32_big", "Cast", [np.array([2**24 + 1, -(2**24) - 1, 2**40 + 3, 0], np.int64)], {"to": to["f32"]})
    case("cast_i64_to_i32_s", "Cast", [np.int64(-7)], {"to": to["i32"]})
    case("cast_i64_to_bool", "Cast", [ints(7, lo=-2, hi=3)], {"to": to["bool"]})
    case("cast_i32_to_i64_7", "Cast", [ints(7, dtype=np.int32)], {"to": to["i64"]})
    case("cast_i32_to_f16", "Cast", [ints(7, lo=-3000, hi=3000, dtype=np.int32)], {"to": to["f16"]})
    case("cast_bool_to_f32_17", "Cast", [boolean(17)], {"to": to["f32"]})
    case("cast_bool_to_i64_s", "Cast", [np.bool_(True)], {"to": to["i64"]})
    case("cast_bool_to_f16", "Cast", [boolean(7)], {"to": to["f16"]})
    halves = f32(67) * np.float32(1e-4)  # subnormal float16s, ties, overflow, NaN in some blocks of 8, tails
    halves[:12] = [5.960464477539063e-08, 2.9802322387695312e-08, 2.98023224e-08 * 1.5, 6.103515625e-05, 6.0975552e-05,
                   1.00048828125, 1.00146484375, 65504.0, 65519.0, 65520.0, -1e9, 2.0 ** -25]
    halves[[20, 43, 66]] = [np.nan, np.inf, -np.inf]
    case("cast_f32_to_f16_67", "Cast", [halves], {"to": to["f16"]})
    case("cast_f32_to_f16_67_finite", "Cast", [halves[:16] * np.float32(3.0)], {"to": to["f16"]})
    case("cast_f16_to_f32_67", "Cast", [np.arange(-33, 34, dtype=np.int16).view(np.float16) * np.float16(1)], {"to": to["f32"]})
    case("cast_f16_bits_to_f32", "Cast", [np.array([0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x8001, 0x3c01] * 3,
                                                   np.uint16).view(np.float16)], {"to": to["f32"]})
    case("cast_i64_to_f16", "Cast", [np.array([0, 1, -1, 2049, 2051, 65504, 65520, 70000, -70000], np.int64)], {"to": to["f16"]})
    case("cast_u8_to_f32", "Cast", [np.arange(0, 256, 15, dtype=np.uint8)], {"to": to["f32"]})
    case("cast_i8_to_i64", "Cast", [np.array([-128, -1, 0, 127], np.int8)], {"to": to["i64"]})
    case("cast_i64_to_i8_wrap", "Cast", [np.array([-129, 128, 255, 256, -1], np.int64)], {"to": to["i8"]})
    case("cast_f64_to_f32", "Cast", [np.array([1e-50, 1.0000000001, -2.5, 1e300], np.float64)], {"to": to["f32"]})


# ---------------------------------------------------------------- softmax, reductions, normalization
def softmax_cases():
    for op in ["Softmax", "LogSoftmax"]:
        t = op.lower()
        for s, axis in [((2, 3, 4), -1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -2), ((17,), 0), ((1,), 0), ((2, 1, 5), 1),
                        ((2, 67), -1), ((2, 67), 0), ((5, 33), -1), ((0, 5), -1), ((2, 7, 3, 5), 2)]:
            case(f"{t}_{sh(s)}_axis{axis}".replace("-", "m"), op, [f32(*s, scale=3)], {"axis": axis})
        case(f"{t}_default_axis", op, [f32(2, 3, 4)])
        case(f"{t}_large_values", op, [np.array([[1000, 999, -1000, 0], [-50, -50, -50, -50], [88, 89, 90, 91]], np.float32)])
        case(f"{t}_opset11_axis1_rank3", op, [f32(2, 3, 4)], {"axis": 1}, opset=11)
        case(f"{t}_opset11_default_rank3", op, [f32(2, 3, 4)], opset=11)
        case(f"{t}_opset11_axism2_rank4", op, [f32(2, 3, 4, 5)], {"axis": -2}, opset=11)
    case("softmax_f16_17", "Softmax", [f32(3, 17).astype(np.float16)], {"axis": -1})


def reduce_cases():
    gen = {"ReduceSum": f32, "ReduceMean": f32, "ReduceMax": f32, "ReduceMin": f32,
           "ReduceProd": lambda *s: pos(*s, lo=0.8, hi=1.25), "ReduceL2": f32, "ReduceSumSquare": f32,
           "ReduceLogSumExp": lambda *s: f32(*s, scale=3)}
    plans = [((2, 3, 4), [1], 1), ((2, 3, 4), [1], 0), ((2, 3, 4), [-1], 0), ((2, 3, 4), [0, 2], 1), ((2, 3, 4), [-3, -1], 0),
             ((2, 3, 4), None, 1), ((2, 3, 4), None, 0), ((2, 3, 4), [0, 1, 2], 0), ((2, 1, 4), [1], 0), ((2, 1, 4), [-2], 1),
             ((17,), [0], 0), ((17,), [0], 1), ((1,), [0], 0), ((), None, 0), ((), None, 1), ((2, 67), [-1], 0),
             ((2, 67), [0], 1), ((0, 3), [1], 0), ((7, 33), [1], 1), ((2, 3, 5, 7), [1, 3], 0)]
    for op, g in gen.items():
        t = op.lower()[6:]
        for s, axes, keep in plans:
            name = f"reduce{t}_{sh(s)}_" + ("all" if axes is None else "ax" + "_".join(map(str, axes)).replace("-", "m")) + f"_k{keep}"
            x = g(*s)
            if op == "ReduceSum":
                case(name, op, [x, None if axes is None else i64(*axes)], {"keepdims": keep})
            else:
                case(name, op, [x], {"keepdims": keep} if axes is None else {"keepdims": keep, "axes": axes})
    # empty sets reduced: the identity value
    case("reducesum_0x3_ax0", "ReduceSum", [f32(0, 3), i64(0)], {"keepdims": 0})
    case("reduceprod_0x3_ax0", "ReduceProd", [f32(0, 3)], {"keepdims": 0, "axes": [0]})
    case("reducesumsquare_0x3_ax0", "ReduceSumSquare", [f32(0, 3)], {"keepdims": 1, "axes": [0]})
    case("reducemax_0x3_ax0", "ReduceMax", [f32(0, 3)], {"keepdims": 0, "axes": [0]})
    case("reducemin_0x3_ax0", "ReduceMin", [f32(0, 3)], {"keepdims": 0, "axes": [0]})
    case("reducel2_0x3_ax0", "ReduceL2", [f32(0, 3)], {"keepdims": 0, "axes": [0]})
    case("reducelogsumexp_0x3_ax0", "ReduceLogSumExp", [f32(0, 3)], {"keepdims": 0, "axes": [0]})
    # ReduceSum's axes input and noop_with_empty_axes
    empty = C(np.zeros(0, np.int64))
    case("reducesum_empty_axes_noop0", "ReduceSum", [f32(2, 3, 4), empty], {"keepdims": 1})
    case("reducesum_empty_axes_noop1", "ReduceSum", [f32(2, 3, 4), empty], {"noop_with_empty_axes": 1})
    case("reducesum_no_axes_noop1", "ReduceSum", [f32(2, 3, 4)], {"noop_with_empty_axes": 1, "keepdims": 0})
    case("reducesum_no_axes_noop1_s", "ReduceSum", [f32()], {"noop_with_empty_axes": 1})
    case("reducesum_axes_graph_input", "ReduceSum", [In(f32(2, 3, 4)), In(np.array([-1, 0], np.int64))], {"keepdims": 0})
    case("reducesum_i64", "ReduceSum", [ints(3, 17), i64(-1)], {"keepdims": 0})
    case("reducesum_i32_all", "ReduceSum", [ints(3, 17, dtype=np.int32)], {"keepdims": 1})
    case("reducemax_i64", "ReduceMax", [ints(3, 17)], {"keepdims": 0, "axes": [0]})
    case("reducemin_i32", "ReduceMin", [ints(3, 17, dtype=np.int32)], {"keepdims": 1, "axes": [-1]})
    case("reducemean_i64", "ReduceMean", [ints(2, 7)], {"keepdims": 0, "axes": [1]})
    case("reduceprod_i64", "ReduceProd", [ints(2, 7, lo=-3, hi=4)], {"keepdims": 0, "axes": [1]})
    case("reducemax_neg_inf", "ReduceMax", [np.array([[-np.inf, -np.inf], [-np.inf, 1.0]], np.float32)], {"axes": [1]})
    case("reducelogsumexp_large", "ReduceLogSumExp", [np.array([[1000, 999, -1000], [-90, -95, -100]], np.float32)], {"axes": [1]})

    # ArgMax / ArgMin
    for op in ["ArgMax", "ArgMin"]:
        t = op.lower()
        for s, axis in [((3, 4), 1), ((3, 4), 0), ((3, 4), -1), ((2, 3, 5), -2), ((17,), 0), ((1,), 0), ((2, 1, 5), 1), ((2, 67), -1),
                        ((2, 67), 0)]:
            x = ints(*s, lo=-2, hi=3).astype(np.float32)  # ties
            for last in [0, 1]:
                for keep in [0, 1]:
                    if s in [(2, 67), (2, 1, 5)] and keep == 1 and last == 1:
                        continue
                    case(f"{t}_{sh(s)}_axis{axis}_last{last}_k{keep}".replace("-", "m"), op, [x],
                         {"axis": axis, "keepdims": keep, "select_last_index": last})
        case(f"{t}_default", op, [f32(3, 4)])
        case(f"{t}_i64_ties", op, [ints(3, 7, lo=-1, hi=2)], {"axis": -1, "select_last_index": 1})
        case(f"{t}_i32", op, [ints(17, dtype=np.int32)], {"axis": 0, "keepdims": 0})
        case(f"{t}_f16", op, [ints(3, 7, lo=-1, hi=2).astype(np.float16)], {"axis": 1})
        case(f"{t}_0x3_axis1", op, [f32(0, 3)], {"axis": 1, "keepdims": 0})


def layernorm_cases():
    def ln(name, x, axis, bias=True, outputs=1, **attrs):
        n = x.shape[axis:] if axis >= 0 else x.shape[x.ndim + axis:]
        ins = [x, C(f32(*n)), C(f32(*n)) if bias else None]
        case(name, "LayerNormalization", ins, dict(axis=axis, **attrs), outputs=outputs)
    ln("layernorm_2x3x8_axism1", f32(2, 3, 8), -1)
    ln("layernorm_2x3x8_axis1", f32(2, 3, 8), 1)
    ln("layernorm_2x3x8_axis1_pos", f32(2, 3, 8), 1)
    ln("layernorm_2x5x17_axism2", f32(2, 5, 17), -2)
    ln("layernorm_no_bias_17", f32(3, 17), -1, bias=False)
    ln("layernorm_eps_1em3", f32(2, 33), -1, epsilon=1e-3)
    ln("layernorm_eps_1em12", f32(2, 33), -1, epsilon=1e-12)
    ln("layernorm_size1", f32(4, 1), -1)
    ln("layernorm_2x67", f32(2, 67), -1)
    ln("layernorm_1d", f32(7), 0)
    ln("layernorm_axis0_rank2", f32(3, 5), 0)
    ln("layernorm_outputs3", f32(2, 3, 8), -1, outputs=3)
    ln("layernorm_outputs3_axis1", f32(2, 3, 8), 1, outputs=3)
    ln("layernorm_constant_rows", np.tile(np.float32(2.5), (2, 16)), -1)
    case("layernorm_bcast_scale", "LayerNormalization", [f32(2, 3, 8), C(f32(1, 8)), C(f32(8))], {"axis": 1})


# ---------------------------------------------------------------- data movement
def movement_cases():
    # Gather
    case("gather_idx_s", "Gather", [f32(5, 4), np.int64(-2)], {"axis": 0})
    case("gather_idx_s_axism1", "Gather", [f32(5, 4), np.int64(3)], {"axis": -1})
    case("gather_1d_idx_s", "Gather", [f32(7), np.int64(6)])
    case("gather_neg_idx", "Gather", [f32(5, 4), np.array([-1, 0, -5, 4], np.int64)])
    case("gather_axism1_2d_idx", "Gather", [f32(3, 5, 4), np.array([[0, -1, 2], [3, 3, -4]], np.int64)], {"axis": -1})
    case("gather_axis1_rank3", "Gather", [f32(2, 7, 3), np.array([6, -7, 0], np.int64)], {"axis": 1})
    case("gather_empty_idx", "Gather", [f32(5, 4), np.zeros(0, np.int64)])
    case("gather_empty_data_axis1", "Gather", [f32(0, 4), np.array([1, 2], np.int64)], {"axis": 1})
    case("gather_i32_idx", "Gather", [f32(5, 4), np.array([[1], [-2]], np.int32)])
    case("gather_2x67", "Gather", [f32(2, 67), np.array([1, 0, 1, -1], np.int64)])
    case("gather_2x67_axis1", "Gather", [f32(2, 67), np.array([66, 0, -67], np.int64)], {"axis": 1})
    case("gather_i64_data", "Gather", [ints(6, 3), np.array([[5, 0]], np.int64)])
    case("gather_const_idx_1", "Gather", [f32(2, 17), i64(-1)], {"axis": 1})
    case("gather_const_idx_s", "Gather", [f32(2, 17), C(np.int64(16))], {"axis": 1})
    case("gather_bool", "Gather", [boolean(4, 3), np.array([3, -1], np.int64)])
    # GatherElements
    case("gatherelements_axis1", "GatherElements", [f32(3, 4), np.array([[0, -1], [3, 1], [-4, 2]], np.int64)], {"axis": 1})
    case("gatherelements_axis0", "GatherElements", [f32(3, 4), np.array([[2, 0, -1, 1]], np.int64)], {"axis": 0})
    case("gatherelements_axism1_rank3", "GatherElements", [f32(2, 3, 5), RNG.integers(-5, 5, (2, 3, 7)).astype(np.int64)], {"axis": -1})
    case("gatherelements_smaller_idx", "GatherElements", [f32(4, 5), RNG.integers(-4, 4, (2, 3)).astype(np.int64)], {"axis": 0})
    case("gatherelements_i32_idx", "GatherElements", [f32(17), RNG.integers(-17, 17, (9,)).astype(np.int32)], {"axis": 0})
    case("gatherelements_empty", "GatherElements", [f32(3, 4), np.zeros((3, 0), np.int64)], {"axis": 1})
    # Transpose
    for s, perm in [((7, 9), None), ((2, 7, 9), [1, 0, 2]), ((2, 7, 9), [0, 2, 1]), ((2, 7, 9), [2, 1, 0]), ((2, 1, 7, 9), [3, 1, 0, 2]),
                    ((2, 3, 1, 17, 5), [4, 0, 3, 1, 2]), ((1,), [0]), ((), []), ((17, 33), [1, 0]), ((0, 3), [1, 0]),
                    ((1, 7, 1, 9), [2, 0, 3, 1]), ((2, 67), [1, 0]), ((7, 1), [1, 0]), ((2, 3, 4, 5), [0, 1, 2, 3]),
                    ((9, 17, 7), [2, 0, 1]), ((2, 3, 4, 5, 6), [0, 2, 4, 1, 3])]:
        name = f"transpose_{sh(s)}_" + ("default" if perm is None else "p" + "".join(map(str, perm)))
        case(name, "Transpose", [f32(*s)], None if perm is None else {"perm": perm})
    case("transpose_i64", "Transpose", [ints(3, 5, 7)], {"perm": [2, 0, 1]})
    case("transpose_bool", "Transpose", [boolean(3, 5)])
    case("transpose_f16", "Transpose", [f32(7, 9, 17).astype(np.float16)], {"perm": [1, 2, 0]})
    # Slice
    def sl(name, x, starts, ends, axes=None, steps=None, dt=np.int64):
        ins = [x, C(np.array(starts, dt)), C(np.array(ends, dt))]
        if axes is not None or steps is not None:
            ins.append(None if axes is None else C(np.array(axes, dt)))
        if steps is not None:
            ins.append(C(np.array(steps, dt)))
        case(name, "Slice", ins)
    x10 = f32(10)
    sl("slice_neg_start_past_end", x10, [-3], [100000])
    sl("slice_reverse_all", x10, [-1], [-11], [0], [-1])
    sl("slice_reverse_int64_min", x10, [-1], [I64_MIN], [0], [-1])
    sl("slice_reverse_int64_max_start", x10, [I64_MAX], [I64_MIN], [0], [-2])
    sl("slice_step2", x10, [1], [I64_MAX], [0], [2])
    sl("slice_step3_17", f32(17), [0], [17], [0], [3])
    sl("slice_int64_max_end", x10, [2], [I64_MAX])
    sl("slice_empty_result", x10, [5], [2])
    sl("slice_empty_result_neg_step", x10, [2], [5], [0], [-1])
    sl("slice_start_before_begin", x10, [-100], [3])
    sl("slice_3d_axes_m1_0_steps", f32(3, 7, 17), [1, -1], [-1, I64_MIN], [-1, 0], [2, -1])
    sl("slice_3d_middle", f32(3, 7, 17), [2], [-2], [-2])
    sl("slice_0x4_axis1", f32(0, 4), [1], [3], [1])
    sl("slice_to_empty_dim", f32(4, 5), [0, 2], [4, 2])
    sl("slice_i32_params", f32(4, 9), [-3], [I64_MAX if False else 100], [1], [1], dt=np.int32)
    sl("slice_2x67_tail", f32(2, 67), [-17], [1000], [1])
    sl("slice_2x67_step_m7", f32(2, 67), [66], [-68], [-1], [-7])
    sl("slice_unit_dims", f32(1, 7, 1), [0, 0], [1, 1], [0, 2])
    sl("slice_i64_data", ints(12), [-2], [-10], [0], [-3])
    case("slice_params_as_inputs", "Slice", [In(f32(6, 8)), In(np.array([-4, 1], np.int64)), In(np.array([I64_MAX, 7], np.int64)),
                                             In(np.array([1, 0], np.int64)), In(np.array([1, 2], np.int64))])
    # Concat
    case("concat_axism1", "Concat", [f32(2, 3), f32(2, 5)], {"axis": -1})
    case("concat_empty_first", "Concat", [f32(0, 3), f32(2, 3)], {"axis": 0})
    case("concat_empty_middle", "Concat", [f32(2, 3), f32(2, 0), f32(2, 1)], {"axis": 1})
    case("concat_all_empty", "Concat", [f32(0, 3), f32(0, 3)], {"axis": 0})
    case("concat_1d_7_1_17", "Concat", [f32(7), f32(1), f32(17)], {"axis": 0})
    case("concat_single", "Concat", [f32(1)], {"axis": 0})
    case("concat_i64", "Concat", [ints(2, 3), ints(1, 3)], {"axis": -2})
    case("concat_rank3_axism2", "Concat", [f32(2, 3, 4), f32(2, 1, 4), f32(2, 5, 4)], {"axis": -2})
    case("concat_rank3_axis0_unit", "Concat", [f32(1, 3, 4), f32(1, 3, 4)], {"axis": 0})
    case("concat_bool", "Concat", [boolean(3), boolean(4)], {"axis": 0})
    case("concat_2x67", "Concat", [f32(2, 67), f32(2, 67)], {"axis": 1})
    case("concat_const", "Concat", [f32(2, 3), C(f32(2, 1))], {"axis": -1})
    # Split (opset 13+: split is an input)
    case("split_uneven", "Split", [f32(10), i64(3, 3, 4)], outputs=3)
    case("split_zero_part", "Split", [f32(5, 6), i64(1, 0, 5)], {"axis": -1}, outputs=3)
    case("split_equal_default", "Split", [f32(6, 4)], outputs=3)
    case("split_axis1_equal", "Split", [f32(2, 6, 3)], {"axis": 1}, outputs=2)
    case("split_ones", "Split", [f32(7)], outputs=7)
    case("split_axism2", "Split", [f32(2, 7, 3), i64(2, 5)], {"axis": -2}, outputs=2)
    case("split_single", "Split", [f32(3, 4), i64(4)], {"axis": 1}, outputs=1)
    case("split_2x67", "Split", [f32(2, 67), i64(17, 50)], {"axis": 1}, outputs=2)
    case("split_i64", "Split", [ints(9), i64(2, 7)], outputs=2)
    # Expand
    for name, x, shape in [("expand_3x1_to_2x1x4", f32(3, 1), [2, 1, 4]), ("expand_s_to_3x4", f32(), [3, 4]),
                           ("expand_1_to_s", f32(1), []), ("expand_s_to_s", f32(), []), ("expand_3_to_1", f32(3), [1]),
                           ("expand_2x1_to_1x1x5", f32(2, 1), [1, 1, 5]), ("expand_1x1_to_0x1", f32(1, 1), [0, 1]),
                           ("expand_4_to_2x1x1x1", f32(4), [2, 1, 1, 1]), ("expand_s_to_1", f32(), [1]),
                           ("expand_1x17_to_3x17", f32(1, 17), [3, 17]), ("expand_67_to_2x67", f32(67), [2, 67]),
                           ("expand_3x1_to_3x33", f32(3, 1), [3, 33]), ("expand_i64", ints(1, 3), [2, 1, 3]),
                           ("expand_bool", boolean(2, 1), [2, 5]), ("expand_1x3_to_4x1", f32(1, 3), [4, 1])]:
        case(name, "Expand", [x, C(np.array(shape, np.int64))])
    case("expand_shape_input", "Expand", [In(f32(3, 1)), In(np.array([2, 1, 1], np.int64))])
    # Tile
    for name, x, reps in [("tile_2x3_r21", f32(2, 3), [2, 1]), ("tile_1_r5", f32(1), [5]), ("tile_7_r3", f32(7), [3]),
                          ("tile_2x1x3_r141", f32(2, 1, 3), [1, 4, 1]), ("tile_zero_rep", f32(2, 3), [0, 2]), ("tile_ones", f32(3, 4), [1, 1]),
                          ("tile_0x3_r2", f32(0, 3), [2, 2]), ("tile_i64", ints(2, 2), [3, 2]), ("tile_17_r1x", f32(1, 17), [3, 1]),
                          ("tile_bool", boolean(3), [2])]:
        case(name, "Tile", [x, C(np.array(reps, np.int64))])
    # Reshape
    for name, x, shape, az in [("reshape_0_m1", f32(2, 3, 4), [0, -1], 0), ("reshape_m1", f32(2, 3, 4), [-1], 0),
                               ("reshape_4_0_m1", f32(2, 3, 4), [4, 0, -1], 0), ("reshape_s_to_1", f32(), [1], 0),
                               ("reshape_1_to_s", f32(1), [], 0), ("reshape_s_to_1x1x1", f32(), [1, 1, 1], 0),
                               ("reshape_7_to_1x7x1", f32(7), [1, 7, 1], 0), ("reshape_allowzero_0x4", f32(0, 3), [0, 4], 1),
                               ("reshape_allowzero_copy", f32(2, 3), [0, 3], 0), ("reshape_m1_s", f32(), [-1], 0),
                               ("reshape_empty_m1", f32(0, 3), [3, -1], 0), ("reshape_0_0_copy", f32(2, 3, 4), [0, 0, 2, 2], 0),
                               ("reshape_i64", ints(6), [2, -1], 0), ("reshape_2x67", f32(2, 67), [67, 2], 0)]:
        case(name, "Reshape", [x, C(np.array(shape, np.int64))], {"allowzero": az} if az else None)
    case("reshape_shape_input", "Reshape", [In(f32(2, 3, 4)), In(np.array([-1, 2], np.int64))])
    # Squeeze / Unsqueeze (opset 13+: axes is an input)
    for name, x, axes in [("squeeze_axism2", f32(1, 3, 1, 5), [-2]), ("squeeze_all", f32(1, 3, 1, 5), None),
                          ("squeeze_1_to_s", f32(1), None), ("squeeze_1_axis0", f32(1), [0]), ("squeeze_1x1_both", f32(1, 1), [0, -1]),
                          ("squeeze_none_to_drop", f32(3, 4), None), ("squeeze_s", f32(), None), ("squeeze_0x1", f32(0, 1), [1]),
                          ("squeeze_unsorted", f32(1, 2, 1, 3, 1), [4, 0])]:
        case(name, "Squeeze", [x] + ([] if axes is None else [C(np.array(axes, np.int64))]))
    for name, x, axes in [("unsqueeze_s_0", f32(), [0]), ("unsqueeze_s_01", f32(), [0, 1]), ("unsqueeze_s_m1", f32(), [-1]),
                          ("unsqueeze_3_m1", f32(3), [-1]), ("unsqueeze_3x4_m1_0", f32(3, 4), [-1, 0]),
                          ("unsqueeze_2x3_31", f32(2, 3), [3, 1]), ("unsqueeze_1_0", f32(1), [0]), ("unsqueeze_0x3_1", f32(0, 3), [1]),
                          ("unsqueeze_i64", ints(5), [-2])]:
        case(name, "Unsqueeze", [x, C(np.array(axes, np.int64))])


# ---------------------------------------------------------------- MatMul, Gemm, CumSum, TopK, Range, Trilu
def linalg_cases():
    for a, b in [((4,), (4, 6)), ((5, 4), (4,)), ((7,), (7,)), ((2, 1, 3, 4), (5, 4, 6)), ((3, 1), (1, 5)), ((7, 17), (17, 33)),
                 ((2, 3, 4), (4,)), ((4,), (2, 4, 5)), ((1, 1), (1, 1)), ((1, 33), (33, 17)), ((17, 33), (33, 1)), ((3, 0), (0, 4)),
                 ((0, 4), (4, 5)), ((2, 0, 4), (4, 3)), ((33, 64), (64, 40)), ((2, 300), (300, 7)), ((2, 7, 17), (2, 17, 9)),
                 ((1, 7, 17), (3, 17, 9)), ((3, 7, 17), (17, 9)), ((5, 4), (1, 4, 6)), ((1,), (1, 5)), ((33,), (33, 1))]:
        case(f"matmul_{sh(a)}_{sh(b)}", "MatMul", [f32(*a), f32(*b)])
    case("matmul_const_b", "MatMul", [f32(2, 3, 17), C(f32(17, 33))])
    case("matmul_i32", "MatMul", [ints(3, 4, dtype=np.int32), ints(4, 5, dtype=np.int32)])
    case("matmul_i64", "MatMul", [ints(3, 4), ints(4,)])
    case("matmul_f16", "MatMul", [f32(3, 8).astype(np.float16) * np.float16(0.25), f32(8, 5).astype(np.float16) * np.float16(0.25)])

    def gemm(name, m, k, n, c=None, transA=0, transB=0, **attrs):
        A = f32(k, m) if transA else f32(m, k)
        B = f32(n, k) if transB else f32(k, n)
        ins = [A, B] + ([] if c is None else [c])
        case(name, "Gemm", ins, dict(transA=transA, transB=transB, **attrs))
    gemm("gemm_c_1", 3, 4, 5, C(f32(1)))
    gemm("gemm_c_n", 3, 4, 5, C(f32(5)))
    gemm("gemm_c_m1", 3, 4, 5, C(f32(3, 1)))
    gemm("gemm_c_s", 3, 4, 5, C(f32()))
    gemm("gemm_c_mn", 3, 4, 5, f32(3, 5))
    gemm("gemm_c_1xn", 3, 4, 5, f32(1, 5))
    gemm("gemm_no_c", 3, 4, 5)
    gemm("gemm_transA", 3, 4, 5, C(f32(5)), transA=1)
    gemm("gemm_transB", 3, 4, 5, C(f32(5)), transB=1)
    gemm("gemm_transAB", 3, 4, 5, C(f32(3, 1)), transA=1, transB=1)
    gemm("gemm_alpha_beta", 3, 4, 5, C(f32(5)), alpha=0.5, beta=2.0)
    gemm("gemm_beta0", 3, 4, 5, C(f32(5)), beta=0.0)
    gemm("gemm_m1", 1, 17, 33, C(f32(33)), transB=1)
    gemm("gemm_k1", 7, 1, 9, C(f32(1)))
    gemm("gemm_7_17_33", 7, 17, 33, C(f32(33)), transB=1, alpha=1.5)
    gemm("gemm_n1", 17, 33, 1, C(f32(1)))
    gemm("gemm_m0", 0, 4, 5, C(f32(5)))

    # CumSum
    def cs(name, x, axis, **attrs):
        case(name, "CumSum", [x, C(np.array(axis, np.int64 if not isinstance(axis, np.ndarray) else axis.dtype))], attrs or None)
    cs("cumsum_7", f32(7), 0)
    cs("cumsum_3x17_axism1_excl", f32(3, 17), -1, exclusive=1)
    cs("cumsum_3x17_axism1_rev", f32(3, 17), -1, reverse=1)
    cs("cumsum_3x17_axis0_excl_rev", f32(3, 17), 0, exclusive=1, reverse=1)
    cs("cumsum_2x3x5_axis1", f32(2, 3, 5), 1)
    cs("cumsum_2x3x5_axism2_rev", f32(2, 3, 5), -2, reverse=1)
    cs("cumsum_1", f32(1), 0, exclusive=1)
    cs("cumsum_0x3_axis1", f32(0, 3), 1)
    cs("cumsum_2x67", f32(2, 67), -1)
    cs("cumsum_i64", ints(17), 0, reverse=1)
    cs("cumsum_i32_axis_i32", ints(3, 7, dtype=np.int32), np.array(1, np.int32), exclusive=1)
    cs("cumsum_axis_1elem", f32(3, 7), np.array([1], np.int64))
    case("cumsum_axis_input", "CumSum", [In(f32(4, 5)), In(np.array(-1, np.int64))])

    # TopK
    def topk(name, x, k, **attrs):
        case(name, "TopK", [x, C(np.array([k], np.int64))], attrs or None, outputs=2)
    tie7 = ints(7, lo=-2, hi=3).astype(np.float32)
    topk("topk_7_k3", f32(7), 3)
    topk("topk_7_k3_ties", tie7, 3)
    topk("topk_7_k7_ties_smallest", tie7, 7, largest=0)
    topk("topk_7_k1_smallest", f32(7), 1, largest=0)
    topk("topk_3x17_k5", f32(3, 17), 5, axis=-1)
    topk("topk_3x17_k2_axis0_ties", ints(3, 17, lo=-1, hi=2).astype(np.float32), 2, axis=0)
    topk("topk_k0", f32(3, 5), 0)
    topk("topk_1_k1", f32(1), 1)
    topk("topk_2x33x3_axis1", f32(2, 33, 3), 9, axis=1, largest=0)
    topk("topk_2x67_k17", f32(2, 67), 17)
    topk("topk_i64_ties", ints(2, 9, lo=-2, hi=3), 4)
    topk("topk_i32", ints(9, dtype=np.int32), 4, largest=0)
    topk("topk_inf", np.array([1, np.inf, -np.inf, 0, 3], np.float32), 3)

    # Range
    for name, vals in [("range_f32", (0.0, 10.0, 3.0)), ("range_f32_down", (10.0, 0.0, -3.0)), ("range_f32_empty", (1.0, 1.0, 1.0)),
                       ("range_f32_wrong_sign", (0.0, 5.0, -1.0)), ("range_f32_quarter", (0.0, 1.0, 0.25)), ("range_f32_tenth", (0.0, 1.0, 0.1)),
                       ("range_f32_neg", (-2.5, 3.0, 0.5))]:
        case(name, "Range", [np.float32(v) for v in vals])
    case("range_i64", "Range", [np.int64(-5), np.int64(7), np.int64(2)])
    case("range_i64_down", "Range", [np.int64(5), np.int64(-6), np.int64(-3)])
    case("range_i32", "Range", [np.int32(0), np.int32(17), np.int32(1)])
    case("range_i64_input", "Range", [C(np.int64(0)), In(np.int64(33)), C(np.int64(4))])

    # Trilu
    def tri(name, x, k=None, upper=1):
        case(name, "Trilu", [x] + ([] if k is None else [C(np.int64(k))]), {"upper": upper})
    tri("trilu_upper_4x5", f32(4, 5))
    tri("trilu_lower_4x5", f32(4, 5), upper=0)
    tri("trilu_upper_k1", f32(4, 5), 1)
    tri("trilu_upper_km1", f32(5, 4), -1)
    tri("trilu_lower_k2", f32(4, 5), 2, upper=0)
    tri("trilu_lower_km2", f32(4, 5), -2, upper=0)
    tri("trilu_upper_k10", f32(4, 5), 10)
    tri("trilu_lower_km10", f32(4, 5), -10, upper=0)
    tri("trilu_upper_km10", f32(4, 5), -10)
    tri("trilu_batched", f32(2, 3, 7, 9), 1, upper=0)
    tri("trilu_0x3", f32(0, 3))
    tri("trilu_1x1_lower", f32(1, 1), upper=0)
    tri("trilu_i64", ints(3, 17), -1)
    tri("trilu_bool", boolean(4, 4), 0, upper=0)
    tri("trilu_17x33", f32(17, 33), 3)


def pack(model, got, folder, data):
    """Rewrites the group's model with its outputs gathered by element type into sequences (one
    SequenceConstruct per type, output named after the type, items in node order) and writes the
    expected sequences: a file per type rather than per node keeps the suite small on disk."""
    by_type = {}
    for out in model.graph.output:
        by_type.setdefault(out.type.tensor_type.elem_type, []).append(out.name)
    del model.graph.output[:]
    fixture.write_sequences(model, by_type, got, data)
    onnx.save(model, folder / "model.onnx")


def width_cases():
    """Data movement copies elements by width: 1-byte (bool, uint8, int8), 2-byte (float16) and
    8-byte (int64, double) elements through the same shapes."""
    gens = {"bool": lambda *s: boolean(*s), "u8": lambda *s: ints(*s, lo=0, hi=255, dtype=np.uint8),
            "i8": lambda *s: ints(*s, lo=-128, hi=127, dtype=np.int8), "f16": lambda *s: f32(*s).astype(np.float16),
            "f64": lambda *s: f32(*s).astype(np.float64), "i32": lambda *s: ints(*s, dtype=np.int32)}
    for t, g in gens.items():
        w = f"width_{t}"
        case(f"{w}_transpose3", "Transpose", [g(7, 9, 17)], {"perm": [2, 0, 1]})
        case(f"{w}_transpose5", "Transpose", [g(2, 3, 1, 5, 7)], {"perm": [4, 2, 0, 3, 1]})
        case(f"{w}_slice_rev", "Slice", [g(3, 17), i64(-1), i64(I64_MIN), i64(-1), i64(-1)])
        case(f"{w}_slice_step2", "Slice", [g(5, 33), i64(1, 0), i64(I64_MAX, 33), i64(0, 1), i64(2, 3)])
        case(f"{w}_concat", "Concat", [g(2, 3), g(2, 0), g(2, 17)], {"axis": -1})
        case(f"{w}_expand", "Expand", [g(3, 1), i64(2, 3, 17)])
        case(f"{w}_tile", "Tile", [g(2, 3), i64(2, 3)])
        case(f"{w}_gather_axis1", "Gather", [g(3, 7), np.array([[-1, 0], [6, 2]], np.int64)], {"axis": 1})
        case(f"{w}_gather_s", "Gather", [g(5, 3), np.int64(-1)])
        case(f"{w}_gatherelements", "GatherElements", [g(3, 5), np.array([[4, -5, 0], [1, 1, -1]], np.int64)], {"axis": 1})
        case(f"{w}_split", "Split", [g(2, 17), i64(5, 12)], {"axis": 1}, outputs=2)
        case(f"{w}_reshape", "Reshape", [g(2, 3, 4), i64(0, -1)])
        case(f"{w}_unsqueeze_s", "Unsqueeze", [g(), i64(0, -1)])
        if t not in ("bool", "i8"):  # ORT: "Could not find an implementation for Where(16)"
            case(f"{w}_where", "Where", [boolean(3, 1), g(1, 17), g()])
        if t not in ("bool", "u8", "i8"):  # ORT: none for Trilu(14) of uint8 / int8 (bool is in the trilu group)
            case(f"{w}_trilu", "Trilu", [g(3, 5)], {"upper": 0})
    for t in ["u8", "i8", "i32", "f64"]:
        g = gens[t]
        case(f"width_{t}_equal", "Equal", [g(3, 1), g(1, 4)])
        case(f"width_{t}_max", "Max", [g(3, 1), g(1, 4)])
        case(f"width_{t}_reducemax", "ReduceMax", [g(3, 17)], {"axes": [-1]})
        case(f"width_{t}_argmax", "ArgMax", [g(3, 17)], {"axis": -1, "select_last_index": 1})
        case(f"width_{t}_topk", "TopK", [g(3, 17), i64(4)], {"largest": 0}, outputs=2)
    case("width_f64_add", "Add", [f32().astype(np.float64), f32(1).astype(np.float64)])
    case("width_f64_softmax", "Softmax", [f32(3, 17).astype(np.float64)])
    case("width_f64_cumsum", "CumSum", [f32(3, 17).astype(np.float64), C(np.int64(-1))], {"exclusive": 1})
    case("width_f64_matmul", "MatMul", [f32(3, 17).astype(np.float64), f32(17).astype(np.float64)])
    case("width_f64_exp", "Exp", [f32(17).astype(np.float64)])
    case("width_f16_cumsum", "CumSum", [f32(17).astype(np.float16) * np.float16(0.25), C(np.int64(0))])
    case("width_f16_reducesum", "ReduceSum", [f32(3, 17).astype(np.float16), i64(-1)])
    case("width_f16_softmax", "Softmax", [f32(2, 17).astype(np.float16)])
    case("width_f16_layernorm", "LayerNormalization", [f32(2, 17).astype(np.float16), C(f32(17).astype(np.float16)),
                                                        C(f32(17).astype(np.float16))], {"axis": -1})


def kernel_path_cases():
    """Sizes that reach the larger kernels' other branches: Softmax rows of more than 128 (a
    pairwise sum in halves) and a middle axis of fewer than 8, 8..128 and more (columns side by
    side); Transpose's tiles (16 x 16 for 4-byte elements in 8 x 8 register blocks, 64 / 32 / 8
    for 1- / 2- / 8-byte ones) whole, partial and merged with neighbouring axes; TopK's blocks of
    16 with ties across them, k of 1, the axis and more than a block."""
    for op in ["Softmax", "LogSoftmax"]:
        t = f"kpath_{op.lower()}"
        for shape, axis in [((2, 300), -1), ((1, 129), -1), ((2, 256), 1), ((1, 300, 2), 1), ((1, 129, 3), 1), ((4, 7, 2), 1),
                            ((3, 8, 17), -2), ((2, 200, 1), 1), ((5, 3, 40), 0)]:
            case(f"{t}_{sh(shape)}_axis{axis}".replace("-", "m"), op, [f32(*shape, scale=3)], {"axis": axis})
    case("kpath_hardmax_ties", "Hardmax", [ints(3, 17, lo=-1, hi=2).astype(np.float32)])
    case("kpath_hardmax_axis0", "Hardmax", [ints(5, 3, lo=-1, hi=2).astype(np.float32)], {"axis": 0})
    case("kpath_softmax_f64_middle", "Softmax", [f32(2, 9, 3).astype(np.float64)], {"axis": 1})
    case("kpath_softmax_f16_middle", "Softmax", [f32(2, 9, 3).astype(np.float16)], {"axis": 1})
    for shape, perm, dt in [((33, 47), [1, 0], np.float32), ((2, 20, 33), [0, 2, 1], np.float32), ((48, 32), [1, 0], np.float32),
                            ((4, 16, 16), [0, 2, 1], np.float32), ((2, 17, 2, 20), [0, 3, 2, 1], np.float32),
                            ((2, 17, 3, 19), [3, 1, 2, 0], np.float32), ((16, 8), [1, 0], np.float32), ((70, 33), [1, 0], np.float16),
                            ((130, 65), [1, 0], np.bool_), ((17, 20), [1, 0], np.int64), ((3, 17, 20), [0, 2, 1], np.float64),
                            ((66, 64), [1, 0], np.uint8), ((2, 17, 3, 18), [0, 3, 1, 2], np.float32), ((1, 40, 1, 33), [3, 2, 1, 0], np.float32)]:
        x = boolean(*shape) if dt == np.bool_ else ints(*shape, lo=0, hi=255, dtype=np.uint8) if dt == np.uint8 else \
            ints(*shape) if dt == np.int64 else f32(*shape).astype(dt)
        case(f"kpath_transpose_{np.dtype(dt).name}_{sh(shape)}_p" + "".join(map(str, perm)), "Transpose", [x], {"perm": perm})
    ties = ints(3, 200, lo=-2, hi=3).astype(np.float32)
    for k, largest in [(1, 1), (5, 1), (5, 0), (17, 1), (40, 0), (200, 1)]:
        case(f"kpath_topk_ties_k{k}_l{largest}", "TopK", [ties, i64(k)], {"largest": largest}, outputs=2)
    case("kpath_topk_sorted_in", "TopK", [np.tile(np.arange(67, dtype=np.float32), (2, 1)), i64(20)], outputs=2)
    case("kpath_topk_sorted_desc", "TopK", [np.tile(np.arange(67, dtype=np.float32)[::-1].copy(), (2, 1)), i64(20)], {"largest": 0},
         outputs=2)
    case("kpath_topk_inf_ties", "TopK", [np.array([[np.inf, 1, np.inf, -np.inf] * 9], np.float32), i64(5)], outputs=2)
    case("kpath_topk_middle_axis", "TopK", [ties.reshape(3, 40, 5), i64(7)], {"axis": 1}, outputs=2)
    case("kpath_topk_f64", "TopK", [ties.astype(np.float64), i64(9)], outputs=2)
    case("kpath_argmax_long", "ArgMax", [ties], {"axis": -1, "select_last_index": 1})
    case("kpath_argmin_long_middle", "ArgMin", [ties.reshape(3, 40, 5)], {"axis": 1})
    case("kpath_cumsum_long", "CumSum", [f32(2, 300), C(np.int64(-1))], {"reverse": 1})
    case("kpath_reducesum_long", "ReduceSum", [f32(2, 150, 3), i64(1)], {"keepdims": 0})
    case("kpath_reducemax_long", "ReduceMax", [f32(3, 300)], {"axes": [-1]})
    case("kpath_layernorm_long", "LayerNormalization", [f32(2, 300), C(f32(300)), C(f32(300))], {"axis": -1})


def activation_cases():
    """The other activations and unary ops, on IEEE specials and on 67 values (vector body and
    tail); PRelu's slope broadcast in every allowed form."""
    v = f32(67, scale=3)
    v[[0, 9, 33, 66]] = [0.0, -0.0, 5.0, -5.0]
    for op, attrs in [("PRelu", None), ("ThresholdedRelu", {"alpha": 0.5}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
                      ("HardSwish", None), ("Shrink", {"bias": 0.5, "lambd": 1.0}), ("Elu", {"alpha": 0.7}), ("Celu", {"alpha": 1.5}),
                      ("Selu", None), ("Softsign", None), ("Softplus", None), ("Sin", None), ("Cos", None), ("Tan", None),
                      ("Atan", None), ("Sinh", None), ("Cosh", None), ("Asinh", None), ("IsNaN", None), ("IsInf", None),
                      ("Sign", None), ("Floor", None), ("Ceil", None), ("Round", None), ("Reciprocal", None)]:
        slope = [C(np.float32(0.25))] if op == "PRelu" else []
        # (the NaN of HardSigmoid and Celu in groups of their own: refeval gave 1 and 0, see misc_cases)
        case(f"act_{op.lower()}_special", op, [SPECIAL] + slope, attrs,
             group=f"act_nan_{op.lower()}" if op in ("HardSigmoid", "Celu") and not FLAT else None)
        case(f"act_{op.lower()}_67", op, [v] + slope, attrs)
    u = np.clip(f32(67, scale=0.5), -0.99, 0.99)
    for op in ["Asin", "Acos", "Atanh"]:
        case(f"act_{op.lower()}_67", op, [u])
    case("act_acosh_67", "Acosh", [pos(67, lo=1.0, hi=5.0)])
    case("act_sin_large", "Sin", [np.array([100.0, -100.0, 1000.5, 3.1415927, -3.1415927, 1.5707964, 1e4, 31.4] * 3, np.float32)])
    case("act_cos_large", "Cos", [np.array([100.0, -100.0, 1000.5, 3.1415927, -3.1415927, 1.5707964, 1e4, 31.4] * 3, np.float32)])
    case("act_isinf_neg_only", "IsInf", [SPECIAL], {"detect_positive": 0})
    case("act_isinf_pos_only", "IsInf", [SPECIAL], {"detect_negative": 0})
    case("act_sign_i64", "Sign", [ints(7)])
    case("act_selu_attrs", "Selu", [v], {"alpha": 2.0, "gamma": 0.5})
    x4 = f32(2, 3, 4, 5)
    for name, slope in [("c11", f32(3, 1, 1)), ("1", f32(1)), ("s", f32()), ("w", f32(5)), ("hw", f32(4, 5)), ("full", f32(2, 3, 4, 5)),
                        ("1c11", f32(1, 3, 1, 1))]:
        case(f"act_prelu_slope_{name}", "PRelu", [x4, slope])
    case("act_prelu_s_s", "PRelu", [f32(), f32()])
    case("act_prelu_67_slope_67", "PRelu", [v, f32(67)])
    case("act_prelu_2x67_slope_const_1", "PRelu", [f32(2, 67), C(np.array([0.1], np.float32))])
    case("act_prelu_f16", "PRelu", [f32(3, 17).astype(np.float16), f32(17).astype(np.float16)])


def misc_cases():
    """Other standard operators at their edges: Shape's start / end, Size, Flatten, ConstantOfShape
    of an empty shape (a scalar), NonZero of a scalar, EyeLike, Compress, GatherND, Scatter*, Pad,
    DepthToSpace, OneHot with negative indices, ReverseSequence, Einsum, NaN through the piecewise
    activations (HardSigmoid and Celu of NaN are NaN: max(0, min(1, nan)) as the schema's numpy
    reference computes it)."""
    for name, x, attrs in [("shape_s", f32(), {}), ("shape_0x3", f32(0, 3), {}), ("shape_start_m1", f32(2, 3, 4), {"start": -1}),
                           ("shape_end_m5", f32(2, 3, 4), {"end": -5}), ("shape_start_10", f32(2, 3, 4), {"start": 10}),
                           ("shape_start_gt_end", f32(2, 3, 4), {"start": 2, "end": 1}), ("shape_start_m10_end_10", f32(2, 3, 4), {"start": -10, "end": 10}),
                           ("shape_s_start_m1", f32(), {"start": -1})]:
        case(f"misc_{name}", "Shape", [x], attrs)
    for name, x in [("size_s", f32()), ("size_0x3", f32(0, 3)), ("size_big", f32(2, 3, 5))]:
        case(f"misc_{name}", "Size", [x])
    for name, x, axis in [("flatten_axis0", f32(2, 3, 4), 0), ("flatten_axism1", f32(2, 3, 4), -1), ("flatten_axis3", f32(2, 3, 4), 3),
                          ("flatten_s", f32(), 0), ("flatten_0x3", f32(0, 3, 2), 2), ("flatten_1d", f32(7), 1)]:
        case(f"misc_{name}", "Flatten", [x], {"axis": axis})
    v = helper.make_tensor("value", TensorProto.INT64, [1], [7])
    for name, shp in [("cos_empty", np.zeros(0, np.int64)), ("cos_2x0", np.array([2, 0], np.int64)), ("cos_1", np.array([1], np.int64))]:
        case(f"misc_{name}", "ConstantOfShape", [C(shp)], {"value": v})
    case("misc_cos_default", "ConstantOfShape", [C(np.array([3], np.int64))])
    case("misc_nonzero_s", "NonZero", [np.float32(3.0)])
    case("misc_nonzero_s_zero", "NonZero", [np.float32(0.0)])
    case("misc_nonzero_2d", "NonZero", [ints(3, 4, lo=-1, hi=2)])
    case("misc_nonzero_empty", "NonZero", [f32(0, 3)])
    case("misc_nonzero_bool", "NonZero", [boolean(17)])
    case("misc_eyelike_k", "EyeLike", [f32(3, 5)], {"k": 2})
    case("misc_eyelike_km", "EyeLike", [f32(4, 3)], {"k": -1, "dtype": TensorProto.INT64})
    case("misc_eyelike_kbig", "EyeLike", [f32(3, 3)], {"k": 5})
    case("misc_compress_none", "Compress", [f32(3, 4), np.array([True, False, True], bool)])
    case("misc_compress_axis1_short", "Compress", [f32(3, 4), np.array([False, True], bool)], {"axis": 1})
    case("misc_compress_axism1", "Compress", [f32(3, 4), np.array([True, False, True, True], bool)], {"axis": -1})
    case("misc_compress_all_false", "Compress", [f32(3, 4), np.zeros(3, bool)], {"axis": 0})
    case("misc_gathernd", "GatherND", [f32(2, 3, 4), np.array([[1, -1], [0, 2]], np.int64)])
    case("misc_gathernd_batch", "GatherND", [f32(2, 3, 4), np.array([[[1], [0]], [[2], [2]]], np.int64)], {"batch_dims": 1})
    case("misc_gathernd_full", "GatherND", [f32(2, 3), np.array([[1, 2], [0, -3]], np.int64)])
    case("misc_scatterel_add", "ScatterElements", [f32(3, 4), np.array([[0, 1], [0, 1]], np.int64), f32(2, 2)], {"axis": 1, "reduction": "add"})
    case("misc_scatterel_neg", "ScatterElements", [f32(3, 4), np.array([[-1], [0]], np.int64), f32(2, 1)], {"axis": 0})
    case("misc_scatternd", "ScatterND", [f32(4, 3), np.array([[1], [-1]], np.int64), f32(2, 3)])
    case("misc_scatternd_mul", "ScatterND", [f32(4, 3), np.array([[1, 2], [1, 2]], np.int64), f32(2)], {"reduction": "mul"})
    case("misc_pad_const", "Pad", [f32(2, 3), C(np.array([1, -1, 0, 2], np.int64)), C(np.float32(9.0))])
    case("misc_pad_reflect", "Pad", [f32(3, 4), C(np.array([0, 2, 0, 3], np.int64))], {"mode": "reflect"})
    case("misc_pad_edge", "Pad", [f32(3, 4), C(np.array([2, 0, 1, 0], np.int64))], {"mode": "edge"})
    case("misc_pad_0x3", "Pad", [f32(0, 3), C(np.array([1, 0, 1, 0], np.int64))])
    case("misc_d2s_dcr", "DepthToSpace", [f32(1, 8, 2, 3)], {"blocksize": 2})
    case("misc_d2s_crd", "DepthToSpace", [f32(1, 8, 2, 3)], {"blocksize": 2, "mode": "CRD"})
    case("misc_s2d", "SpaceToDepth", [f32(1, 2, 4, 6)], {"blocksize": 2})
    case("misc_onehot", "OneHot", [np.array([0, -1, 3, 5], np.int64), C(np.array([4], np.int64)), C(np.array([0.0, 1.0], np.float32))], {"axis": -1})
    case("misc_onehot_axis0", "OneHot", [np.array([[1, 2], [-4, 0]], np.int64), C(np.int64(4)), C(np.array([-1, 5], np.int64))], {"axis": 0})
    case("misc_revseq", "ReverseSequence", [f32(4, 3, 2), np.array([4, 1, 0 + 2], np.int64)], {"batch_axis": 1, "time_axis": 0})
    case("misc_einsum_bij", "Einsum", [f32(2, 3, 4), f32(2, 4, 5)], {"equation": "bij,bjk->bik"})
    case("misc_einsum_trace", "Einsum", [f32(4, 4)], {"equation": "ii->"})
    case("misc_einsum_outer", "Einsum", [f32(3), f32(4)], {"equation": "i,j->ij"})
    case("misc_einsum_ellipsis", "Einsum", [f32(2, 3, 4), f32(4)], {"equation": "...j,j->..."})
    case("misc_det", "Det", [f32(2, 3, 3)])
    case("misc_lpnorm", "LpNormalization", [f32(3, 5)], {"axis": -1, "p": 1})
    case("misc_mvn", "MeanVarianceNormalization", [f32(2, 3, 4, 5)])
    case("misc_instnorm", "InstanceNormalization", [f32(2, 3, 5), C(f32(3)), C(f32(3))])
    case("misc_bitshift", "BitShift", [np.array([1, 2, 255], np.uint8), np.array([1, 7, 1], np.uint8)], {"direction": "LEFT"})
    case("misc_hardmax_s", "Hardmax", [f32(1)])
    case("misc_reducel1", "ReduceL1", [f32(2, 3, 4)], {"axes": [-1, 0]})
    case("misc_reducelogsum", "ReduceLogSum", [pos(2, 3, 4)], {"axes": [1], "keepdims": 0})
    case("misc_mean_bcast", "Mean", [f32(3, 1), f32(1, 4), f32()])
    case("misc_xor", "Xor", [boolean(3, 1), boolean(4)])
    case("misc_lessorequal", "LessOrEqual", [ints(17, lo=-2, hi=3).astype(np.float32), C(np.float32(0))])
    case("misc_greaterorequal", "GreaterOrEqual", [ints(3, 1, lo=-2, hi=3), ints(1, 4, lo=-2, hi=3)])
    case("misc_isinf_f16", "IsNaN", [SPECIAL.astype(np.float16)])
    case("misc_sum_f16_nan", "Sum", [SPECIAL.astype(np.float16), SPECIAL[::-1].astype(np.float16)])
    case("misc_clip_nan_bound", "Clip", [f32(7), C(np.float32(np.nan)), C(np.float32(1.0))])
    case("misc_hardsigmoid_vec_nan", "HardSigmoid", [np.array([np.nan] * 3 + [0.5] * 14, np.float32)],
         group=None if FLAT else "act_nan_hardsigmoid")
    case("misc_celu_vec_nan", "Celu", [np.array([np.nan] * 3 + [-0.5] * 14, np.float32)], group=None if FLAT else "act_nan_celu")
    case("misc_elu_nan", "Elu", [SPECIAL])
    case("misc_selu_nan", "Selu", [SPECIAL])
    case("misc_thresholdedrelu_nan", "ThresholdedRelu", [SPECIAL])
    case("misc_shrink_nan", "Shrink", [SPECIAL], {"lambd": 0.5})
    case("misc_softsign_nan", "Softsign", [SPECIAL])
    case("misc_mod_int_neg_zero", "Mod", [np.array([-7, 7, -7, 7, 0], np.int32), np.array([3, -3, -3, 3, -3], np.int32)])

def conv_cases():
    """Conv (1x1, padded, asymmetric pads, strides with dilations, auto_pad SAME_UPPER / SAME_LOWER /
    VALID, depthwise with multiplier, groups, 1-D, causal 1-D depthwise, 3-D, kernel = input, batch
    0), ConvTranspose (output_padding, output_shape, groups, 1-D dilated), MaxPool / AveragePool
    (ceil_mode, count_include_pad, auto_pad, dilations, 1-D, 3-D, int8, the Indices output),
    global pools, BatchNormalization, Resize. Left out: MaxPool over a window holding NaN (ORT
    ignores the NaN, refeval propagates it as numpy's max); AveragePool dilations (opset 19)."""
    def conv(name, x, w, b=None, **attrs):
        case(f"conv_{name}", "Conv", [x, C(w)] + ([C(b)] if b is not None else []), attrs)
    conv("1x1", f32(1, 3, 5, 7), f32(4, 3, 1, 1), f32(4))
    conv("1x1_stride2", f32(1, 3, 5, 7), f32(4, 3, 1, 1), strides=[2, 2])
    conv("3x3_pad1", f32(2, 3, 7, 9), f32(5, 3, 3, 3), f32(5), pads=[1, 1, 1, 1])
    conv("3x3_asym_pad", f32(1, 2, 6, 5), f32(3, 2, 3, 3), pads=[0, 2, 1, 0])
    conv("3x3_stride2_dil2", f32(1, 2, 11, 13), f32(3, 2, 3, 3), strides=[2, 2], dilations=[2, 2], pads=[2, 1, 2, 1])
    conv("same_upper", f32(1, 2, 6, 7), f32(3, 2, 4, 3), auto_pad="SAME_UPPER", strides=[2, 2])
    conv("same_lower", f32(1, 2, 6, 7), f32(3, 2, 4, 3), auto_pad="SAME_LOWER", strides=[2, 2])
    conv("valid", f32(1, 2, 6, 7), f32(3, 2, 4, 3), auto_pad="VALID")
    conv("depthwise", f32(2, 6, 9, 8), f32(6, 1, 3, 3), f32(6), group=6, pads=[1, 1, 1, 1])
    conv("depthwise_mult2", f32(1, 3, 9, 8), f32(6, 1, 3, 3), group=3, strides=[2, 1], pads=[1, 0, 1, 2])
    conv("depthwise_5x5_s2", f32(1, 4, 17, 17), f32(4, 1, 5, 5), f32(4), group=4, strides=[2, 2], pads=[2, 2, 2, 2])
    conv("group2", f32(1, 4, 6, 6), f32(6, 2, 3, 3), group=2)
    conv("1d", f32(2, 3, 17), f32(4, 3, 3), f32(4), pads=[1, 1])
    conv("1d_k1", f32(1, 5, 33), f32(7, 5, 1))
    conv("1d_depthwise_causal", f32(1, 8, 33), f32(8, 1, 4), group=8, pads=[3, 0])
    conv("3d", f32(1, 2, 4, 5, 6), f32(3, 2, 2, 3, 3), pads=[0, 1, 1, 1, 1, 0])
    conv("kernel_eq_input", f32(1, 3, 4, 5), f32(2, 3, 4, 5))
    conv("out_1x1", f32(1, 1, 3, 3), f32(1, 1, 3, 3), strides=[3, 3])
    conv("batch0", f32(0, 3, 5, 5), f32(2, 3, 3, 3))
    conv("large_ch", f32(1, 33, 7, 7), f32(17, 33, 3, 3), f32(17), pads=[1, 1, 1, 1])
    case("convtranspose_basic", "ConvTranspose", [f32(1, 2, 4, 5), C(f32(2, 3, 3, 3))], {"strides": [2, 2]})
    case("convtranspose_pads_outpad", "ConvTranspose", [f32(1, 2, 4, 5), C(f32(2, 3, 3, 3)), C(f32(3))], {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]})
    case("convtranspose_group", "ConvTranspose", [f32(1, 4, 3, 3), C(f32(4, 1, 3, 3))], {"group": 4})
    case("convtranspose_1d", "ConvTranspose", [f32(2, 3, 7), C(f32(3, 2, 4))], {"strides": [3], "dilations": [2]})
    case("convtranspose_output_shape", "ConvTranspose", [f32(1, 2, 4, 5), C(f32(2, 3, 3, 3))], {"strides": [2, 2], "output_shape": [10, 11]})
    def pool(name, op, x, **attrs):
        case(f"pool_{name}", op, [x], attrs)
    x = f32(2, 3, 9, 10)
    pool("max_3x3_s2", "MaxPool", x, kernel_shape=[3, 3], strides=[2, 2])
    pool("max_ceil", "MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    pool("max_pads", "MaxPool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    pool("max_dil", "MaxPool", x, kernel_shape=[2, 2], dilations=[2, 2], strides=[1, 2])
    pool("max_same_upper", "MaxPool", x, kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")
    pool("max_same_lower", "MaxPool", x, kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER")
    pool("max_1d", "MaxPool", f32(2, 3, 17), kernel_shape=[4], strides=[3], ceil_mode=1)
    pool("max_3d", "MaxPool", f32(1, 2, 5, 6, 7), kernel_shape=[2, 3, 2], strides=[2, 1, 3])
    pool("max_global_like", "MaxPool", x, kernel_shape=[9, 10])
    pool("max_i8", "MaxPool", ints(1, 2, 5, 5, lo=-100, hi=100, dtype=np.int8), kernel_shape=[2, 2])
    pool("avg_3x3_s2", "AveragePool", x, kernel_shape=[3, 3], strides=[2, 2])
    pool("avg_pads_excl", "AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    pool("avg_pads_incl", "AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    pool("avg_ceil", "AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    pool("avg_ceil_incl", "AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, count_include_pad=1, pads=[1, 0, 1, 0])
    pool("avg_same_upper", "AveragePool", x, kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")
    pool("avg_same_lower_incl", "AveragePool", x, kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER", count_include_pad=1)
    pool("avg_1d", "AveragePool", f32(2, 3, 17), kernel_shape=[4], strides=[3])
    pool("lp", "LpPool", x, kernel_shape=[3, 3], p=3, strides=[2, 2])
    case("pool_globalavg", "GlobalAveragePool", [x])
    case("pool_globalmax", "GlobalMaxPool", [x])
    case("pool_globalavg_1d", "GlobalAveragePool", [f32(2, 3, 17)])
    case("pool_globalavg_1x1", "GlobalAveragePool", [f32(2, 3, 1, 1)])
    case("pool_maxpool_indices", "MaxPool", [f32(1, 2, 5, 6)], {"kernel_shape": [2, 2], "strides": [2, 2]}, outputs=2)
    case("pool_maxpool_indices_pad", "MaxPool", [f32(1, 2, 5, 6)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, outputs=2)
    case("bn_inference", "BatchNormalization", [f32(2, 3, 4, 5), C(f32(3)), C(f32(3)), C(f32(3)), C(pos(3))])
    case("bn_2d", "BatchNormalization", [f32(4, 3), C(f32(3)), C(f32(3)), C(f32(3)), C(pos(3))], {"epsilon": 1e-3})
    case("resize_nearest", "Resize", [f32(1, 2, 3, 4), None, C(np.array([1, 1, 2, 1.5], np.float32))], {"mode": "nearest"})
    case("resize_linear_ac", "Resize", [f32(1, 2, 3, 4), None, None, C(np.array([1, 2, 5, 7], np.int64))], {"mode": "linear", "coordinate_transformation_mode": "align_corners"})
    case("resize_linear_half", "Resize", [f32(1, 2, 3, 4), None, C(np.array([1, 1, 0.6, 2.5], np.float32))], {"mode": "linear"})
    case("resize_cubic", "Resize", [f32(1, 1, 4, 5), None, C(np.array([1, 1, 1.5, 2], np.float32))], {"mode": "cubic"})
    case("resize_nearest_floor_asym", "Resize", [f32(1, 1, 4, 5), None, None, C(np.array([1, 1, 7, 3], np.int64))], {"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"})

def opset_cases():
    """Other opsets' forms (onnx 1.12 knows opset 17 at most, so the output types come from the
    node's first input): Split-18's num_outputs with a shorter last part, the opset-18 reductions'
    axes input and noop_with_empty_axes, Pad-18 axes, ScatterElements-18 max / min, Mish,
    Bitwise*, CenterCropPad, LpPool ceil_mode, Resize axes and keep_aspect_ratio_policy;
    AveragePool-19 dilations, Pad-19 wrap; Gelu-20 (exact and tanh, IEEE specials), ReduceMax-20 of
    bool; GroupNormalization-18 and -21; and the older forms (attributes for Split, Squeeze,
    Unsqueeze, ReduceSum, Clip in opset 11; opset-11 Hardmax / LogSoftmax coercion)."""
    def ocase(name, op, inputs, attrs=None, outputs=1, opset=17):
        case(name, op, inputs, attrs, outputs=outputs, opset=opset)
    v = f32(67, scale=3); v[[0, 9, 33, 66]] = [0.0, -0.0, 5.0, -5.0]
    for k, (n, d) in enumerate([(7, 3), (8, 3), (5, 5), (2, 2), (10, 4), (1, 1), (17, 2)]):
        ocase(f"o18_split_num_{n}_{d}", "Split", [f32(2, n)], {"axis": 1, "num_outputs": d}, outputs=d, opset=18)
    ocase("o18_split_num_axism1_3d", "Split", [f32(2, 3, 7)], {"axis": -1, "num_outputs": 3}, outputs=3, opset=18)
    for op in ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1", "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum"]:
        x = pos(2, 3, 4) if op in ("ReduceLogSum", "ReduceProd") else f32(2, 3, 4)
        t = op.lower()
        ocase(f"o18_{t}_axes_in", op, [x, i64(-1, 0)], {"keepdims": 0}, opset=18)
        ocase(f"o18_{t}_empty_noop1", op, [x, C(np.zeros(0, np.int64))], {"noop_with_empty_axes": 1}, opset=18)
        ocase(f"o18_{t}_empty_noop0", op, [x, C(np.zeros(0, np.int64))], {"keepdims": 0}, opset=18)
        ocase(f"o18_{t}_none_noop1", op, [x], {"noop_with_empty_axes": 1}, opset=18)
        ocase(f"o18_{t}_axes_fed", op, [x, In(np.array([1], np.int64))], opset=18)
    ocase("o18_pad_axes_neg", "Pad", [f32(2, 3, 4), C(np.array([1, 2, 0, 1], np.int64)), None, C(np.array([-1, 0], np.int64))], opset=18)
    ocase("o18_pad_axes_reflect", "Pad", [f32(2, 3, 4), C(np.array([2, 1], np.int64)), None, C(np.array([-1], np.int64))], {"mode": "reflect"}, opset=18)
    ocase("o18_scatterel_max", "ScatterElements", [f32(3, 4), np.array([[0, 0]], np.int64), f32(1, 2)], {"axis": 0, "reduction": "max"}, opset=18)
    ocase("o18_scatterel_min", "ScatterElements", [f32(3, 4), np.array([[1, 1], [1, 2]], np.int64), f32(2, 2)], {"axis": 1, "reduction": "min"}, opset=18)
    ocase("o18_mish", "Mish", [v], opset=18)
    ocase("o18_mish_special", "Mish", [SPECIAL], opset=18)
    ocase("o18_bitwise_and", "BitwiseAnd", [ints(3, 1, dtype=np.int32), ints(4, dtype=np.int32)], opset=18)
    ocase("o18_bitwise_not", "BitwiseNot", [ints(7, dtype=np.int32)], opset=18)
    ocase("o18_centercroppad", "CenterCropPad", [f32(5, 4, 3), C(np.array([3, 6], np.int64))], {"axes": [0, 1]}, opset=18)
    ocase("o18_lppool_ceil", "LpPool", [f32(1, 2, 7, 7)], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, opset=18)
    ocase("o18_resize_axes", "Resize", [f32(1, 2, 3, 4), None, C(np.array([2.0, 1.5], np.float32))], {"axes": [2, 3], "mode": "linear"}, opset=18)
    ocase("o18_resize_keep_ar", "Resize", [f32(1, 1, 4, 6), None, None, C(np.array([3, 3], np.int64))], {"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}, opset=18)
    ocase("o19_avgpool_dil", "AveragePool", [f32(2, 3, 9, 10)], {"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=19)
    ocase("o19_pad_wrap", "Pad", [f32(3, 4), C(np.array([0, 2, 0, 1], np.int64))], {"mode": "wrap"}, opset=19)
    ocase("o20_gelu", "Gelu", [v], opset=20)
    ocase("o20_gelu_tanh", "Gelu", [v], {"approximate": "tanh"}, opset=20)
    ocase("o20_gelu_special", "Gelu", [SPECIAL], opset=20)
    ocase("o20_gelu_tanh_special", "Gelu", [SPECIAL], {"approximate": "tanh"}, opset=20)
    ocase("o20_gelu_s", "Gelu", [f32()], opset=20)
    ocase("o20_gelu_big", "Gelu", [f32(3, 300, scale=3)], {"approximate": "tanh"}, opset=20)
    ocase("o20_reducemax_bool", "ReduceMax", [boolean(3, 5), i64(1)], opset=20)
    ocase("o20_isinf", "IsInf", [SPECIAL], opset=20)
    ocase("o21_groupnorm", "GroupNormalization", [f32(2, 6, 5), C(f32(6)), C(f32(6))], {"num_groups": 3}, opset=21)
    ocase("o21_groupnorm_1grp", "GroupNormalization", [f32(2, 4, 3, 3), C(f32(4)), C(f32(4))], {"num_groups": 1, "epsilon": 1e-3}, opset=21)
    ocase("o18_groupnorm", "GroupNormalization", [f32(2, 6, 5), C(f32(3)), C(f32(3))], {"num_groups": 3}, opset=18)
    ocase("o11_split_attr", "Split", [f32(10)], {"split": [3, 7]}, outputs=2, opset=11)
    ocase("o11_squeeze_attr", "Squeeze", [f32(1, 3, 1)], {"axes": [-1]}, opset=11)
    ocase("o11_unsqueeze_attr", "Unsqueeze", [f32(3)], {"axes": [-1, 0]}, opset=11)
    ocase("o11_reducesum_attr", "ReduceSum", [f32(2, 3, 4)], {"axes": [-2], "keepdims": 0}, opset=11)
    ocase("o11_clip_attr", "Clip", [f32(7), C(np.float32(-0.2))], opset=11)
    ocase("o11_hardmax", "Hardmax", [f32(2, 3, 4)], {"axis": 1}, opset=11)
    ocase("o11_logsoftmax_axis0", "LogSoftmax", [f32(2, 3)], {"axis": 0}, opset=11)


# ---------------------------------------------------------------- identities, special values, aliasing
SPECIAL = np.array([-np.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan], np.float32)


def special_cases():
    """Shortcuts an evaluator may take for an identity operand (x * 1, x + 0, x ** 1, x ** 0) or a
    constant condition must still broadcast; IEEE special values through the exponent shortcuts
    (pow(-inf, 0.5) is +inf where sqrt(-inf) is nan; pow(nan, 0) is 1); an input read by several
    nodes, or twice by one node, must not be overwritten by an in-place kernel."""
    for op, one in [("Mul", 1.0), ("Add", 0.0), ("Sub", 0.0), ("Div", 1.0), ("Pow", 1.0), ("Pow", 0.0)]:
        t = f"ident_{op.lower()}_{str(one).replace('.', 'p')}"
        case(f"{t}_s_by_1", op, [f32(), C(np.array([one], np.float32))])
        case(f"{t}_1_by_s", op, [f32(1), C(np.float32(one))])
        case(f"{t}_3x1_by_1x4", op, [pos(3, 1), C(np.full((1, 4), one, np.float32))])
        case(f"{t}_s_by_2x3", op, [pos(), C(np.full((2, 3), one, np.float32))])
        case(f"{t}_7_by_s", op, [f32(7), C(np.float32(one))])
        if op in ("Mul", "Add"):
            case(f"{t}_const_first_1x1_by_5", op, [C(np.full((1, 1), one, np.float32)), f32(5)])
    case("ident_mul_i64_s_by_1", "Mul", [ints(), C(np.array([1], np.int64))])
    case("ident_add_i64_3_by_2x1", "Add", [ints(3), C(np.zeros((2, 1), np.int64))])
    case("ident_pow_exps_vector", "Pow", [pos(4), C(np.array([2.0, 3.0, 0.5, -1.0], np.float32))])
    case("ident_pow_exps_first2", "Pow", [pos(3, 1), C(np.array([[2.0, 1.0, 2.0]], np.float32))])
    case("ident_pow_all2_s_by_3", "Pow", [away(), C(np.full((3,), 2.0, np.float32))])
    case("ident_pow_all2_2x1_by_1x3", "Pow", [away(2, 1), C(np.full((1, 3), 2.0, np.float32))])
    case("ident_pow_all05_1_by_2x2", "Pow", [pos(1), C(np.full((2, 2), 0.5, np.float32))])
    case("ident_where_true_bcast", "Where", [C(np.ones((3, 1), bool)), f32(), f32(1, 4)])
    case("ident_where_false_bcast", "Where", [C(np.zeros((1,), bool)), f32(2, 3), f32()])
    case("ident_where_true_s", "Where", [C(np.bool_(True)), f32(), f32(1)])
    case("ident_max_single_s", "Max", [f32()])
    case("ident_mean_single_1", "Mean", [f32(1)])
    case("ident_sum_single_2x3", "Sum", [f32(2, 3)])
    case("ident_expand_same", "Expand", [f32(3, 1), i64(3, 1)])
    case("ident_expand_smaller_shape", "Expand", [f32(2, 3, 4), i64(3, 1)])
    case("ident_expand_1_s", "Expand", [f32(), i64(1)])
    case("ident_tile_s", "Tile", [f32(), C(np.zeros(0, np.int64))])
    case("ident_clip_wide", "Clip", [f32(7), C(np.float32(-100)), C(np.float32(100))])
    case("ident_matmul_1_by_1", "MatMul", [f32(1), f32(1)])
    case("ident_matmul_5x1_by_1", "MatMul", [f32(5, 1), f32(1)])
    case("ident_matmul_2x1x3x4_by_1x5x4x6", "MatMul", [f32(2, 1, 3, 4), f32(1, 5, 4, 6)])
    case("ident_gemm_c_1x1", "Gemm", [f32(3, 4), f32(4, 5), C(f32(1, 1))])
    case("ident_gemm_alpha0", "Gemm", [f32(3, 4), f32(4, 5), C(f32(5))], {"alpha": 0.0})
    case("ident_gemm_m1_n1", "Gemm", [f32(1, 7), f32(7, 1), C(f32())])
    case("ident_gemm_no_c_beta", "Gemm", [f32(2, 3), f32(3, 4)], {"beta": 0.5})

    # IEEE special values
    for e in [2.0, 3.0, 0.5, -1.0, 1.5, 0.0, 1.0, -2.0, -0.5]:
        et = str(e).replace(".", "p").replace("-", "m")
        case(f"special_pow_{et}_s", "Pow", [SPECIAL, C(np.float32(e))])
        case(f"special_pow_{et}_1", "Pow", [SPECIAL, C(np.array([e], np.float32))])
    case("special_pow_exp_nan_inf", "Pow", [np.array([[1.0], [2.0], [0.5], [-1.0], [0.0]], np.float32),
                                              C(np.array([np.nan, np.inf, -np.inf, 0.0], np.float32))])
    for op in ["Abs", "Neg", "Sqrt", "Exp", "Log", "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Erf", "Reciprocal", "Floor", "Ceil",
               "Round", "Sign", "Softplus"]:
        case(f"special_{op.lower()}", op, [SPECIAL])
    case("special_round_halves", "Round", [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997], np.float32)])
    case("special_clip", "Clip", [SPECIAL, C(np.float32(-1.0)), C(np.float32(1.0))])
    case("special_cast_bool", "Cast", [SPECIAL], {"to": TensorProto.BOOL})
    case("special_cast_f16", "Cast", [SPECIAL], {"to": TensorProto.FLOAT16})
    case("special_div_zero", "Div", [SPECIAL, C(np.float32(0.0))])
    case("special_mod_fmod", "Mod", [SPECIAL, C(np.float32(1.5))], {"fmod": 1})
    case("special_max_nan", "Max", [SPECIAL, C(np.float32(0.0))])
    case("special_min_nan", "Min", [SPECIAL, C(np.float32(0.0))])
    case("special_softmax_neg_inf", "Softmax", [np.array([[-np.inf, 0.0, 1.0, -np.inf], [-np.inf] * 4, [np.inf, 0, 0, 0]], np.float32)])
    case("special_logsoftmax_neg_inf", "LogSoftmax", [np.array([[-np.inf, 0.0, 1.0, -np.inf], [3.0, 3.0, 3.0, 3.0]], np.float32)])
    case("special_reducemax_inf", "ReduceMax", [np.array([[-np.inf, 1.0], [np.inf, 2.0]], np.float32)], {"axes": [1]})
    case("special_reducelogsumexp_inf", "ReduceLogSumExp", [np.array([[-np.inf, -np.inf], [np.inf, 2.0], [-np.inf, 0.0]], np.float32)],
         {"axes": [1]})
    case("special_equal_nan", "Equal", [SPECIAL, SPECIAL])
    case("special_less_nan", "Less", [SPECIAL, C(np.float32(0.0))])
    case("special_greater_negzero", "Greater", [SPECIAL, C(np.float32(-0.0))])

    # special values inside vector bodies and tails (length 67: 4 x 16 + 3)
    def scattered(seed_scale=3.0):
        v = f32(67, scale=seed_scale)
        v[[0, 5, 8, 15, 16, 31, 32, 40, 63, 64, 66]] = SPECIAL
        return v
    vx, vy = scattered(), scattered()
    vy[[1, 2, 16, 66]] = [np.nan, -np.inf, 1.0, np.nan]
    for op in ["Exp", "Tanh", "Sigmoid", "Erf", "Log", "Sqrt", "Relu", "LeakyRelu", "Abs", "Neg", "Softplus", "Reciprocal"]:
        case(f"vec_{op.lower()}", op, [vx])
    case("vec_exp_bounds", "Exp", [np.array([-104.5, -104.0, -103.97, -103.9, -87.4, -87.33, -87.3, 88.72, 88.7228, 88.73, 89.0,
                                             -0.0, 1e-30, -1e-30, 0.6931472, -0.6931472] * 2, np.float32)])
    case("vec_sigmoid_bounds", "Sigmoid", [np.array([-104.5, -104.0, -88.8, -88.7, -87.3, -20.0, -16.7, 16.7, 20.0, 87.3, 88.7,
                                                     88.8, 104.0, -0.0, 1e-30, -1e-30, 9.0] * 2, np.float32)])
    case("vec_tanh_bounds", "Tanh", [np.array([-10.0, -9.1, -9.0, -8.9, -4.97, -0.0004, 0.0004, 4.97, 8.9, 9.0, 9.1, 10.0, 1e-30,
                                               -0.0, 0.55, -0.55, 20.0] * 2, np.float32)])
    case("vec_max_equal", "Max", [vx, vy])
    case("vec_min_equal", "Min", [vx, vy])
    case("vec_max3_equal", "Max", [vx, vy, f32(67)])
    case("vec_min_equal_then_bcast", "Min", [vx, vy, C(np.float32(0.0))])
    case("vec_max_2x67_nan", "Max", [np.stack([vx, vy]), np.stack([vy, vx])])
    case("vec_clip", "Clip", [vx, C(np.float32(-1.0)), C(np.float32(1.0))])
    case("vec_pow2", "Pow", [vx, C(np.float32(2.0))])
    case("vec_pow05", "Pow", [vx, C(np.float32(0.5))])
    case("vec_add", "Add", [vx, vy])
    case("vec_mul_s", "Mul", [vx, C(np.float32(-2.0))])
    case("vec_where", "Where", [vx > vy, vx, vy])
    case("vec_less", "Less", [vx, vy])
    case("vec_equal", "Equal", [vx, vy])
    case("vec_reducesum_nan", "ReduceSum", [np.stack([vx, vy])], {"keepdims": 0})
    case("vec_softmax_nan", "Softmax", [np.stack([vx, vy, f32(67)])], {"axis": -1})
    case("vec_cast_f16", "Cast", [vx * np.float32(1e4)], {"to": TensorProto.FLOAT16})
    with np.errstate(over="ignore"):  # the largest ones overflow to inf, as they should
        case("vec_cast_f16_back", "Cast", [(vx * np.float32(1e4)).astype(np.float16)], {"to": TensorProto.FLOAT})
    case("vec_f16_add", "Add", [vx.astype(np.float16), vy.astype(np.float16)])
    case("vec_f16_relu", "Relu", [vx.astype(np.float16)])
    case("vec_f16_max", "Max", [vx.astype(np.float16), vy.astype(np.float16)])

    # aliasing: one value read twice by a node, and by a chain of nodes that could reuse its buffer
    for op in ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Equal"]:
        x = pos(17) if op in ("Div", "Pow") else f32(17)
        case(f"alias_{op.lower()}_xx", op, [x, x])
        case(f"alias_{op.lower()}_xx_s", op, [x[0].copy(), x[0].copy()])
    x = In(f32(33))
    case("alias_chain_relu", "Relu", [x], group="alias_chain")
    case("alias_chain_neg", "Neg", [x], group="alias_chain")
    case("alias_chain_add", "Add", [Ref("alias_chain_neg"), x], group="alias_chain")
    case("alias_chain_exp", "Exp", [Ref("alias_chain_relu")], group="alias_chain")
    case("alias_chain_mul", "Mul", [Ref("alias_chain_relu"), Ref("alias_chain_relu")], group="alias_chain")
    case("alias_chain_sigmoid", "Sigmoid", [Ref("alias_chain_neg")], group="alias_chain")
    case("alias_chain_sub", "Sub", [Ref("alias_chain_sigmoid"), Ref("alias_chain_neg")], group="alias_chain")
    case("alias_chain_x", "Identity", [x], group="alias_chain")
    case("alias_chain_reshape", "Reshape", [Ref("alias_chain_neg"), i64(3, 11)], group="alias_chain")
    case("alias_chain_reshape_tanh", "Tanh", [Ref("alias_chain_reshape")], group="alias_chain")
    case("alias_chain_squeeze", "Unsqueeze", [Ref("alias_chain_relu"), i64(0)], group="alias_chain")
    case("alias_chain_clip", "Clip", [Ref("alias_chain_squeeze"), C(np.float32(0.1)), C(np.float32(0.5))], group="alias_chain")
    case("alias_chain_after", "Abs", [Ref("alias_chain_neg")], group="alias_chain")
    case("alias_chain_cast", "Cast", [Ref("alias_chain_after")], {"to": TensorProto.FLOAT}, group="alias_chain")
    case("alias_chain_cast_add", "Add", [Ref("alias_chain_cast"), C(np.float32(1.0))], group="alias_chain")


# ---------------------------------------------------------------- large: the parallel paths
ROWS, COLS = 9, 4099  # 36891 elements: past refeval's 2 x 2^14 parallel threshold, an odd row length


def large_cases():
    """Operands of (9, 4099) built in the graph from Range with exactly rounded float arithmetic
    (Mul, Mod fmod=1, Sub: bit-identical in ORT and refeval), so the models stay small; each result
    is checked through a weighted row sum, MatMul with a (4099,) weight vector also built in the
    graph (a wrong, misplaced or missing element moves it)."""
    def node(name, op, inputs, attrs=None, out=False, outputs=1):
        case(name, op, inputs, attrs, outputs=outputs, group="large", hidden=not out)

    def frac(name, n, mul, scale, shift, shape):
        """scale * fmod(Range(n) * mul, 1) - shift, reshaped."""
        node(f"{name}_r", "Range", [C(np.float32(0)), C(np.float32(n)), C(np.float32(1))])
        node(f"{name}_m", "Mul", [Ref(f"{name}_r"), C(np.float32(mul))])
        node(f"{name}_f", "Mod", [Ref(f"{name}_m"), C(np.float32(1))], {"fmod": 1})
        node(f"{name}_s", "Mul", [Ref(f"{name}_f"), C(np.float32(scale))])
        node(name, "Sub", [Ref(f"{name}_s"), C(np.float32(shift))])
        if shape:
            node(f"{name}_2d", "Reshape", [Ref(name), i64(*shape)])
    frac("X", ROWS * COLS, 0.6180339887, 4.0, 2.0, (ROWS, COLS))
    frac("Y", ROWS * COLS, 0.4142135623, 4.0, 2.0, (ROWS, COLS))
    frac("W", COLS, 0.7548776662, 1.0, 0.5, None)
    frac("R", COLS, 0.5698402910, 2.0, 1.0, None)  # a (4099,) row operand
    node("P", "Abs", [Ref("X_2d")])
    node("P_2d", "Add", [Ref("P"), C(np.float32(0.5))])  # in [0.5, 2.5]
    X, Y, W, P, R = Ref("X_2d"), Ref("Y_2d"), Ref("W"), Ref("P_2d"), Ref("R")
    col = C(f32(ROWS, 1))

    def checked(name, op, inputs, attrs=None):
        node(f"{name}_raw", op, inputs, attrs)
        node(f"large_{name}", "MatMul", [Ref(f"{name}_raw"), W], out=True)
    for op in ["Add", "Sub", "Mul"]:
        checked(f"{op.lower()}_xy", op, [X, Y])
        checked(f"{op.lower()}_row", op, [X, R])
        checked(f"{op.lower()}_col", op, [col, X])
        checked(f"{op.lower()}_s", op, [X, C(np.float32(0.75))])
        checked(f"{op.lower()}_1", op, [C(np.array([0.75], np.float32)), X])
    checked("div_xp", "Div", [X, P])
    checked("div_s", "Div", [X, C(np.float32(3.0))])
    checked("div_by_s", "Div", [C(np.float32(3.0)), P])
    for e, base in [(2.0, X), (3.0, X), (0.5, P), (-1.0, P), (1.5, P)]:
        et = str(e).replace(".", "p").replace("-", "m")
        checked(f"pow_{et}_s", "Pow", [base, C(np.float32(e))])
        checked(f"pow_{et}_1", "Pow", [base, C(np.array([e], np.float32))])
    checked("pow_full", "Pow", [P, Y])
    checked("max3", "Max", [X, Y, R])
    checked("min2", "Min", [X, C(np.float32(0.1))])
    checked("mean3", "Mean", [X, Y, col])
    checked("sum3", "Sum", [X, R, C(np.float32(1.0))])
    node("gt", "Greater", [X, Y])
    checked("where", "Where", [Ref("gt"), X, Y])
    checked("where_s", "Where", [Ref("gt"), X, C(np.float32(-1.0))])
    for op, x in [("Abs", X), ("Neg", X), ("Relu", X), ("Sqrt", P), ("Exp", X), ("Log", P), ("Tanh", X), ("Sigmoid", X), ("Erf", X)]:
        checked(op.lower(), op, [x])
    checked("leakyrelu", "LeakyRelu", [X], {"alpha": 0.1})
    checked("clip", "Clip", [X, C(np.float32(-0.3)), C(np.float32(0.4))])
    checked("clip_min", "Clip", [X, C(np.float32(-0.3))])
    checked("softmax_m1", "Softmax", [X], {"axis": -1})
    checked("softmax_0", "Softmax", [X], {"axis": 0})
    checked("logsoftmax_m1", "LogSoftmax", [X], {"axis": -1})
    checked("layernorm", "LayerNormalization", [X, R, W], {"axis": -1})
    checked("cumsum", "CumSum", [X, C(np.int64(-1))])
    checked("cumsum_rev_excl", "CumSum", [X, C(np.int64(-1))], {"reverse": 1, "exclusive": 1})
    checked("slice_step2", "Slice", [Ref("Y"), i64(1), i64(2 * COLS + 1), i64(0), i64(2)])
    checked("expand", "Expand", [col, i64(ROWS, COLS)])
    checked("identity", "Identity", [X])
    node("xt", "Transpose", [X], {"perm": [1, 0]})
    node("large_transpose", "MatMul", [W, Ref("xt")], out=True)
    node("x3", "Reshape", [X, i64(ROWS, 1, COLS)])
    node("x3t", "Transpose", [Ref("x3")], {"perm": [1, 0, 2]})  # moves only a unit axis
    node("large_transpose_unit", "MatMul", [Ref("x3t"), W], out=True)
    node("large_reducesum", "ReduceSum", [X, i64(-1)], {"keepdims": 0}, out=True)
    node("large_reducemax", "ReduceMax", [X], {"axes": [-1], "keepdims": 0}, out=True)
    node("large_reducel2", "ReduceL2", [X], {"axes": [1]}, out=True)
    node("large_reducelogsumexp", "ReduceLogSumExp", [X], {"axes": [-1]}, out=True)
    node("mean0", "ReduceMean", [X], {"axes": [0], "keepdims": 0})
    node("large_reducemean_axis0", "MatMul", [Ref("mean0"), W], out=True)
    node("large_argmax", "ArgMax", [X], {"axis": -1}, out=True)
    node("large_argmin_last", "ArgMin", [Y], {"axis": 1, "select_last_index": 1}, out=True)
    node("x100", "Mul", [X, C(np.float32(100))])
    node("xi", "Cast", [Ref("x100")], {"to": TensorProto.INT64})
    node("large_cast_i64", "ReduceSum", [Ref("xi"), i64(-1)], {"keepdims": 0}, out=True)
    node("large_topk", "TopK", [X, i64(5)], outputs=2)
    case("large_topk_values", "Identity", [Ref("large_topk")], group="large")
    case("large_topk_indices", "Identity", [Ref("large_topk_1")], group="large")
    node("yt", "Transpose", [Y], {"perm": [1, 0]})
    node("large_matmul", "MatMul", [X, Ref("yt")], out=True)


def build():
    root = pathlib.Path(sys.argv[sys.argv.index("--flat") + 1]) if FLAT else fixture.OUT / SUITE
    shutil.rmtree(root, ignore_errors=True)
    cases = [(group,) + group_model(group) for group in GROUPS]
    folders = []
    for name, model, feeds in cases:
        folder = root / name
        fixture.stage_case(folder, model, feeds)
        folders.append(folder)
    rejected = list(fixture.run_ort_on(folders).items())
    dropped = {n for n, _ in rejected}
    for (name, model, feeds), folder in zip(cases, folders):
        if name in dropped:
            shutil.rmtree(folder)
            continue
        data = fixture.write_inputs(folder, model, feeds)
        got = {o.name: np.load(folder / ".ort" / "outputs" / f"{o.name}.npy") for o in model.graph.output}
        if FLAT:
            for k, out in enumerate(model.graph.output):
                fixture.write_pb(data / f"output_{k}.pb", got[out.name], out.name)
        else:
            pack(model, got, folder, data)
        shutil.rmtree(folder / ".ort")
    print(f"{len(cases) - len(dropped)} cases ({sum(len(GROUPS[c[0]]['nodes']) for c in cases if c[0] not in dropped)} nodes) "
          f"written to {root}")
    for name, why in rejected:
        print(f"ORT refuses {name}: {why}")


if __name__ == "__main__":
    binary_cases()
    variadic_cases()
    unary_cases()
    softmax_cases()
    reduce_cases()
    layernorm_cases()
    movement_cases()
    linalg_cases()
    width_cases()
    kernel_path_cases()
    activation_cases()
    misc_cases()
    conv_cases()
    opset_cases()
    special_cases()
    large_cases()
    build()
