#!/usr/bin/python3
"""Writes the suite standard_llm_ops: the ai.onnx LLM operators (Attention 23/24, RMSNormalization,
RotaryEmbedding, TensorScatter) with ONNX Runtime 1.30's outputs as the expected ones (fixture.py).

  /usr/bin/python3 tests/data/ort/make_standard_llm_ops.py

ORT 1.30 agrees with the ONNX specification and its errata on every case written here (softcap
before the mask, qk_matmul_output modes in pipeline order, bottom-right causal alignment for the
internal and external cache, zero rows when a query sees no key). What it cannot run, covered by
refeval's unit tests instead:
  - Attention-25 (left_window_size / right_window_size): "Unrecognized attribute: left_window_size";
  - an opset-24 attn_mask shorter than the keys: "inconsistent total_sequence_length";
  - RMSNormalization with X float16 and a float scale (Y float per the schema): ORT expands the
    function body, whose Mul of the X-typed normalised value by scale does not type-check.
"""
import numpy as np
from onnx import TensorProto, helper

import fixture

SUITE = "standard_llm_ops"
RNG = np.random.default_rng(2024)

def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def model(nodes, inputs, outputs, opset):
    """inputs / outputs: (name, elem_type, shape) triples."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10,
                             producer_name="refeval make_standard_llm_ops.py")


F = TensorProto.FLOAT


def info(feeds, name):
    a = feeds[name]
    kind = {np.dtype(np.float32): F, np.dtype(np.int64): TensorProto.INT64, np.dtype(np.bool_): TensorProto.BOOL,
            np.dtype(np.float16): TensorProto.FLOAT16}[a.dtype]
    return (name, kind, list(a.shape))


def attention_case(name, opset, feeds, attrs, outputs, input_names=("Q", "K", "V", "attn_mask", "past_key", "past_value",
                                                                       "nonpad_kv_seqlen")):
    """One Attention node; feeds holds the given inputs by name (absent ones are left out)."""
    ins = [n if n in feeds else "" for n in input_names]
    while ins and ins[-1] == "":
        ins.pop()
    node = helper.make_node("Attention", ins, [o[0] for o in outputs], **attrs)
    m = model([node], [info(feeds, n) for n in ins if n], [(o[0], F, None) for o in outputs if o[0]], opset)
    fixture.write_case(SUITE, name, m, feeds)


def attention_cases():
    Y, PK, PV, QK = ("Y",), ("present_key",), ("present_value",), ("qk_matmul_output",)
    # Opset 23, internal cache, causal (offset = past length), batch 2, 4-D.
    attention_case("attention23_causal_past_b2", 23,
                   {"Q": rand(2, 2, 3, 8), "K": rand(2, 2, 3, 8), "V": rand(2, 2, 3, 8),
                    "past_key": rand(2, 2, 4, 8), "past_value": rand(2, 2, 4, 8)},
                   {"is_causal": 1}, [Y, PK, PV])
    # Opset 23, 3-D inputs, GQA (4 query heads over 2 KV heads, repeat-interleave), causal prefill.
    attention_case("attention23_gqa_3d_causal", 23,
                   {"Q": rand(1, 5, 4 * 6), "K": rand(1, 5, 2 * 6), "V": rand(1, 5, 2 * 4)},
                   {"is_causal": 1, "q_num_heads": 4, "kv_num_heads": 2}, [Y])
    # Opset 23, GQA with an internal cache and a float mask broadcast over heads, batch 2.
    attention_case("attention23_gqa_past_float_mask", 23,
                   {"Q": rand(2, 4, 2, 8), "K": rand(2, 1, 2, 8), "V": rand(2, 1, 2, 8),
                    "attn_mask": rand(2, 1, 2, 5), "past_key": rand(2, 1, 3, 8), "past_value": rand(2, 1, 3, 8)},
                   {}, [Y, PK, PV])
    # Opset 23, softcap with a boolean mask and an explicit scale (softcap comes before the mask).
    attention_case("attention23_softcap_bool_mask", 23,
                   {"Q": rand(2, 2, 4, 8), "K": rand(2, 2, 6, 8), "V": rand(2, 2, 6, 8),
                    "attn_mask": np.array([[True] * 5 + [False]] * 4)},
                   {"softcap": 1.5, "scale": 0.5}, [Y])
    # qk_matmul_output in each mode; softcap and a float mask make the four stages differ.
    for mode in range(4):
        attention_case(f"attention23_qk_output_mode{mode}", 23,
                       {"Q": rand(1, 2, 3, 4), "K": rand(1, 2, 5, 4), "V": rand(1, 2, 5, 4), "attn_mask": rand(3, 5)},
                       {"softcap": 1.0, "qk_matmul_output_mode": mode}, [Y, ("",), ("",), QK])
    # Opset 24, external cache: K/V are the whole cache (8), nonpad_kv_seqlen per batch, causal
    # with offset nonpad - S (bottom-right), 2 new queries.
    attention_case("attention24_nonpad_causal_b2", 24,
                   {"Q": rand(2, 2, 2, 8), "K": rand(2, 2, 8, 8), "V": rand(2, 2, 8, 8),
                    "nonpad_kv_seqlen": np.array([5, 8], np.int64)},
                   {"is_causal": 1}, [Y])
    # Opset 24, external cache decode step with GQA and a boolean mask. ORT 1.30 rejects a mask
    # shorter than the cache ("inconsistent total_sequence_length"), which opset 24 allows (padded
    # with -inf, onnx PR #7164), so the mask here has the full length; the unit tests cover the
    # short mask.
    attention_case("attention24_nonpad_gqa_decode_mask", 24,
                   {"Q": rand(2, 4, 1, 8), "K": rand(2, 2, 6, 8), "V": rand(2, 2, 6, 8),
                    "attn_mask": np.array([[True, False, True, True, True, False]]), "nonpad_kv_seqlen": np.array([3, 5], np.int64)},
                   {"is_causal": 1}, [Y])
    # Opset 24, nonpad without causality (a padding mask only), 3-D inputs.
    attention_case("attention24_nonpad_3d_not_causal", 24,
                   {"Q": rand(2, 3, 2 * 4), "K": rand(2, 6, 2 * 4), "V": rand(2, 6, 2 * 4),
                    "nonpad_kv_seqlen": np.array([6, 2], np.int64)},
                   {"q_num_heads": 2, "kv_num_heads": 2}, [Y])
    # A fully masked query row (boolean mask false everywhere on row 1) gives zeros in Y and in the
    # mode-3 output (errata).
    mask = np.ones((2, 1, 3, 4), bool)
    mask[0, 0, 1, :] = False
    attention_case("attention23_fully_masked_row_mode3", 23,
                   {"Q": rand(2, 2, 3, 4), "K": rand(2, 2, 4, 4), "V": rand(2, 2, 4, 4), "attn_mask": mask},
                   {"qk_matmul_output_mode": 3}, [Y, ("",), ("",), QK])
    # Opset 24, nonpad_kv_seqlen shorter than the query block: offset 1 - 3 < 0, so the first two
    # queries of batch 0 see no key (zero rows), batch 1 has offset 2.
    attention_case("attention24_nonpad_negative_offset", 24,
                   {"Q": rand(2, 1, 3, 4), "K": rand(2, 1, 5, 4), "V": rand(2, 1, 5, 4),
                    "nonpad_kv_seqlen": np.array([1, 5], np.int64)},
                   {"is_causal": 1}, [Y])
    # Opset 24, internal cache with softcap (the opset-24 schema with the cache of opset 23).
    attention_case("attention24_causal_past_softcap", 24,
                   {"Q": rand(1, 2, 2, 8), "K": rand(1, 2, 2, 8), "V": rand(1, 2, 2, 8),
                    "past_key": rand(1, 2, 3, 8), "past_value": rand(1, 2, 3, 8)},
                   {"is_causal": 1, "softcap": 3.0}, [Y, PK, PV])


def rms_cases():
    for name, x, scale, attrs in (
            ("rms_norm_last_axis_b2", rand(2, 3, 16), rand(16), {}),
            ("rms_norm_axis1_eps", rand(2, 3, 8), rand(3, 8), {"axis": 1, "epsilon": 1e-3}),
            ("rms_norm_fp16", rand(2, 4, 8, dtype=np.float16), rand(8, dtype=np.float16), {"axis": -1})):
        node = helper.make_node("RMSNormalization", ["X", "scale"], ["Y"], **attrs)
        feeds = {"X": x, "scale": scale}
        out_type = TensorProto.FLOAT16 if scale.dtype == np.float16 else F
        fixture.write_case(SUITE, name, model([node], [info(feeds, "X"), info(feeds, "scale")], [("Y", out_type, None)], 23), feeds)


def rotary_caches(rows, half):
    angle = np.arange(rows)[:, None] * (10000.0 ** (-np.arange(half) / half))[None, :]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def rotary_case(name, x, attrs, positions=None, cache_rows=16):
    head = x.shape[-1] if x.ndim == 4 else x.shape[-1] // attrs["num_heads"]
    half = (attrs.get("rotary_embedding_dim") or head) // 2
    if positions is None:  # 3-D caches (batch, seq, half): the rows for positions 3.. onwards
        seq = x.shape[2] if x.ndim == 4 else x.shape[1]
        c, s = rotary_caches(3 + seq, half)
        cos = np.stack([c[3:3 + seq]] * x.shape[0]).astype(np.float32)
        sin = np.stack([s[3:3 + seq]] * x.shape[0]).astype(np.float32)
        feeds = {"X": x, "cos_cache": cos, "sin_cache": sin}
    else:
        cos, sin = rotary_caches(cache_rows, half)
        feeds = {"X": x, "cos_cache": cos, "sin_cache": sin, "position_ids": positions}
    node = helper.make_node("RotaryEmbedding", list(feeds), ["Y"], **attrs)
    fixture.write_case(SUITE, name, model([node], [info(feeds, n) for n in feeds], [("Y", F, None)], 23), feeds)


def rotary_cases():
    pos = np.array([[0, 1, 2], [5, 6, 7]], np.int64)
    rotary_case("rotary_4d_position_ids_b2", rand(2, 2, 3, 8), {}, pos)
    rotary_case("rotary_3d_partial_interleaved", rand(2, 3, 2 * 8),
                {"num_heads": 2, "rotary_embedding_dim": 4, "interleaved": 1}, pos)
    rotary_case("rotary_4d_no_position_ids", rand(2, 3, 4, 8), {})
    rotary_case("rotary_3d_no_position_ids_partial", rand(1, 4, 3 * 8), {"num_heads": 3, "rotary_embedding_dim": 6})


def tensor_scatter_cases():
    for name, past, upd, w, attrs in (
            ("tensor_scatter_linear", rand(2, 2, 6, 4), rand(2, 2, 2, 4), np.array([1, 4], np.int64), {}),
            ("tensor_scatter_circular", rand(2, 2, 5, 4), rand(2, 2, 3, 4), np.array([3, 6], np.int64), {"mode": "circular"}),
            ("tensor_scatter_axis1", rand(2, 6, 2, 4), rand(2, 1, 2, 4), np.array([5, 0], np.int64), {"axis": 1})):
        feeds = {"past_cache": past, "update": upd, "write_indices": w}
        node = helper.make_node("TensorScatter", list(feeds), ["present_cache"], **attrs)
        fixture.write_case(SUITE, name, model([node], [info(feeds, n) for n in feeds], [("present_cache", F, None)], 24), feeds)


if __name__ == "__main__":
    attention_cases()
    rms_cases()
    rotary_cases()
    tensor_scatter_cases()
