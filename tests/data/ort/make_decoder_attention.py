"""ORT fixtures for the decoder attention contrib ops: suites dmmha (DecoderMaskedMultiHeadAttention),
sparse_attention (SparseAttention) and m_rotary (MRotaryEmbedding), expected outputs from ORT 1.30.

Forms ORT 1.30's CPU kernels refuse or get wrong are tested against the oracles in the unit tests
(tests/ops/contrib/*_test.cc) instead of here:
  DecoderMaskedMultiHeadAttention: packed QKV (ORT fails a reshape), an unshared past (ORT
    requires past_present_share_buffer=1), value head size != key head size (refused),
    past_sequence_length 0 (ORT takes the whole buffer as the past and writes the new row into
    the next head's buffer).
  SparseAttention: batches whose key_total_sequence_lengths differ from total_sequence_length
    (ORT reads its softmax buffer at other offsets than it wrote), head sizes that are not a
    multiple of 8, or of 16 with RoPE, and cos/sin caches whose width is not a multiple of 8
    (refused).
  MRotaryEmbedding: more tokens than cos/sin cache rows (refused without is_packed_batching).
SparseAttention also needs past and present to be one buffer in ORT, so its suite runs with
share_kv_buffers.js preloaded (it binds present_* to the past_* feeds).

    /usr/bin/python3 tests/data/ort/make_decoder_attention.py
"""
import os
import pathlib

import numpy as np
from onnx import TensorProto, helper

import fixture

HERE = pathlib.Path(__file__).resolve().parent
rng = np.random.default_rng(20261203)
F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
ELEM = {np.float32: F32, np.float16: F16, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def model(op, inputs, feeds, outputs, out_type, **attrs):
    """One com.microsoft node; inputs lists graph input names ('' = omitted input)."""
    node = helper.make_node(op, inputs, [o for o in outputs], domain="com.microsoft", **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, ELEM[feeds[n].dtype.type], list(feeds[n].shape)) for n in inputs if n]
    graph_outputs = [helper.make_tensor_value_info(o, out_type, None) for o in outputs if o]
    m = helper.make_model(helper.make_graph([node], op, graph_inputs, graph_outputs),
                          opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m


def write(suite, name, op, inputs, feeds, outputs, dtype=np.float32, **attrs):
    used = {n: feeds[n] for n in inputs if n}
    fixture.write_case(suite, name, model(op, inputs, used, outputs, ELEM[dtype], **attrs), used)


# --- DecoderMaskedMultiHeadAttention ----------------------------------------------------------

DMMHA_INPUTS = ["query", "key", "value", "mask_index", "attention_bias", "past_key", "past_value",
                "past_sequence_length", "beam_width", "cache_indirection", "bias"]


def dmmha(name, B=2, N=2, h=8, M=8, P=5, cross_L=0, packed=False, bias=False, mask=False, attn_bias=None,
          beams=1, qk=False, dtype=np.float32, **attrs):
    D = N * h
    feeds = {"query": rand(B, 1, D, dtype=dtype)}
    T = cross_L if cross_L else P + 1
    if cross_L:
        feeds["key"], feeds["value"] = rand(B, N, cross_L, h, dtype=dtype), rand(B, N, cross_L, h, dtype=dtype)
    else:
        feeds["key"], feeds["value"] = rand(B, 1, D, dtype=dtype), rand(B, 1, D, dtype=dtype)
        feeds["past_key"], feeds["past_value"] = rand(B, N, M, h, dtype=dtype), rand(B, N, M, h, dtype=dtype)
        feeds["past_sequence_length"] = np.array([P], np.int32)
        attrs["past_present_share_buffer"] = 1
    if bias:
        feeds["bias"] = rand(3 * D, dtype=dtype)
    if mask:
        m = np.ones((B, T), np.int32)
        m[0, 1] = 0
        m[B - 1, T - 2] = 0
        feeds["mask_index"] = m
    if attn_bias:
        feeds["attention_bias"] = rand(attn_bias[0], attn_bias[1], 1, T, dtype=dtype)
    if beams > 1:
        feeds["beam_width"] = np.array([beams], np.int32)
        feeds["cache_indirection"] = rng.integers(0, beams, (B // beams, beams, M)).astype(np.int32)
    inputs = [n if n in feeds else "" for n in DMMHA_INPUTS]
    while inputs[-1] == "":
        inputs.pop()
    outputs = ["output"] + ([] if cross_L else ["present_key", "present_value"])
    if qk:
        outputs += [""] * (3 - len(outputs)) + ["qk"]
        attrs["output_qk"] = 1
    write("dmmha", name, "DecoderMaskedMultiHeadAttention", inputs, feeds, outputs, dtype, num_heads=N, **attrs)


dmmha("self_shared_bias_mask_qk", bias=True, mask=True, qk=True)
dmmha("self_attention_bias_scale_b1", B=1, N=4, h=4, M=6, P=3, attn_bias=(1, 4), scale=0.3)
dmmha("self_attention_bias_per_batch_filter", attn_bias=(2, 1), mask=True, mask_filter_value=-50.0)
dmmha("self_last_row", M=6, P=5)
dmmha("beam_cache_indirection", B=4, beams=2, mask=True, qk=True)
dmmha("cross_mask_qk_query_bias", cross_L=6, mask=True, bias=True, qk=True)
dmmha("cross_b1", B=1, N=4, h=4, cross_L=3)
dmmha("self_float16", N=2, h=8, M=6, P=2, bias=True, dtype=np.float16)

# --- SparseAttention ----------------------------------------------------------------------------

# The two 4 x 4 block layouts of ORT's SparseAttention documentation, in CSR form.
DOC_ROWS = np.array([[0, 1, 3, 5, 8], [0, 1, 3, 6, 9]], np.int32)
DOC_COLS = np.array([[0, 0, 1, 1, 2, 1, 2, 3, -1], [0, 0, 1, 0, 1, 2, 0, 2, 3]], np.int32)


def sparse(name, B=1, N=4, Nkv=2, h=8, S=8, M=10, block=2, total=8, rows=DOC_ROWS, cols=DOC_COLS, packed=False,
           rot_half=0, dtype=np.float32, **attrs):
    feeds = {"past_key": rand(B, Nkv, M, h, dtype=dtype), "past_value": rand(B, Nkv, M, h, dtype=dtype),
             "block_row_indices": rows, "block_col_indices": cols,
             "total_sequence_length": np.array([total], np.int32),
             "key_total_sequence_lengths": np.full((B,), total, np.int32)}
    inputs = ["query", "key", "value", "past_key", "past_value", "block_row_indices", "block_col_indices",
              "total_sequence_length", "key_total_sequence_lengths"]
    if packed:
        feeds["query"] = rand(B, S, (N + 2 * Nkv) * h, dtype=dtype)
        inputs[1] = inputs[2] = ""
    else:
        feeds["query"] = rand(B, S, N * h, dtype=dtype)
        feeds["key"], feeds["value"] = rand(B, S, Nkv * h, dtype=dtype), rand(B, S, Nkv * h, dtype=dtype)
    if rot_half:
        angles = np.arange(total + 4)[:, None] / 100.0 ** (np.arange(rot_half)[None, :] / rot_half)
        feeds["cos_cache"], feeds["sin_cache"] = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
        inputs += ["cos_cache", "sin_cache"]
        attrs["do_rotary"] = 1
    write("sparse_attention", name, "SparseAttention", inputs, feeds, ["output", "present_key", "present_value"], dtype,
          num_heads=N, kv_num_heads=Nkv, sparse_block_size=block, **attrs)


os.environ["NODE_OPTIONS"] = "--require " + str(HERE / "share_kv_buffers.js")
sparse("prompt_gqa_two_layouts")
sparse("decode_b2_scale", B=2, S=1, total=7, scale=0.25)
sparse("chunk_b2_one_layout_mqa", B=2, N=2, Nkv=1, S=3, total=7, rows=DOC_ROWS[1:], cols=DOC_COLS[1:])
sparse("decode_packed_rotary", B=2, h=16, S=1, total=6, packed=True, rot_half=8)
sparse("prompt_rotary_interleaved", h=16, rot_half=8, rotary_interleaved=1)
sparse("chunk_partial_rotary", B=2, N=2, Nkv=2, h=32, S=2, total=7, rot_half=8)
sparse("decode_float16", B=2, S=1, total=5, dtype=np.float16)
del os.environ["NODE_OPTIONS"]

# --- MRotaryEmbedding ---------------------------------------------------------------------------


def m_rotary(name, B=2, S=3, N=2, h=8, rot=0, bnsh=False, max_pos=16, dtype=np.float32, **attrs):
    half = (rot or h) // 2
    x = rand(*((B, N, S, h) if bnsh else (B, S, N * h)), dtype=dtype)
    angles = np.arange(max_pos)[:, None] / 50.0 ** (np.arange(half)[None, :] / half)
    feeds = {"input": x, "position_ids": rng.integers(0, max_pos, (3, B, S)).astype(np.int64),
             "cos_cache": np.cos(angles).astype(dtype), "sin_cache": np.sin(angles).astype(dtype)}
    if rot:
        attrs["rotary_embedding_dim"] = rot
    if not bnsh or rot:
        attrs["num_heads"] = N
    write("m_rotary", name, "MRotaryEmbedding", ["input", "position_ids", "cos_cache", "sin_cache"], feeds,
          ["output"], dtype, **attrs)


m_rotary("sectioned", mrope_section=[2, 1, 1])
m_rotary("interleaved_layout", h=16, mrope_section=[4, 2, 2], mrope_layout=1)
m_rotary("pairs_bnsh_b1", B=1, bnsh=True, mrope_section=[1, 2, 1], interleaved=1)
m_rotary("partial_rotary_scale", h=16, rot=8, mrope_section=[2, 1, 1], mrope_layout=1, scale=0.75)
m_rotary("float16", mrope_section=[2, 1, 1], mrope_layout=1, dtype=np.float16)
