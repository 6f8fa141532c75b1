"""Suite `gqa`: one com.microsoft GroupQueryAttention node per case, expected outputs from ONNX
Runtime 1.30's CPU kernel. Regenerate with /usr/bin/python3 tests/data/ort/make_gqa.py.

What ORT 1.30 (CPU) refuses, so no case here covers it:
- q_norm_weight / k_norm_weight ("implemented only on the CUDA and WebGPU EPs");
- head sizes that are not a multiple of 8 and rotary caches whose width (rot / 2) is not a
  multiple of 8, so the rotary cases use H = 16 (full rotation) or H = 32 with rot / 2 = 8;
- bfloat16 (the CPU kernel registers float and float16 only);
- qk_output with sliding_window_cache=1;
- local_window_size with causal=0.
Right-padded query rows (position >= seqlens_k + 1 on a first prompt) are only covered by cases
on ORT's flash path: with softcap, smooth_softmax, head_sink or output_qk the CPU kernel takes its
unfused path, which runs the softmax of such a row over score columns it never computed, so its
output for them is not reproducible (smooth_softmax with a window gave a different value than the
valid keys alone). Those cases use rows without padding or single-token steps.
"""
import numpy as np
from onnx import TensorProto, helper

import fixture

NAMES = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache",
         "sin_cache", "position_ids", "attention_bias", "head_sink"]
ELEM = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.int32: TensorProto.INT32,
        np.int64: TensorProto.INT64}
rng = np.random.default_rng(2026)


def model(feeds, attrs, qk=False):
    inputs = [name if name in feeds else "" for name in NAMES]
    while not inputs[-1]:
        inputs.pop()
    outputs = ["output", "present_key", "present_value"] + (["output_qk"] if qk else [])
    node = helper.make_node("GroupQueryAttention", inputs, outputs, domain="com.microsoft", **attrs)
    elem = ELEM[feeds["query"].dtype.type]
    graph = helper.make_graph(
        [node], "gqa", [helper.make_tensor_value_info(n, ELEM[feeds[n].dtype.type], feeds[n].shape) for n in inputs if n],
        [helper.make_tensor_value_info(o, elem, None) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=10)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def problem(B, S, N, Nkv, H, seqlens, total, P=0, packed=False, kv_len=None):
    """Feeds in graph-input order (fixture.write_case wants that order)."""
    L = S if kv_len is None else kv_len
    f = {"query": rand(B, S, (N + 2 * Nkv) * H if packed else N * H)}
    if not packed:
        f["key"], f["value"] = rand(B, L, Nkv * H), rand(B, L, Nkv * H)
    if P:
        f["past_key"], f["past_value"] = rand(B, Nkv, P, H), rand(B, Nkv, P, H)
    f["seqlens_k"] = np.array(seqlens, np.int32)
    f["total_sequence_length"] = np.array(total, np.int32)
    return f


def with_rotary(f, half, rows=32):
    angle = np.arange(rows)[:, None] * 10000.0 ** (-np.arange(half) / half)[None]
    f["cos_cache"], f["sin_cache"] = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    return f


def case(name, f, qk=False, **attrs):
    fixture.write_case("gqa", name, model(f, attrs, qk), f)


heads = dict(num_heads=4, kv_num_heads=2)

# prefill, no past; row 1 of the batch holds 2 valid tokens of 4 (right padding)
case("prefill_separate_b2_padded", problem(2, 4, 4, 2, 8, [3, 1], 4), **heads)
# packed QKV with RoPE (halves): keys and queries rotated at positions 0..S-1
case("prefill_packed_rotary_b2_padded", with_rotary(problem(2, 4, 4, 2, 16, [3, 2], 4, packed=True), 8),
     do_rotary=1, **heads)
# decode, concat mode (past 5, total 6): row 1 has 3 valid tokens, so its past rows 2..4 drop out
case("decode_concat_rotary_interleaved_b2", with_rotary(problem(2, 1, 4, 2, 16, [5, 2], 6, P=5), 8),
     do_rotary=1, rotary_interleaved=1, **heads)
# decode into genai's shared max-length buffer (past 8 >= total 6), local window 3, softcap
case("decode_shared_buffer_window_softcap_b2", problem(2, 1, 4, 2, 8, [5, 3], 6, P=8),
     local_window_size=3, softcap=0.8, **heads)
# chunked prefill: 3 new tokens after 4 cached ones; partial rotary (rot 16 of H 32), MQA
case("subsequent_prompt_partial_rotary", with_rotary(problem(1, 3, 2, 1, 32, [6], 7, P=4), 8),
     do_rotary=1, num_heads=2, kv_num_heads=1)
# smooth softmax with per-head sinks and an attention_bias broadcast over heads, scale
f = problem(2, 3, 4, 2, 8, [2, 2], 3)
f["attention_bias"], f["head_sink"] = rand(2, 1, 3, 3), rand(4)
case("head_sink_bias_scale_b2", f, smooth_softmax=1, scale=0.5, **heads)
case("smooth_softmax_window_b2", problem(2, 5, 4, 2, 8, [4, 4], 5), smooth_softmax=1, local_window_size=2, **heads)
# a window of 2 over right-padded rows: row 1 has 3 valid tokens, so its padded query 3 sees only
# key 2 and query 4 sees none (zeros)
case("prefill_window_b2_padded", problem(2, 5, 4, 2, 8, [4, 2], 5), local_window_size=2, **heads)
# output_qk: raw scores after scale, softcap and attention_bias (1), or the probabilities (2)
f = problem(1, 4, 4, 2, 8, [3], 4)
f["attention_bias"] = rand(1, 4, 4, 4)
case("output_qk_before_softmax", f, qk=True, qk_output=1, softcap=1.5, **heads)
case("output_qk_after_softmax_decode_b2", problem(2, 1, 4, 2, 8, [3, 1], 4, P=3), qk=True, qk_output=2, **heads)
# causal=0: every query sees all of its row's valid keys
case("bidirectional_b2_padded", problem(2, 4, 4, 2, 8, [3, 1], 4), causal=0, **heads)
# position_ids instead of positions derived from seqlens_k
f = with_rotary(problem(2, 1, 4, 2, 16, [4, 2], 5, P=4), 8)
f["position_ids"] = np.array([[9], [3]], np.int64)
case("decode_position_ids_b2", f, do_rotary=1, **heads)
# on a first prompt ORT reads only position_ids[0]: positions 5, 6, 7 for both rows
f = with_rotary(problem(2, 3, 4, 2, 16, [2, 2], 3), 8)
f["position_ids"] = np.array([[5, 0, 9], [1, 1, 1]], np.int64)
case("prefill_position_ids_first_value_b2", f, do_rotary=1, **heads)
# a KV-shared layer: key/value of length 0, every key read from past_key
case("kv_shared_layer_b2", problem(2, 1, 4, 2, 8, [4, 2], 5, P=5, kv_len=0), **heads)
case("kv_shared_layer_prefill", problem(1, 3, 4, 2, 8, [2], 3, P=6, kv_len=0), **heads)
# window-sized cache: capacity 5, window 3, 8 tokens in (the cache compacts to 5 - 3 = 2 rows + 1 new)
case("sliding_window_cache_decode", problem(1, 1, 2, 1, 8, [8], 9, P=5), local_window_size=3, sliding_window_cache=1,
     num_heads=2, kv_num_heads=1)
case("sliding_window_cache_chunk", problem(1, 3, 2, 1, 8, [6], 7, P=5), local_window_size=3, sliding_window_cache=1,
     num_heads=2, kv_num_heads=1)
# float16: ORT keeps rotated queries and keys (and, on its MLAS path, the probabilities) in half,
# about 5e-4 relative; values in [1, 2] keep the outputs away from 0, where that would exceed atol
f = with_rotary(problem(1, 1, 4, 2, 16, [3], 4, P=3), 8)
f["value"], f["past_value"] = 1 + np.abs(f["value"]) % 1, 1 + np.abs(f["past_value"]) % 1
case("float16_decode_rotary", {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in f.items()},
     do_rotary=1, **heads)

# float16 prompts (S > 1: refeval's blocked path, in double): packed, with a bias over batch rows
# and softcap, a chunk after a past, a window. Without rotary, where ORT rounds the rotated queries
# and keys to half (1 half ulp apart in an output).
def half(f):
    return {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in f.items()}


case("float16_prompt_packed_b2", half(problem(2, 4, 4, 2, 16, [3, 3], 4, packed=True)), **heads)
f = problem(2, 3, 4, 2, 16, [2, 2], 3)
f["attention_bias"] = rand(1, 4, 3, 3)
case("float16_prompt_bias_softcap_b2", half(f), softcap=2.0, **heads)
case("float16_chunk_after_past", half(problem(1, 3, 4, 2, 16, [5], 6, P=3)), **heads)
case("float16_prompt_window_b2", half(problem(2, 5, 4, 2, 16, [4, 4], 5)), local_window_size=2, **heads)
# float16 decoding: the window-sized cache, head_sink with a bias of every batch row and head, a
# KV-shared layer, causal=0 on a prompt
case("float16_sliding_window_cache_chunk", half(problem(1, 3, 2, 1, 8, [6], 7, P=5)), local_window_size=3, sliding_window_cache=1,
     num_heads=2, kv_num_heads=1)
f = problem(2, 1, 4, 2, 8, [4, 2], 5, P=4)
f["attention_bias"], f["head_sink"] = rand(2, 4, 1, 5), rand(4)
case("float16_decode_head_sink_bias_b2", half(f), **heads)
case("float16_kv_shared_layer_b2", half(problem(2, 1, 4, 2, 8, [4, 2], 5, P=5, kv_len=0)), **heads)
case("float16_bidirectional_prompt_b2", half(problem(2, 4, 4, 2, 8, [3, 3], 4)), causal=0, **heads)
