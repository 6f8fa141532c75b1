"""Small decoder-only LLMs written the way the three producers of llm-decoders.md §1.1 write them.

Each builder takes a Config and returns an onnx.ModelProto with the Hugging Face / GenAI IO names:
  input_ids (B, S) int64, attention_mask (B, P + S) int64 [, position_ids (B, S) int64],
  past_key_values.{i}.key / .value (B, Nkv, P, H) -> logits (B, S, V), present.{i}.key / .value

- genai(cfg):    ONNX Runtime GenAI's model builder: SimplifiedLayerNormalization (ai.onnx domain),
                 SkipSimplifiedLayerNormalization, packed-QKV MatMulNBits (int4), GroupQueryAttention
                 with rotary inside (positions from seqlens_k), SiLU as Sigmoid * x, MatMulNBits
                 lm_head with a bias; seqlens_k / total_sequence_length from the mask as the builder
                 derives them.
- optimum(cfg):  an Optimum export after ORT's transformer optimizer: float MatMul,
                 SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization, com.microsoft
                 RotaryEmbedding on q and k from position_ids, MultiHeadAttention with the mask as
                 key padding mask (unidirectional), separate per-layer past tensors.
- portable(cfg): the opset-24 portable form (mobius): RMSNormalization, RotaryEmbedding,
                 Attention with a static cache updated by TensorScatter (nonpad_kv_seqlen),
                 inputs past_key_values.{i}.* of the maximum length and cache_position (B,) int64.

The weights are random (seeded) and scaled so that activations stay O(1). With cfg.tied the LM head
reuses the embedding table: the plain-MatMul forms read it through a Transpose node (one copy in the
file, as torch.onnx.export writes a tied head without constant folding; a runtime folds it or
transposes per run), the GenAI form quantizes the table's values into its int4 MatMulNBits head (a
second, int4 copy, as the GenAI builder writes a tied head unless its embeddings are shared
through GatherBlockQuantized; MatMulNBits stores B as (N, K), the table's own (V, H) layout).
Used by make_decoders.py (ORT fixtures) and benchmarks/llm (the int4 decode benchmark).
"""
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, helper, numpy_helper


@dataclass
class Config:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 128
    vocab: int = 96
    max_length: int = 64  # rotary cache rows, and the static cache of the portable form
    bits: int = 4
    block_size: int = 32
    symmetric: bool = True
    accuracy_level: int = 0
    lm_head_bias: bool = True
    tied: bool = False  # the LM head reads the embedding table (as Qwen2, Gemma, GPT-2 tie them)
    seed: int = 0
    eps: float = 1e-5

    @property
    def head_size(self):
        return self.hidden // self.heads


# ---------------------------------------------------------------------------------------------
# MatMulNBits weights: W (K, N) quantised per block of block_size along K, column by column.

def quantize_nbits(w, bits, block_size, symmetric):
    """Returns (B uint8 (N, k_blocks, blob), scales float32 (N, k_blocks), zero_points packed
    uint8 (N, ceil(k_blocks * bits / 8)) or None) in MatMulNBits' layout."""
    K, N = w.shape
    k_blocks = -(-K // block_size)
    padded = np.zeros((k_blocks * block_size, N), np.float32)
    padded[:K] = w
    blocks = padded.T.reshape(N, k_blocks, block_size)
    top = (1 << bits) - 1
    if symmetric:
        scale = np.abs(blocks).max(axis=2) / (1 << (bits - 1))
        scale[scale == 0] = 1
        zp = np.full((N, k_blocks), 1 << (bits - 1), np.int32)
    else:
        lo, hi = np.minimum(blocks.min(axis=2), 0), np.maximum(blocks.max(axis=2), 0)
        scale = (hi - lo) / top
        scale[scale == 0] = 1
        zp = np.clip(np.round(-lo / scale), 0, top).astype(np.int32)
    scale = scale.astype(np.float32)
    q = np.clip(np.round(blocks / scale[:, :, None]) + zp[:, :, None], 0, top).astype(np.uint8)
    per_byte = 8 // bits
    packed = np.zeros((N, k_blocks, block_size // per_byte), np.uint8)
    for j in range(per_byte):
        packed |= (q[:, :, j::per_byte] << (j * bits)).astype(np.uint8)
    if symmetric:
        return packed, scale, None
    zp_packed = np.zeros((N, -(-k_blocks * bits // 8)), np.uint8)
    for kb in range(k_blocks):
        zp_packed[:, kb // per_byte] |= (zp[:, kb] << ((kb % per_byte) * bits)).astype(np.uint8)
    return packed, scale, zp_packed


class Builder:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        self.nodes, self.inits = [], []
        self.table = None  # with cfg.tied, the embedding table's array (the GenAI form's head quantizes it)

    def weight(self, name, shape, std=None):
        std = std if std is not None else 1 / np.sqrt(shape[0])
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * std).astype(np.float32), name))
        return name

    def embedding(self):
        """The token table (vocab, hidden): std 1, or with cfg.tied std 1 / sqrt(hidden) (Qwen2's is about
        that), so that the tied head's logits stay O(1) and not led by the current token's own row."""
        std = 1 / np.sqrt(self.cfg.hidden) if self.cfg.tied else 1.0
        name = self.weight("model.embed_tokens.weight", (self.cfg.vocab, self.cfg.hidden), std=std)
        if self.cfg.tied:
            self.table = numpy_helper.to_array(self.inits[-1])
        return name

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def norm_weight(self, name):
        return self.const(name, (1 + 0.1 * self.rng.standard_normal(self.cfg.hidden)).astype(np.float32))

    def node(self, op, inputs, outputs, name, domain="", **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, domain=domain or None, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def matmul_nbits(self, x, K, N, name, bias=False, w=None):
        c = self.cfg
        if w is None:
            w = self.rng.standard_normal((K, N)).astype(np.float32) / np.sqrt(K)
        packed, scales, zp = quantize_nbits(w, c.bits, c.block_size, c.symmetric)
        inputs = [x, self.const(f"{name}.qweight", packed), self.const(f"{name}.scales", scales)]
        inputs.append(self.const(f"{name}.qzeros", zp) if zp is not None else "")
        if bias:
            inputs += ["", self.weight(f"{name}.bias", (N,), std=0.1)]
        while inputs[-1] == "":
            inputs.pop()
        return self.node("MatMulNBits", inputs, [f"{name}/output_0"], name, domain="com.microsoft", K=K, N=N,
                         bits=c.bits, block_size=c.block_size, accuracy_level=c.accuracy_level)

    def matmul(self, x, K, N, name):
        return self.node("MatMul", [x, self.weight(f"{name}.weight", (K, N))], [f"{name}/output_0"], name)

    def rotary_caches(self):
        c = self.cfg
        inv = 1.0 / (10000 ** (np.arange(0, c.head_size, 2) / c.head_size))
        freqs = np.outer(np.arange(c.max_length), inv)
        return (self.const("cos_cache", np.cos(freqs).astype(np.float32)),
                self.const("sin_cache", np.sin(freqs).astype(np.float32)))

    def mlp(self, x, i, nbits):
        c, p = self.cfg, f"/model/layers.{i}/mlp"
        proj = (lambda x, K, N, n: self.matmul_nbits(x, K, N, n)) if nbits else self.matmul
        gate = proj(x, c.hidden, c.intermediate, f"{p}/gate_proj/MatMul")
        up = proj(x, c.hidden, c.intermediate, f"{p}/up_proj/MatMul")
        sig = self.node("Sigmoid", [gate], [f"{p}/act_fn/Sigmoid/output_0"], f"{p}/act_fn/Sigmoid")
        act = self.node("Mul", [gate, sig], [f"{p}/act_fn/Mul/output_0"], f"{p}/act_fn/Mul")
        prod = self.node("Mul", [act, up], [f"{p}/Mul/output_0"], f"{p}/Mul")
        return proj(prod, c.intermediate, c.hidden, f"{p}/down_proj/MatMul")

    def residual_tail(self, residual, attn_out, i, norm, add_names):
        """The rest of layer i after attention in the plain-op forms: residual + attn_out, the
        post-attention norm, the MLP, residual + MLP, then the next layer's input norm (the final
        norm after the last layer). norm(x, weight, scope) is the form's RMSNorm. Returns
        (hidden, residual)."""
        c, layer = self.cfg, f"/model/layers.{i}"
        residual = self.node("Add", [residual, attn_out], [f"{layer}/{add_names[0]}/output_0"], f"{layer}/{add_names[0]}")
        hidden = norm(residual, f"model.layers.{i}.post_attention_layernorm.weight", f"{layer}/post_attention_layernorm")
        down = self.mlp(hidden, i, nbits=False)
        residual = self.node("Add", [residual, down], [f"{layer}/{add_names[1]}/output_0"], f"{layer}/{add_names[1]}")
        last = i + 1 == c.layers
        hidden = norm(residual, "model.norm.weight" if last else f"model.layers.{i + 1}.input_layernorm.weight",
                      "/model/norm" if last else f"/model/layers.{i + 1}/input_layernorm")
        return hidden, residual

    def skip_norm_tail(self, residual, attn_out, i, nbits):
        """The rest of layer i after attention in the ORT-fused forms: SkipSimplifiedLayerNormalization
        of attn_out + residual, the MLP, then the next layer's (or the final) skip norm, each
        passing the residual sum on as output 3, as the GenAI builder chains them. Returns
        (hidden, residual)."""
        c, layer = self.cfg, f"/model/layers.{i}"
        hidden, _, _, residual = self.node("SkipSimplifiedLayerNormalization",
                                           [attn_out, residual, self.norm_weight(f"model.layers.{i}.post_attention_layernorm.weight")],
                                           [f"{layer}/post_attention_layernorm/output_0", "", "",
                                            f"{layer}/post_attention_layernorm/output_3"],
                                           f"{layer}/post_attention_layernorm", domain="com.microsoft", epsilon=c.eps)
        down = self.mlp(hidden, i, nbits=nbits)
        last = i + 1 == c.layers
        norm = "model.norm.weight" if last else f"model.layers.{i + 1}.input_layernorm.weight"
        scope = "/model/norm" if last else f"/model/layers.{i + 1}/input_layernorm"
        hidden, _, _, residual = self.node("SkipSimplifiedLayerNormalization", [down, residual, self.norm_weight(norm)],
                                           [f"{scope}/output_0", "", "", f"{scope}/output_3"], scope,
                                           domain="com.microsoft", epsilon=c.eps)
        return hidden, residual

    def lm_head(self, hidden):
        if self.cfg.tied:
            table = self.node("Transpose", ["model.embed_tokens.weight"], ["/lm_head/Transpose/output_0"], "/lm_head/Transpose",
                              perm=[1, 0])
            self.node("MatMul", [hidden, table], ["/lm_head/MatMul/output_0"], "/lm_head/MatMul")
        else:
            self.matmul(hidden, self.cfg.hidden, self.cfg.vocab, "/lm_head/MatMul")
        self.node("Identity", ["/lm_head/MatMul/output_0"], ["logits"], "/lm_head/Identity")

    def model(self, inputs, outputs, opsets):
        graph = helper.make_graph(self.nodes, "decoder", inputs, outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], ir_version=10,
                                 producer_name="refeval tests/data/ort/decoders.py")


def io(cfg, with_position_ids, past_len="past_sequence_length", cache_position=False):
    c, H = cfg, cfg.head_size
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    ins = [helper.make_tensor_value_info("input_ids", i64, ["batch_size", "sequence_length"])]
    if cache_position:
        ins.append(helper.make_tensor_value_info("cache_position", i64, ["batch_size"]))
    else:
        ins.append(helper.make_tensor_value_info("attention_mask", i64, ["batch_size", "total_sequence_length"]))
    if with_position_ids:
        ins.append(helper.make_tensor_value_info("position_ids", i64, ["batch_size", "sequence_length"]))
    outs = [helper.make_tensor_value_info("logits", f, ["batch_size", "sequence_length", c.vocab])]
    present_len = past_len if cache_position else "total_sequence_length"
    for i in range(c.layers):
        for kind in ("key", "value"):
            ins.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kind}", f, ["batch_size", c.kv_heads, past_len, H]))
            outs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", f, ["batch_size", c.kv_heads, present_len, H]))
    return ins, outs


def genai(cfg):
    c, b = cfg, Builder(cfg)
    H = c.head_size
    x = b.node("Gather", [b.embedding(), "input_ids"],
               ["/model/embed_tokens/Gather/output_0"], "/model/embed_tokens/Gather")
    # make_attention_mask_reformatting_for_gqa: seqlens_k = ReduceSum(mask) - 1, total = Shape(mask)[1]
    m = "/model/attn_mask_reformat/attn_mask_subgraph"
    red = b.node("ReduceSum", ["attention_mask", b.const("one_axis", np.array([1], np.int64))], [f"{m}/ReduceSum/output_0"],
                 f"{m}/ReduceSum", keepdims=0)
    sub = b.node("Sub", [red, b.const("one_i64", np.array(1, np.int64))], [f"{m}/Sub/output_0"], f"{m}/Sub")
    seqlens_k = b.node("Cast", [sub], [f"{m}/Sub/Cast/output_0"], f"{m}/Sub/Cast", to=TensorProto.INT32)
    shape = b.node("Shape", ["attention_mask"], [f"{m}/Shape/output_0"], f"{m}/Shape")
    total = b.node("Gather", [shape, b.const("one_scalar", np.array(1, np.int64))], [f"{m}/Gather/output_0"], f"{m}/Gather", axis=0)
    total = b.node("Cast", [total], [f"{m}/Gather/Cast/output_0"], f"{m}/Gather/Cast", to=TensorProto.INT32)
    cos, sin = b.rotary_caches()

    hidden = b.node("SimplifiedLayerNormalization", [x, b.norm_weight("model.layers.0.input_layernorm.weight")],
                    ["/model/layers.0/input_layernorm/output_0"], "/model/layers.0/input_layernorm", axis=-1,
                    epsilon=c.eps, stash_type=1)
    residual = x
    for i in range(c.layers):
        p = f"/model/layers.{i}"
        qkv = b.matmul_nbits(hidden, c.hidden, (c.heads + 2 * c.kv_heads) * H, f"{p}/attn/qkv_proj/MatMul")
        attn, pk, pv = b.node("GroupQueryAttention",
                              [qkv, "", "", f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens_k, total, cos, sin],
                              [f"{p}/attn/GroupQueryAttention/output_0", f"present.{i}.key", f"present.{i}.value"],
                              f"{p}/attn/GroupQueryAttention", domain="com.microsoft", num_heads=c.heads,
                              kv_num_heads=c.kv_heads, do_rotary=1, rotary_interleaved=0, local_window_size=-1)
        o = b.matmul_nbits(attn, c.hidden, c.hidden, f"{p}/attn/o_proj/MatMul")
        hidden, residual = b.skip_norm_tail(residual, o, i, nbits=True)
    # tied: W (K, N) = the table transposed (its own values, quantized)
    tied = b.table.T if c.tied else None
    logits = b.matmul_nbits(hidden, c.hidden, c.vocab, "/lm_head/MatMul", bias=c.lm_head_bias, w=tied)
    b.node("Identity", [logits], ["logits"], "/lm_head/Identity")
    ins, outs = io(c, with_position_ids=False)
    return b.model(ins, outs, [("", 21), ("com.microsoft", 1)])


def optimum(cfg):
    c, b = cfg, Builder(cfg)
    assert c.heads == c.kv_heads, "MultiHeadAttention needs as many KV heads as query heads"
    x = b.node("Gather", [b.embedding(), "input_ids"],
               ["/model/embed_tokens/Gather/output_0"], "/model/embed_tokens/Gather")
    cos, sin = b.rotary_caches()
    # the padding mask of MultiHeadAttention: (B, T) int32, 1 = keep
    mask = b.node("Cast", ["attention_mask"], ["/model/attention_mask/Cast/output_0"], "/model/attention_mask/Cast",
                  to=TensorProto.INT32)
    hidden = b.node("SimplifiedLayerNormalization", [x, b.norm_weight("model.layers.0.input_layernorm.weight")],
                    ["/model/layers.0/input_layernorm/output_0"], "/model/layers.0/input_layernorm", axis=-1,
                    epsilon=c.eps, stash_type=1)
    residual = x
    for i in range(c.layers):
        p = f"/model/layers.{i}/self_attn"
        qkv = {}
        for n in ("q", "k", "v"):
            qkv[n] = b.matmul(hidden, c.hidden, c.hidden, f"{p}/{n}_proj/MatMul")
        for n in ("q", "k"):
            qkv[n] = b.node("RotaryEmbedding", [qkv[n], "position_ids", cos, sin], [f"{p}/{n}_rotary/output_0"],
                            f"{p}/{n}_rotary", domain="com.microsoft", interleaved=0)
        attn, _, _ = b.node("MultiHeadAttention",
                            [qkv["q"], qkv["k"], qkv["v"], "", mask, "", f"past_key_values.{i}.key", f"past_key_values.{i}.value"],
                            [f"{p}/MultiHeadAttention/output_0", f"present.{i}.key", f"present.{i}.value"],
                            f"{p}/MultiHeadAttention", domain="com.microsoft", num_heads=c.heads, unidirectional=1)
        o = b.matmul(attn, c.hidden, c.hidden, f"{p}/o_proj/MatMul")
        hidden, residual = b.skip_norm_tail(residual, o, i, nbits=False)
    b.lm_head(hidden)
    ins, outs = io(c, with_position_ids=True)
    return b.model(ins, outs, [("", 17), ("com.microsoft", 1)])


def torch_export(cfg):
    """A Llama-style decoder as torch.onnx.export writes Hugging Face's modeling code, op by op:
    RMSNorm as Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul, rotate-half rotary from position_ids
    (Gather of full-width cos/sin, Slice/Neg/Concat), the causal and padding mask built from
    attention_mask (Range, LessOrEqual, And, Where with the float minimum), grouped-query
    attention through repeat_kv (Unsqueeze/Expand/Reshape), Softmax, SiLU as Sigmoid * x."""
    c, b = cfg, Builder(cfg)
    H, rep = cfg.head_size, cfg.heads // cfg.kv_heads
    i64 = lambda name, v: b.const(name, np.array(v, np.int64))  # noqa: E731
    x = b.node("Gather", [b.embedding(), "input_ids"],
               ["/model/embed_tokens/Gather/output_0"], "/model/embed_tokens/Gather")
    # rotary tables, full width (HF concatenates the frequencies twice)
    inv = 1.0 / (10000 ** (np.arange(0, H, 2) / H))
    freqs = np.outer(np.arange(c.max_length), inv)
    emb = np.concatenate([freqs, freqs], axis=1)
    cos = b.node("Gather", [b.const("model.rotary_emb.cos", np.cos(emb).astype(np.float32)), "position_ids"],
                 ["/model/rotary_emb/cos/output_0"], "/model/rotary_emb/cos")
    sin = b.node("Gather", [b.const("model.rotary_emb.sin", np.sin(emb).astype(np.float32)), "position_ids"],
                 ["/model/rotary_emb/sin/output_0"], "/model/rotary_emb/sin")
    cos = b.node("Unsqueeze", [cos, i64("axis_1", [1])], ["/model/rotary_emb/cos_unsq/output_0"], "/model/rotary_emb/cos_unsq")
    sin = b.node("Unsqueeze", [sin, i64("axis_1b", [1])], ["/model/rotary_emb/sin_unsq/output_0"], "/model/rotary_emb/sin_unsq")
    # _prepare_4d_causal_attention_mask: (B, 1, S, T) additive
    m = "/model/mask"
    total = b.node("Gather", [b.node("Shape", ["attention_mask"], [f"{m}/Shape/output_0"], f"{m}/Shape"), i64("idx1", 1)],
                   [f"{m}/total/output_0"], f"{m}/total", axis=0)
    seq = b.node("Gather", [b.node("Shape", ["input_ids"], [f"{m}/Shape_1/output_0"], f"{m}/Shape_1"), i64("idx1b", 1)],
                 [f"{m}/seq/output_0"], f"{m}/seq", axis=0)
    past = b.node("Sub", [total, seq], [f"{m}/past/output_0"], f"{m}/past")
    q_pos = b.node("Range", [past, total, i64("one", 1)], [f"{m}/q_pos/output_0"], f"{m}/q_pos")
    k_pos = b.node("Range", [i64("zero", 0), total, i64("one_b", 1)], [f"{m}/k_pos/output_0"], f"{m}/k_pos")
    q_col = b.node("Unsqueeze", [q_pos, i64("axis_m1", [-1])], [f"{m}/q_col/output_0"], f"{m}/q_col")
    causal = b.node("LessOrEqual", [k_pos, q_col], [f"{m}/causal/output_0"], f"{m}/causal")
    pad = b.node("Cast", ["attention_mask"], [f"{m}/pad/output_0"], f"{m}/pad", to=TensorProto.BOOL)
    pad = b.node("Unsqueeze", [pad, i64("axes_12", [1, 2])], [f"{m}/pad_4d/output_0"], f"{m}/pad_4d")
    allowed = b.node("And", [causal, pad], [f"{m}/allowed/output_0"], f"{m}/allowed")
    bias = b.node("Where", [allowed, b.const("zero_f", np.array(0, np.float32)),
                            b.const("min_f", np.array(np.finfo(np.float32).min, np.float32))], [f"{m}/bias/output_0"], f"{m}/bias")

    def rms(inp, weight, name):
        sq = b.node("Pow", [inp, b.const(f"{name}/two", np.array(2, np.float32))], [f"{name}/Pow/output_0"], f"{name}/Pow")
        mean = b.node("ReduceMean", [sq, i64(f"{name}/axes", [-1])], [f"{name}/ReduceMean/output_0"], f"{name}/ReduceMean", keepdims=1)
        var = b.node("Add", [mean, b.const(f"{name}/eps", np.array(c.eps, np.float32))], [f"{name}/Add/output_0"], f"{name}/Add")
        root = b.node("Sqrt", [var], [f"{name}/Sqrt/output_0"], f"{name}/Sqrt")
        inv_rms = b.node("Reciprocal", [root], [f"{name}/Reciprocal/output_0"], f"{name}/Reciprocal")
        normed = b.node("Mul", [inp, inv_rms], [f"{name}/Mul/output_0"], f"{name}/Mul")
        return b.node("Mul", [b.norm_weight(weight), normed], [f"{name}/Mul_1/output_0"], f"{name}/Mul_1")

    def rotate(t, name):  # t * cos + rotate_half(t) * sin
        x1 = b.node("Slice", [t, i64(f"{name}/s0", [0]), i64(f"{name}/e0", [H // 2]), i64(f"{name}/a0", [-1])],
                    [f"{name}/Slice/output_0"], f"{name}/Slice")
        x2 = b.node("Slice", [t, i64(f"{name}/s1", [H // 2]), i64(f"{name}/e1", [H]), i64(f"{name}/a1", [-1])],
                    [f"{name}/Slice_1/output_0"], f"{name}/Slice_1")
        neg = b.node("Neg", [x2], [f"{name}/Neg/output_0"], f"{name}/Neg")
        half = b.node("Concat", [neg, x1], [f"{name}/Concat/output_0"], f"{name}/Concat", axis=-1)
        a = b.node("Mul", [t, cos], [f"{name}/Mul/output_0"], f"{name}/Mul")
        r = b.node("Mul", [half, sin], [f"{name}/Mul_1/output_0"], f"{name}/Mul_1")
        return b.node("Add", [a, r], [f"{name}/Add/output_0"], f"{name}/Add")

    hidden, residual = rms(x, "model.layers.0.input_layernorm.weight", "/model/layers.0/input_layernorm"), x
    for i in range(c.layers):
        p = f"/model/layers.{i}/self_attn"
        heads = {"q": c.heads, "k": c.kv_heads, "v": c.kv_heads}
        t = {}
        for n in ("q", "k", "v"):
            y = b.matmul(hidden, c.hidden, heads[n] * H, f"{p}/{n}_proj/MatMul")
            y = b.node("Reshape", [y, i64(f"{p}/{n}_shape", [0, 0, heads[n], H])], [f"{p}/{n}_view/output_0"], f"{p}/{n}_view")
            t[n] = b.node("Transpose", [y], [f"{p}/{n}_transpose/output_0"], f"{p}/{n}_transpose", perm=[0, 2, 1, 3])
        q, k = rotate(t["q"], f"{p}/q_rotary"), rotate(t["k"], f"{p}/k_rotary")
        k = b.node("Concat", [f"past_key_values.{i}.key", k], [f"present.{i}.key"], f"{p}/k_cache", axis=2)
        v = b.node("Concat", [f"past_key_values.{i}.value", t["v"]], [f"present.{i}.value"], f"{p}/v_cache", axis=2)

        def repeat_kv(kv, n):
            u = b.node("Unsqueeze", [kv, i64(f"{p}/{n}_rep_axis", [2])], [f"{p}/{n}_rep_unsq/output_0"], f"{p}/{n}_rep_unsq")
            e = b.node("Expand", [u, i64(f"{p}/{n}_rep_shape", [1, 1, rep, 1, 1])], [f"{p}/{n}_rep_expand/output_0"], f"{p}/{n}_rep_expand")
            return b.node("Reshape", [e, i64(f"{p}/{n}_rep_view", [0, c.heads, -1, H])], [f"{p}/{n}_rep/output_0"], f"{p}/{n}_rep")

        k, v = repeat_kv(k, "k"), repeat_kv(v, "v")
        kt = b.node("Transpose", [k], [f"{p}/k_t/output_0"], f"{p}/k_t", perm=[0, 1, 3, 2])
        scores = b.node("MatMul", [q, kt], [f"{p}/scores/output_0"], f"{p}/scores")
        scores = b.node("Mul", [scores, b.const(f"{p}/scale", np.array(1 / np.sqrt(H), np.float32))], [f"{p}/scaled/output_0"], f"{p}/scaled")
        scores = b.node("Add", [scores, bias], [f"{p}/masked/output_0"], f"{p}/masked")
        probs = b.node("Softmax", [scores], [f"{p}/Softmax/output_0"], f"{p}/Softmax", axis=-1)
        ctx = b.node("MatMul", [probs, v], [f"{p}/context/output_0"], f"{p}/context")
        ctx = b.node("Transpose", [ctx], [f"{p}/context_t/output_0"], f"{p}/context_t", perm=[0, 2, 1, 3])
        ctx = b.node("Reshape", [ctx, i64(f"{p}/out_shape", [0, 0, c.hidden])], [f"{p}/context_view/output_0"], f"{p}/context_view")
        o = b.matmul(ctx, c.hidden, c.hidden, f"{p}/o_proj/MatMul")
        hidden, residual = b.residual_tail(residual, o, i, rms, ("Add", "Add_1"))
    b.lm_head(hidden)
    ins, outs = io(c, with_position_ids=True)
    return b.model(ins, outs, [("", 18)])


def merged(model):
    """A merged decoder as Optimum writes one: an If on a `use_cache_branch` input, its then-branch
    the decoder with past, its else-branch the decoder with the past cut to length 0 (the prefill).
    The weights stay initializers of the main graph, read from the outer scope."""
    g = model.graph
    pasts = [i.name for i in g.input if "past" in i.name]

    def branch(suffix, cut):
        nodes = []
        rename = {}
        if cut:
            zero = helper.make_tensor(f"cut_zero{suffix}", TensorProto.INT64, [1], [0])
            nodes.append(helper.make_node("Constant", [], [f"cut_zero{suffix}"], value=zero))
            axis = helper.make_tensor(f"cut_axis{suffix}", TensorProto.INT64, [1], [2])
            nodes.append(helper.make_node("Constant", [], [f"cut_axis{suffix}"], value=axis))
            for p in pasts:
                rename[p] = f"{p}{suffix}"
                nodes.append(helper.make_node("Slice", [p, f"cut_zero{suffix}", f"cut_zero{suffix}", f"cut_axis{suffix}"], [rename[p]]))
        internal = {o for n in g.node for o in n.output}
        outs = {o.name for o in g.output}
        for n in g.node:
            copy = helper.make_node(n.op_type, [rename.get(i, f"{i}{suffix}" if i in internal and i not in outs else
                                                            f"{i}{suffix}" if i in outs else i) for i in n.input],
                                    [f"{o}{suffix}" for o in n.output], name=f"{n.name}{suffix}", domain=n.domain or None)
            copy.attribute.extend(n.attribute)
            nodes.append(copy)
        outputs = [helper.make_tensor_value_info(f"{o.name}{suffix}", o.type.tensor_type.elem_type, None) for o in g.output]
        return helper.make_graph(nodes, f"decoder{suffix}", [], outputs)

    node = helper.make_node("If", ["use_cache_branch"], [o.name for o in g.output], name="optimum::if",
                            then_branch=branch("_with_past", False), else_branch=branch("_no_past", True))
    inputs = list(g.input) + [helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1])]
    graph = helper.make_graph([node], "merged_decoder", inputs, list(g.output), list(g.initializer))
    return helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version,
                             producer_name=model.producer_name)


def portable(cfg):
    c, b = cfg, Builder(cfg)
    H = c.head_size
    x = b.node("Gather", [b.embedding(), "input_ids"],
               ["/model/embed_tokens/Gather/output_0"], "/model/embed_tokens/Gather")
    cos, sin = b.rotary_caches()
    # nonpad_kv_seqlen = cache_position + S: the keys each row has after this step's writes
    s_len = b.node("Shape", ["input_ids"], ["/model/seq_len/output_0"], "/model/seq_len", start=1, end=2)
    nonpad = b.node("Add", ["cache_position", s_len], ["/model/nonpad_kv_seqlen/output_0"], "/model/nonpad_kv_seqlen")

    def rms(inp, weight, name):
        return b.node("RMSNormalization", [inp, b.norm_weight(weight)], [f"{name}/output_0"], name, axis=-1, epsilon=c.eps)

    hidden, residual = rms(x, "model.layers.0.input_layernorm.weight", "/model/layers.0/input_layernorm"), x
    for i in range(c.layers):
        p = f"/model/layers.{i}/self_attn"
        heads = {"q": c.heads, "k": c.kv_heads, "v": c.kv_heads}
        bnsh = {}
        for n in ("q", "k", "v"):
            y = b.matmul(hidden, c.hidden, heads[n] * H, f"{p}/{n}_proj/MatMul")
            y = b.node("Reshape", [y, b.const(f"{p}/{n}_shape", np.array([0, 0, heads[n], H], np.int64))],
                       [f"{p}/{n}_reshape/output_0"], f"{p}/{n}_reshape")
            bnsh[n] = b.node("Transpose", [y], [f"{p}/{n}_transpose/output_0"], f"{p}/{n}_transpose", perm=[0, 2, 1, 3])
        for n in ("q", "k"):
            bnsh[n] = b.node("RotaryEmbedding", [bnsh[n], cos, sin, "position_ids"], [f"{p}/{n}_rotary/output_0"],
                             f"{p}/{n}_rotary", interleaved=0)
        present = {}
        for n, kind in (("k", "key"), ("v", "value")):
            present[n] = b.node("TensorScatter", [f"past_key_values.{i}.{kind}", bnsh[n], "cache_position"],
                                [f"present.{i}.{kind}"], f"{p}/{n}_cache_update", axis=-2)
        attn = b.node("Attention", [bnsh["q"], present["k"], present["v"], "", "", "", nonpad],
                      [f"{p}/Attention/output_0"], f"{p}/Attention", is_causal=1, q_num_heads=c.heads,
                      kv_num_heads=c.kv_heads)
        attn = b.node("Transpose", [attn], [f"{p}/out_transpose/output_0"], f"{p}/out_transpose", perm=[0, 2, 1, 3])
        attn = b.node("Reshape", [attn, b.const(f"{p}/out_shape", np.array([0, 0, c.hidden], np.int64))],
                      [f"{p}/out_reshape/output_0"], f"{p}/out_reshape")
        o = b.matmul(attn, c.hidden, c.hidden, f"{p}/o_proj/MatMul")
        hidden, residual = b.residual_tail(residual, o, i, rms, ("residual_attn", "residual_mlp"))
    b.lm_head(hidden)
    ins, outs = io(c, with_position_ids=True, past_len="max_cache_length", cache_position=True)
    return b.model(ins, outs, [("", 24)])
