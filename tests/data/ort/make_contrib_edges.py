#!/usr/bin/python3
"""Writes the suite contrib_edges: com.microsoft contrib operators (opset 17 + com.microsoft 1,
float32 unless noted) at their edge shapes and forms, with ONNX Runtime 1.30's outputs as the
expected ones (fixture.py's run_ort.js: CPU, one thread, graph optimizations disabled).

  /usr/bin/python3 tests/data/ort/make_contrib_edges.py             # the suite
  /usr/bin/python3 tests/data/ort/make_contrib_edges.py --flat DIR  # a folder per node, to look into a failure

The suites fused_ops / attention_forms / gqa / matmul_nbits cover the ops' ordinary forms; this
one covers their edges:
  - Attention: B = S = N = 1, head sizes 5, 12, 20 (not multiples of 8), an empty past
    (2, B, N, 0, h) with present (and unidirectional), a mask_index row of all zeros (every key
    hidden; queries of exactly 0 there so score + mask_filter_value stays exact), a 3-D
    (B, S, T) mask with a fully hidden query, attention_bias (1, 1, S, T) / (B, 1, S, T) /
    (1, N, S, T) with odd heads, unidirectional with S != T (past), scale;
  - MultiHeadAttention: B = S = T = N = 1, head size 5 with value head size 7, cross attention
    S = 1 / T = 7, an empty past (B, N, 0, h) with presents, key_padding_mask (B) / (B, T) / (B, S, T)
    with fully hidden rows (zero queries), attention_bias broadcasts, unidirectional with S != T,
    scale;
  - GroupQueryAttention: N / Nkv of 1/1, 2/1, 4/4, 8/1, 8/2, 8/8, per-row seqlens_k (right
    padding) on a prompt and on a decode step with past, an empty past on a prompt, a single-token
    first prompt, local_window_size, softcap, do_rotary with rotary_interleaved 0 / 1,
    smooth_softmax;
  - RotaryEmbedding: position_ids (1) (a start offset) vs (B, S), 3-D and 4-D input, interleaved,
    rotary_embedding_dim < head size, B = S = 1, float16;
  - SkipLayerNormalization / SkipSimplifiedLayerNormalization: hidden 1, 7, 17, 33, 1000, skip
    (B, S, H) / (1, S, H) / (S, H), with and without beta / bias, every optional output;
  - FastGelu / BiasGelu / Gelu / QuickGelu: shapes (), (1,), 7, 17, 33, (2, 67), IEEE specials
    (+-0, +-inf, nan, large magnitudes), QuickGelu alpha 1.0 / 1.702 / -0.5;
  - FusedMatMul: transA / transB / transBatchA / transBatchB, alpha, batched broadcast, K = 1,
    1-D operands;
  - EmbedLayerNormalization: S = 1, position_ids, a mask of all zeros, without segment inputs,
    every output;
  - MatMulNBits: K under and not a multiple of block_size (a partial last block), N = 1, M = 0, 1,
    5 and 33, bits 2, 4 and 8, with and without zero_points (packed, float) / bias / g_idx, 260
    blocks of 16, accuracy_level 1;
  - sizes past the kernels' block lengths: GELUs over 3 x 1031 with specials at 1023 / 1024 / 2048,
    GroupQueryAttention prompts of 33 / 37 tokens, Attention / MultiHeadAttention of 33..70 keys;
  - also: SimplifiedLayerNormalization (ORT's ai.onnx v1), GatherBlockQuantized (rank-0 and empty
    indices, partial blocks), MoE (k = every expert, one expert, router ties, hidden 1, 3-D rows),
    DecoderMaskedMultiHeadAttention (scale 0, one head, cross length 1, fully padded rows), float16
    MultiHeadAttention / Attention / GroupQueryAttention / MatMulNBits / FusedMatMul /
    RotaryEmbedding / SkipLayerNormalization, and attribute values with a special meaning (scale 0,
    mask_filter_value 0 and positive, local_window_size 0 / -1 / larger than the keys, softcap 0,
    rotary_embedding_dim 0 / the head size, mask_index_type 0), GroupQueryAttention with rotary,
    windows, softcap, smooth softmax and shared buffers combined.

Layout as in make_edge_shapes.py: one fixture folder per group (the case name's first word), its
nodes' outputs gathered by element type into one SequenceConstruct output each; `refeval test`
reports the first differing item ("output 'float': item K"), and --flat writes every node as its
own folder. Expected values are ORT's outputs of the single-node (flat) models. Cases refeval
failed when written are in groups of their own (the FAILING set below, see the commit message).

Data are random with a fixed seed, modest magnitudes (summation order inside the tolerance).

refeval failures this suite found (each case a group of its own, FAILING below), all fixed since
(scale 0 read as unset, the qk output written):
  - attn_scale0, mha_scale0: Attention / MultiHeadAttention with scale = 0.0 written explicitly.
    ORT treats 0 as "not set" (its attribute default is 0) and scales by 1 / sqrt(head_size): its
    output matches a float64 computation with 1 / sqrt(h) to 8e-8. refeval uses the scale as given
    (scores * 0, a uniform softmax: the mean of the values), as GroupQueryAttention does not (it
    treats 0 as unset too, gqa_scale0_prompt passes).
  - mha_output_qk, mha_output_qk_kpm: MultiHeadAttention's optional output 3 (qk), which refeval
    refuses ("output qk is not supported"). ORT 1.30 writes the pre-softmax scores (B, N, S, T):
    scale * q k^T + attention_bias, with mask_filter_value added where key_padding_mask hides a key
    (float64 check: 3.7e-8).

Left out, with the reason:
  - ORT refuses: Attention with past and attention_bias; Attention's do_rotary ("not supported in
    Attention CPU kernel"); Attention's 4-D (B, 1, M, M) mask ("not supported"); MultiHeadAttention
    with a value head size != key head size and a past ("past_value dimension 3 should be same as
    head_size"), packed KV (B, L, N, 2, h) and packed QKV (B, L, N, 3, h) ("not implemented for
    CPU"); RotaryEmbedding's rotary_embedding_dim without num_heads, position_ids (1, S) with B > 1
    ("dimension 0 should be of size batch_size"); FastGelu of a rank-0 tensor; FusedMatMul's
    transBatchA / transBatchB on rank-2 operands; GroupQueryAttention with B > 1, S > 1 and a
    past ("batch_size must be 1 when sequence_length > 1 and past context is given");
    GatherBlockQuantized with uint8 data and gather_axis != 0; BiasAdd and BiasSplitGelu (no CPU
    kernel).
  - ORT wrong: MultiHeadAttention with unidirectional = 1, no past and S < T (cross attention):
    ORT masks keys j > i for every query row but the last, which sees all T keys (S = 2, T = 4:
    row 0 keys 0..0, row 1 keys 0..3; S = 3: rows 0..0, 0..1, 0..3), with or without a padding
    mask: neither top-left nor bottom-right causal alignment (refeval: top-left). The last row is
    left unmasked, which is only right when S == T.
    Gelu / FastGelu in float16: ORT rounds an intermediate to half, 1 half-ulp off the correctly
    rounded float64 value in 3 of 17 (Gelu) and 9 of 66 (FastGelu + bias) elements (x = -1.5957:
    ORT -0.08826, float64 -0.0882066 -> half -0.0882, which refeval gives); QuickGelu in float16
    likewise (5 of 33; x = -2.2266: ORT -0.04919, float64 -0.0492176 -> half -0.04922, refeval's).
  - Out of the attributes' range: GroupQueryAttention with softcap -1 or local_window_size -5:
    ORT ignores both (its output is plain causal attention, float64 check 7e-8), refeval refuses
    them ("softcap -1 is negative", "local_window_size -5 must be -1 (off) or >= 0").
  - Not defined: SkipSimplifiedLayerNormalization's output 1 (mean): RMS normalisation has no mean;
    ORT writes zeros, refeval refuses the output by design.
"""
import os
import pathlib
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import fixture
from make_matmul_nbits import pack  # (rows, count) integers -> packed bytes, low bits first

SUITE = "contrib_edges"
RNG = np.random.default_rng(2027)
F, F16, I32, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64
ELEM = {np.dtype(np.float32): F, np.dtype(np.float16): F16, np.dtype(np.int64): I64, np.dtype(np.int32): I32,
        np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.bool_): TensorProto.BOOL}
FLAT = "--flat" in sys.argv
CASES = []  # (name, group, op, inputs, attrs, out_types)
NAMES = set()
# cases refeval failed when this suite was written: each goes in a group of its own
FAILING = {"attn_scale0", "mha_scale0", "mha_output_qk", "mha_output_qk_kpm"}
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0, 100.0, -100.0, 1e4, -1e4,
                    3.0, -3.0, 0.5, -0.5], np.float32)


class In:
    """A graph input (fed from test_data_set_0); a bare array is an initializer. In the packed
    suite only In values of 4 KB or more stay graph inputs (a file per input costs a 4 KB block on
    disk); --flat keeps every one."""
    def __init__(self, value):
        self.value = np.asarray(value)


def r(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def case(name, op, inputs, attrs=None, outs=(F,), group=None, domain="com.microsoft"):
    """outs: the element type of each output, None for an absent optional output."""
    assert name not in NAMES, name
    NAMES.add(name)
    group = name if FLAT or name in FAILING else (group or name.split("_")[0])
    CASES.append((name, group, op, inputs, dict(attrs or {}, _domain=domain), list(outs)))


def node_parts(name, op, inputs, attrs, outs):
    names, infos, inits, feeds = [], [], [], {}
    for k, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        n = f"{name}_in{k}"
        names.append(n)
        if isinstance(x, In) and (FLAT or x.value.nbytes >= 4096):
            feeds[n] = x.value
            infos.append(helper.make_tensor_value_info(n, ELEM[x.value.dtype], list(x.value.shape)))
        else:
            inits.append(numpy_helper.from_array(np.asarray(x.value if isinstance(x, In) else x), n))
    while names and names[-1] == "":
        names.pop()
    onames = [("" if t is None else name if k == 0 else f"{name}_{k}") for k, t in enumerate(outs)]
    while onames and onames[-1] == "":
        onames.pop()
    attrs = dict(attrs)
    domain = attrs.pop("_domain")
    node = helper.make_node(op, names, onames, name=name, domain=domain, **attrs)
    outinfo = [(o, t) for o, t in zip(onames, outs) if o]
    return node, infos, inits, feeds, outinfo


def make_model(title, parts):
    nodes, infos, inits, feeds, outs = [], [], [], {}, []
    for node, i, n, f, o in parts:
        nodes.append(node)
        infos += i
        inits += n
        feeds.update(f)
        outs += o
    graph = helper.make_graph(nodes, title, infos, [helper.make_tensor_value_info(o, t, None) for o, t in outs], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8, producer_name="refeval make_contrib_edges.py")
    return model, feeds, outs


# ---------------------------------------------------------------- Attention
def attention(name, B, S, N, h, D=8, P=None, mask=None, bias=None, zero_q_rows=(), **attrs):
    x = r(B, S, D)
    for b in zero_q_rows:
        x[b] = 0
    w = r(D, 3 * N * h, scale=0.4)
    bb = r(3 * N * h, scale=0.2)
    if zero_q_rows:
        bb[:N * h] = 0
    past = None if P is None else r(2, B, N, P, h)
    inputs = [In(x), w, bb, None if mask is None else In(mask), None if past is None else In(past),
              None if bias is None else In(bias)]
    case(name, "Attention", inputs, dict(num_heads=N, **attrs), outs=(F, F) if P is not None else (F,))


def attention_cases():
    attention("attn_b1_s1_n1_h5", 1, 1, 1, 5)
    attention("attn_b1_s1_n1_h5_uni", 1, 1, 1, 5, unidirectional=1)
    attention("attn_b2_s3_n2_h12", 2, 3, 2, 12)
    attention("attn_b2_s4_n1_h20_scale", 2, 4, 1, 20, scale=0.3)
    attention("attn_b1_s5_n3_h5_uni", 1, 5, 3, 5, unidirectional=1)
    attention("attn_past0_b2_s3_n2_h5", 2, 3, 2, 5, P=0)
    attention("attn_past0_b1_s1_n1_h12_uni", 1, 1, 1, 12, P=0, unidirectional=1)
    attention("attn_past0_b2_s4_n2_h20_uni", 2, 4, 2, 20, P=0, unidirectional=1)
    attention("attn_past3_b1_s1_n2_h5_uni", 1, 1, 2, 5, P=3, unidirectional=1)
    attention("attn_past2_b2_s3_n1_h12_uni", 2, 3, 1, 12, P=2, unidirectional=1)  # S != T, causal
    attention("attn_past2_b2_s3_n1_h12", 2, 3, 1, 12, P=2)
    # mask_index (B, T) with one row all zeros; that row's queries are exactly 0
    m = np.array([[1, 1, 0, 1], [0, 0, 0, 0]], np.int32)
    attention("attn_mask_row_zero", 2, 4, 2, 5, mask=m, zero_q_rows=(1,))
    attention("attn_mask_row_zero_lowest", 2, 4, 2, 5, mask=m, mask_filter_value=-3.4028235e38)
    attention("attn_mask_all_zero_b1_s1", 1, 1, 1, 5, mask=np.zeros((1, 1), np.int32), zero_q_rows=(0,))
    # mask_index (B) key lengths of 0 ... T
    attention("attn_mask_keylen", 3, 3, 1, 12, mask=np.array([3, 1, 2], np.int32))
    # 3-D mask (B, S, T) with a fully hidden query (row 1 query 0: its x row is 0)
    m3 = np.ones((2, 3, 3), np.int32)
    m3[0, 1, 2] = 0
    m3[1, 0, :] = 0
    attention("attn_mask3d", 2, 3, 2, 5, mask=m3, zero_q_rows=(1,))
    attention("attn_mask_past0", 2, 3, 1, 5, P=0, mask=np.array([[1, 1, 1], [1, 1, 0]], np.int32), unidirectional=1)
    # attention_bias broadcasts
    B, S, N = 2, 3, 3
    for tag, shp in [("11st", (1, 1, S, S)), ("b1st", (B, 1, S, S)), ("1nst", (1, N, S, S)), ("bnst", (B, N, S, S))]:
        attention(f"attn_bias_{tag}_h5", B, S, N, 5, bias=r(*shp))
    attention("attn_bias_1111_s1", 1, 1, 1, 12, bias=r(1, 1, 1, 1))
    attention("attn_bias_past2_uni", 2, 2, 2, 5, P=2, bias=r(1, 2, 2, 4), unidirectional=1)
    # rotary inside Attention
    attention("attn_rotary_h16", 1, 3, 2, 16, do_rotary=1)


def mha(name, B, S, N, h, T=None, hv=None, P=None, kpm=None, bias=None, zero_q_rows=(), qkv_bias=False, **attrs):
    T = S if T is None else T
    hv = h if hv is None else hv
    q = r(B, S, N * h)
    for b in zero_q_rows:
        q[b] = 0
    k, v = r(B, T, N * h), r(B, T, N * hv)
    inputs = [In(q), In(k), In(v), r(2 * N * h + N * hv, scale=0.2) if qkv_bias else None,
              None if kpm is None else In(kpm), None if bias is None else In(bias)]
    outs = (F,)
    if P is not None:
        inputs += [In(r(B, N, P, h)), In(r(B, N, P, hv))]
        outs = (F, F, F)
    case(name, "MultiHeadAttention", inputs, dict(num_heads=N, **attrs), outs=outs)


def mha_cases():
    mha("mha_b1_s1_n1_h5", 1, 1, 1, 5)
    mha("mha_b1_s1_n1_h5_hv7", 1, 1, 1, 5, hv=7)
    mha("mha_cross_s1_t7_h12", 2, 1, 2, 12, T=7)
    mha("mha_cross_s5_t1_h20", 2, 5, 1, 20, T=1)
    mha("mha_cross_s3_t4_h5_scale", 1, 3, 3, 5, T=4, scale=0.7)
    mha("mha_uni_b1_s4_h12", 1, 4, 2, 12, unidirectional=1)
    mha("mha_past0_b2_s3_h5", 2, 3, 2, 5, P=0)
    mha("mha_past0_b1_s1_h12_uni", 1, 1, 1, 12, P=0, unidirectional=1)
    mha("mha_past3_b2_s2_h5_uni", 2, 2, 2, 5, P=3, unidirectional=1)  # S != T
    mha("mha_past3_b1_s1_h20_hv7", 1, 1, 2, 20, hv=7, P=3)
    mha("mha_qkvbias_b2_s3_h5", 2, 3, 2, 5, qkv_bias=True)
    # key_padding_mask forms with a fully hidden batch row (zero queries there)
    mha("mha_kpm2d_row_zero", 2, 3, 2, 5, T=4, kpm=np.array([[1, 0, 1, 1], [0, 0, 0, 0]], np.int32), zero_q_rows=(1,))
    mha("mha_kpm1d_keylen", 3, 2, 1, 12, T=3, kpm=np.array([3, 1, 2], np.int32))
    mha("mha_kpm1d_keylen0", 2, 2, 1, 5, T=3, kpm=np.array([2, 0], np.int32), zero_q_rows=(1,))
    m3 = np.ones((2, 3, 4), np.int32)
    m3[0, 2, 1:] = 0
    m3[1, 1, :] = 0
    m3[1, 0, 0] = 0
    mha("mha_kpm3d", 2, 3, 2, 5, T=4, kpm=m3, zero_q_rows=(1,))
    mha("mha_kpm_row_zero_lowest", 2, 2, 2, 5, T=3, kpm=np.array([[1, 1, 0], [0, 0, 0]], np.int32), mask_filter_value=-3.4028235e38)
    mha("mha_kpm2d_past2", 2, 1, 2, 5, T=1, P=2, kpm=np.array([[1, 1, 1], [0, 1, 1]], np.int32))
    B, S, T, N = 2, 2, 3, 3
    for tag, shp in [("11st", (1, 1, S, T)), ("b1st", (B, 1, S, T)), ("1nst", (1, N, S, T)), ("bnst", (B, N, S, T))]:
        mha(f"mha_bias_{tag}_h5", B, S, N, 5, T=T, bias=r(*shp))
    mha("mha_bias_1111_s1_t1", 1, 1, 1, 12, bias=r(1, 1, 1, 1))
    mha("mha_bias_kpm_scale", 2, 2, 2, 5, T=3, bias=r(1, 2, 2, 3), kpm=np.array([[1, 1, 0], [1, 1, 1]], np.int32), scale=0.25)


# ---------------------------------------------------------------- GroupQueryAttention
def gqa(name, B, S, N, Nkv, H, seqlens, total, P=0, rotary=None, past_empty=False, **attrs):
    q = r(B, S, N * H)
    k, v = r(B, S, Nkv * H), r(B, S, Nkv * H)
    inputs = [In(q), In(k), In(v)]
    if P or past_empty:
        inputs += [In(r(B, Nkv, P, H)), In(r(B, Nkv, P, H))]
    else:
        inputs += [None, None]
    inputs += [In(np.array(seqlens, np.int32)), In(np.array(total, np.int32))]
    if rotary:
        half = rotary // 2
        angle = np.arange(max(32, total + 8))[:, None] * 10000.0 ** (-np.arange(half) / half)[None]
        inputs += [np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)]
        attrs["do_rotary"] = 1
    case(name, "GroupQueryAttention", inputs, dict(num_heads=N, kv_num_heads=Nkv, **attrs), outs=(F, F, F))


def gqa_cases():
    gqa("gqa_n1_kv1_b1_s1_first", 1, 1, 1, 1, 8, [0], 1)
    gqa("gqa_n1_kv1_prompt", 1, 4, 1, 1, 8, [3], 4)
    gqa("gqa_n2_kv1_prompt_b2_padded", 2, 4, 2, 1, 8, [3, 0], 4)
    gqa("gqa_n4_kv4_prompt_b3_padded", 3, 3, 4, 4, 8, [2, 1, 0], 3)
    gqa("gqa_n8_kv1_prompt_b2_padded", 2, 3, 8, 1, 8, [2, 1], 3)
    gqa("gqa_n8_kv2_decode_b3", 3, 1, 8, 2, 8, [4, 2, 0], 5, P=4)
    gqa("gqa_n8_kv8_decode_b2", 2, 1, 8, 8, 16, [3, 1], 4, P=3)
    gqa("gqa_n1_kv1_decode_b1", 1, 1, 1, 1, 16, [5], 6, P=5)
    gqa("gqa_past_empty_prompt_b2", 2, 3, 4, 2, 8, [2, 2], 3, past_empty=True)
    gqa("gqa_window1_decode_b2", 2, 1, 4, 2, 8, [5, 3], 6, P=5, local_window_size=1)
    gqa("gqa_window2_prompt_b1", 1, 5, 2, 1, 8, [4], 5, local_window_size=2)
    gqa("gqa_window_past_chunk", 1, 3, 4, 1, 8, [6], 7, P=4, local_window_size=3)
    gqa("gqa_softcap_prompt_b1", 1, 4, 2, 2, 8, [3], 4, softcap=0.5)
    gqa("gqa_softcap_decode_b2", 2, 1, 4, 1, 8, [4, 2], 5, P=4, softcap=2.0)
    gqa("gqa_scale_decode_b2", 2, 1, 2, 1, 8, [3, 3], 4, P=3, scale=0.3)
    gqa("gqa_rotary_prompt_n8_kv1", 1, 3, 8, 1, 16, [2], 3, rotary=16)
    gqa("gqa_rotary_interleaved_prompt_n2_kv2", 1, 4, 2, 2, 16, [3], 4, rotary=16, rotary_interleaved=1)
    gqa("gqa_rotary_decode_b2_padded", 2, 1, 4, 2, 16, [4, 1], 5, P=4, rotary=16)
    gqa("gqa_rotary_interleaved_decode_b2", 2, 1, 4, 1, 16, [3, 2], 4, P=3, rotary=16, rotary_interleaved=1)
    gqa("gqa_smooth_prompt_n1_kv1", 1, 3, 1, 1, 8, [2], 3, smooth_softmax=1)
    gqa("gqa_smooth_decode_b2", 2, 1, 4, 2, 8, [3, 1], 4, P=3, smooth_softmax=1)


# ---------------------------------------------------------------- RotaryEmbedding
def caches(rows, half):
    angle = np.arange(rows)[:, None] * 10000.0 ** (-np.arange(half) / max(half, 1))[None]
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def rope(name, x, pos, half, rows=16, dtype=np.float32, **attrs):
    cos, sin = caches(rows, half)
    case(name, "RotaryEmbedding", [In(x.astype(dtype)), In(np.asarray(pos, np.int64)), cos.astype(dtype), sin.astype(dtype)],
         attrs, outs=(ELEM[np.dtype(dtype)],))


def rope_cases():
    B, S, N, h = 2, 3, 2, 8
    rope("rope_4d_pos1", r(B, N, S, h, scale=1), [2], h // 2)
    rope("rope_4d_pos1_zero", r(B, N, S, h, scale=1), [0], h // 2)
    rope("rope_3d_pos1", r(B, S, N * h, scale=1), [5], h // 2, num_heads=N)
    rope("rope_3d_pos1_noheads", r(B, S, N * h, scale=1), [1], h // 2)
    rope("rope_3d_posbs", r(B, S, N * h, scale=1), [[0, 1, 2], [7, 3, 9]], h // 2, num_heads=N)
    rope("rope_4d_posbs_interleaved", r(B, N, S, h, scale=1), [[4, 4, 4], [0, 5, 10]], h // 2, interleaved=1)
    rope("rope_3d_pos1_interleaved", r(B, S, N * h, scale=1), [3], h // 2, num_heads=N, interleaved=1)
    rope("rope_b1_s1_pos1", r(1, 1, h, scale=1), [11], h // 2, num_heads=1)
    rope("rope_b1_s1_4d_posbs", r(1, 1, 1, h, scale=1), [[6]], h // 2)
    rope("rope_partial_3d", r(B, S, N * 16, scale=1), [[1, 2, 3], [4, 5, 6]], 4, num_heads=N, rotary_embedding_dim=8)
    rope("rope_partial_4d_interleaved", r(B, N, S, 16, scale=1), [2], 4, rotary_embedding_dim=8, interleaved=1)
    rope("rope_partial_3d_pos1", r(1, 4, 3 * 12, scale=1), [0], 2, num_heads=3, rotary_embedding_dim=4)
    rope("rope_h6_4d", r(B, N, S, 6, scale=1), [1], 3)
    rope("rope_h6_3d_interleaved", r(B, S, N * 6, scale=1), [[0, 1, 2], [2, 1, 0]], 3, num_heads=N, interleaved=1)
    rope("rope_f16_4d_pos1", r(B, N, S, h, scale=1), [3], h // 2, dtype=np.float16)
    rope("rope_f16_3d_interleaved", r(B, S, N * h, scale=1), [[0, 2, 4], [1, 3, 5]], h // 2, dtype=np.float16,
         num_heads=N, interleaved=1)
    rope("rope_scale", r(B, N, S, h, scale=1), [1], h // 2, scale=0.5)


# ---------------------------------------------------------------- Skip(Simplified)LayerNormalization
def skipln_cases():
    B, S = 2, 3
    for H in [1, 7, 17, 33, 1000]:
        for tag, sk in [("bsh", (B, S, H)), ("1sh", (1, S, H)), ("sh", (S, H))]:
            if H in (1, 1000) and tag == "1sh":
                continue
            x, skip = In(r(B, S, H, scale=1)), r(*sk, scale=1)
            gamma, beta, bias = r(H, scale=1) + 1, r(H), r(H)
            case(f"skipln_h{H}_{tag}_all", "SkipLayerNormalization", [x, skip, gamma, beta, bias], {"epsilon": 1e-5},
                 outs=(F, F, F, F))
            case(f"skipln_h{H}_{tag}_nobeta_sum", "SkipLayerNormalization", [x, skip, gamma, None, bias], {"epsilon": 1e-6},
                 outs=(F, None, None, F))
            case(f"skipln_h{H}_{tag}_plain", "SkipLayerNormalization", [x, skip, gamma, beta], outs=(F,))
            case(f"skipsln_h{H}_{tag}_all", "SkipSimplifiedLayerNormalization", [x, skip, gamma, bias], {"epsilon": 1e-5},
                 outs=(F, None, F, F))
            case(f"skipsln_h{H}_{tag}_plain", "SkipSimplifiedLayerNormalization", [x, skip, gamma], {"epsilon": 1e-6},
                 outs=(F,))
    case("skipln_b1_s1_h7_mean_only", "SkipLayerNormalization", [In(r(1, 1, 7)), r(1, 1, 7), r(7) + 1, r(7)], outs=(F, F))
    case("skipsln_b1_s1_h7_inv_only", "SkipSimplifiedLayerNormalization", [In(r(1, 1, 7)), r(1, 1, 7), r(7) + 1],
         outs=(F, None, F))


# ---------------------------------------------------------------- GELUs
def gelu_cases():
    shapes = [(), (1,), (7,), (17,), (33,), (2, 67)]
    for s in shapes:
        t = "s" if s == () else "x".join(map(str, s))
        case(f"gelu_{t}", "Gelu", [In(r(*s, scale=2))])
        case(f"fastgelu_{t}", "FastGelu", [In(r(*s, scale=2))])
        case(f"quickgelu_{t}", "QuickGelu", [In(r(*s, scale=2))])
        if s != ():
            case(f"fastgelu_bias_{t}", "FastGelu", [In(r(*s, scale=2)), r(s[-1])])
            case(f"biasgelu_{t}", "BiasGelu", [In(r(*s, scale=2)), r(s[-1])])
    case("quickgelu_alpha1_17", "QuickGelu", [In(r(17, scale=2))], {"alpha": 1.0})
    case("quickgelu_alpha1702_33", "QuickGelu", [In(r(33, scale=2))], {"alpha": 1.702})
    case("quickgelu_alpha_neg_7", "QuickGelu", [In(r(7, scale=2))], {"alpha": -0.5})
    sp = SPECIAL
    case("gelu_special", "Gelu", [In(sp)])
    case("fastgelu_special", "FastGelu", [In(sp)])
    case("fastgelu_bias_special", "FastGelu", [In(sp), np.float32(np.linspace(-1, 1, sp.size))])
    case("biasgelu_special", "BiasGelu", [In(sp), np.float32(np.linspace(-1, 1, sp.size))])
    case("quickgelu_special", "QuickGelu", [In(sp)])
    case("quickgelu_special_alpha1", "QuickGelu", [In(sp)], {"alpha": 1.0})
    # specials spread across vector bodies and tails
    x = r(3, 37, scale=2)
    x[0, 5], x[1, 33], x[2, 36], x[2, 0], x[1, 16] = np.nan, np.inf, -np.inf, np.nan, -np.inf
    for op in ["Gelu", "FastGelu", "QuickGelu"]:
        case(f"{op.lower()}_special_tails", op, [In(x)])
    case("biasgelu_special_bias", "BiasGelu", [In(r(2, 5)), np.array([np.nan, np.inf, -np.inf, 0, 1], np.float32)])
    for op in ["Gelu", "FastGelu", "QuickGelu"]:
        case(f"{op.lower()}_empty", op, [In(r(0, 3))])
    case("fastgelu_bias_empty", "FastGelu", [In(r(2, 0, 5)), r(5)])
    case("quickgelu_alpha0", "QuickGelu", [In(r(9, scale=2))], {"alpha": 0.0})


# ---------------------------------------------------------------- FusedMatMul
def fmm_cases():
    def fmm(name, a, b, **attrs):
        case(name, "FusedMatMul", [In(a), b], attrs)
    fmm("fmm_k1", r(3, 1), r(1, 4))
    fmm("fmm_k1_batched", r(2, 3, 1), r(1, 5), alpha=0.5)
    fmm("fmm_transa", r(4, 3), r(4, 5), transA=1)
    fmm("fmm_transb_alpha", r(3, 4), r(5, 4), transB=1, alpha=-1.5)
    fmm("fmm_transab_batched", r(2, 4, 3), r(2, 5, 4), transA=1, transB=1, alpha=0.25)
    fmm("fmm_bcast_4d_3d", r(2, 1, 3, 4), r(5, 4, 6))
    fmm("fmm_bcast_3d_4d_transb", r(5, 3, 4), r(2, 1, 6, 4), transB=1)
    fmm("fmm_bcast_1_b", r(1, 3, 4), r(7, 4, 2), alpha=2.0)
    fmm("fmm_1d_2d", r(4), r(4, 3))
    fmm("fmm_2d_1d", r(3, 4), r(4))
    fmm("fmm_1d_1d_alpha", r(5), r(5), alpha=3.0)
    fmm("fmm_m1_n1", r(1, 7), r(7, 1), alpha=0.5)
    # transBatchA: A (M, batch, K) is read as (batch, M, K); with transA: (K, batch, M)
    fmm("fmm_transbatcha", r(3, 2, 4), r(2, 4, 5), transBatchA=1)
    fmm("fmm_transbatcha_transa", r(4, 2, 3), r(2, 4, 5), transBatchA=1, transA=1)
    fmm("fmm_transbatchb", r(2, 3, 4), r(4, 2, 5), transBatchB=1)
    fmm("fmm_transbatchb_transb", r(2, 3, 4), r(5, 2, 4), transBatchB=1, transB=1, alpha=0.75)
    fmm("fmm_transbatch_both_4d", r(3, 2, 2, 4), r(4, 2, 2, 5), transBatchA=1, transBatchB=1)
    fmm("fmm_transbatch_all", r(4, 2, 3), r(5, 2, 4), transBatchA=1, transA=1, transBatchB=1, transB=1, alpha=-0.5)
    fmm("fmm_transbatcha_2d", r(3, 4), r(4, 5), transBatchA=1)
    fmm("fmm_transbatcha_k1", r(3, 2, 1), r(2, 1, 5), transBatchA=1)


# ---------------------------------------------------------------- EmbedLayerNormalization
def embln_cases():
    V, P, H = 11, 9, 7

    def emb(name, B, S, segment=True, mask=None, pos=None, outs=(F, I32), **attrs):
        ids = In(RNG.integers(0, V, (B, S)).astype(np.int32))
        seg = In(RNG.integers(0, 2, (B, S)).astype(np.int32)) if segment else None
        inputs = [ids, seg, r(V, H), r(P, H), r(2, H) if segment else None, r(H) + 1, r(H),
                  None if mask is None else In(np.asarray(mask, np.int32)), None if pos is None else In(np.asarray(pos, np.int32))]
        case(name, "EmbedLayerNormalization", inputs, attrs, outs=outs)
    emb("embln_s1", 2, 1, mask=[[1], [1]])
    emb("embln_s1_noseg", 1, 1)
    emb("embln_s1_pos", 2, 1, pos=[[4], [8]], mask=[[1], [0]])
    emb("embln_pos_bs", 2, 3, pos=[[8, 0, 3], [1, 1, 1]], outs=(F, I32, F))
    emb("embln_mask_all_zero", 2, 3, mask=np.zeros((2, 3)), outs=(F, I32, F))
    emb("embln_mask_mixed", 3, 4, mask=[[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]])
    emb("embln_noseg_sum", 2, 4, segment=False, mask=[[1, 1, 1, 0], [1, 0, 0, 0]], outs=(F, I32, F), epsilon=1e-5)
    emb("embln_no_mask_index_sum", 1, 3, outs=(F, None, F))


# ---------------------------------------------------------------- MatMulNBits


def nbits_cases():
    def nb(name, M, K, N, bits=4, block=16, zp=False, bias=False, g_idx=False, batch=()):
        kb = (K + block - 1) // block
        q = RNG.integers(0, 2 ** bits, (N, kb * block))
        b = pack(q, bits).reshape(N, kb, block * bits // 8)
        scales = RNG.uniform(0.01, 0.06, N * kb).astype(np.float32)
        inputs = [In(r(*batch, M, K, scale=1)), b, scales]
        if zp == "float":
            inputs.append(RNG.uniform(0, 2 ** bits - 1, N * kb).astype(np.float32))
        else:
            inputs.append(pack(RNG.integers(0, 2 ** bits, (N, kb)), bits).reshape(-1) if zp else None)
        inputs.append(RNG.integers(0, kb, K).astype(np.int32) if g_idx else None)
        inputs.append(r(N) if bias else None)
        case(name, "MatMulNBits", inputs, dict(K=K, N=N, bits=bits, block_size=block))
    nb("nbits_m1_n1_k5_b16", 1, 5, 1)
    nb("nbits_m5_n1_k40_b16_zp", 5, 40, 1, zp=True)
    nb("nbits_m1_n3_k20_b32_bias", 1, 20, 3, block=32, bias=True)
    nb("nbits_m5_n3_k50_b16_zp_bias", 5, 50, 3, zp=True, bias=True)
    nb("nbits_m1_n1_k17_b16_gidx", 1, 17, 1, g_idx=True)
    nb("nbits_m5_n2_k33_b16_gidx_bias", 5, 33, 2, g_idx=True, bias=True)
    nb("nbits_b8_m1_n1_k5_b16", 1, 5, 1, bits=8)
    nb("nbits_b8_m5_n3_k40_b32_zp", 5, 40, 3, bits=8, block=32, zp=True)
    nb("nbits_b8_m5_n1_k70_b64_bias", 5, 70, 1, bits=8, block=64, bias=True)
    nb("nbits_batched_m1_n1_k24", 1, 24, 1, zp=True, batch=(2, 3))
    nb("nbits_m1_n1_k1_b16", 1, 1, 1, zp=True, bias=True)
    nb("nbits_b2_m5_n1_k21_b16_zp", 5, 21, 1, bits=2, zp=True)
    nb("nbits_m3_n5_k200_b128_zp_bias", 3, 200, 5, block=128, zp=True, bias=True)
    nb("nbits_m1_n2_k15_b16_gidx_zp_unpacked", 1, 15, 2, g_idx=True, zp="float")


def more_cases():
    """Second round: rarer forms."""
    # Attention: qkv_hidden_sizes with odd head sizes, key length 0, (2B) ends / starts, 4-D mask
    D = 6
    x = r(2, 3, D)
    case("attn_qkv_sizes_h5_h7", "Attention", [In(x), r(D, 10 + 10 + 14, scale=0.4), r(34, scale=0.2)],
         {"num_heads": 2, "qkv_hidden_sizes": [10, 10, 14]})
    case("attn_qkv_sizes_uni_s1", "Attention", [In(r(1, 1, D)), r(D, 5 + 5 + 3, scale=0.4), r(13, scale=0.2)],
         {"num_heads": 1, "qkv_hidden_sizes": [5, 5, 3], "unidirectional": 1})
    attention("attn_mask_keylen0", 2, 2, 1, 5, mask=np.array([0, 2], np.int32), zero_q_rows=(0,))
    attention("attn_mask_end_start", 2, 4, 1, 12, mask=np.array([4, 3, 1, 0], np.int32))
    m4 = np.tril(np.ones((5, 5), np.int32))[None, None].repeat(2, 0)
    m4[1, 0, :, 3:] = 0
    attention("attn_mask4d_max5_s3", 2, 3, 2, 5, mask=m4)
    attention("attn_past0_bias_none_mask", 1, 2, 2, 5, P=0, mask=np.array([[1, 1]], np.int32))
    attention("attn_scale_uni_s1_past4", 1, 1, 3, 5, P=4, unidirectional=1, scale=0.2)
    # MultiHeadAttention: 4-D (B, N, T, h) keys with a padding mask; bias with past; keys of another head count fail
    q, k, v = r(2, 2, 2 * 5), r(2, 2, 4, 5), r(2, 2, 4, 5)
    case("mha_kv4d_kpm", "MultiHeadAttention", [In(q), In(k), In(v), None, In(np.array([[1, 1, 1, 0], [1, 0, 0, 0]], np.int32))],
         {"num_heads": 2})
    case("mha_kv4d_bias_1nst", "MultiHeadAttention", [In(q), In(k), In(v), None, None, In(r(1, 2, 2, 4))], {"num_heads": 2, "scale": 0.5})
    case("mha_qkvbias_past2", "MultiHeadAttention", [In(r(2, 1, 10)), In(r(2, 1, 10)), In(r(2, 1, 10)), r(30, scale=0.2), None, None,
                                                     In(r(2, 2, 2, 5)), In(r(2, 2, 2, 5))], {"num_heads": 2}, outs=(F, F, F))
    case("mha_packed_kv", "MultiHeadAttention", [In(r(2, 3, 10)), In(r(2, 4, 2, 2, 5))], {"num_heads": 2})
    case("mha_packed_qkv", "MultiHeadAttention", [In(r(2, 3, 2, 3, 5))], {"num_heads": 2})
    case("mha_kpm_total_past", "MultiHeadAttention", [In(r(1, 2, 5)), In(r(1, 2, 5)), In(r(1, 2, 5)), None,
                                                      In(np.array([[0, 1, 1, 1, 1]], np.int32)), None, In(r(1, 1, 3, 5)), In(r(1, 1, 3, 5))],
         {"num_heads": 1, "unidirectional": 1}, outs=(F, F, F))
    # GroupQueryAttention: packed QKV with 8 heads over 1, partial interleaved rotary, total longer than the past
    B, S, N, Nkv, H = 2, 3, 8, 1, 16
    half = 8
    angle = np.arange(32)[:, None] * 10000.0 ** (-np.arange(half) / half)[None]
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    case("gqa_packed_n8_kv1_rotary", "GroupQueryAttention", [In(r(B, S, (N + 2 * Nkv) * H)), None, None, None, None,
                                                             In(np.array([2, 1], np.int32)), In(np.array(3, np.int32)), cos, sin],
         {"num_heads": N, "kv_num_heads": Nkv, "do_rotary": 1}, outs=(F, F, F))
    case("gqa_partial_rotary_interleaved_h32", "GroupQueryAttention",
         [In(r(1, 2, 2 * 32)), In(r(1, 2, 32)), In(r(1, 2, 32)), In(r(1, 1, 3, 32)), In(r(1, 1, 3, 32)),
          In(np.array([4], np.int32)), In(np.array(5, np.int32)), cos, sin],
         {"num_heads": 2, "kv_num_heads": 1, "do_rotary": 1, "rotary_interleaved": 1}, outs=(F, F, F))
    case("gqa_decode_b3_zero_past_row", "GroupQueryAttention",
         [In(r(3, 1, 4 * 8)), In(r(3, 1, 2 * 8)), In(r(3, 1, 2 * 8)), In(r(3, 2, 4, 8)), In(r(3, 2, 4, 8)),
          In(np.array([4, 0, 2], np.int32)), In(np.array(5, np.int32))], {"num_heads": 4, "kv_num_heads": 2}, outs=(F, F, F))
    case("gqa_window_softcap_smooth_decode", "GroupQueryAttention",
         [In(r(1, 1, 2 * 8)), In(r(1, 1, 8)), In(r(1, 1, 8)), In(r(1, 1, 6, 8)), In(r(1, 1, 6, 8)),
          In(np.array([6], np.int32)), In(np.array(7, np.int32))],
         {"num_heads": 2, "kv_num_heads": 1, "local_window_size": 2, "softcap": 1.0, "smooth_softmax": 1}, outs=(F, F, F))
    # RotaryEmbedding: position (1) past the first rows, a cache exactly long enough
    rope("rope_pos1_cache_exact", r(1, 2, 4, 8, scale=1), [12], 4, rows=16)
    rope("rope_3d_rot_lt_h_interleaved_posbs", r(2, 2, 3 * 12, scale=1), [[0, 7], [15, 1]], 4, num_heads=3,
         rotary_embedding_dim=8, interleaved=1)
    rope("rope_h2", r(1, 3, 1, 2, scale=1), [0], 1)
    # Skip(Simplified)LayerNormalization: 2-D input, float16, bias without beta
    case("skipln_2d_h17", "SkipLayerNormalization", [In(r(3, 17, scale=1)), r(3, 17, scale=1), r(17) + 1, r(17), r(17)],
         outs=(F, F, F, F))
    case("skipsln_2d_h33", "SkipSimplifiedLayerNormalization", [In(r(4, 33, scale=1)), r(4, 33, scale=1), r(33) + 1, r(33)],
         outs=(F, None, F, F))
    case("skipln_h1_const_rows", "SkipLayerNormalization", [In(np.full((2, 2, 5), 3.0, np.float32)), np.zeros((2, 2, 5), np.float32),
                                                            r(5) + 1, r(5)], outs=(F, F, F, F))
    case("skipln_large_offset", "SkipLayerNormalization", [In(r(1, 2, 33, scale=1) + 100), r(1, 2, 33, scale=1), r(33) + 1, r(33)],
         outs=(F, F, F))
    # ORT's (ai.onnx v1) SimplifiedLayerNormalization and contrib LayerNormalization forms
    case("sln_axis1_rank3", "SimplifiedLayerNormalization", [In(r(2, 3, 4, scale=1)), r(3, 4) + 1], {"axis": 1},
         outs=(F, F), domain="")
    case("sln_h1", "SimplifiedLayerNormalization", [In(r(3, 1, scale=1)), r(1) + 1], {"epsilon": 1e-5}, outs=(F, F), domain="")
    case("sln_h1000", "SimplifiedLayerNormalization", [In(r(2, 1000, scale=1)), r(1000) + 1], outs=(F,), domain="")
    # EmbedLayerNormalization with mask_index_type 0 (no mask_index output)
    V, P, H = 11, 9, 7
    case("embln_mask_index_type0", "EmbedLayerNormalization",
         [In(RNG.integers(0, V, (2, 2)).astype(np.int32)), In(RNG.integers(0, 2, (2, 2)).astype(np.int32)), r(V, H), r(P, H), r(2, H),
          r(H) + 1, r(H), In(np.array([[1, 0], [0, 0]], np.int32))], {"mask_index_type": 0}, outs=(F, None, F))
    # FusedMatMul with empty dims
    case("fmm_k0", "FusedMatMul", [In(r(3, 0)), r(0, 4)], {"alpha": 2.0})
    case("fmm_m0_transa", "FusedMatMul", [In(r(2, 4, 0)), r(2, 4, 5)], {"transA": 1})


def third_cases():
    """Third round: attribute values with a special meaning and more degenerate shapes."""
    # scale = 0 (ORT: unset, 1 / sqrt(h)), mask_filter_value = 0 (a hidden key gets + 0)
    attention("attn_scale0", 2, 3, 2, 5, scale=0.0)
    mha("mha_scale0", 2, 2, 2, 12, T=3, scale=0.0)
    gqa("gqa_scale0_prompt", 1, 3, 2, 1, 8, [2], 3, scale=0.0)
    attention("attn_mask_filter0", 2, 3, 1, 5, mask=np.array([[1, 0, 1], [0, 0, 1]], np.int32), mask_filter_value=0.0)
    mha("mha_mask_filter0", 2, 2, 1, 5, T=3, kpm=np.array([[1, 0, 1], [0, 0, 0]], np.int32), mask_filter_value=0.0)
    attention("attn_mask_filter_pos", 1, 2, 1, 5, mask=np.array([[1, 0]], np.int32), mask_filter_value=3.0)
    # head size 1
    attention("attn_h1_n3", 2, 3, 3, 1)
    mha("mha_h1_s1_t1", 1, 1, 1, 1)
    mha("mha_h1_uni_past0", 1, 3, 2, 1, P=0, unidirectional=1)
    # MHA: key lengths with a bias, unidirectional 3-D mask
    mha("mha_kpm1d_bias", 2, 2, 2, 5, T=3, kpm=np.array([2, 3], np.int32), bias=r(2, 1, 2, 3))
    m3 = np.ones((1, 3, 3), np.int32)
    m3[0, 2, 0] = 0
    attention("attn_mask3d_uni", 1, 3, 2, 5, mask=m3, unidirectional=1)
    # GQA: a chunk after pasts of different lengths, a bias broadcast over batch and heads, window 0 / -1
    gqa("gqa_chunk_b2_ragged", 2, 2, 4, 2, 8, [4, 3], 5, P=3)
    f_bias = r(1, 1, 1, 5)
    case("gqa_bias_11st_decode_b2", "GroupQueryAttention",
         [In(r(2, 1, 32)), In(r(2, 1, 16)), In(r(2, 1, 16)), In(r(2, 2, 4, 8)), In(r(2, 2, 4, 8)), In(np.array([4, 2], np.int32)),
          In(np.array(5, np.int32)), None, None, None, In(f_bias)], {"num_heads": 4, "kv_num_heads": 2}, outs=(F, F, F))
    gqa("gqa_window_minus1", 1, 3, 2, 1, 8, [2], 3, local_window_size=-1)
    gqa("gqa_window_large", 1, 1, 2, 1, 8, [4], 5, P=4, local_window_size=100)
    gqa("gqa_window_equal_total", 1, 4, 2, 2, 8, [3], 4, local_window_size=4)
    gqa("gqa_softcap0", 1, 2, 2, 1, 8, [1], 2, softcap=0.0)
    # EmbedLayerNormalization: position_ids (1, S) over a batch, S = 1 without a mask
    V, P, H = 11, 9, 7
    case("embln_pos_1s", "EmbedLayerNormalization",
         [In(RNG.integers(0, V, (3, 2)).astype(np.int32)), In(RNG.integers(0, 2, (3, 2)).astype(np.int32)), r(V, H), r(P, H), r(2, H),
          r(H) + 1, r(H), None, In(np.array([[5, 2]], np.int32))], outs=(F, I32, F))
    # FusedMatMul: transBatch with broadcast batches, rank 4 with transB
    case("fmm_transbatcha_bcast", "FusedMatMul", [In(r(3, 1, 4)), r(2, 4, 5)], {"transBatchA": 1})
    case("fmm_transbatchb_4d_transb", "FusedMatMul", [In(r(2, 3, 3, 4)), r(5, 2, 3, 4)], {"transBatchB": 1, "transB": 1})
    case("fmm_transbatcha_4d_transa_bcast", "FusedMatMul", [In(r(4, 1, 3, 2)), r(1, 3, 4, 6)], {"transBatchA": 1, "transA": 1})
    # MatMulNBits with no rows
    case("nbits_m0", "MatMulNBits", [In(r(0, 20)), pack(RNG.integers(0, 16, (3, 32)), 4).reshape(3, 2, 8),
                                     RNG.uniform(0.01, 0.06, 6).astype(np.float32)], dict(K=20, N=3, bits=4, block_size=16))


def fourth_cases():
    """Fourth round: defaults and zero-valued attributes."""
    gqa("gqa_window0_prompt", 1, 3, 2, 1, 8, [2], 3, local_window_size=0)
    rope("rope_rotdim_full_explicit", r(2, 3, 2 * 8, scale=1), [[0, 1, 2], [3, 4, 5]], 4, num_heads=2, rotary_embedding_dim=8)
    rope("rope_rotdim0", r(2, 3, 2 * 8, scale=1), [1], 4, num_heads=2, rotary_embedding_dim=0)
    rope("rope_4d_n1_posbs", r(2, 1, 3, 8, scale=1), [[0, 1, 2], [5, 6, 7]], 4)
    c = np.full((2, 1, 1), 2.0, np.float32)
    case("skipln_h1_default_eps_stats", "SkipLayerNormalization", [In(c), np.zeros_like(c), np.array([1.5], np.float32),
                                                                   np.array([0.25], np.float32)], outs=(F, F, F, F))
    case("skipsln_h1_default_eps_stats", "SkipSimplifiedLayerNormalization", [In(np.zeros_like(c)), np.zeros_like(c),
                                                                              np.array([1.5], np.float32)], outs=(F, None, F, F))
    case("skipln_h7_zero_rows_stats", "SkipLayerNormalization", [In(np.zeros((1, 2, 7), np.float32)), np.zeros((1, 2, 7), np.float32),
                                                                 r(7) + 1, r(7)], {"epsilon": 1e-6}, outs=(F, F, F, F))
    case("embln_const_rows", "EmbedLayerNormalization",
         [In(np.array([[0, 0]], np.int32)), None, np.full((3, 5), 0.5, np.float32), np.zeros((4, 5), np.float32), None,
          r(5) + 1, r(5)], outs=(F, I32, F))
    case("quickgelu_default_2x67", "QuickGelu", [In(r(2, 67, scale=3))])
    case("nbits_acc1_m5_n1_k40", "MatMulNBits", [In(r(5, 40)), pack(RNG.integers(0, 16, (1, 48)), 4).reshape(1, 3, 8),
                                                 RNG.uniform(0.01, 0.06, 3).astype(np.float32)],
         dict(K=40, N=1, bits=4, block_size=16, accuracy_level=1))


def fifth_cases():
    """Fifth round: sizes past the kernels' block lengths (GELU blocks of 1024, GQA query rows in
    32s, MatMulNBits' 256 fused blocks and 3-column tiles)."""
    x = r(3, 1031, scale=2)
    for i, v in [(1023, np.nan), (1024, np.inf), (1025, -np.inf), (2047, np.nan), (2048, -np.inf), (3092, np.inf)]:
        x.flat[i] = v
    for op in ["Gelu", "FastGelu", "QuickGelu"]:
        case(f"{op.lower()}_big_specials", op, [In(x)])
    case("biasgelu_big", "BiasGelu", [In(r(2, 1031, scale=2)), r(1031)])
    case("fastgelu_bias_big", "FastGelu", [In(r(2, 1031, scale=2)), r(1031)])
    gqa("gqa_prompt_s37_window5", 1, 37, 2, 1, 8, [36], 37, local_window_size=5)
    gqa("gqa_prompt_s37_b2_padded", 2, 37, 2, 1, 8, [36, 20], 37)
    gqa("gqa_prompt_s33_softcap", 1, 33, 4, 2, 8, [32], 33, softcap=1.0)
    gqa("gqa_prompt_s34_rotary", 1, 34, 2, 2, 16, [33], 34, rotary=16)
    gqa("gqa_decode_past40_b2", 2, 1, 2, 1, 8, [40, 33], 41, P=40)
    attention("attn_s37_uni_h5", 1, 37, 2, 5, unidirectional=1)
    attention("attn_s33_mask_h12", 2, 33, 1, 12, mask=np.array([33, 17], np.int32))
    mha("mha_s35_t35_uni_h5", 1, 35, 2, 5, unidirectional=1)
    mha("mha_s2_t70_h20", 1, 2, 1, 20, T=70)

    def nbk(name, M, K, N, bits=4, block=16, zp=True, level=0):
        kb = (K + block - 1) // block
        b = pack(RNG.integers(0, 2 ** bits, (N, kb * block)), bits).reshape(N, kb, block * bits // 8)
        inputs = [In(r(M, K, scale=0.5)), b, RNG.uniform(0.005, 0.02, N * kb).astype(np.float32),
                  pack(RNG.integers(0, 2 ** bits, (N, kb)), bits).reshape(-1) if zp else None]
        case(name, "MatMulNBits", inputs, dict(K=K, N=N, bits=bits, block_size=block))
    nbk("nbits_k4150_blocks260_m1_n2", 1, 4150, 2)
    nbk("nbits_k4150_blocks260_m5_n4", 5, 4150, 4, zp=False)
    nbk("nbits_b8_k4150_m5_n1", 5, 4150, 1, bits=8)
    nbk("nbits_m7_n7_k100_b32", 7, 100, 7, block=32)
    nbk("nbits_m33_n5_k64_b16", 33, 64, 5)
    case("fmm_big_batched", "FusedMatMul", [In(r(2, 33, 65)), r(2, 17, 65)], {"transB": 1, "alpha": 0.5})


def sixth_cases():
    """Sixth round: causal plus left padding (a query whose only unmasked keys are padded),
    float16 layer norms, 3-D rotary with S = 1."""
    attention("attn_uni_mask_start", 2, 3, 2, 5, mask=np.array([3, 3, 1, 0], np.int32), unidirectional=1)
    attention("attn_uni_mask_left_pad", 2, 3, 1, 12, mask=np.array([[0, 0, 1], [1, 1, 1]], np.int32), unidirectional=1)
    mha("mha_uni_kpm_left_pad", 2, 3, 2, 5, kpm=np.array([[0, 1, 1], [1, 1, 1]], np.int32), unidirectional=1)
    for op, n in [("SkipLayerNormalization", 4), ("SkipSimplifiedLayerNormalization", 3)]:
        H = 33
        ins = [In(r(2, 3, H, scale=1).astype(np.float16)), r(2, 3, H, scale=1).astype(np.float16), (r(H) + 1).astype(np.float16)]
        if n == 4:
            ins.append(r(H).astype(np.float16))
        ins.append(r(H).astype(np.float16))
        tag = "skipln" if n == 4 else "skipsln"
        case(f"{tag}_f16_h33", op, ins, outs=(F16, F if n == 4 else None, F, F16))
    rope("rope_3d_s1_b3_pos1", r(3, 1, 2 * 8, scale=1), [4], 4, num_heads=2)
    rope("rope_3d_s1_b3_posbs_interleaved", r(3, 1, 2 * 8, scale=1), [[1], [0], [9]], 4, num_heads=2, interleaved=1)


def seventh_cases():
    """Seventh round."""
    m3 = np.ones((2, 2, 5), np.int32)
    m3[0, 1, 0] = 0
    m3[1, :, 4] = 0
    attention("attn_mask3d_past3", 2, 2, 2, 5, P=3, mask=m3)
    mha("mha_kpm3d_past3_uni", 2, 2, 2, 5, P=3, kpm=m3, unidirectional=1)
    case("mha_output_qk", "MultiHeadAttention", [In(r(2, 2, 10)), In(r(2, 3, 10)), In(r(2, 3, 10)), None, None, In(r(1, 2, 2, 3))],
         {"num_heads": 2, "scale": 0.5}, outs=(F, None, None, F))
    case("mha_output_qk_kpm", "MultiHeadAttention", [In(r(2, 1, 5)), In(r(2, 3, 5)), In(r(2, 3, 5)), None,
                                                     In(np.array([[1, 0, 1], [1, 1, 1]], np.int32))],
         {"num_heads": 1}, outs=(F, None, None, F))
    rope("rope_pos_1s_b2", r(2, 3, 2 * 8, scale=1), [[2, 0, 5]], 4, num_heads=2)
    case("fmm_1d_transa", "FusedMatMul", [In(r(4)), r(4, 3)], {"transA": 1})
    case("fmm_2d_1d_transb", "FusedMatMul", [In(r(3, 4)), r(4)], {"transB": 1})


def moe_cases():
    """MoE (float, fc1 (E, n1, hidden), fc2 (E, hidden, inter)): k = every expert, one expert,
    router ties, one row, hidden / inter of 1, 3-D rows, an empty row set."""
    def moe(name, rows, hidden, inter, experts, router=None, bias=True, **attrs):
        x = r(*rows, hidden, scale=1)
        n = int(np.prod(rows))
        logits = r(n, experts, scale=1) if router is None else np.asarray(router, np.float32)
        inputs = [In(x), In(logits), r(experts, inter, hidden, scale=0.4), r(experts, inter, scale=0.1) if bias else None,
                  r(experts, hidden, inter, scale=0.4), r(experts, hidden, scale=0.1) if bias else None]
        case(name, "MoE", inputs, attrs)
    moe("moe_k_all_experts", (3,), 8, 4, 3, k=3, activation_type="relu", normalize_routing_weights=1)
    moe("moe_k_all_unnormalized", (2,), 8, 4, 3, k=3, activation_type="gelu")
    moe("moe_one_expert", (4,), 8, 4, 1, k=1, activation_type="silu")
    moe("moe_one_expert_normalized", (2,), 8, 4, 1, k=1, activation_type="relu", normalize_routing_weights=1)
    moe("moe_ties_k1", (3,), 8, 4, 4, router=[[1, 1, 0, 0], [0, 2, 2, 2], [-1, -1, -1, -1]], k=1, activation_type="relu")
    moe("moe_ties_k2_normalized", (3,), 8, 4, 4, router=[[1, 1, 1, 0], [0, 2, 2, 2], [3, 0, 3, 0]], k=2,
        activation_type="identity", normalize_routing_weights=1)
    moe("moe_one_row_hidden1_inter1", (1,), 1, 1, 3, k=2, activation_type="relu")
    moe("moe_rows_3d", (2, 3), 8, 4, 4, k=2, activation_type="silu", normalize_routing_weights=1, bias=False)
    moe("moe_k1_unnormalized_gelu", (5,), 8, 4, 4, k=1, activation_type="gelu")


def dmmha_cases():
    """DecoderMaskedMultiHeadAttention: scale = 0 (unset), one head, a cross length of 1, a fully
    padded mask row (query 0 there), the last buffer slot."""
    def dm(name, B, N, h, M=None, P=None, cross_L=0, mask=None, zero_q=(), qkv_bias=False, **attrs):
        D = N * h
        q = r(B, 1, D)
        for b in zero_q:
            q[b] = 0
        if cross_L:
            inputs = [In(q), In(r(B, N, cross_L, h)), In(r(B, N, cross_L, h)), None if mask is None else In(mask)]
            outs = (F,)
        else:
            inputs = [In(q), In(r(B, 1, D)), In(r(B, 1, D)), None if mask is None else In(mask), None, In(r(B, N, M, h)),
                      In(r(B, N, M, h)), In(np.array([P], np.int32))]
            attrs["past_present_share_buffer"] = 1
            outs = (F, F, F)
        if qkv_bias:
            inputs += [None] * (10 - len(inputs)) + [r(3 * D, scale=0.2)]
        case(name, "DecoderMaskedMultiHeadAttention", inputs, dict(num_heads=N, **attrs), outs=outs)
    dm("dmmha_scale0", 2, 2, 8, M=6, P=3, scale=0.0)
    dm("dmmha_cross_scale0", 1, 2, 8, cross_L=3, scale=0.0)
    dm("dmmha_n1_b1", 1, 1, 8, M=4, P=2)
    dm("dmmha_last_slot_n1", 1, 1, 16, M=4, P=3)
    dm("dmmha_cross_l1", 2, 2, 8, cross_L=1)
    dm("dmmha_cross_mask_row_zero", 2, 1, 8, cross_L=3, mask=np.array([[1, 1, 0], [0, 0, 0]], np.int32), zero_q=(1,))
    dm("dmmha_self_mask_first_hidden", 2, 2, 8, M=5, P=2, mask=np.array([[0, 1, 1], [1, 1, 1]], np.int32), qkv_bias=True)


def half_cases():
    """float16 forms of the attention and MatMulNBits edges (refeval computes in double and rounds once)."""
    H16 = lambda a: np.asarray(a, np.float32).astype(np.float16)
    case("half_mha_b1_s1_t1_h5", "MultiHeadAttention", [In(H16(r(1, 1, 5))), In(H16(r(1, 1, 5))), In(H16(1 + r(1, 1, 5)))],
         {"num_heads": 1}, outs=(F16,))
    case("half_mha_cross_h12_kpm", "MultiHeadAttention", [In(H16(r(2, 1, 24))), In(H16(r(2, 5, 24))), In(H16(1 + r(2, 5, 24))), None,
                                                          In(np.array([5, 2], np.int32))], {"num_heads": 2}, outs=(F16,))
    case("half_attn_past0_h5", "Attention", [In(H16(r(1, 2, 6))), H16(r(6, 30, scale=0.4)), H16(r(30, scale=0.2)), None,
                                             In(H16(r(2, 1, 2, 0, 5)))], {"num_heads": 2, "unidirectional": 1}, outs=(F16, F16))
    q, k, v = r(1, 1, 8 * 8), r(1, 1, 8), 1 + r(1, 1, 8)
    case("half_gqa_n8_kv1_decode", "GroupQueryAttention", [In(H16(q)), In(H16(k)), In(H16(v)), In(H16(r(1, 1, 3, 8))),
                                                          In(H16(1 + r(1, 1, 3, 8))), In(np.array([3], np.int32)), In(np.array(4, np.int32))],
         {"num_heads": 8, "kv_num_heads": 1}, outs=(F16, F16, F16))
    kb = 3
    case("half_nbits_m5_n1_k40", "MatMulNBits", [In(H16(r(5, 40))), pack(RNG.integers(0, 16, (1, 48)), 4).reshape(1, kb, 8),
                                                 H16(RNG.uniform(0.01, 0.06, kb)), pack(RNG.integers(0, 16, (1, kb)), 4).reshape(-1)],
         dict(K=40, N=1, bits=4, block_size=16), outs=(F16,))
    case("half_fmm_transbatch", "FusedMatMul", [In(H16(r(3, 2, 4))), H16(r(2, 4, 5))], {"transBatchA": 1, "alpha": 0.5}, outs=(F16,))


def odd_attr_cases():
    """Valid but unusual attribute values."""
    mha("mha_scale_negative", 1, 2, 2, 5, T=3, scale=-0.5)
    attention("attn_scale_negative_uni", 1, 3, 1, 5, unidirectional=1, scale=-1.0)
    rope("rope_scale0", r(1, 2, 3, 8, scale=1), [2], 4, scale=0.0)
    rope("rope_scale2_posbs", r(1, 3, 16, scale=1), [[1, 2, 3]], 4, num_heads=2, scale=2.0)
    case("fmm_alpha0", "FusedMatMul", [In(r(2, 3)), r(3, 4)], {"alpha": 0.0})
    case("quickgelu_alpha_big", "QuickGelu", [In(r(17, scale=2))], {"alpha": 1e4})
    case("skipln_eps0", "SkipLayerNormalization", [In(r(2, 1, 9, scale=1)), r(2, 1, 9), r(9) + 1, r(9)], {"epsilon": 0.0},
         outs=(F, F, F, F))
    mha("mha_mask_filter_neg_inf_row_zero", 2, 1, 1, 5, T=3, kpm=np.array([[1, 0, 1], [0, 0, 0]], np.int32),
        mask_filter_value=float("-inf"))


def gqa_combo_cases():
    """GroupQueryAttention with several features at once."""
    gqa("gqa_combo_prompt_b3_n8_kv4_rot_il_window", 3, 5, 8, 4, 16, [4, 2, 0], 5, rotary=16, rotary_interleaved=1,
        local_window_size=2)
    gqa("gqa_combo_decode_b2_rot_window_softcap", 2, 1, 4, 2, 16, [6, 3], 7, P=6, rotary=16, local_window_size=3, softcap=1.5)
    gqa("gqa_combo_decode_b3_shared_buffer", 3, 1, 4, 1, 8, [5, 2, 0], 6, P=8)
    gqa("gqa_combo_decode_b2_shared_smooth_scale", 2, 1, 2, 2, 8, [3, 6], 7, P=9, smooth_softmax=1, scale=0.4)
    gqa("gqa_combo_chunk_rot_window_b1", 1, 4, 4, 2, 16, [9], 10, P=6, rotary=16, local_window_size=4)


def gbq_cases():
    """GatherBlockQuantized with uint8 data (4-bit packed pairs or 8-bit), quantize_axis last."""
    def gbq(name, lead, cols, bits, block, indices, zp=False, **attrs):
        q = RNG.integers(0, 2 ** bits, lead + (cols,))
        data = pack(q.reshape(-1, cols), bits).reshape(lead + (-1,)) if bits == 4 else q.astype(np.uint8)
        nb = (cols + block - 1) // block
        scales = RNG.uniform(0.05, 0.2, lead + (nb,)).astype(np.float32)
        inputs = [data, In(np.asarray(indices, np.int64)), scales]
        if zp:
            z = RNG.integers(0, 2 ** bits, lead + (nb,))
            inputs.append(pack(z.reshape(-1, nb), bits).reshape(lead + (-1,)) if bits == 4 else z.astype(np.uint8))
        case(name, "GatherBlockQuantized", inputs, dict(bits=bits, block_size=block, quantize_axis=len(lead), **attrs))
    gbq("gbq_scalar_index", (5,), 32, 4, 16, np.int64(-2), zp=True)
    gbq("gbq_empty_indices", (5,), 32, 4, 16, np.zeros((0,), np.int64))
    gbq("gbq_partial_block_odd_blocks", (4,), 40, 4, 16, [[3, 0], [-1, 1]], zp=True)
    gbq("gbq_b8_rank3_axis1", (2, 3), 40, 8, 16, [[2, 0], [1, -3]], zp=True, gather_axis=1)
    gbq("gbq_b8_rank3_axis0_scalar", (2, 3), 20, 8, 32, np.int64(1), gather_axis=0)
    gbq("gbq_one_row_one_block", (1,), 16, 4, 16, [0, 0, -1], zp=True)


def misc_cases():
    case("biasadd_320", "BiasAdd", [In(r(2, 3, 320)), r(320), In(r(2, 3, 320))])
    case("biassplitgelu_640", "BiasSplitGelu", [In(r(2, 3, 640)), r(640)])


# ---------------------------------------------------------------- build
def pack_outputs(model, outs, got, folder, data):
    by_type = {}
    for o, t in outs:
        by_type.setdefault(t, []).append(o)
    fixture.write_sequences(model, by_type, got, data)
    del model.graph.output[:len(outs)]


def run_flat(root):
    """Every case as its own model in root/<name>; runs ORT on them. Returns (outputs, rejected)."""
    shutil.rmtree(root, ignore_errors=True)
    folders = []
    for name, group, op, inputs, attrs, out_types in CASES:
        model, feeds, outs = make_model(name, [node_parts(name, op, inputs, attrs, out_types)])
        folder = root / name
        fixture.stage_case(folder, model, feeds)
        folders.append((folder, model, feeds, outs))
    rejected = fixture.run_ort_on([f[0] for f in folders])
    got = {}
    for folder, model, feeds, outs in folders:
        if folder.name in rejected:
            shutil.rmtree(folder)
            continue
        data = fixture.write_inputs(folder, model, feeds)
        for k, (o, t) in enumerate(outs):
            got[o] = np.load(folder / ".ort" / "outputs" / f"{o}.npy")
            fixture.write_pb(data / f"output_{k}.pb", got[o], o)
        shutil.rmtree(folder / ".ort")
    return got, rejected


def build():
    if FLAT:
        root = pathlib.Path(sys.argv[sys.argv.index("--flat") + 1])
        got, rejected = run_flat(root)
    else:
        flat = pathlib.Path("/tmp") / f"{SUITE}_flat_{os.getpid()}"
        got, rejected = run_flat(flat)
        shutil.rmtree(flat)
        root = fixture.OUT / SUITE
        shutil.rmtree(root, ignore_errors=True)
        groups = {}
        for c in CASES:
            if c[0] not in rejected:
                groups.setdefault(c[1], []).append(c)
        for group, cases in groups.items():
            model, feeds, outs = make_model(group, [node_parts(n, op, i, a, o) for n, _, op, i, a, o in cases])
            folder = root / group
            folder.mkdir(parents=True)
            data = fixture.write_inputs(folder, model, feeds)
            pack_outputs(model, outs, got, folder, data)
            onnx.save(model, folder / "model.onnx")
    print(f"{len(CASES) - len(rejected)} cases written to {root}")
    for name, why in rejected.items():
        print(f"ORT refuses {name}: {why}")


if __name__ == "__main__":
    attention_cases()
    mha_cases()
    gqa_cases()
    rope_cases()
    skipln_cases()
    gelu_cases()
    fmm_cases()
    embln_cases()
    nbits_cases()
    more_cases()
    third_cases()
    fourth_cases()
    fifth_cases()
    sixth_cases()
    gbq_cases()
    gqa_combo_cases()
    odd_attr_cases()
    half_cases()
    moe_cases()
    dmmha_cases()
    seventh_cases()
    misc_cases()
    build()
