"""ORT fixtures for com.microsoft GatherBlockQuantized, MoE and QMoE (suites
`gather_block_quantized` and `moe`). Run with Debian's python3 (numpy, onnx 1.12):
  /usr/bin/python3 tests/data/ort/make_moe.py

What ONNX Runtime 1.30's CPU kernels cannot check, and is tested against the oracles of
tests/ops/contrib/{gather_block_quantized,moe,qmoe}_test.cc only:
  - GatherBlockQuantized with float8/float4 data (no such CPU kernel in 1.30) or bfloat16 scales
    ("DequantizeLinear into BFLOAT16 is not implemented yet"); out-of-range indices are an error
    in 1.30 as in refeval, so no fixture holds one.
  - MoE in float16 or bfloat16 (1.30 registers a float CPU kernel only), with fc3 weights
    ("FC3 is not implemented for CPU MoE"), swiglu_fusion 0 or 2 ("CPU MoE only supports
    interleaved SwiGLU format"), and use_sparse_mixer (the CPU kernel ignores it).
  - QMoE with normalize_routing_weights = 0 and no router_weights: 1.30's CPU kernel renormalises
    the k weights regardless (softmax over the top-k logits), unlike its CUDA kernel, MoE and
    refeval, so these fixtures set it to 1. Also fc3 and swiglu_fusion 0/2 (refused on CPU).
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import fixture

rng = np.random.default_rng(20261203)
MS = "com.microsoft"


def model(op, graph_inputs, initializers, node_inputs, attrs, out_type):
    node = helper.make_node(op, node_inputs, ["y"], domain=MS, **attrs)
    inputs = [helper.make_tensor_value_info(n, t, list(s)) for n, t, s in graph_inputs]
    graph = helper.make_graph([node], op.lower(), inputs, [helper.make_tensor_value_info("y", out_type, None)],
                              initializer=initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    m.ir_version = 10
    return m


def pack_last(values, bits):
    """Packs integers in [0, 2^bits) along the last axis, low-order bits first, padding rows."""
    per = 8 // bits
    v = np.asarray(values, np.int64)
    pad = (-v.shape[-1]) % per
    v = np.concatenate([v, np.zeros(v.shape[:-1] + (pad,), np.int64)], axis=-1)
    v = v.reshape(v.shape[:-1] + (v.shape[-1] // per, per))
    out = np.zeros(v.shape[:-1], np.int64)
    for i in range(per):
        out |= (v[..., i] & ((1 << bits) - 1)) << (i * bits)
    return out.astype(np.uint8)


def int4_initializer(name, values, signed):
    """An INT4 / UINT4 initializer (onnx 1.12 lacks the enums: 22 and 21), two per byte."""
    flat = np.asarray(values, np.int64).reshape(-1) & 15
    if flat.size % 2:
        flat = np.append(flat, 0)
    t = TensorProto()
    t.name, t.data_type = name, 22 if signed else 21
    t.dims.extend(np.shape(values))
    t.raw_data = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()
    return t


def scales_for(shape, qaxis, block, dtype):
    s = list(shape)
    s[qaxis] = -(-shape[qaxis] // block)
    return (rng.random(s) + 0.5).astype(dtype)


# ---------------------------------------------------------------------------------------------
# GatherBlockQuantized


def gbq_uint8(name, rows, cols, bits, block, zero, indices, scale_type):
    q = rng.integers(0, 1 << bits, (rows, cols))
    s = scales_for((rows, cols), 1, block, scale_type)
    inits = [numpy_helper.from_array(pack_last(q, bits), "data"), numpy_helper.from_array(s, "scales")]
    names = ["data", "indices", "scales"]
    if zero:
        inits.append(numpy_helper.from_array(pack_last(rng.integers(0, 1 << bits, s.shape), bits), "zero_points"))
        names.append("zero_points")
    attrs = dict(bits=bits, block_size=block, gather_axis=0, quantize_axis=1)
    out_type = TensorProto.FLOAT16 if scale_type == np.float16 else TensorProto.FLOAT
    ind_type = TensorProto.INT32 if indices.dtype == np.int32 else TensorProto.INT64
    m = model("GatherBlockQuantized", [("indices", ind_type, indices.shape)], inits, names, attrs, out_type)
    fixture.write_case("gather_block_quantized", name, m, {"indices": indices})


def gbq_int4(name, shape, g, qa, signed, zero, indices, scale_type, block=16):
    lo, hi = (-8, 8) if signed else (0, 16)
    q = rng.integers(lo, hi, shape)
    s = scales_for(shape, qa, block, scale_type)
    inits = [int4_initializer("data", q, signed), numpy_helper.from_array(s, "scales")]
    names = ["data", "indices", "scales"]
    if zero:
        inits.append(int4_initializer("zero_points", rng.integers(lo, hi, s.shape), signed))
        names.append("zero_points")
    out_type = TensorProto.FLOAT16 if scale_type == np.float16 else TensorProto.FLOAT
    m = model("GatherBlockQuantized", [("indices", TensorProto.INT64, indices.shape)], inits, names,
              dict(gather_axis=g, quantize_axis=qa, block_size=block), out_type)
    fixture.write_case("gather_block_quantized", name, m, {"indices": indices})


def gather_block_quantized():
    # 48 columns in blocks of 16: an odd block count, so each row of 4-bit zero points is padded
    gbq_uint8("uint8_bits4_zero_points", 6, 48, 4, 16, True, np.array([[0, 5, -1], [2, -6, 3]], np.int64), np.float32)
    gbq_uint8("uint8_bits8_float16", 5, 32, 8, 16, False, np.array([4, 0, -2], np.int32), np.float16)
    gbq_uint8("uint8_bits2_zero_points_partial_block", 4, 80, 2, 32, True, np.array([3, 1], np.int64), np.float32)
    gbq_int4("int4_embedding_batch2", (10, 64), 0, 1, True, False, np.array([[1, 9], [0, -3]], np.int64), np.float32, 32)
    gbq_int4("int4_gather_columns_quantize_rows", (32, 6), 1, 0, True, True, np.array([5, 0, -6], np.int64), np.float16)
    gbq_int4("uint4_rank3_partial_block", (2, 3, 20), 1, 2, False, True, np.array([2, -1], np.int64), np.float32)


# ---------------------------------------------------------------------------------------------
# MoE and QMoE


def moe_case(name, hidden, inter, experts, attrs, rows_shape=(4,), bias=True, legacy=False):
    fused = attrs.get("activation_type") == "swiglu"
    n1 = 2 * inter if fused else inter
    x = rng.standard_normal(rows_shape + (hidden,)).astype(np.float32)
    r = rng.standard_normal((int(np.prod(rows_shape)), experts)).astype(np.float32)
    w1 = (rng.standard_normal((experts, n1, hidden)) * 0.4).astype(np.float32)
    w2 = (rng.standard_normal((experts, hidden, inter)) * 0.4).astype(np.float32)
    if legacy:  # ORT's legacy labels for the same memory
        w1, w2 = w1.reshape(experts, hidden, n1), w2.reshape(experts, inter, hidden)
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    names = ["x", "r", "w1", "", "w2"]
    if bias:
        inits += [numpy_helper.from_array((rng.standard_normal((experts, n1)) * 0.1).astype(np.float32), "b1"),
                  numpy_helper.from_array((rng.standard_normal((experts, hidden)) * 0.1).astype(np.float32), "b2")]
        names = ["x", "r", "w1", "b1", "w2", "b2"]
    m = model("MoE", [("x", TensorProto.FLOAT, x.shape), ("r", TensorProto.FLOAT, r.shape)], inits, names, attrs,
              TensorProto.FLOAT)
    fixture.write_case("moe", name, m, {"x": x, "r": r})


def quantized_layer(prefix, experts, n, k, bits, block, zero, scale_type):
    """Random packed weights (E, n, k / pack), scales and optional zero points (packed along the
    rows without blocks, along the blocks with them)."""
    q = rng.integers(0, 1 << bits, (experts, n, k))
    blocks = -(-k // block) if block else 0
    s = ((rng.random((experts, n, blocks) if block else (experts, n)) + 0.5) / (1 << bits)).astype(scale_type)
    inits = [numpy_helper.from_array(pack_last(q, bits), prefix + "w"), numpy_helper.from_array(s, prefix + "s")]
    zp = None
    if zero:
        z = rng.integers(0, 1 << bits, s.shape)
        zp = numpy_helper.from_array(pack_last(z, bits), prefix + "z")
    return inits, zp


def qmoe_case(name, hidden, inter, experts, bits, block, zero, attrs, rows_shape=(4,), dtype=np.float32,
              router_weights=False, bias=True):
    fused = attrs.get("activation_type") == "swiglu"
    n1 = 2 * inter if fused else inter
    elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    x = rng.standard_normal(rows_shape + (hidden,)).astype(dtype)
    r = rng.standard_normal((int(np.prod(rows_shape)), experts)).astype(dtype)
    l1, z1 = quantized_layer("fc1_", experts, n1, hidden, bits, block, zero, dtype)
    l2, z2 = quantized_layer("fc2_", experts, hidden, inter, bits, block, zero, dtype)
    inits = l1 + l2
    names = ["x", "r", "fc1_w", "fc1_s", "", "fc2_w", "fc2_s", "", "", "", ""]
    if bias:
        inits += [numpy_helper.from_array((rng.standard_normal((experts, n1)) * 0.1).astype(dtype), "b1"),
                  numpy_helper.from_array((rng.standard_normal((experts, hidden)) * 0.1).astype(dtype), "b2")]
        names[4], names[7] = "b1", "b2"
    if zero:
        inits += [z1, z2]
        names += ["fc1_z", "fc2_z", ""]
    graph_inputs = [("x", elem, x.shape), ("r", elem, r.shape)]
    feeds = {"x": x, "r": r}
    if router_weights:
        names += [""] * (14 - len(names)) + ["rw"]
        rw = rng.random((r.shape[0], experts)).astype(dtype)
        graph_inputs.append(("rw", elem, rw.shape))
        feeds["rw"] = rw
    attrs = dict(attrs, expert_weight_bits=bits)
    if block:
        attrs["block_size"] = block
    m = model("QMoE", graph_inputs, inits, names, attrs, elem)
    fixture.write_case("moe", name, m, feeds)


def moe():
    moe_case("moe_relu_k1", 16, 8, 4, dict(k=1, activation_type="relu"))
    moe_case("moe_gelu_k2_normalized_batch2", 16, 8, 4, dict(k=2, activation_type="gelu", normalize_routing_weights=1),
             rows_shape=(2, 3))
    moe_case("moe_silu_k2_no_bias", 16, 8, 4, dict(k=2, activation_type="silu"), bias=False)
    moe_case("moe_identity_k2_normalized_legacy_shapes", 16, 8, 3,
             dict(k=2, activation_type="identity", normalize_routing_weights=1), legacy=True)
    moe_case("moe_swiglu_interleaved", 16, 8, 4,
             dict(k=2, activation_type="swiglu", swiglu_fusion=1, swiglu_limit=0.8, activation_alpha=1.702,
                  activation_beta=1.0, normalize_routing_weights=1))
    swiglu = dict(k=2, activation_type="swiglu", swiglu_fusion=1, swiglu_limit=7.0, activation_alpha=1.702,
                  activation_beta=1.0, normalize_routing_weights=1)
    qmoe_case("qmoe_int4_block32_swiglu", 64, 32, 4, 4, 32, False, swiglu)
    qmoe_case("qmoe_int8_rows_zero_points_relu", 32, 16, 4, 8, 0, True,
              dict(k=2, activation_type="relu", normalize_routing_weights=1))
    qmoe_case("qmoe_int2_block16_zero_points_silu_batch2", 32, 32, 4, 2, 16, True,
              dict(k=2, activation_type="silu", normalize_routing_weights=1), rows_shape=(2, 2))
    qmoe_case("qmoe_int4_rows_k1_gelu", 32, 16, 4, 4, 0, False,
              dict(k=1, activation_type="gelu", normalize_routing_weights=1))
    qmoe_case("qmoe_int4_router_weights", 32, 32, 4, 4, 16, True, dict(k=2, activation_type="identity"),
              router_weights=True)
    qmoe_case("qmoe_int4_float16", 32, 32, 4, 4, 16, False,
              dict(k=2, activation_type="relu", normalize_routing_weights=1), dtype=np.float16)


if __name__ == "__main__":
    gather_block_quantized()
    moe()
