"""Decoder models written the ways real code writes them, for torch.onnx.export (see make_exports.py).

Each model computes the same architecture (GPT-2 or Llama) the way one real code base writes it, so
that its ONNX export has that code base's graph form: the optimizer's fusions must hold on all of
them. Weights are random and seeded (no downloads). The trap models resemble a fusion but compute
something else (epsilon outside the square root, a wrong GELU coefficient, ...): they must stay
unfused and equivalent.

Every model has class attributes describing its interface, used by make_exports.py:
  family            "gpt2" or "llama"
  past              None, "separate" (past_key_values.{i}.key/value (B, N, P, h) inputs and
                    present.{i}.key/value outputs, as Optimum writes them) or "stacked" (past_{i}
                    (2, B, N, P, h) and present_{i}, as ORT's gpt2_helper writes them)
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
        return self.cfg.kv_heads if self.family == "llama" else self.cfg.heads

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


def prepare_4d_causal_attention_mask(attention_mask, input_shape, dtype, past_key_values_length):
    """transformers 4.36 AttentionMaskConverter.to_4d (_make_causal_mask + _expand_mask)."""
    bsz, tgt_len = input_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    # A traced branch: the export is made with a past of length > 0, so the Concat is recorded;
    # it also holds for a zero-length past at run time.
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype), mask], dim=-1)
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
        input_ids, attention_mask, position_ids, past_key_values = self.split_inputs(args)
        batch_size, seq_length = input_ids.shape[:2]
        past_key_values_length = past_key_values[0][0].shape[2]
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = prepare_4d_causal_attention_mask(attention_mask, (batch_size, seq_length), inputs_embeds.dtype,
                                                          past_key_values_length)
        hidden_states = inputs_embeds
        presents = []
        for layer, past in zip(self.layers, past_key_values):
            hidden_states, present = layer(hidden_states, attention_mask, position_ids, past)
            presents.append(present)
        hidden_states = self.norm(hidden_states)
        logits = self.lm_head(hidden_states).float()
        return (logits, *self.pack_presents(presents))


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
}


def build(name, size):
    """The model `name` with seeded random weights, in eval mode."""
    make = MODELS[name][0]
    if name.startswith("trap_"):
        cfg = TINY
    elif size == "small":
        cfg = SMALL
    else:
        cfg = FULL_LLAMA if name in ("hf_llama", "mistral_like", "phi3_like") else FULL_GPT2
    torch.manual_seed(sum(map(ord, name)))
    model = make(cfg).eval()
    return init_weights(model, cfg.d)
