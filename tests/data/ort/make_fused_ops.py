#!/usr/bin/python3
"""Writes the suite fused_ops: one com.microsoft node per case (and ORT's ai.onnx
SimplifiedLayerNormalization) for every operator `refeval optimize` emits, in each attribute and
input form its passes (tools/optimize/passes/*.cc) write, with ONNX Runtime 1.30's outputs as the
expected ones (fixture.py: CPU, one thread, graph optimizations disabled).

  /usr/bin/python3 tests/data/ort/make_fused_ops.py

Shapes are small (batch 2, sequence 5, hidden 16, 4 heads of 4; rotary cases 4 heads of 8), the
data random with a fixed seed, weights, biases, gamma / beta, embedding tables and rotary caches
initializers as the optimizer writes them. The cases:
  - Attention (x, W (16, 48), b): plain; a raw (B, T) int32 mask_index with trailing and with
    leading zeros, mask_filter_value -10000 and -3.4028235e38; attention_bias (B, 1, S, T),
    (1, 1, S, T) and (1, N, S, T); T5's scale = 1.0 with a (1, N, S, T) bias, with and without a
    mask_index; unidirectional = 1 with mask_filter_value; ORT's stacked past (2, B, N, P, h) with
    the present output, unidirectional, with and without a left-padded mask_index; causal with a
    left-padded mask_index (fully hidden rows, below), with an empty past as GPT-2's prefill;
  - MultiHeadAttention: separate 3-D q, k, v; key_padding_mask (B, T) int32 with
    mask_filter_value; attention_bias (B, 1, S, T); past_key / past_value (B, N, P, h) with both
    presents (with a (B, 1, S, P + S) bias as GPT-2 with past gets, and unidirectional); cross
    attention (keys of another length); scale; unidirectional without past; 4-D (B, N, T, h) key
    and value (the grouped-query form, repeated heads) with a (1, 1, S, T) bias;
  - SkipLayerNormalization: with and without beta, bias (input 4), the sum (output 3), epsilon
    1e-12, 1e-5, 1e-6, skip (B, S, H), (1, S, H) and (S, H); SkipSimplifiedLayerNormalization with
    and without the sum; SimplifiedLayerNormalization (ai.onnx, axis -1, epsilon 1e-6 and 1e-5);
  - FastGelu with and without bias, BiasGelu, Gelu, QuickGelu with alpha 1.0 (what the optimizer
    writes for SiLU), 1.702 and the default;
  - FusedMatMul: transA and transB, 3-D x 2-D (a 2-D initializer, a tied embedding) and 3-D x 3-D;
  - RotaryEmbedding: 4-D (B, N, S, h) with and without num_heads, 3-D (B, S, N h) with num_heads,
    interleaved 0 and 1, rotary_embedding_dim smaller than the head, (B, S) int64 position_ids into
    (max_pos, rot / 2) caches;
  - EmbedLayerNormalization: int32 ids, with and without segment_ids, with and without position_ids
    (input 8), both outputs (its mask_index is all zeros without a mask input, in ORT and refeval).

Causal and padding masks together (Attention and MultiHeadAttention, CPU): ORT 1.30 adds
mask_filter_value to a score its padding mask hides, but sets a score unidirectional hides to
float's lowest, whatever mask_filter_value is; the two are not one "hidden" flag filled once. Only a
query whose every past key is padded (a left-padded row's first queries) shows it: with -10000 it
attends to its padded past keys alone, never to the future ones. The *_fully_hidden_rows_* cases
check that on queries of exactly 0 (0 + -10000 is exact in float). On random queries ORT's float sum
score + -10000 (spacing 2^-10) moves those rows by up to 2.4e-4 from the exact value: those cases
are the suite fused_ops_loose, held to --rtol 1e-3 --atol 1e-4 (its OWN_CTEST_ENTRY). Every other
output here agrees with a float64 computation of the operators' contracts within 1e-5 / 1e-6,
ORT's GELUs (tanh, erf, logistic through MLAS) included.

The suite attention_forms (at the end) holds Attention and MultiHeadAttention in float16 (refeval's
double path) and the forms no pass writes: mask_index as key lengths (B), as ends then starts
(2B) and per query (B, S, T); past with a mask and in a decoding step; qkv_hidden_sizes with a wider
V; MultiHeadAttention's bias input, (B, N, L, h) keys and values, cross attention with key
lengths and with no keys at all. One float16 case whose output rounds to the neighbouring half
is in fused_ops_loose.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import fixture

SUITE = "fused_ops"
RNG = np.random.default_rng(1930)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.int64): TensorProto.INT64}
B, S, H, N = 2, 5, 16, 4
h = H // N
FLT_LOWEST = -3.4028234663852886e38


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def case(name, op, inputs, outputs, suite=SUITE, domain="com.microsoft", elem=TensorProto.FLOAT, **attrs):
    """One node. inputs: (name, array, initializer?) in the operator's order, None for an absent
    optional input; outputs: names, "" for an unrequested one, of element type elem (mask_index
    int32). Graph inputs are the non-initializers."""
    names = [i[0] if i else "" for i in inputs]
    node = helper.make_node(op, names, outputs, domain=domain, **attrs)
    feeds = {i[0]: i[1] for i in inputs if i and not i[2]}
    inits = [numpy_helper.from_array(i[1], i[0]) for i in inputs if i and i[2]]
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in feeds.items()],
                              [helper.make_tensor_value_info(o, TensorProto.INT32 if o == "mask_index" else elem, None)
                               for o in outputs if o],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=10, producer_name="refeval make_fused_ops.py")
    fixture.write_case(suite, name, model, feeds)


def feed(name, a):
    return (name, a, False)


def init(name, a):
    return (name, a, True)


def padding_mask(T):
    """(B, T) int32: row 0 keeps the first T - 2 keys (trailing zeros), row 1 the last T - 2 (leading zeros)."""
    m = np.ones((B, T), np.int32)
    m[0, -2:] = 0
    m[1, :2] = 0
    return m


# --- Attention ------------------------------------------------------------------------------------
def attention(name, S=S, mask=None, past=None, bias=None, outputs=("y",), zero_queries=False, suite=SUITE, dtype=np.float32,
              v_hidden=H, **attrs):
    """zero_queries: the queries of batch row 1's first two tokens exactly 0 (their x rows and the
    query bias 0), so all their scores are 0 and masks act on them without rounding. dtype: the
    float inputs' and outputs' type; v_hidden: V's width (qkv_hidden_sizes H, H, v_hidden)."""
    width = 2 * H + v_hidden
    x, qkv_bias = rand(B, S, H), rand(width) * 0.5
    if zero_queries:
        x[1, :2], qkv_bias[:H] = 0, 0
    ins = [feed("x", x.astype(dtype)), init("weight", (rand(H, width) * 0.5).astype(dtype)), init("bias", qkv_bias.astype(dtype)),
           feed("mask_index", mask) if mask is not None else None,
           feed("past", past.astype(dtype)) if past is not None else None,
           feed("attention_bias", bias.astype(dtype)) if bias is not None else None]
    while ins[-1] is None:
        ins.pop()
    if v_hidden != H:
        attrs["qkv_hidden_sizes"] = [H, H, v_hidden]
    case(name, "Attention", ins, list(outputs), suite=suite, elem=ELEM[np.dtype(dtype)], num_heads=N, **attrs)


attention("attention_packed_bias")
attention("attention_mask_index_filter_10000", mask=padding_mask(S), mask_filter_value=-10000.0)
attention("attention_mask_index_default_filter", mask=padding_mask(S))
attention("attention_mask_index_filter_lowest", mask=padding_mask(S), mask_filter_value=FLT_LOWEST)
attention("attention_bias_b1st", bias=rand(B, 1, S, S))
attention("attention_bias_11st", bias=rand(1, 1, S, S))
attention("attention_bias_1nst", bias=rand(1, N, S, S))
attention("attention_scale_t5", bias=rand(1, N, S, S), scale=1.0)
attention("attention_scale_t5_mask_index", mask=padding_mask(S), bias=rand(1, N, S, S), scale=1.0, mask_filter_value=FLT_LOWEST)
attention("attention_unidirectional", unidirectional=1, mask_filter_value=FLT_LOWEST)
# Causal and padding together, batch row 1 left-padded by 2: its first two queries see only padded
# keys (a fully hidden row, as in GPT-2's batched prefill). ORT 1.30 fills a causally hidden score
# with float's lowest whatever mask_filter_value is, and adds mask_filter_value to a padded one:
# such a row attends to its padded past keys only, never to future keys, with mask_filter_value
# -10000 (with the lowest float both fillers saturate alike and the row is uniform over every key).
left = np.ones((B, S), np.int32)
left[1, :2] = 0
attention("attention_unidirectional_mask_index_left_padded", mask=left, unidirectional=1, mask_filter_value=FLT_LOWEST)
attention("attention_past_empty_mask_index_left_padded", mask=left, past=rand(2, B, N, 0, h), outputs=("y", "present"),
          unidirectional=1, mask_filter_value=FLT_LOWEST)
# ... and with -10000 on exactly-zero queries (scores 0 + -10000 exact in float): the fully hidden
# queries average the values of their padded past keys.
attention("attention_unidirectional_mask_index_fully_hidden_rows_filter_10000", mask=left, zero_queries=True, unidirectional=1,
          mask_filter_value=-10000.0)
attention("attention_past_empty_mask_index_fully_hidden_rows_filter_10000", mask=left, past=rand(2, B, N, 0, h), zero_queries=True,
          outputs=("y", "present"), unidirectional=1, mask_filter_value=-10000.0)
P = 3
attention("attention_past_unidirectional", past=rand(2, B, N, P, h), outputs=("y", "present"), unidirectional=1,
          mask_filter_value=FLT_LOWEST)
decode_mask = np.ones((B, P + 2), np.int32)
decode_mask[1, :2] = 0  # row 1 left-padded
attention("attention_past_mask_index_unidirectional", S=2, mask=decode_mask, past=rand(2, B, N, P, h), outputs=("y", "present"),
          unidirectional=1, mask_filter_value=FLT_LOWEST)


# --- MultiHeadAttention ---------------------------------------------------------------------------
def mha(name, L=S, kv4d=False, mask=None, bias=None, past=0, zero_queries=False, suite=SUITE, dtype=np.float32, qkv_bias=False,
        **attrs):
    """dtype: the float inputs' and outputs' type; qkv_bias: the bias input (3 H: Q's, K's, V's)."""
    k = rand(B, N, L, h) if kv4d else rand(B, L, H)
    v = rand(B, N, L, h) if kv4d else rand(B, L, H)
    q = rand(B, S, H)
    if zero_queries:
        q[1, :2] = 0
    ins = [feed("query", q.astype(dtype)), feed("key", k.astype(dtype)), feed("value", v.astype(dtype)),
           init("bias", (rand(3 * H) * 0.5).astype(dtype)) if qkv_bias else None,
           feed("key_padding_mask", mask) if mask is not None else None,
           feed("attention_bias", bias.astype(dtype)) if bias is not None else None]
    outputs = ["output"]
    if past:
        ins += [feed("past_key", rand(B, N, past, h).astype(dtype)), feed("past_value", rand(B, N, past, h).astype(dtype))]
        outputs += ["present_key", "present_value"]
    while ins[-1] is None:
        ins.pop()
    case(name, "MultiHeadAttention", ins, outputs, suite=suite, elem=ELEM[np.dtype(dtype)], num_heads=N, **attrs)


mha("mha_separate_qkv")
mha("mha_key_padding_mask", mask=padding_mask(S), mask_filter_value=FLT_LOWEST)
mha("mha_key_padding_mask_default_filter", mask=padding_mask(S))
mha("mha_attention_bias_b1st", bias=rand(B, 1, S, S))
mha("mha_past_attention_bias", past=P, bias=rand(B, 1, S, P + S))
mha("mha_past_unidirectional", past=P, unidirectional=1, mask_filter_value=FLT_LOWEST)
mha("mha_past_key_padding_mask", past=P, mask=padding_mask(P + S), mask_filter_value=FLT_LOWEST)
mha("mha_unidirectional_key_padding_mask_left_padded", mask=left, unidirectional=1, mask_filter_value=FLT_LOWEST)
mha("mha_unidirectional_key_padding_mask_fully_hidden_rows_filter_10000", mask=left, zero_queries=True, unidirectional=1,
    mask_filter_value=-10000.0)
mha("mha_cross_attention", L=7)
mha("mha_cross_attention_mask", L=7, mask=padding_mask(7), mask_filter_value=-10000.0)
mha("mha_scale", scale=0.3)
mha("mha_unidirectional", unidirectional=1, mask_filter_value=FLT_LOWEST)
mha("mha_bnsh_kv_bias_11st", kv4d=True, bias=rand(1, 1, S, S))


# --- Skip / simplified layer norms ----------------------------------------------------------------
def skip_ln(name, op="SkipLayerNormalization", skip_shape=(B, S, H), beta=True, bias=False, total=False, **attrs):
    ins = [feed("input", rand(B, S, H)), feed("skip", rand(*skip_shape)), init("gamma", 1 + 0.1 * rand(H))]
    if op == "SkipLayerNormalization":
        ins.append(init("beta", rand(H)) if beta else None)
    if bias:
        ins.append(init("bias", rand(H)))
    while ins[-1] is None:
        ins.pop()
    case(name, op, ins, ["output", "", "", "input_skip_bias_sum"] if total else ["output"], **attrs)


skip_ln("skip_layer_norm_beta_eps1e-12", epsilon=1e-12)
skip_ln("skip_layer_norm_no_beta_eps1e-5", beta=False, epsilon=1e-5)
skip_ln("skip_layer_norm_bias_eps1e-5", bias=True, epsilon=1e-5)
skip_ln("skip_layer_norm_sum_output_eps1e-6", total=True, epsilon=1e-6)
skip_ln("skip_layer_norm_bias_sum_output", bias=True, total=True, epsilon=1e-5)  # GPT-2's residual
skip_ln("skip_layer_norm_skip_1sh", skip_shape=(1, S, H), epsilon=1e-12)
skip_ln("skip_layer_norm_skip_sh", skip_shape=(S, H), epsilon=1e-5)
skip_ln("skip_layer_norm_default_epsilon")
skip_ln("skip_simplified_layer_norm_eps1e-6", op="SkipSimplifiedLayerNormalization", epsilon=1e-6)
skip_ln("skip_simplified_layer_norm_sum_output", op="SkipSimplifiedLayerNormalization", total=True, epsilon=1e-5)
skip_ln("skip_simplified_layer_norm_skip_1sh", op="SkipSimplifiedLayerNormalization", skip_shape=(1, S, H), epsilon=1e-6)
for eps in (1e-6, 1e-5):
    case(f"simplified_layer_norm_eps{eps:g}", "SimplifiedLayerNormalization", [feed("x", rand(B, S, H)), init("gamma", 1 + 0.1 * rand(H))],
         ["y"], domain="", axis=-1, epsilon=eps)


# --- GELUs -----------------------------------------------------------------------------------------
def x_gelu():
    return rand(B, S, H) * 2  # values in about (-6, 6): both tails and the middle


case("fast_gelu", "FastGelu", [feed("x", x_gelu())], ["y"])
case("fast_gelu_bias", "FastGelu", [feed("x", x_gelu()), init("bias", rand(H))], ["y"])
case("bias_gelu", "BiasGelu", [feed("x", x_gelu()), init("bias", rand(H))], ["y"])
case("gelu", "Gelu", [feed("x", x_gelu())], ["y"])
case("quick_gelu_alpha1", "QuickGelu", [feed("x", x_gelu())], ["y"], alpha=1.0)
case("quick_gelu_alpha1.702", "QuickGelu", [feed("x", x_gelu())], ["y"], alpha=1.702)
case("quick_gelu_default_alpha", "QuickGelu", [feed("x", x_gelu())], ["y"])


# --- FusedMatMul -----------------------------------------------------------------------------------
case("fused_matmul_transA_3d_2d", "FusedMatMul", [feed("A", rand(B, H, S)), feed("B", rand(H, 8))], ["Y"], transA=1, transB=0)
case("fused_matmul_transB_3d_2d_tied_embedding", "FusedMatMul", [feed("A", rand(B, S, H)), init("B", rand(24, H))], ["Y"],
     transA=0, transB=1)
case("fused_matmul_transB_3d_3d", "FusedMatMul", [feed("A", rand(B, S, H)), feed("B", rand(B, 7, H))], ["Y"], transA=0, transB=1)
case("fused_matmul_transA_3d_3d", "FusedMatMul", [feed("A", rand(B, H, S)), feed("B", rand(B, H, 7))], ["Y"], transA=1, transB=0)


# --- RotaryEmbedding -------------------------------------------------------------------------------
RH = 8  # rotary head size: 4 heads of 8
MAX_POS = 16
POSITIONS = np.array([[0, 1, 2, 3, 4], [6, 7, 8, 9, 10]], np.int64)  # row 1: a continuation after 6 cached tokens


def caches(rot):
    half = rot // 2
    angle = np.arange(MAX_POS)[:, None] * (10000.0 ** (-np.arange(half) / half))[None, :]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def rotary(name, four_d, rot=RH, **attrs):
    cos, sin = caches(rot)
    x = rand(B, N, S, RH) if four_d else rand(B, S, N * RH)
    case(name, "RotaryEmbedding", [feed("input", x), feed("position_ids", POSITIONS), init("cos_cache", cos), init("sin_cache", sin)],
         ["output"], **attrs)


rotary("rotary_4d_num_heads", True, interleaved=0, num_heads=N)
rotary("rotary_4d_no_num_heads", True, interleaved=0)
rotary("rotary_3d_num_heads", False, interleaved=0, num_heads=N)
rotary("rotary_4d_interleaved", True, interleaved=1, num_heads=N)
rotary("rotary_3d_interleaved", False, interleaved=1, num_heads=N)
rotary("rotary_4d_partial", True, rot=4, interleaved=0, num_heads=N, rotary_embedding_dim=4)
rotary("rotary_3d_partial", False, rot=4, interleaved=0, num_heads=N, rotary_embedding_dim=4)
rotary("rotary_3d_partial_interleaved", False, rot=4, interleaved=1, num_heads=N, rotary_embedding_dim=4)


# --- EmbedLayerNormalization ------------------------------------------------------------------------
VOCAB, MAXP, TYPES = 30, 12, 2


def embed(name, segment, positions, epsilon):
    ids = RNG.integers(0, VOCAB, (B, S)).astype(np.int32)
    ins = [feed("input_ids", ids),
           feed("segment_ids", RNG.integers(0, TYPES, (B, S)).astype(np.int32)) if segment else None,
           init("word_embedding", rand(VOCAB, H)), init("position_embedding", rand(MAXP, H)),
           init("segment_embedding", rand(TYPES, H)) if segment else None,
           init("gamma", 1 + 0.1 * rand(H)), init("beta", rand(H))]
    if positions:
        # RoBERTa's positions: padding_idx (1) + the cumulative count of non-padding tokens
        pos = np.array([[2, 3, 4, 5, 6], [2, 3, 4, 1, 1]], np.int32)
        ins += [None, feed("position_ids", pos)]
    case(name, "EmbedLayerNormalization", ins, ["output", "mask_index"], epsilon=epsilon)


embed("embed_layer_norm_segment", True, False, 1e-12)
embed("embed_layer_norm_no_segment", False, False, 1e-12)
embed("embed_layer_norm_position_ids", False, True, 1e-5)
embed("embed_layer_norm_segment_position_ids", True, True, 1e-12)


# --- fused_ops_loose: the fully hidden rows of random queries with mask_filter_value -10000 -----------
# ORT adds -10000 to each padded score in float (spacing 2^-10 there), which moves those rows'
# probabilities by up to 5e-4 relative from the exact sum (2.4e-4 absolute in these outputs): 1e-3.
LOOSE = "fused_ops_loose"
attention("attention_unidirectional_mask_index_left_padded_filter_10000", mask=left, unidirectional=1, mask_filter_value=-10000.0,
          suite=LOOSE)
attention("attention_past_empty_mask_index_left_padded_filter_10000", mask=left, past=rand(2, B, N, 0, h), outputs=("y", "present"),
          unidirectional=1, mask_filter_value=-10000.0, suite=LOOSE)
mha("mha_unidirectional_key_padding_mask_left_padded_filter_10000", mask=left, unidirectional=1, mask_filter_value=-10000.0, suite=LOOSE)



# --- attention_forms: Attention and MultiHeadAttention in float16 (refeval's double path) and the ---
# mask and size forms the optimizer does not write. Every output agrees with ORT to the default 1e-5:
# both round float16 outputs once, and they come out identical. Left to the unit tests
# (tests/ops/contrib/*_test.cc), as ORT 1.30's CPU kernels cannot run them: Attention without its
# bias input (the kernel crashes) and Megatron's (B, 1, M, M) mask_index ("4D mask in attention cpu
# kernel is not supported").
FORMS = "attention_forms"
F16 = np.float16
per_query = (RNG.random((B, S, S)) > 0.4).astype(np.int32)
per_query[..., 0] = 1  # every query keeps key 0
attention("attention_fp16", dtype=F16, suite=FORMS)
attention("attention_fp16_mask_key_lengths", mask=np.array([5, 3], np.int32), dtype=F16, suite=FORMS)
attention("attention_fp16_mask_ends_starts", mask=np.array([5, 4, 0, 1], np.int32), dtype=F16, suite=FORMS)  # keys [0, 5), [1, 4)
attention("attention_fp16_mask_per_query", mask=per_query, dtype=F16, suite=FORMS)
attention("attention_fp16_mask_index_filter_10000", mask=padding_mask(S), mask_filter_value=-10000.0, dtype=F16, suite=FORMS)
# One output of this case lies near a float16 rounding midpoint: ORT's float result and refeval's
# double one round to neighbours (0.12146 vs 0.12152, 1 half ulp, 5e-4 relative): fused_ops_loose.
attention("attention_fp16_past_mask_index", mask=padding_mask(P + S), past=rand(2, B, N, P, h), outputs=("y", "present"), dtype=F16,
          suite=LOOSE)
attention("attention_fp16_past_unidirectional_decode", S=1, past=rand(2, B, N, P, h), outputs=("y", "present"), unidirectional=1,
          dtype=F16, suite=FORMS)
attention("attention_fp16_bias_scale", bias=rand(B, 1, S, S), scale=0.25, dtype=F16, suite=FORMS)
attention("attention_qkv_hidden_sizes_wide_v", v_hidden=24, suite=FORMS)
attention("attention_fp16_qkv_hidden_sizes_wide_v_mask", v_hidden=24, mask=padding_mask(S), dtype=F16, suite=FORMS)
mha("mha_fp16_bias_key_padding_mask", qkv_bias=True, mask=padding_mask(S), dtype=F16, suite=FORMS)
mha("mha_fp16_past_unidirectional_bias", past=P, qkv_bias=True, bias=rand(B, 1, S, P + S), unidirectional=1, dtype=F16, suite=FORMS)
mha("mha_fp16_bnsh_kv_query_bias", kv4d=True, qkv_bias=True, dtype=F16, suite=FORMS)
mha("mha_fp16_cross_key_lengths", L=7, mask=np.array([7, 4], np.int32), dtype=F16, suite=FORMS)
mha("mha_cross_no_keys", L=0, suite=FORMS)  # nothing to attend to: zeros
(fixture.OUT / LOOSE / "OWN_CTEST_ENTRY").write_text(
    "fully hidden attention rows with mask_filter_value -10000: ORT adds it to the scores in float (2.4e-4 from the exact "
    "sum), and a float16 output 1 half ulp apart (5e-4 relative), so this suite is held to --rtol 1e-3 --atol 1e-4 by its "
    "own entry in tests/CMakeLists.txt (make_fused_ops.py)\n")
