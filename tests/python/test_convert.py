"""Values between numpy and refeval: every ONNX element type, sequences, maps and optionals, both ways.

Each tensor goes in as numpy made it and must come back bit for bit with numpy's dtype; the types numpy
has no dtype for (bfloat16, float8, float4, int4, int2) come back as their raw bits in numpy's integer
types (or as ml_dtypes' types when that package is installed), checked against bits worked by hand.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import refeval

# ONNX element types by number: Debian 12's onnx (1.12) predates the float8, 4-bit and 2-bit ones.
FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, UINT4, INT4, FLOAT4E2M1, FLOAT8E8M0, UINT2, INT2 = range(17, 27)


def model(nodes, inputs, outputs, opset=25, domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains])


def identity(elem_type):
    return model([helper.make_node("Identity", ["x"], ["y"])], [helper.make_tensor_value_info("x", elem_type, None)],
                 [helper.make_tensor_value_info("y", elem_type, None)])


NUMPY_TYPES = [
    (np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE), (np.float16, TensorProto.FLOAT16),
    (np.int8, TensorProto.INT8), (np.uint8, TensorProto.UINT8), (np.int16, TensorProto.INT16), (np.uint16, TensorProto.UINT16),
    (np.int32, TensorProto.INT32), (np.uint32, TensorProto.UINT32), (np.int64, TensorProto.INT64), (np.uint64, TensorProto.UINT64),
    (np.bool_, TensorProto.BOOL), (np.complex64, TensorProto.COMPLEX64), (np.complex128, TensorProto.COMPLEX128),
]


@pytest.mark.parametrize("dtype,elem_type", NUMPY_TYPES, ids=[np.dtype(t).name for t, _ in NUMPY_TYPES])
def test_every_numpy_dtype_round_trips_bit_for_bit(dtype, elem_type):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((2, 3)) * 100).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * x[::-1].astype(dtype)
    view = x.T  # not contiguous: refeval takes a contiguous copy
    (y,) = refeval.ReferenceEvaluator(identity(elem_type)).run(None, {"x": view})
    assert y.dtype == np.dtype(dtype) and y.shape == view.shape
    assert y.tobytes() == np.ascontiguousarray(view).tobytes()


def test_strings_from_str_and_object_arrays_come_back_as_objects():
    sess = refeval.ReferenceEvaluator(identity(TensorProto.STRING))
    for x in (np.array([["a", "bc"], ["", "déjà"]]), np.array(["x", "yz"], dtype=object)):
        (y,) = sess.run(None, {"x": x})
        assert y.dtype == object and y.shape == x.shape and y.tolist() == x.tolist()


def test_a_bytes_array_is_its_bytes_not_their_repr():
    (y,) = refeval.ReferenceEvaluator(identity(TensorProto.STRING)).run(None, {"x": np.array([b"a", b"bc"])})
    assert y.tolist() == ["a", "bc"]  # not "b'a'"


@pytest.mark.parametrize("x,elem_type", [(np.array(True), TensorProto.BOOL), (np.float32(2.5), TensorProto.FLOAT),
                                         (np.array(7, np.int64), TensorProto.INT64)], ids=["bool", "float32", "int64"])
def test_a_scalar_stays_0_d(x, elem_type):
    (y,) = refeval.ReferenceEvaluator(identity(elem_type)).run(None, {"x": x})
    assert y.shape == () and y.dtype == np.asarray(x).dtype and y.item() == np.asarray(x).item()


def test_an_empty_tensor_keeps_its_shape_and_dtype():
    (y,) = refeval.ReferenceEvaluator(identity(TensorProto.FLOAT)).run(None, {"x": np.zeros((0, 4), np.float32)})
    assert y.dtype == np.float32 and y.shape == (0, 4)


def ml_dtypes_installed():
    try:
        import ml_dtypes  # noqa: F401
        return True
    except ImportError:
        return False


# Cast of [1, 2, -0.5, 0] to each type numpy lacks: the bits, from the formats' definitions.
NARROW = [
    ("bfloat16", TensorProto.BFLOAT16, np.uint16, [0x3F80, 0x4000, 0xBF00, 0x0000]),
    ("float8_e4m3fn", FLOAT8E4M3FN, np.uint8, [0x38, 0x40, 0xB0, 0x00]),  # bias 7
    ("float8_e4m3fnuz", FLOAT8E4M3FNUZ, np.uint8, [0x40, 0x48, 0xB8, 0x00]),  # bias 8
    ("float8_e5m2", FLOAT8E5M2, np.uint8, [0x3C, 0x40, 0xB8, 0x00]),  # bias 15
    ("float8_e5m2fnuz", FLOAT8E5M2FNUZ, np.uint8, [0x40, 0x44, 0xBC, 0x00]),  # bias 16
    ("float4_e2m1fn", FLOAT4E2M1, np.uint8, [0x2, 0x4, 0x9, 0x0]),  # bias 1, one element a byte
]


@pytest.mark.skipif(ml_dtypes_installed(), reason="with ml_dtypes the values come back as its types")
@pytest.mark.parametrize("name,elem_type,storage,bits", NARROW, ids=[n for n, *_ in NARROW])
def test_types_numpy_lacks_come_back_as_their_bits(name, elem_type, storage, bits):
    m = model([helper.make_node("Cast", ["x"], ["y"], to=elem_type)], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
              [helper.make_tensor_value_info("y", elem_type, [4])])
    (y,) = refeval.ReferenceEvaluator(m).run(None, {"x": np.array([1, 2, -0.5, 0], np.float32)})
    assert y.dtype == storage and y.tolist() == bits


@pytest.mark.parametrize("elem_type,storage,values", [(INT4, np.int8, [-8, -1, 0, 7]), (UINT4, np.uint8, [0, 1, 9, 15]),
                                                      (INT2, np.int8, [-2, -1, 0, 1]), (UINT2, np.uint8, [0, 1, 2, 3])],
                         ids=["int4", "uint4", "int2", "uint2"])
def test_narrow_integers_come_back_one_element_a_byte(elem_type, storage, values):
    m = model([helper.make_node("Cast", ["x"], ["y"], to=elem_type)], [helper.make_tensor_value_info("x", TensorProto.INT32, [4])],
              [helper.make_tensor_value_info("y", elem_type, [4])])
    (y,) = refeval.ReferenceEvaluator(m).run(None, {"x": np.array(values, np.int32)})
    assert y.dtype == storage and y.tolist() == values


def test_a_list_or_tuple_is_a_sequence_and_a_sequence_output_a_list():
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.INT64, None)
    m = model([helper.make_node("SequenceLength", ["s"], ["n"]), helper.make_node("SequenceInsert", ["s", "t"], ["out"])],
              [seq, helper.make_tensor_value_info("t", TensorProto.INT64, None)],
              [helper.make_tensor_value_info("n", TensorProto.INT64, []), helper.make_tensor_sequence_value_info("out", TensorProto.INT64, None)])
    sess = refeval.ReferenceEvaluator(m)
    a, b, t = np.array([1, 2], np.int64), np.array([[3]], np.int64), np.array([9], np.int64)
    for s in ([a, b], (a, b)):
        n, out = sess.run(None, {"s": s, "t": t})
        assert n == 2 and isinstance(out, list) and [o.tolist() for o in out] == [[1, 2], [[3]], [9]]
    n, out = sess.run(None, {"s": [], "t": t})  # empty: the element type comes from the declaration
    assert n == 0 and [o.tolist() for o in out] == [[9]]


def map_type(key, value):
    t = onnx.TypeProto()  # onnx 1.12's helper has no make_map_type_proto
    t.map_type.key_type = key
    t.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(value, None))
    return t


def test_a_dict_is_a_map_and_a_map_output_a_dict():
    # DictVectorizer reads a map int64 -> float; ZipMap writes a sequence of maps.
    nodes = [helper.make_node("DictVectorizer", ["m"], ["v"], domain="ai.onnx.ml", int64_vocabulary=[10, 20, 30]),
             helper.make_node("ZipMap", ["v"], ["z"], domain="ai.onnx.ml", classlabels_strings=["a", "b", "c"])]
    z_type = helper.make_sequence_type_proto(map_type(TensorProto.STRING, TensorProto.FLOAT))
    m = model(nodes, [helper.make_value_info("m", map_type(TensorProto.INT64, TensorProto.FLOAT))], [helper.make_tensor_value_info("v", TensorProto.FLOAT, None), helper.make_value_info("z", z_type)],
              opset=17, domains=["ai.onnx.ml"])
    # the values as numpy made them: a dict of Python floats would be a map to double
    v, z = refeval.ReferenceEvaluator(m).run(None, {"m": {30: np.float32(1.5), 10: np.float32(-2.0)}})
    np.testing.assert_array_equal(v, np.array([[-2.0, 0, 1.5]], np.float32))
    assert z == [{"a": -2.0, "b": 0.0, "c": 1.5}]


def test_an_optional_input_takes_none_or_a_value_and_an_empty_optional_output_is_none():
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"]), helper.make_node("Identity", ["o"], ["same"])]
    out_opt = helper.make_value_info("same", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    sess = refeval.ReferenceEvaluator(model(nodes, [opt], [helper.make_tensor_value_info("has", TensorProto.BOOL, []), out_opt], opset=18))
    has, same = sess.run(None, {"o": None})
    assert not has and same is None
    has, same = sess.run(None, {"o": np.array([1.5], np.float32)})
    assert has and same.tolist() == [1.5]


def test_feeds_numpy_cannot_give_refeval_are_errors_naming_the_input():
    sess = refeval.ReferenceEvaluator(identity(TensorProto.FLOAT))
    with pytest.raises(refeval.InputError, match="input 'x': numpy dtype datetime64\\[D\\] has no ONNX element type"):
        sess.run(None, {"x": np.array(["2026-01-01"], dtype="datetime64[D]")})
    with pytest.raises(refeval.InputError, match="input 'x' is None but is not declared optional"):
        sess.run(None, {"x": None})
