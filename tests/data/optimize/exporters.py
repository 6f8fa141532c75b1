"""Decoder models written the ways real code writes them, for torch.onnx.export (see make_exports.py).

Each model computes an architecture (GPT-2, Llama and its relatives Mistral, Phi-2, GPT-NeoX and
Gemma, a BART decoder with past) the way one real code base writes it, so that its ONNX export has
that code base's graph form: the optimizer's fusions must hold on all of them. Weights are random
and seeded (no downloads). The trap models resemble a fusion but compute something else (epsilon
outside the square root, a wrong GELU coefficient, ...): they must stay unfused and equivalent.

Every model has class attributes describing its interface, used by make_exports.py:
  family            "gpt2", "llama", "phi", "gpt_neox", "gemma" or "bart"
  past              None, "separate" (past_key_values.{i}.key/value (B, N, P, h) inputs and
                    present.{i}.key/value outputs, as Optimum writes them), "stacked" (past_{i}
                    (2, B, N, P, h) and present_{i}, as ORT's gpt2_helper writes them) or
                    "seq2seq" (the BART decoder with past: past_key_values.{i}.decoder.key/value and
                    past_key_values.{i}.encoder.key/value in, present.{i}.decoder.key/value out;
                    the encoder ones (B, T, N, h) instead of (B, N, T, h) where cross_bsnh is set)
  mask              None or the dtype of the attention_mask input (B, P + S)
  position_ids      whether position_ids (B, S) is an input
forward(*inputs) takes the inputs in the order of input_names() and returns (logits, presents...).
"""
import dataclasses
import math
import pathlib
import sys

import torch
import torch.nn.functional as F
from torch import nn

# repo_gpt2 is the benchmark's own GPT-2 (benchmarks/gpt2/make_gpt2.py): its Block, imported.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "gpt2"))
import make_gpt2  # noqa: E402


@dataclasses.dataclass
class Config:
    vocab: int = 256
    ctx: int = 128
    d: int = 64
    heads: int = 4
    layers: int = 2
    kv_heads: int = 2  # Llama family only
    inter: int = 128  # Llama family only (GPT-2's MLP is 4 d)
    eps: float = 1e-5
    rotary: float = 1.0  # the rotated fraction of a head (Phi-2's partial_rotary_factor, GPT-NeoX's rotary_pct)
    window: int = 0  # Mistral's sliding_window

    @property
    def hd(self):
        return self.d // self.heads


SMALL = Config()
FULL_GPT2 = Config(vocab=50257, ctx=1024, d=768, heads=12, layers=12)
FULL_LLAMA = Config(vocab=32000, ctx=1024, d=768, heads=12, kv_heads=4, layers=12, inter=2048, eps=1e-6)
# the trap models, one block, at both sizes: what they test does not depend on the size
TINY = Config(vocab=64, ctx=32, d=32, heads=4, layers=1, kv_heads=2, inter=64)


class Decoder(nn.Module):
    family = "gpt2"
    past = None
    mask = None
    position_ids = False

    def kv_heads(self):
        return self.cfg.kv_heads if self.family in ("llama", "gemma") else self.cfg.heads

    def input_names(self):
        names = ["input_ids"]
        if self.mask is not None:
            names.append("attention_mask")
        if self.position_ids:
            names.append("position_ids")
        return names + self.past_names()

    def past_names(self):
        if self.past == "separate":
            return [f"past_key_values.{i}.{kv}" for i in range(self.cfg.layers) for kv in ("key", "value")]
        if self.past == "stacked":
            return [f"past_{i}" for i in range(self.cfg.layers)]
        return []

    def output_names(self):
        if self.past == "separate":
            return ["logits"] + [f"present.{i}.{kv}" for i in range(self.cfg.layers) for kv in ("key", "value")]
        if self.past == "stacked":
            return ["logits"] + [f"present_{i}" for i in range(self.cfg.layers)]
        return ["logits"]

    def split_inputs(self, args):
        """(input_ids, attention_mask or None, position_ids or None, [(past_key, past_value)] or None)"""
        args = list(args)
        ids = args.pop(0)
        mask = args.pop(0) if self.mask is not None else None
        pos = args.pop(0) if self.position_ids else None
        if self.past == "separate":
            past = [(args[2 * i], args[2 * i + 1]) for i in range(self.cfg.layers)]
        elif self.past == "stacked":
            past = list(args)  # each (2, B, N, P, h); unpacked by the attention as HF does
        else:
            past = None
        return ids, mask, pos, past

    def pack_presents(self, presents):
        if self.past == "separate":
            return [t for kv in presents for t in kv]
        if self.past == "stacked":  # gpt2_helper's MyGPT2Model.post_process
            return [torch.stack((k, v)) for k, v in presents]
        return []


def init_weights(model, d):
    """GPT-2's initialisation scale (0.02 at d = 768, scaled to d), norm weights near 1, so that
    activations look like a trained model's and every weight matters."""
    std = 0.02 * math.sqrt(768 / d)
    with torch.no_grad():
        for name, w in model.named_parameters():
            if w.dim() > 1:
                w.normal_(0.0, std)
            elif "ln" in name or "norm" in name:
                w.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn_like(w))
            else:
                w.normal_(0.0, std)
    return model


def new_gelu(x):  # HF NewGELUActivation, nanoGPT's new_gelu
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


# ---------------------------------------------------------------------------------------------
# Hugging Face GPT-2 (transformers modeling_gpt2.py, eager attention)


class HFConv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: weight (nx, nf). addmm=False writes it `x @ w + b`."""

    def __init__(self, nf, nx, addmm):
        super().__init__()
        self.nf = nf
        self.addmm = addmm
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        if not self.addmm:
            return torch.matmul(x, self.weight) + self.bias
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class HFGPT2Attention(nn.Module):
    def __init__(self, cfg, addmm):
        super().__init__()
        ctx = cfg.ctx
        self.register_buffer("bias", torch.tril(torch.ones((ctx, ctx), dtype=torch.bool)).view(1, 1, ctx, ctx),
                             persistent=False)
        self.n_head, self.head_dim, self.embed_dim = cfg.heads, cfg.hd, cfg.d
        self.c_attn = HFConv1D(3 * cfg.d, cfg.d, addmm)
        self.c_proj = HFConv1D(cfg.d, cfg.d, addmm)

    def _split_heads(self, x):
        return x.view(x.size(0), x.size(1), self.n_head, self.head_dim).permute(0, 2, 1, 3)

    def _merge_heads(self, x):
        x = x.permute(0, 2, 1, 3).contiguous()
        return x.view(x.size()[:-2] + (self.n_head * self.head_dim,))

    def _attn(self, query, key, value, attention_mask):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length:key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states, layer_past, attention_mask):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        if layer_past is not None:
            past_key, past_value = layer_past  # a tuple, or a stacked (2, B, N, P, h) tensor
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        present = (key, value)
        attn_output = self._merge_heads(self._attn(query, key, value, attention_mask))
        return self.c_proj(attn_output), present


class HFGPT2MLP(nn.Module):
    def __init__(self, cfg, addmm):
        super().__init__()
        self.c_fc = HFConv1D(4 * cfg.d, cfg.d, addmm)
        self.c_proj = HFConv1D(cfg.d, 4 * cfg.d, addmm)

    def forward(self, x):
        return self.c_proj(new_gelu(self.c_fc(x)))


class HFGPT2Block(nn.Module):
    def __init__(self, cfg, addmm):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.attn = HFGPT2Attention(cfg, addmm)
        self.ln_2 = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.mlp = HFGPT2MLP(cfg, addmm)

    def forward(self, hidden_states, layer_past, attention_mask):
        residual = hidden_states
        attn_output, present = self.attn(self.ln_1(hidden_states), layer_past, attention_mask)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = residual + self.mlp(self.ln_2(hidden_states))
        return hidden_states, present


class HFGPT2(Decoder):
    """GPT2LMHeadModel: addmm=True is HF's Conv1D (Gemm between Reshapes), False `x @ w + b`."""
    mask = torch.int64

    def __init__(self, cfg, addmm=True):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.d)
        self.wpe = nn.Embedding(cfg.ctx, cfg.d)
        self.h = nn.ModuleList(HFGPT2Block(cfg, addmm) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d, eps=cfg.eps)

    def forward(self, *args):
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        if past_key_values is None:
            past_length = 0
            past_key_values = [None] * len(self.h)
        else:
            past_length = past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long)
            position_ids = position_ids.unsqueeze(0)
        if attention_mask is not None:
            attention_mask = attention_mask.view(batch_size, -1)
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=torch.float32)
            attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for block, layer_past in zip(self.h, past_key_values):
            hidden_states, present = block(hidden_states, layer_past, attention_mask)
            presents.append(present)
        hidden_states = self.ln_f(hidden_states)
        output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)
        hidden_states = hidden_states.view(output_shape)
        logits = torch.matmul(hidden_states, self.wte.weight.t())
        return (logits, *self.pack_presents(presents))


class HFGPT2Past(HFGPT2):
    """Optimum's decoder-with-past export of GPT-2: past_key_values.{i}.key/value, present.{i}.*"""
    past = "separate"


class ORTGPT2Past(HFGPT2):
    """ORT's gpt2_helper (MyGPT2Model): input_ids, position_ids, float attention_mask, past_{i}
    (2, B, N, P, h) in, logits and present_{i} = stack(k, v) out."""
    past = "stacked"
    mask = torch.float32
    position_ids = True


# ---------------------------------------------------------------------------------------------
# The repo's own benchmarks/gpt2/make_gpt2.py


class RepoGPT2(Decoder):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.d)
        self.wpe = nn.Embedding(cfg.ctx, cfg.d)
        self.blocks = nn.ModuleList(make_gpt2.Block(cfg.d, cfg.heads, cfg.ctx) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return (self.ln_f(x) @ self.wte.weight.t(),)


# ---------------------------------------------------------------------------------------------
# Karpathy's nanoGPT (model.py, the manual attention path), and the GPT-2 traps built on it


def layer_norm_eps_outside(x, w, b, eps):
    """Trap: epsilon added to the standard deviation, not to the variance."""
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / (torch.sqrt(var) + eps) * w + b


def layer_norm_first_axis(x, w, b, eps):
    """Trap: the statistics over the first axis of the (tokens, d) matrix, not over d."""
    x2 = x.reshape(-1, x.size(-1))
    mean = x2.mean(0, keepdim=True)
    var = ((x2 - mean) ** 2).mean(0, keepdim=True)
    y = (x2 - mean) / torch.sqrt(var + eps) * w + b
    return y.view(x.shape)


class TrapLayerNorm(nn.LayerNorm):
    def __init__(self, d, kind):
        super().__init__(d)
        self.kind = kind

    def forward(self, x):
        fn = layer_norm_eps_outside if self.kind == "eps_outside" else layer_norm_first_axis
        return fn(x, self.weight, self.bias, self.eps)


class NanoCausalSelfAttention(nn.Module):
    def __init__(self, cfg, mask_shift=0):
        super().__init__()
        self.c_attn = nn.Linear(cfg.d, 3 * cfg.d)
        self.c_proj = nn.Linear(cfg.d, cfg.d)
        self.n_head, self.n_embd = cfg.heads, cfg.d
        # mask_shift 1 is the non-causal trap: every token also sees the next one
        self.register_buffer("bias", torch.tril(torch.ones(cfg.ctx, cfg.ctx), diagonal=mask_shift)
                             .view(1, 1, cfg.ctx, cfg.ctx))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class NanoMLP(nn.Module):
    def __init__(self, cfg, gelu_coef=0.044715):
        super().__init__()
        self.c_fc = nn.Linear(cfg.d, 4 * cfg.d)
        self.c_proj = nn.Linear(4 * cfg.d, cfg.d)
        self.coef = gelu_coef  # 0.05 is the wrong-coefficient trap

    def forward(self, x):
        x = self.c_fc(x)
        x = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + self.coef * torch.pow(x, 3.0))))
        return self.c_proj(x)


class NanoBlock(nn.Module):
    def __init__(self, cfg, ln_1=None, gelu_coef=0.044715, mask_shift=0):
        super().__init__()
        self.ln_1 = ln_1 if ln_1 is not None else nn.LayerNorm(cfg.d)
        self.attn = NanoCausalSelfAttention(cfg, mask_shift)
        self.ln_2 = nn.LayerNorm(cfg.d)
        self.mlp = NanoMLP(cfg, gelu_coef)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class NanoGPT(Decoder):
    def __init__(self, cfg, **block_args):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.d)
        self.wpe = nn.Embedding(cfg.ctx, cfg.d)
        self.h = nn.ModuleList(NanoBlock(cfg, **block_args) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return (self.lm_head(x),)


def trap_ln_eps_outside(cfg):
    return NanoGPT(cfg, ln_1=TrapLayerNorm(cfg.d, "eps_outside"))


def trap_ln_first_axis(cfg):
    return NanoGPT(cfg, ln_1=TrapLayerNorm(cfg.d, "first_axis"))


def trap_gelu_coef(cfg):
    return NanoGPT(cfg, gelu_coef=0.05)


def trap_gelu_coef_near(cfg):
    """The tanh GELU with 0.0447, 3e-4 relative from 0.044715: close, but not the GELU."""
    return NanoGPT(cfg, gelu_coef=0.0447)


def trap_mask_shifted(cfg):
    return NanoGPT(cfg, mask_shift=1)


# ---------------------------------------------------------------------------------------------
# Megatron-LM style GPT-2: separate q, k, v, q scaled before the product, additive -10000 mask


class MegatronAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.query = nn.Linear(cfg.d, cfg.d)
        self.key = nn.Linear(cfg.d, cfg.d)
        self.value = nn.Linear(cfg.d, cfg.d)
        self.dense = nn.Linear(cfg.d, cfg.d)
        self.heads, self.hd = cfg.heads, cfg.hd
        self.norm_factor = math.sqrt(cfg.hd)

    def forward(self, x):
        B, T, D = x.shape
        q = self.query(x).reshape(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.key(x).reshape(B, T, self.heads, self.hd).transpose(1, 2)
        v = self.value(x).reshape(B, T, self.heads, self.hd).transpose(1, 2)
        q = q * (1.0 / self.norm_factor)
        scores = torch.matmul(q, k.transpose(-1, -2))
        mask = torch.triu(torch.ones(T, T), 1) * -10000.0
        probs = torch.softmax(scores + mask, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, D)
        return self.dense(ctx)


class MegatronBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(cfg.d)
        self.attention = MegatronAttention(cfg)
        self.post_attention_layernorm = nn.LayerNorm(cfg.d)
        self.dense_h_to_4h = nn.Linear(cfg.d, 4 * cfg.d)
        self.dense_4h_to_h = nn.Linear(4 * cfg.d, cfg.d)

    def forward(self, x):
        x = x + self.attention(self.input_layernorm(x))
        return x + self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(self.post_attention_layernorm(x))))


class MegatronGPT2(Decoder):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.word_embeddings = nn.Embedding(cfg.vocab, cfg.d)
        self.position_embeddings = nn.Embedding(cfg.ctx, cfg.d)
        self.layers = nn.ModuleList(MegatronBlock(cfg) for _ in range(cfg.layers))
        self.final_layernorm = nn.LayerNorm(cfg.d)

    def forward(self, input_ids):
        position_ids = torch.arange(input_ids.size(1), dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        x = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        for layer in self.layers:
            x = layer(x)
        return (F.linear(self.final_layernorm(x), self.word_embeddings.weight),)


# ---------------------------------------------------------------------------------------------
# Llama family


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaRMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class TrapRMSNorm(LlamaRMSNorm):
    """Trap: epsilon added outside the square root."""

    def forward(self, x):
        return x / (torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + self.variance_epsilon) * self.weight


class LlamaRotaryEmbedding(nn.Module):
    """transformers 4.36: cos/sin tables cached as buffers, sliced to the total length."""

    def __init__(self, dim, max_position_embeddings, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_position_embeddings, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x, seq_len):
        return self.cos_cached[:seq_len].to(dtype=x.dtype), self.sin_cached[:seq_len].to(dtype=x.dtype)


def apply_rotary_pos_emb_436(q, k, cos, sin, position_ids, unsqueeze_dim=1):
    cos = cos[position_ids].unsqueeze(unsqueeze_dim)
    sin = sin[position_ids].unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def prepare_4d_causal_attention_mask(attention_mask, input_shape, dtype, past_key_values_length, sliding_window=None):
    """transformers 4.36 AttentionMaskConverter.to_4d (_make_causal_mask + _expand_mask).
    sliding_window (Mistral): keys more than sliding_window - 1 positions behind the query are
    hidden too."""
    bsz, tgt_len = input_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    # A traced branch: the export is made with a past of length > 0, so the Concat is recorded;
    # it also holds for a zero-length past at run time.
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype), mask], dim=-1)
    if sliding_window is not None:
        # 4.36 writes dtype=torch.int; Optimum's export patches it to int64 because ONNX Runtime's
        # Trilu has no int32 kernel (onnxruntime issue 16189): the form an Optimum export has.
        diagonal = past_key_values_length - sliding_window + 1
        context_mask = 1 - torch.triu(torch.ones_like(mask, dtype=torch.int64), diagonal=diagonal)
        mask.masked_fill_(context_mask.bool(), torch.finfo(dtype).min)
    causal_4d_mask = mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)
    src_len = attention_mask.size(1)
    expanded_mask = attention_mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    expanded_attn_mask = inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)
    return causal_4d_mask.masked_fill(expanded_attn_mask.bool(), torch.finfo(dtype).min)


class HFLlamaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_heads, self.head_dim, self.hidden_size = cfg.heads, cfg.hd, cfg.d
        self.num_key_value_heads = cfg.kv_heads
        self.num_key_value_groups = cfg.heads // cfg.kv_heads
        self.q_proj = nn.Linear(cfg.d, cfg.heads * cfg.hd, bias=False)
        self.k_proj = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=False)
        self.v_proj = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=False)
        self.o_proj = nn.Linear(cfg.heads * cfg.hd, cfg.d, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(cfg.hd, cfg.ctx)

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        kv_seq_len = key_states.shape[-2] + past_key_value[0].shape[-2]
        cos, sin = self.rotary_emb(value_states, seq_len=kv_seq_len)
        query_states, key_states = apply_rotary_pos_emb_436(query_states, key_states, cos, sin, position_ids)
        key_states = torch.cat([past_key_value[0], key_states], dim=2)
        value_states = torch.cat([past_key_value[1], value_states], dim=2)
        present = (key_states, value_states)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output), present


class LlamaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.d, cfg.inter, bias=False)
        self.up_proj = nn.Linear(cfg.d, cfg.inter, bias=False)
        self.down_proj = nn.Linear(cfg.inter, cfg.d, bias=False)
        self.act_fn = F.silu

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class HFLlamaLayer(nn.Module):
    def __init__(self, cfg, input_norm=None):
        super().__init__()
        self.self_attn = HFLlamaAttention(cfg)
        self.mlp = LlamaMLP(cfg)
        self.input_layernorm = input_norm if input_norm is not None else LlamaRMSNorm(cfg.d, cfg.eps)
        self.post_attention_layernorm = LlamaRMSNorm(cfg.d, cfg.eps)

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, present = self.self_attn(hidden_states, attention_mask, position_ids, past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states, present


class LlamaBase(Decoder):
    family = "llama"
    past = "separate"
    mask = torch.int64
    position_ids = True

    def hf_decoder(self, args, final_norm, sliding_window=None):
        """transformers 4.36's decoder loop (Llama, Mistral, Phi): embeddings, the 4-D causal mask,
        the layers with their presents, the final norm and the LM head."""
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        batch_size, seq_length = input_ids.shape[:2]
        past_key_values_length = past_key_values[0][0].shape[2]
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = prepare_4d_causal_attention_mask(attention_mask, (batch_size, seq_length), inputs_embeds.dtype,
                                                          past_key_values_length, sliding_window=sliding_window)
        hidden_states = inputs_embeds
        presents = []
        for layer, past in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, attention_mask, position_ids, past)
            presents.append(present)
        hidden_states = final_norm(hidden_states)
        logits = self.lm_head(hidden_states).float()
        return (logits, *self.pack_presents(presents))


class HFLlama(LlamaBase):
    """transformers 4.36 LlamaForCausalLM, eager attention, Optimum's past/present names."""

    def __init__(self, cfg, input_norm=None):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = nn.ModuleList(HFLlamaLayer(cfg, input_norm if i == 0 else None) for i in range(cfg.layers))
        self.norm = LlamaRMSNorm(cfg.d, cfg.eps)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=False)

    def forward(self, *args):
        return self.hf_decoder(args, self.norm)


def trap_rms_eps_outside(cfg):
    return HFLlama(cfg, input_norm=TrapRMSNorm(cfg.d, cfg.eps))


# Mistral / Qwen2 as in newer transformers (4.45): rotary computed on the fly from position_ids,
# the causal mask from cache_position, RMSNorm as x * (1 / sqrt(mean(x * x) + eps)) * w, SiLU as
# x * sigmoid(x), q/k/v with bias (Qwen2).


class NewRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def apply_rotary_pos_emb_new(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class MistralRMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * (1.0 / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps)) * self.weight


class MistralAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.q_proj = nn.Linear(cfg.d, cfg.heads * cfg.hd, bias=True)
        self.k_proj = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=True)
        self.v_proj = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=True)
        self.o_proj = nn.Linear(cfg.heads * cfg.hd, cfg.d, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask, past):
        c = self.cfg
        bsz, q_len, _ = hidden_states.size()
        hidden_shape = (bsz, q_len, -1, c.hd)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb_new(query_states, key_states, cos, sin)
        key_states = torch.cat([past[0], key_states], dim=-2)
        value_states = torch.cat([past[1], value_states], dim=-2)
        present = (key_states, value_states)
        key_states = repeat_kv(key_states, c.heads // c.kv_heads)
        value_states = repeat_kv(value_states, c.heads // c.kv_heads)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(c.hd)
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(attn_output), present


class SiluMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.d, cfg.inter, bias=False)
        self.up_proj = nn.Linear(cfg.d, cfg.inter, bias=False)
        self.down_proj = nn.Linear(cfg.inter, cfg.d, bias=False)

    def forward(self, x):
        g = self.gate_proj(x)
        return self.down_proj(g * torch.sigmoid(g) * self.up_proj(x))


class MistralLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = MistralAttention(cfg)
        self.mlp = SiluMLP(cfg)
        self.input_layernorm = MistralRMSNorm(cfg.d, cfg.eps)
        self.post_attention_layernorm = MistralRMSNorm(cfg.d, cfg.eps)

    def forward(self, x, position_embeddings, mask, past):
        h, present = self.self_attn(self.input_layernorm(x), position_embeddings, mask, past)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), present


class MistralLike(LlamaBase):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = nn.ModuleList(MistralLayer(cfg) for _ in range(cfg.layers))
        self.norm = MistralRMSNorm(cfg.d, cfg.eps)
        self.rotary_emb = NewRotaryEmbedding(cfg.hd)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=False)

    def update_causal_mask(self, attention_mask, input_tensor, cache_position):
        """_update_causal_mask of transformers 4.45 (dynamic cache: the mask covers P + S keys)."""
        dtype = input_tensor.dtype
        min_dtype = torch.finfo(dtype).min
        sequence_length = input_tensor.shape[1]
        target_length = attention_mask.shape[-1]
        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
        causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask = causal_mask * (torch.arange(target_length) > cache_position.reshape(-1, 1)).to(dtype)
        causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
        padding_mask = causal_mask + attention_mask[:, None, None, :].to(dtype)
        padding_mask = padding_mask == 0
        return causal_mask.masked_fill(padding_mask, min_dtype)

    def forward(self, *args):
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        inputs_embeds = self.embed_tokens(input_ids)
        past_seen_tokens = past_key_values[0][0].shape[-2]
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1])
        causal_mask = self.update_causal_mask(attention_mask, inputs_embeds, cache_position)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        presents = []
        for layer, past in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, position_embeddings, causal_mask, past)
            presents.append(present)
        logits = self.lm_head(self.norm(hidden_states))
        return (logits, *self.pack_presents(presents))


# Phi-3: fused qkv_proj sliced on the last dim, fused gate_up_proj chunked, RMSNorm as a Div by a
# Sqrt, the scale on q before the product, a boolean causal-and-padding mask.


class Phi3RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Phi3Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        op_size = cfg.heads * cfg.hd + 2 * (cfg.kv_heads * cfg.hd)
        self.qkv_proj = nn.Linear(cfg.d, op_size, bias=False)
        self.o_proj = nn.Linear(cfg.heads * cfg.hd, cfg.d, bias=False)

    def forward(self, hidden_states, cos, sin, allowed, past):
        c = self.cfg
        bsz, q_len, _ = hidden_states.size()
        qkv = self.qkv_proj(hidden_states)
        query_pos = c.heads * c.hd
        query_states = qkv[..., :query_pos]
        key_states = qkv[..., query_pos: query_pos + c.kv_heads * c.hd]
        value_states = qkv[..., query_pos + c.kv_heads * c.hd:]
        query_states = query_states.view(bsz, q_len, c.heads, c.hd).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, c.kv_heads, c.hd).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, c.kv_heads, c.hd).transpose(1, 2)
        query_states, key_states = apply_rotary_pos_emb_new(query_states, key_states, cos, sin)
        key_states = torch.cat([past[0], key_states], dim=2)
        value_states = torch.cat([past[1], value_states], dim=2)
        present = (key_states, value_states)
        key_states = repeat_kv(key_states, c.heads // c.kv_heads)
        value_states = repeat_kv(value_states, c.heads // c.kv_heads)
        query_states = query_states * (c.hd ** -0.5)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
        attn_weights = attn_weights.masked_fill(~allowed, torch.finfo(attn_weights.dtype).min)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, c.d)
        return self.o_proj(attn_output), present


class Phi3MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_up_proj = nn.Linear(cfg.d, 2 * cfg.inter, bias=False)
        self.down_proj = nn.Linear(cfg.inter, cfg.d, bias=False)

    def forward(self, hidden_states):
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * F.silu(gate)
        return self.down_proj(up_states)


class Phi3Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = Phi3Attention(cfg)
        self.mlp = Phi3MLP(cfg)
        self.input_layernorm = Phi3RMSNorm(cfg.d, cfg.eps)
        self.post_attention_layernorm = Phi3RMSNorm(cfg.d, cfg.eps)

    def forward(self, x, cos, sin, allowed, past):
        h, present = self.self_attn(self.input_layernorm(x), cos, sin, allowed, past)
        x = x + h
        return x + self.mlp(self.post_attention_layernorm(x)), present


class Phi3Like(LlamaBase):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = nn.ModuleList(Phi3Layer(cfg) for _ in range(cfg.layers))
        self.norm = Phi3RMSNorm(cfg.d, cfg.eps)
        self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, cfg.hd, 2).float() / cfg.hd)),
                             persistent=False)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=False)

    def forward(self, *args):
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        s = input_ids.shape[1]
        p = past_key_values[0][0].shape[2]
        # rotary angles as a broadcast product (B, S, 1) * (h/2)
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        # query i (at absolute position p + i) may see key j <= p + i that is not padding
        causal = torch.ones(s, p + s, dtype=torch.bool).tril(diagonal=p)
        allowed = causal[None, None, :, :] & attention_mask.bool()[:, None, None, :]
        hidden_states = self.embed_tokens(input_ids)
        presents = []
        for layer, past in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, cos, sin, allowed, past)
            presents.append(present)
        logits = self.lm_head(self.norm(hidden_states))
        return (logits, *self.pack_presents(presents))


# ---------------------------------------------------------------------------------------------
# Mistral as transformers 4.36 writes it: Llama 4.36's code (cos/sin caches gathered by
# position_ids, RMSNorm with rsqrt, repeat_kv, SiLU MLP) with the sliding-window causal mask.


class MistralSliding(HFLlama):
    """MistralForCausalLM 4.36, eager attention, sliding_window = cfg.window."""

    def forward(self, *args):
        return self.hf_decoder(args, self.norm, sliding_window=self.cfg.window)


# ---------------------------------------------------------------------------------------------
# Phi-2 (transformers 4.37 modeling_phi.py): one LayerNorm feeding attention and MLP in parallel,
# q/k/v with bias, partial rotary on the first rotary_dim features of each head, dense out-proj
# with bias, fc1 -> gelu_new -> fc2, final_layernorm, lm_head with bias.


class PhiRotaryEmbedding(LlamaRotaryEmbedding):
    """Llama 4.36's rotary over int(partial_rotary_factor * head_dim) features."""

    def __init__(self, dim, max_position_embeddings, base=10000.0):
        super().__init__(dim, max_position_embeddings, base)
        self.dim = dim


class PhiAttention(nn.Module):
    def __init__(self, cfg, rotary_tail=False):
        super().__init__()
        self.rotary_tail = rotary_tail  # the trap: rotate the last rotary_dim features, pass the first
        self.hidden_size, self.num_heads, self.head_dim = cfg.d, cfg.heads, cfg.hd
        self.num_key_value_heads = cfg.heads
        self.num_key_value_groups = 1
        self.q_proj = nn.Linear(cfg.d, cfg.heads * cfg.hd, bias=True)
        self.k_proj = nn.Linear(cfg.d, cfg.heads * cfg.hd, bias=True)
        self.v_proj = nn.Linear(cfg.d, cfg.heads * cfg.hd, bias=True)
        self.dense = nn.Linear(cfg.heads * cfg.hd, cfg.d, bias=True)
        self.rotary_emb = PhiRotaryEmbedding(int(cfg.rotary * cfg.hd), cfg.ctx)

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        kv_seq_len = key_states.shape[-2] + past_key_value[0].shape[-2]
        cos, sin = self.rotary_emb(value_states, seq_len=kv_seq_len)
        # Partial rotary embedding
        if self.rotary_tail:  # the trap: the LAST rotary_dim features rotated, the first passed
            split = self.head_dim - self.rotary_emb.dim
            query_pass, query_rot = query_states[..., :split], query_states[..., split:]
            key_pass, key_rot = key_states[..., :split], key_states[..., split:]
            query_rot, key_rot = apply_rotary_pos_emb_436(query_rot, key_rot, cos, sin, position_ids)
            query_states = torch.cat((query_pass, query_rot), dim=-1)
            key_states = torch.cat((key_pass, key_rot), dim=-1)
        else:
            query_rot, query_pass = query_states[..., : self.rotary_emb.dim], query_states[..., self.rotary_emb.dim:]
            key_rot, key_pass = key_states[..., : self.rotary_emb.dim], key_states[..., self.rotary_emb.dim:]
            query_rot, key_rot = apply_rotary_pos_emb_436(query_rot, key_rot, cos, sin, position_ids)
            query_states = torch.cat((query_rot, query_pass), dim=-1)
            key_states = torch.cat((key_rot, key_pass), dim=-1)
        key_states = torch.cat([past_key_value[0], key_states], dim=2)  # DynamicCache.update
        value_states = torch.cat([past_key_value[1], value_states], dim=2)
        present = (key_states, value_states)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        # Queries and keys upcast to fp32 is required by Phi-2 to avoid overflow
        attn_weights = torch.matmul(query_states.to(torch.float32),
                                    key_states.to(torch.float32).transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.dense(attn_output), present


class PhiMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d, cfg.inter)
        self.fc2 = nn.Linear(cfg.inter, cfg.d)

    def forward(self, hidden_states):
        return self.fc2(new_gelu(self.fc1(hidden_states)))  # ACT2FN["gelu_new"]


class PhiDecoderLayer(nn.Module):
    def __init__(self, cfg, rotary_tail=False):
        super().__init__()
        self.self_attn = PhiAttention(cfg, rotary_tail)
        self.mlp = PhiMLP(cfg)
        self.input_layernorm = nn.LayerNorm(cfg.d, eps=cfg.eps)

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attn_outputs, present = self.self_attn(hidden_states, attention_mask, position_ids, past_key_value)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = attn_outputs + feed_forward_hidden_states + residual
        return hidden_states, present


class Phi2Like(LlamaBase):
    """PhiForCausalLM 4.37 (Phi-2: no qk_layernorm, as many KV heads as heads), eager attention,
    partial_rotary_factor cfg.rotary (0.5 for Phi-2)."""
    family = "phi"

    def __init__(self, cfg, rotary_tail=False):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = nn.ModuleList(PhiDecoderLayer(cfg, rotary_tail) for _ in range(cfg.layers))
        self.final_layernorm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=True)

    def forward(self, *args):
        return self.hf_decoder(args, self.final_layernorm)


def trap_rotary_tail(cfg):
    """Phi-2 (partial_rotary_factor 0.5) with the rotary on the LAST rotary_dim features of each
    head and the first ones passed through, `cat((x_pass, x_rot_embedded))`: ONNX Runtime's
    RotaryEmbedding (rotary_embedding_dim) rotates the leading features, so it is no fusion."""
    return Phi2Like(dataclasses.replace(cfg, rotary=0.5), rotary_tail=True)


# ---------------------------------------------------------------------------------------------
# GPT-NeoX / Pythia (transformers 4.36 modeling_gpt_neox.py): fused query_key_value viewed as
# (B, S, N, 3 h) and sliced per head, rotary on the first rotary_pct of each head, baddbmm scores
# scaled by alpha, the causal buffer `bias` with torch.where, the (1 - mask) * min padding mask,
# parallel residual x + attn(ln1(x)) + mlp(ln2(x)), erf GELU, untied embed_out.


class GPTNeoXAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_attention_heads = cfg.heads
        self.hidden_size = cfg.d
        self.head_size = cfg.d // cfg.heads
        self.rotary_ndims = int(self.head_size * cfg.rotary)
        self.register_buffer("bias", torch.tril(torch.ones((cfg.ctx, cfg.ctx), dtype=torch.bool))
                             .view(1, 1, cfg.ctx, cfg.ctx), persistent=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.rotary_ndims, cfg.ctx)  # GPTNeoXRotaryEmbedding 4.36
        self.norm_factor = self.head_size ** -0.5
        self.query_key_value = nn.Linear(cfg.d, 3 * cfg.d)
        self.dense = nn.Linear(cfg.d, cfg.d)

    def forward(self, hidden_states, attention_mask, position_ids, layer_past):
        qkv = self.query_key_value(hidden_states)
        # [batch, seq_len, (num_heads * 3 * head_size)] --> [batch, seq_len, num_heads, 3 * head_size]
        new_qkv_shape = qkv.size()[:-1] + (self.num_attention_heads, 3 * self.head_size)
        qkv = qkv.view(*new_qkv_shape)
        query = qkv[..., : self.head_size].permute(0, 2, 1, 3)
        key = qkv[..., self.head_size: 2 * self.head_size].permute(0, 2, 1, 3)
        value = qkv[..., 2 * self.head_size:].permute(0, 2, 1, 3)
        query_rot = query[..., : self.rotary_ndims]
        query_pass = query[..., self.rotary_ndims:]
        key_rot = key[..., : self.rotary_ndims]
        key_pass = key[..., self.rotary_ndims:]
        seq_len = key.shape[-2]
        seq_len += layer_past[0].shape[-2]
        cos, sin = self.rotary_emb(value, seq_len=seq_len)
        query, key = apply_rotary_pos_emb_436(query_rot, key_rot, cos, sin, position_ids)
        query = torch.cat((query, query_pass), dim=-1)
        key = torch.cat((key, key_pass), dim=-1)
        past_key = layer_past[0]
        past_value = layer_past[1]
        key = torch.cat((past_key, key), dim=-2)
        value = torch.cat((past_value, value), dim=-2)
        present = (key, value)
        attn_output = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_size)
        return self.dense(attn_output), present

    @classmethod
    def _merge_heads(cls, tensor, num_attention_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size(0), tensor.size(1), num_attention_heads * attn_head_size)

    def _attn(self, query, key, value, attention_mask):
        batch_size, num_attention_heads, query_length, attn_head_size = query.size()
        key_length = key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        query = query.view(batch_size * num_attention_heads, query_length, attn_head_size)
        key = key.view(batch_size * num_attention_heads, key_length, attn_head_size)
        attn_scores = torch.zeros(batch_size * num_attention_heads, query_length, key_length, dtype=query.dtype)
        attn_scores = torch.baddbmm(attn_scores, query, key.transpose(1, 2), beta=1.0, alpha=self.norm_factor)
        attn_scores = attn_scores.view(batch_size, num_attention_heads, query_length, key_length)
        mask_value = torch.finfo(attn_scores.dtype).min
        mask_value = torch.tensor(mask_value, dtype=attn_scores.dtype).to(attn_scores.device)
        attn_scores = torch.where(causal_mask, attn_scores, mask_value)
        attn_scores = attn_scores + attention_mask
        attn_weights = nn.functional.softmax(attn_scores, dim=-1)
        attn_weights = attn_weights.to(value.dtype)
        return torch.matmul(attn_weights, value)


class GPTNeoXMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(cfg.d, cfg.inter)
        self.dense_4h_to_h = nn.Linear(cfg.inter, cfg.d)

    def forward(self, hidden_states):
        return self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(hidden_states)))  # ACT2FN["gelu"]


class GPTNeoXLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.post_attention_layernorm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.attention = GPTNeoXAttention(cfg)
        self.mlp = GPTNeoXMLP(cfg)

    def forward(self, hidden_states, attention_mask, position_ids, layer_past):
        attn_output, present = self.attention(self.input_layernorm(hidden_states), attention_mask, position_ids,
                                              layer_past)
        # use_parallel_residual: x = x + attn(ln1(x)) + mlp(ln2(x))
        mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
        hidden_states = mlp_output + attn_output + hidden_states
        return hidden_states, present


class GPTNeoXLike(LlamaBase):
    """GPTNeoXForCausalLM 4.36 (Pythia: parallel residual, rotary_pct 0.25), eager attention."""
    family = "gpt_neox"

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_in = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = nn.ModuleList(GPTNeoXLayer(cfg) for _ in range(cfg.layers))
        self.final_layer_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.embed_out = nn.Linear(cfg.d, cfg.vocab, bias=False)

    def forward(self, *args):
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        batch_size, seq_length = input_ids.size()
        attention_mask = attention_mask.view(batch_size, -1)
        attention_mask = attention_mask[:, None, None, :]
        attention_mask = attention_mask.to(dtype=torch.float32)  # fp16 compatibility
        attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min
        inputs_embeds = self.embed_in(input_ids)
        hidden_states = inputs_embeds
        presents = []
        for layer, layer_past in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, attention_mask, position_ids, layer_past)
            presents.append(present)
        hidden_states = self.final_layer_norm(hidden_states)
        return (self.embed_out(hidden_states), *self.pack_presents(presents))


# ---------------------------------------------------------------------------------------------
# Gemma (transformers 4.40 modeling_gemma.py): RMSNorm in float scaled by (1 + weight), embeddings
# times a `normalizer` tensor sqrt(hidden), rotary computed per layer from position_ids, GQA, the
# causal mask of _update_causal_mask with its in-place padding update, GeGLU with the tanh GELU
# (hidden_activation gelu_pytorch_tanh), lm_head tied to the embeddings.


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        # Llama does x.to(float16) * w whilst Gemma is (x * w).to(float16)
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class GemmaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.hidden_size, self.num_heads, self.head_dim = cfg.d, cfg.heads, cfg.hd
        self.num_key_value_heads = cfg.kv_heads
        self.num_key_value_groups = cfg.heads // cfg.kv_heads
        self.q_proj = nn.Linear(cfg.d, cfg.heads * cfg.hd, bias=False)
        self.k_proj = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=False)
        self.v_proj = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=False)
        self.o_proj = nn.Linear(cfg.heads * cfg.hd, cfg.d, bias=False)
        self.rotary_emb = NewRotaryEmbedding(cfg.hd)  # GemmaRotaryEmbedding: inv_freq @ position_ids

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, position_ids)
        query_states, key_states = apply_rotary_pos_emb_new(query_states, key_states, cos, sin)
        key_states = torch.cat([past_key_value[0], key_states], dim=-2)
        value_states = torch.cat([past_key_value[1], value_states], dim=-2)
        present = (key_states, value_states)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]  # no matter the length, we just slice it
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(bsz, q_len, -1)
        return self.o_proj(attn_output), present


class GemmaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.d, cfg.inter, bias=False)
        self.up_proj = nn.Linear(cfg.d, cfg.inter, bias=False)
        self.down_proj = nn.Linear(cfg.inter, cfg.d, bias=False)

    def forward(self, x):
        # PytorchGELUTanh
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class GemmaDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = GemmaAttention(cfg)
        self.mlp = GemmaMLP(cfg)
        self.input_layernorm = GemmaRMSNorm(cfg.d, eps=cfg.eps)
        self.post_attention_layernorm = GemmaRMSNorm(cfg.d, eps=cfg.eps)

    def forward(self, hidden_states, attention_mask, position_ids, past_key_value):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, present = self.self_attn(hidden_states, attention_mask, position_ids, past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states, present


class GemmaLike(LlamaBase):
    """GemmaForCausalLM 4.40, eager attention, a dynamic cache (the mask covers P + S keys)."""
    family = "gemma"

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = nn.ModuleList(GemmaDecoderLayer(cfg) for _ in range(cfg.layers))
        self.norm = GemmaRMSNorm(cfg.d, eps=cfg.eps)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tie_word_embeddings

    def _update_causal_mask(self, attention_mask, input_tensor, cache_position):
        dtype = input_tensor.dtype
        min_dtype = torch.finfo(dtype).min
        sequence_length = input_tensor.shape[1]
        target_length = attention_mask.shape[-1]  # dynamic cache
        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype)
        if sequence_length != 1:  # traced at 5 tokens: the triu is recorded (and exact at 1 token)
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
        causal_mask = causal_mask.clone()  # copy to contiguous memory for in-place edit
        mask_length = attention_mask.shape[-1]
        padding_mask = causal_mask[..., :mask_length].eq(0.0) * attention_mask[:, None, None, :].eq(0.0)
        causal_mask[..., :mask_length] = causal_mask[..., :mask_length].masked_fill(padding_mask, min_dtype)
        return causal_mask

    def forward(self, *args):
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        inputs_embeds = self.embed_tokens(input_ids)
        past_seen_tokens = past_key_values[0][0].shape[2]
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1])
        causal_mask = self._update_causal_mask(attention_mask, inputs_embeds, cache_position)
        hidden_states = inputs_embeds
        # normalized
        normalizer = torch.tensor(self.cfg.d ** 0.5, dtype=hidden_states.dtype)
        hidden_states = hidden_states * normalizer
        presents = []
        for layer, past in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, causal_mask, position_ids, past)
            presents.append(present)
        hidden_states = self.norm(hidden_states)
        logits = self.lm_head(hidden_states)
        logits = logits.float()
        return (logits, *self.pack_presents(presents))


# ---------------------------------------------------------------------------------------------
# A BART decoder with past as Optimum splits it (decoder_with_past_model.onnx, transformers 4.36
# modeling_bart.py): the self-attention's keys and values concatenated to the decoder past, the
# cross-attention's read from the encoder past as they are (not recomputed, so the encoder states
# are no input), no decoder attention_mask (the causal mask of to_causal_4d), the encoder padding
# mask of _prepare_4d_attention_mask, post-LN layers, lm_head tied to the embeddings plus
# final_logits_bias. Only the decoder presents are outputs.


def prepare_4d_attention_mask(mask, dtype, tgt_len):
    """transformers 4.36 _prepare_4d_attention_mask (AttentionMaskConverter._expand_mask)."""
    bsz, src_len = mask.size()
    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


def to_causal_4d(batch_size, query_length, key_value_length, dtype):
    """AttentionMaskConverter(is_causal=True).to_causal_4d (4.36): None for one query in eager
    torch; traced at 5 tokens, so the export always computes the (all-zero at one query) mask."""
    past_key_values_length = key_value_length - query_length
    mask = torch.full((query_length, query_length), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(query_length, past_key_values_length, dtype=dtype), mask], dim=-1)
    return mask[None, None, :, :].expand(batch_size, 1, query_length, query_length + past_key_values_length)


class BartLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids, past_key_values_length=0):
        bsz, seq_len = input_ids.shape[:2]
        positions = torch.arange(past_key_values_length, past_key_values_length + seq_len, dtype=torch.long,
                                 device=self.weight.device).expand(bsz, -1)
        return super().forward(positions + self.offset)


class BartPastAttention(nn.Module):
    """BartAttention (is_decoder) on the with-past path."""

    def __init__(self, cfg, cross_bsnh=False):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = cfg.d, cfg.heads, cfg.hd
        self.scaling = self.head_dim ** -0.5
        self.cross_bsnh = cross_bsnh  # the trap: the encoder past (B, T, N, h), transposed here
        self.k_proj = nn.Linear(cfg.d, cfg.d)
        self.v_proj = nn.Linear(cfg.d, cfg.d)
        self.q_proj = nn.Linear(cfg.d, cfg.d)
        self.out_proj = nn.Linear(cfg.d, cfg.d)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, past_key_value, attention_mask, is_cross_attention):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        if is_cross_attention:
            # reuse k, v, cross_attentions (past_key_value[0].shape[2] == key_value_states.shape[1])
            key_states = past_key_value[0]
            value_states = past_key_value[1]
            if self.cross_bsnh:  # (B, T, N, h) -> (B, N, T, h)
                key_states = key_states.transpose(1, 2)
                value_states = value_states.transpose(1, 2)
        else:
            # reuse k, v, self_attention
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
            value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
            key_states = torch.cat([past_key_value[0], key_states], dim=2)
            value_states = torch.cat([past_key_value[1], value_states], dim=2)
        present = (key_states, value_states)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
        attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.bmm(attn_weights, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output), present

    def project(self, key_value_states):
        """The cross-attention keys and values the decoder without past returns as
        present.{i}.encoder.key/value (the with-past decoder reads them back as past)."""
        bsz = key_value_states.shape[0]
        key, value = self._shape(self.k_proj(key_value_states), -1, bsz), self._shape(self.v_proj(key_value_states), -1, bsz)
        if self.cross_bsnh:  # fed back in (B, T, N, h)
            return key.transpose(1, 2).contiguous(), value.transpose(1, 2).contiguous()
        return key, value


class BartPastDecoderLayer(nn.Module):
    def __init__(self, cfg, cross_bsnh=False):
        super().__init__()
        self.self_attn = BartPastAttention(cfg)
        self.self_attn_layer_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.encoder_attn = BartPastAttention(cfg, cross_bsnh)
        self.encoder_attn_layer_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.fc1 = nn.Linear(cfg.d, cfg.inter)
        self.fc2 = nn.Linear(cfg.inter, cfg.d)
        self.final_layer_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)

    def forward(self, hidden_states, attention_mask, encoder_attention_mask, past_key_value):
        residual = hidden_states
        self_attn_past_key_value = past_key_value[:2]
        hidden_states, present_key_value = self.self_attn(hidden_states, self_attn_past_key_value, attention_mask,
                                                          False)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        cross_attn_past_key_value = past_key_value[-2:]
        hidden_states, _ = self.encoder_attn(hidden_states, cross_attn_past_key_value, encoder_attention_mask, True)
        hidden_states = self.encoder_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.fc2(F.gelu(self.fc1(hidden_states)))  # activation_function "gelu"
        return self.final_layer_norm(residual + hidden_states), present_key_value


class BartDecoderPast(Decoder):
    """BartForConditionalGeneration's decoder + lm_head, with past (Optimum's with-past split).
    Inputs input_ids (B, S), encoder_attention_mask (B, T), per layer
    past_key_values.{i}.decoder.key/value (B, N, P, h) and past_key_values.{i}.encoder.key/value
    (B, N, T, h); outputs logits and present.{i}.decoder.key/value (B, N, P + S, h).
    cross_bsnh (the trap): the encoder key/value inputs are (B, T, N, h), transposed (1, 2) inside."""
    family = "bart"
    past = "seq2seq"

    def __init__(self, cfg, cross_bsnh=False):
        super().__init__()
        self.cfg = cfg
        self.cross_bsnh = cross_bsnh
        self.embed_scale = 1.0  # scale_embedding False (bart-base)
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.d, padding_idx=1)
        self.embed_positions = BartLearnedPositionalEmbedding(cfg.ctx, cfg.d)
        self.layers = nn.ModuleList(BartPastDecoderLayer(cfg, cross_bsnh) for _ in range(cfg.layers))
        self.layernorm_embedding = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight
        self.register_buffer("final_logits_bias", torch.zeros((1, cfg.vocab)))

    def input_names(self):
        return ["input_ids", "encoder_attention_mask"] + self.past_names()

    def past_names(self):
        return [f"past_key_values.{i}.{part}.{kv}" for i in range(self.cfg.layers) for part in ("decoder", "encoder")
                for kv in ("key", "value")]

    def output_names(self):
        return ["logits"] + [f"present.{i}.decoder.{kv}" for i in range(self.cfg.layers) for kv in ("key", "value")]

    def encoder_past(self, encoder_hidden_states):
        """[(key, value)] per layer: what the decoder without past returns for the encoder."""
        return [layer.encoder_attn.project(encoder_hidden_states) for layer in self.layers]

    def forward(self, input_ids, encoder_attention_mask, *past):
        past_key_values = [past[4 * i: 4 * i + 4] for i in range(self.cfg.layers)]
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        past_key_values_length = past_key_values[0][0].shape[2]
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale
        attention_mask = to_causal_4d(input_shape[0], input_shape[-1], input_shape[-1] + past_key_values_length,
                                      inputs_embeds.dtype)
        encoder_attention_mask = prepare_4d_attention_mask(encoder_attention_mask, inputs_embeds.dtype,
                                                           tgt_len=input_shape[-1])
        positions = self.embed_positions(input_ids, past_key_values_length)
        hidden_states = inputs_embeds + positions
        hidden_states = self.layernorm_embedding(hidden_states)
        presents = []
        for layer, past_key_value in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, attention_mask, encoder_attention_mask, past_key_value)
            presents.append(present)
        lm_logits = self.lm_head(hidden_states)
        lm_logits = lm_logits + self.final_logits_bias
        return (lm_logits, *[t for kv in presents for t in kv])


def trap_cross_kv_bsnh(cfg):
    """The BART decoder with past whose encoder keys/values come in (B, T, N, h) and are
    transposed (1, 2) before the cross-attention reads them."""
    return BartDecoderPast(cfg, cross_bsnh=True)


# ---------------------------------------------------------------------------------------------
# Meta's llama model.py (Llama 2 / 3 reference code), with the rotary written in real arithmetic
# instead of complex numbers: RMSNorm on x.float() with rsqrt, q/k/v as (B, S, N, h) (BSNH), the
# INTERLEAVED rotary (each neighbour pair (x[2i], x[2i + 1]) rotated) on BSNH with cos/sin
# (B, S, 1, h/2) computed from position_ids, the cache (B, Nkv, T, h) concatenated after the
# transposed keys, Meta's repeat_kv in the BSNH layout, an additive causal mask of -inf plus a
# finfo.min key-padding term, softmax in float, SwiGLU w2(silu(w1(x)) * w3(x)), untied `output`.


def apply_rotary_interleaved(x, cos, sin, swap_pairs=False):
    """apply_rotary_emb for one tensor: view_as_complex(x.float().reshape(..., -1, 2)) * freqs_cis,
    view_as_real, flatten(3), written with the real and imaginary parts. swap_pairs is the trap:
    the pairs read as (x[2i + 1], x[2i]), a rotation by the negative angle with swapped outputs."""
    xr = x.float().reshape(*x.shape[:-1], -1, 2)
    x0, x1 = (xr[..., 1], xr[..., 0]) if swap_pairs else (xr[..., 0], xr[..., 1])
    out = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(3)
    return out.type_as(x)


def meta_repeat_kv(x, n_rep):
    """model.py's repeat_kv: x (B, S, Nkv, h) -> (B, S, Nkv * n_rep, h)."""
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(bs, slen, n_kv_heads * n_rep,
                                                                                    head_dim)


class MetaRMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


class MetaAttention(nn.Module):
    def __init__(self, cfg, swap_pairs):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.heads, cfg.kv_heads, cfg.hd
        self.n_rep = cfg.heads // cfg.kv_heads
        self.swap_pairs = swap_pairs
        self.wq = nn.Linear(cfg.d, cfg.heads * cfg.hd, bias=False)
        self.wk = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=False)
        self.wv = nn.Linear(cfg.d, cfg.kv_heads * cfg.hd, bias=False)
        self.wo = nn.Linear(cfg.heads * cfg.hd, cfg.d, bias=False)

    def forward(self, x, cos, sin, mask, past):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq = apply_rotary_interleaved(xq, cos, sin, self.swap_pairs)
        xk = apply_rotary_interleaved(xk, cos, sin, self.swap_pairs)
        # the cache (B, Nkv, T, h) as Optimum's names expect it, in place of model.py's cache_k
        keys = torch.cat([past[0], xk.transpose(1, 2)], dim=2)
        values = torch.cat([past[1], xv.transpose(1, 2)], dim=2)
        present = (keys, values)
        keys = meta_repeat_kv(keys.transpose(1, 2), self.n_rep)  # (B, T, N, h)
        values = meta_repeat_kv(values.transpose(1, 2), self.n_rep)
        xq = xq.transpose(1, 2)  # (B, N, S, h)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask  # (B, 1, S, T)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output), present


class MetaFeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.w1 = nn.Linear(cfg.d, cfg.inter, bias=False)
        self.w2 = nn.Linear(cfg.inter, cfg.d, bias=False)
        self.w3 = nn.Linear(cfg.d, cfg.inter, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MetaTransformerBlock(nn.Module):
    def __init__(self, cfg, swap_pairs):
        super().__init__()
        self.attention = MetaAttention(cfg, swap_pairs)
        self.feed_forward = MetaFeedForward(cfg)
        self.attention_norm = MetaRMSNorm(cfg.d, cfg.eps)
        self.ffn_norm = MetaRMSNorm(cfg.d, cfg.eps)

    def forward(self, x, cos, sin, mask, past):
        a, present = self.attention(self.attention_norm(x), cos, sin, mask, past)
        h = x + a
        return h + self.feed_forward(self.ffn_norm(h)), present


class MetaLlama(LlamaBase):
    """model.py's Transformer with Optimum's interface: position_ids in place of start_pos (the
    angles `pos[:, :, None] * freqs`, their cos and sin unsqueezed to (B, S, 1, h/2) in place of
    freqs_cis), the causal mask of model.py (triu of -inf, zero columns for the past by torch.cat;
    its `if seqlen > 1` dropped: at one query it is zero) plus `(1 - attention_mask) * finfo.min`."""

    def __init__(self, cfg, swap_pairs=False):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab, cfg.d)
        self.layers = nn.ModuleList(MetaTransformerBlock(cfg, swap_pairs) for _ in range(cfg.layers))
        self.norm = MetaRMSNorm(cfg.d, cfg.eps)
        self.output = nn.Linear(cfg.d, cfg.vocab, bias=False)
        dim, theta = cfg.hd, 10000.0
        self.register_buffer("freqs", 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim)),
                             persistent=False)

    def forward(self, *args):
        tokens, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        _bsz, seqlen = tokens.shape
        start_pos = past_key_values[0][0].shape[2]
        h = self.tok_embeddings(tokens)
        angles = position_ids.float()[:, :, None] * self.freqs  # (B, S, h/2)
        cos = torch.cos(angles)[:, :, None, :]  # (B, S, 1, h/2)
        sin = torch.sin(angles)[:, :, None, :]
        mask = torch.full((seqlen, seqlen), float("-inf"))
        mask = torch.triu(mask, diagonal=1)
        mask = torch.cat([torch.zeros((seqlen, start_pos)), mask], dim=1).type_as(h)
        mask = mask + (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        presents = []
        for layer, past in zip(self.layers, past_key_values):
            h, present = layer(h, cos, sin, mask, past)
            presents.append(present)
        h = self.norm(h)
        output = self.output(h).float()
        return (output, *self.pack_presents(presents))


def trap_rotary_pairs_swapped(cfg):
    """meta_llama with the rotary reading each pair as (x[2i + 1], x[2i]): x0 * cos - x1 * sin,
    x0 * sin + x1 * cos of the swapped pair is the rotation by the negative angle with the two
    outputs swapped, not what RotaryEmbedding (interleaved) computes."""
    return MetaLlama(cfg, swap_pairs=True)


# ---------------------------------------------------------------------------------------------
# Microsoft's original MixFormer code for Phi-2 (modeling_mixformer_sequential.py / modeling_phi.py
# before transformers 4.37, not PhiForCausalLM): a fused Wqkv viewed (B, S, 3, N, h) and indexed on
# the 3 axis (q, k, v in BSNH), the partial rotary on BSNH written on the two halves of the rotated
# features with half-width cos/sin tables (max_pos, rd/2) gathered by position_ids, the cache
# (B, N, T, h) concatenated after the transposed keys, scores and context with torch.einsum, the
# causal mask built from the sequence lengths (not the scores' shape) with masked_fill, a finfo.min
# key-padding term, one LayerNorm per block feeding attention and MLP in parallel, fc1 -> NewGELU ->
# fc2, a final LayerNorm and a Linear head with bias.


class MixFormerRotary(nn.Module):
    """RotaryEmbedding of MixFormer: cos/sin cached over max_position as (max_pos, rd/2) buffers,
    applied to the first rd features of each head as `cat([x1 c - x2 s, x1 s + x2 c])` on the halves
    of x[..., :rd] (not interleaved), x[..., rd:] passed."""

    def __init__(self, rd, max_pos, base=10000.0, swap_halves=False):
        super().__init__()
        self.rd, self.swap_halves = rd, swap_halves
        inv_freq = 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float32) / rd))
        freqs = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv_freq)  # (max_pos, rd/2)
        self.register_buffer("cos_cached", torch.cos(freqs), persistent=False)
        self.register_buffer("sin_cached", torch.sin(freqs), persistent=False)

    def forward(self, x, pos):  # x (B, S, N, h), pos (B, S)
        rd = self.rd
        x_rot, x_pass = x[..., :rd], x[..., rd:]
        x1, x2 = x_rot.chunk(2, dim=-1)
        if self.swap_halves:  # the trap: the halves read as (x2, x1), the rotation by the negative angle
            x1, x2 = x2, x1
        c = self.cos_cached[pos].unsqueeze(2)  # (B, S, 1, rd/2)
        s = self.sin_cached[pos].unsqueeze(2)
        x_rot = torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)
        return torch.cat([x_rot, x_pass], dim=-1)


class MixFormerMHA(nn.Module):
    def __init__(self, cfg, swap_halves=False, mask_from_scores=False):
        super().__init__()
        self.mask_from_scores = mask_from_scores
        self.n_heads, self.head_dim = cfg.heads, cfg.hd
        self.softmax_scale = 1.0 / math.sqrt(cfg.hd)
        self.Wqkv = nn.Linear(cfg.d, 3 * cfg.d)
        self.out_proj = nn.Linear(cfg.d, cfg.d)
        self.rotary_emb = MixFormerRotary(int(cfg.rotary * cfg.hd), cfg.ctx, swap_halves=swap_halves)

    def forward(self, x, attention_mask, position_ids, past, past_len, tq):
        b, s, _ = x.shape
        qkv = self.Wqkv(x).view(b, s, 3, self.n_heads, self.head_dim)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # (B, S, N, h)
        q = self.rotary_emb(q, position_ids)
        k = self.rotary_emb(k, position_ids)
        k_all = torch.cat([past[0], k.transpose(1, 2)], dim=2)  # (B, N, T, h)
        v_all = torch.cat([past[1], v.transpose(1, 2)], dim=2)
        present = (k_all, v_all)
        scores = torch.einsum("bthd,bhsd->bhts", q, k_all * self.softmax_scale)
        scores = scores + (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        tk = past_len + tq
        if self.mask_from_scores:  # MixFormer's own code: the lengths read from the scores' shape
            tq, tk = scores.shape[2], scores.shape[3]
        causal = torch.arange(tk)[None, :] > torch.arange(tq)[:, None] + (tk - tq)
        scores = scores.masked_fill(causal, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhts,bhsd->bthd", attn, v_all)
        return self.out_proj(out.reshape(b, s, -1)), present


class MixFormerMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d, cfg.inter)
        self.fc2 = nn.Linear(cfg.inter, cfg.d)

    def forward(self, x):
        return self.fc2(new_gelu(self.fc1(x)))  # NewGELUActivation


class MixFormerBlock(nn.Module):
    def __init__(self, cfg, **mha):
        super().__init__()
        self.ln = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.mixer = MixFormerMHA(cfg, **mha)
        self.mlp = MixFormerMLP(cfg)

    def forward(self, h, attention_mask, position_ids, past, past_len, tq):
        x = self.ln(h)
        a, present = self.mixer(x, attention_mask, position_ids, past, past_len, tq)
        return a + self.mlp(x) + h, present


class MixFormerPhi(LlamaBase):
    """MixFormerSequentialForCausalLM (Phi-2 as Microsoft first released it) with Optimum's
    interface: position_ids gather the rotary tables, past_key_values.{i}.key/value (B, N, P, h) in
    place of its InferenceParams kv_cache, the causal mask from tq = input_ids.shape[1] and
    tk = past_len + tq passed to every layer."""
    family = "phi"

    def __init__(self, cfg, **mha):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.d)
        self.h = nn.ModuleList(MixFormerBlock(cfg, **mha) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.linear = nn.Linear(cfg.d, cfg.vocab)

    def forward(self, *args):
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        tq = input_ids.shape[1]
        past_len = past_key_values[0][0].shape[2]
        h = self.wte(input_ids)
        presents = []
        for block, past in zip(self.h, past_key_values):
            h, present = block(h, attention_mask, position_ids, past, past_len, tq)
            presents.append(present)
        logits = self.linear(self.ln_f(h)).float()
        return (logits, *self.pack_presents(presents))


def trap_rotary_halves_swapped(cfg):
    """mixformer_phi with the rotated halves read as (x2, x1): x2 c - x1 s, x2 s + x1 c is the
    rotation by the negative angle with the halves swapped, not RotaryEmbedding's."""
    return MixFormerPhi(dataclasses.replace(cfg, rotary=0.5), swap_halves=True)


def mixformer_scores_shape(cfg):
    """mixformer_phi with its causal mask sized by `scores.shape` as MixFormer's own code does: the
    shape is read from the inputs' dims (shape-source), so the attention fuses; with that pass
    disabled the attention stays, named, since a fused node would leave the scores' computation (and
    the present Concat) in place beside it."""
    return MixFormerPhi(dataclasses.replace(cfg, rotary=0.5), mask_from_scores=True)


# ---------------------------------------------------------------------------------------------
# name -> (constructor taking a Config, opsets exported, opsets committed at the small size)
# The small exports are ~0.6 MB each: the repo keeps the opset-14 export of hf_gpt2 only (the
# held-out form of issue 25); --all-opsets writes the others. torch 1.13 exports hf_llama at
# opset 14 with the same nodes as at 17 (nothing in it changed between the opsets).

GPT2 = (14, 17)
MODELS = {
    "hf_gpt2": (lambda c: HFGPT2(c, addmm=True), GPT2, GPT2),
    "hf_gpt2_matmul": (lambda c: HFGPT2(c, addmm=False), GPT2, (17,)),
    "hf_gpt2_past": (lambda c: HFGPT2Past(c, addmm=True), GPT2, (17,)),
    "ort_gpt2_past": (lambda c: ORTGPT2Past(c, addmm=True), GPT2, (17,)),
    "repo_gpt2": (RepoGPT2, GPT2, (17,)),
    "nanogpt": (NanoGPT, GPT2, (17,)),
    "megatron_gpt2": (MegatronGPT2, GPT2, (17,)),
    "hf_llama": (HFLlama, (14, 17), (17,)),
    "mistral_like": (MistralLike, (17,), (17,)),
    "phi3_like": (Phi3Like, (17,), (17,)),
    "trap_ln_eps_outside": (trap_ln_eps_outside, (17,), (17,)),
    "trap_ln_first_axis": (trap_ln_first_axis, (17,), (17,)),
    "trap_gelu_coef": (trap_gelu_coef, (17,), (17,)),
    "trap_gelu_coef_near": (trap_gelu_coef_near, (17,), (17,)),
    "trap_mask_shifted": (trap_mask_shifted, (17,), (17,)),
    "trap_rms_eps_outside": (trap_rms_eps_outside, (17,), (17,)),
    "bart_decoder_past": (BartDecoderPast, (17,), (17,)),
    "phi2_like": (Phi2Like, (17,), (17,)),
    "phi2_full_rotary": (Phi2Like, (17,), (17,)),
    "gpt_neox_like": (GPTNeoXLike, (17,), (17,)),
    "gemma_like": (GemmaLike, (17,), (17,)),
    "mistral_sliding": (MistralSliding, (17,), (17,)),
    "trap_rotary_tail": (trap_rotary_tail, (17,), (17,)),
    "trap_cross_kv_bsnh": (trap_cross_kv_bsnh, (17,), (17,)),
    "meta_llama": (MetaLlama, (17,), (17,)),
    "trap_rotary_pairs_swapped": (trap_rotary_pairs_swapped, (17,), (17,)),
    "mixformer_phi": (MixFormerPhi, (17,), (17,)),
    "trap_rotary_halves_swapped": (trap_rotary_halves_swapped, (17,), (17,)),
    "mixformer_scores_shape": (mixformer_scores_shape, (17,), (17,)),
}

# The Configs of the later forms, (small, full): hidden 64, 4 heads of 16, 2 layers, vocab 256 as the
# others; the full sizes are Pythia-160m's, bart-base's decoder, a Phi-2 / Gemma / Mistral at GPT-2
# small's width. Mistral's window stays 4 at both sizes so that the 7-token data sets cross it.
CONFIGS = {
    "bart_decoder_past": (dataclasses.replace(SMALL, ctx=64, inter=64),
                          Config(vocab=50265, ctx=1024, d=768, heads=12, layers=6, inter=3072)),
    "phi2_like": (dataclasses.replace(SMALL, ctx=64, inter=64, rotary=0.5),
                  Config(vocab=51200, ctx=2048, d=768, heads=12, layers=12, inter=3072, rotary=0.5)),
    "phi2_full_rotary": (dataclasses.replace(SMALL, ctx=64, inter=64, rotary=1.0),
                         Config(vocab=51200, ctx=2048, d=768, heads=12, layers=12, inter=3072, rotary=1.0)),
    "gpt_neox_like": (dataclasses.replace(SMALL, ctx=64, inter=64, rotary=0.25),
                      Config(vocab=50304, ctx=2048, d=768, heads=12, layers=12, inter=3072, rotary=0.25)),
    "gemma_like": (dataclasses.replace(SMALL, ctx=64, inter=64, kv_heads=1, eps=1e-6),
                   Config(vocab=32000, ctx=2048, d=768, heads=12, kv_heads=1, layers=12, inter=3072, eps=1e-6)),
    "mistral_sliding": (dataclasses.replace(SMALL, ctx=64, inter=64, window=4),
                        dataclasses.replace(FULL_LLAMA, window=4)),
    # 6 query heads of 16 over 2 KV heads (hidden 96), vocab 128 with the untied `output`: ~0.45 MB
    "meta_llama": (dataclasses.replace(SMALL, vocab=128, ctx=64, d=96, heads=6, kv_heads=2, inter=64),
                   FULL_LLAMA),
    # 4 heads of 16 (hidden 64), rotary_dim 8 of 16, intermediate 128, vocab 128: ~0.5 MB
    "mixformer_phi": (dataclasses.replace(SMALL, vocab=128, ctx=64, inter=128, rotary=0.5),
                      Config(vocab=51200, ctx=2048, d=768, heads=12, layers=12, inter=3072, rotary=0.5)),
}


def build(name, size):
    """The model `name` with seeded random weights, in eval mode."""
    make = MODELS[name][0]
    if name.startswith("trap_"):
        cfg = TINY
    elif name in CONFIGS:
        cfg = CONFIGS[name][0 if size == "small" else 1]
    elif size == "small":
        cfg = SMALL
    else:
        cfg = FULL_LLAMA if name in ("hf_llama", "mistral_like", "phi3_like") else FULL_GPT2
    torch.manual_seed(sum(map(ord, name)))
    model = init_weights(make(cfg).eval(), cfg.d)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, GemmaRMSNorm):  # it scales by 1 + weight: the weight near 0
                m.weight.sub_(1.0)
    return model
