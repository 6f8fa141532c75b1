"""Encoder, vision and encoder-decoder models written the ways real code writes them, for
torch.onnx.export (see make_encoder_exports.py); the decoder-only forms are in exporters.py.

Each model computes an architecture (BERT, DistilBERT, ALBERT, ViT, CLIP's vision and text towers,
Whisper's audio encoder, T5's encoder, a BART decoder, torch's own nn.TransformerEncoder) the way one
real code base writes it, so that its
ONNX export has that code base's graph form: the optimizer's encoder fusions (attention with a
padding mask, LayerNorm, GELU, SkipLayerNorm, ...) must hold on all of them. Weights are random and
seeded (no downloads; transformers is not imported, its eager code is re-written here). The trap
models resemble an attention but compute something else (softmax over the queries, a mask that
boosts padding, scores that are not q k^T): they must stay unfused and equivalent.

Every model has class attributes describing its interface, used by make_encoder_exports.py:
  family         bert, roberta, distilbert, albert, encoder, vit, clip, whisper, t5, bart or trap
  expected_type  the model type a user would pass to ORT's optimizer: bert, vit, clip, whisper, t5
                 or bart
  inputs         graph input names, in forward()'s order; the name says what is fed:
                   input_ids (B, S) int64, attention_mask (B, S) int64 0/1 (1 = real token),
                   token_type_ids (B, S) int64, key_padding_mask (B, S) bool (True = padding),
                   pixel_values (B, 3, 32, 32) float, encoder_hidden_states (B, T, D) float,
                   encoder_attention_mask (B, T) int64 0/1, input_features (B, mels, 2 S) float
  outputs        graph output names, in the order forward() returns them
  pad_id         the token id written at padded positions (RoBERTa's padding_idx is 1)
  pads           (text models) how many positions row 1 of data sets 1 and 2 pads (2; 3 for
                 bert_masked_fill)
  eos_id         (CLIP text) the token id closing every row's real tokens, pooled by argmax
forward(*inputs) returns a tuple of the outputs.
"""
import dataclasses
import math
import pathlib
import sys

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from exporters import prepare_4d_causal_attention_mask  # noqa: E402  (transformers 4.36's to_4d)


@dataclasses.dataclass
class Config:
    vocab: int = 256
    max_pos: int = 64
    d: int = 64
    heads: int = 4
    layers: int = 2
    inter: int = 128  # the MLP's hidden size (ViT's mlp_dim)
    eps: float = 1e-12
    image: int = 32  # vision models: image side, patch side, classes
    patch: int = 8
    classes: int = 10
    mels: int = 16  # Whisper: mel bins of input_features (max_pos is max_source_positions)
    embed: int = 16  # ALBERT: embedding_size, projected to d

    @property
    def hd(self):
        return self.d // self.heads

    @property
    def patches(self):
        return (self.image // self.patch) ** 2


def cfg(layers, eps=1e-12):
    return Config(layers=layers, eps=eps)


# the trap models: one block of hidden 32, 4 heads (what they test does not depend on the size)
TINY = Config(vocab=64, max_pos=32, d=32, heads=4, layers=1, inter=64)


class Encoder(nn.Module):
    family = "bert"
    expected_type = "bert"
    inputs = ("input_ids", "attention_mask")
    outputs = ("last_hidden_state",)
    pad_id = 0
    pads = 2
    eos_id = None


def init_weights(model):
    """Random weights whose activations are not degenerate: Linear / Conv weights normal with std
    fan_in^-0.5 clamped to [0.1, 0.2] (variance kept through a projection), biases normal 0.1, norm
    weights 1 + 0.1 noise and biases 0.1 noise, embeddings normal 1, other parameters (class
    tokens, position tables) normal 0.5. Packed in-projections (nn.MultiheadAttention's
    in_proj_weight) are treated as Linear weights."""
    def weight_std(w):
        return min(0.2, max(0.1, w[0].numel() ** -0.5))

    with torch.no_grad():
        for module in model.modules():
            norm = "Norm" in type(module).__name__
            for name, p in module.named_parameters(recurse=False):
                if isinstance(module, nn.Embedding):
                    p.normal_(0.0, 1.0)
                    if module.padding_idx is not None:
                        p[module.padding_idx].zero_()  # as nn.Embedding and HF's _init_weights do
                elif norm:
                    p.copy_((1.0 if name == "weight" else 0.0) + 0.1 * torch.randn_like(p))
                elif name.endswith("weight") and p.dim() >= 2:
                    p.normal_(0.0, weight_std(p))
                elif name.endswith("bias"):
                    p.normal_(0.0, 0.1)
                else:
                    p.normal_(0.0, 0.5)
    return model


def gelu_tanh(x):  # the tanh approximation written out (HF gelu_new / NewGELUActivation)
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def quick_gelu(x):  # HF QuickGELUActivation (CLIP)
    return x * torch.sigmoid(1.702 * x)


def extended_attention_mask(attention_mask, dtype, value=None):
    """HF ModuleUtilsMixin.get_extended_attention_mask for a (B, S) mask: (B, 1, 1, S),
    (1 - mask) * finfo.min. value replaces finfo.min (old transformers: -10000.0; the positive
    trap: +10000.0)."""
    ext = attention_mask[:, None, None, :]
    ext = ext.to(dtype=dtype)
    return (1.0 - ext) * (torch.finfo(dtype).min if value is None else value)


# ---------------------------------------------------------------------------------------------
# Hugging Face BERT (transformers modeling_bert.py, eager attention); also the trap blocks


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab, c.d, padding_idx=0)
        self.position_embeddings = nn.Embedding(c.max_pos, c.d)
        self.token_type_embeddings = nn.Embedding(2, c.d)
        self.LayerNorm = nn.LayerNorm(c.d, eps=c.eps)
        self.register_buffer("position_ids", torch.arange(c.max_pos).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size()[1]
        position_ids = self.position_ids[:, :seq_length]
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        embeddings += self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class BertSelfAttention(nn.Module):
    """BertSelfAttention (and ViTSelfAttention, the same code without a mask). trap:
    "softmax_query_axis" takes the softmax over dim -2 (the queries); "scores_not_product"
    squares q k^T before the scale."""

    def __init__(self, c, trap=None):
        super().__init__()
        self.num_attention_heads = c.heads
        self.attention_head_size = c.hd
        self.all_head_size = c.heads * c.hd
        self.query = nn.Linear(c.d, self.all_head_size)
        self.key = nn.Linear(c.d, self.all_head_size)
        self.value = nn.Linear(c.d, self.all_head_size)
        self.trap = trap

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        if self.trap == "scores_not_product":
            attention_scores = attention_scores * attention_scores
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        dim = -2 if self.trap == "softmax_query_axis" else -1
        attention_probs = nn.functional.softmax(attention_scores, dim=dim)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class BertSelfOutput(nn.Module):  # also BertOutput: dense, LayerNorm(hidden + input)
    def __init__(self, c, d_in):
        super().__init__()
        self.dense = nn.Linear(d_in, c.d)
        self.LayerNorm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dense(hidden_states) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, c, trap=None, self_attention=BertSelfAttention):
        super().__init__()
        self.self = self_attention(c, trap)
        self.output = BertSelfOutput(c, c.d)

    def forward(self, hidden_states, attention_mask):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.d, c.inter)

    def forward(self, hidden_states):
        return F.gelu(self.dense(hidden_states))  # ACT2FN["gelu"], GELUActivation: erf


class BertLayer(nn.Module):
    def __init__(self, c, trap=None, self_attention=BertSelfAttention):
        super().__init__()
        self.attention = BertAttention(c, trap, self_attention)
        self.intermediate = BertIntermediate(c)
        self.output = BertSelfOutput(c, c.inter)  # BertOutput

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.d, c.d)

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        return torch.tanh(self.dense(first_token_tensor))


class HFBert(Encoder):
    """transformers BertModel: embeddings (word + token type, += positions sliced from the
    position_ids buffer), the extended mask (1 - mask) * finfo.min, post-LN layers, pooler.
    trap / mask_value make the trap blocks."""
    inputs = ("input_ids", "attention_mask", "token_type_ids")
    outputs = ("last_hidden_state", "pooler_output")

    def __init__(self, c, trap=None, mask_value=None):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layer = nn.ModuleList(BertLayer(c, trap) for _ in range(c.layers))
        self.pooler = BertPooler(c)
        self.mask_value = mask_value
        if trap is not None or mask_value is not None:
            self.family = "trap"

    def forward(self, input_ids, attention_mask, token_type_ids):
        embedding_output = self.embeddings(input_ids, token_type_ids)
        mask = extended_attention_mask(attention_mask, embedding_output.dtype, self.mask_value)
        hidden_states = embedding_output
        for layer in self.layer:
            hidden_states = layer(hidden_states, mask)
        return hidden_states, self.pooler(hidden_states)


class HFBertNoTypes(HFBert):
    """BertModel called without token_type_ids, as a single-sentence encoder is: the embeddings
    read HF's buffered zeros (token_type_ids[:, :S] expanded), a lookup of row 0 of the 2-row type
    table that the embedding fusion folds into the position table."""
    inputs = ("input_ids", "attention_mask")

    def __init__(self, c):
        super().__init__(c)
        self.register_buffer("token_type_ids", torch.zeros((1, c.max_pos), dtype=torch.long), persistent=False)

    def forward(self, input_ids, attention_mask):
        batch, seq = input_ids.size()
        token_type_ids = self.token_type_ids[:, :seq].expand(batch, seq)
        return super().forward(input_ids, attention_mask, token_type_ids)


class MaskedFillSelfAttention(BertSelfAttention):
    """BertSelfAttention as BERT ports that hand every layer the (B, S) 0/1 mask write it: q
    scaled by 1/sqrt(h) before the product, and the 4-D scores masked in place by
    `masked_fill(mask[:, None, None, :] == 0, -10000.0)` (no Reshape or Expand of the mask to the
    scores' shape, unlike DistilBERT)."""

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = query_layer * (1.0 / math.sqrt(self.attention_head_size))
        scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, -10000.0)
        probs = nn.functional.softmax(scores, dim=-1)
        context_layer = torch.matmul(probs, value_layer).permute(0, 2, 1, 3).contiguous()
        return context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))


class BertMaskedFill(Encoder):
    """A BERT-style encoder called without token_type_ids (BertEmbeddings reading buffered zeros,
    as HFBertNoTypes), post-LN BertLayers whose attention is MaskedFillSelfAttention given the
    (B, S) attention_mask itself, no pooler. Row 1 of data sets 1 and 2 pads 3 positions."""
    family = "encoder"
    pads = 3

    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layer = nn.ModuleList(BertLayer(c, self_attention=MaskedFillSelfAttention) for _ in range(c.layers))
        self.register_buffer("token_type_ids", torch.zeros((1, c.max_pos), dtype=torch.long), persistent=False)

    def forward(self, input_ids, attention_mask):
        batch, seq = input_ids.size()
        token_type_ids = self.token_type_ids[:, :seq].expand(batch, seq)
        hidden_states = self.embeddings(input_ids, token_type_ids)
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)
        return (hidden_states,)


def trap_softmax_query_axis(c):
    return HFBert(c, trap="softmax_query_axis")


def trap_mask_adds_positive(c):
    return HFBert(c, mask_value=10000.0)


def trap_scores_not_product(c):
    return HFBert(c, trap="scores_not_product")


# ---------------------------------------------------------------------------------------------
# A RoBERTa-like encoder: the same post-LN encoder written another way


def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
    """transformers modeling_roberta.py: real tokens count from padding_idx + 1, pads sit at
    padding_idx."""
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


class RobertaEmbeddings(nn.Module):
    def __init__(self, c, padding_idx):
        super().__init__()
        self.padding_idx = padding_idx
        self.word_embeddings = nn.Embedding(c.vocab, c.d, padding_idx=padding_idx)
        self.position_embeddings = nn.Embedding(c.max_pos, c.d, padding_idx=padding_idx)
        self.token_type_embeddings = nn.Embedding(1, c.d)  # type_vocab_size 1
        self.LayerNorm = nn.LayerNorm(c.d, eps=c.eps)
        self.register_buffer("token_type_ids", torch.zeros((1, c.max_pos), dtype=torch.long), persistent=False)

    def forward(self, input_ids):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        batch_size, seq_length = input_ids.size()
        # no token_type_ids given: RobertaEmbeddings' buffered zeros, expanded to (B, S)
        token_type_ids = self.token_type_ids[:, :seq_length].expand(batch_size, seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class RobertaLikeAttention(nn.Module):
    """reshape + transpose heads, q scaled by h^-0.5 before the product, additive mask."""

    def __init__(self, c):
        super().__init__()
        self.heads, self.hd = c.heads, c.hd
        self.query = nn.Linear(c.d, c.d)
        self.key = nn.Linear(c.d, c.d)
        self.value = nn.Linear(c.d, c.d)

    def forward(self, x, mask):
        B, S, D = x.shape
        q = self.query(x).reshape(B, S, self.heads, self.hd).transpose(1, 2)
        k = self.key(x).reshape(B, S, self.heads, self.hd).transpose(1, 2)
        v = self.value(x).reshape(B, S, self.heads, self.hd).transpose(1, 2)
        q = q * self.hd ** -0.5
        probs = torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1)
        return (probs @ v).transpose(1, 2).reshape(B, S, D)


class RobertaLikeLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = RobertaLikeAttention(c)
        self.attention_dense = nn.Linear(c.d, c.d)
        self.attention_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.intermediate = nn.Linear(c.d, c.inter)
        self.output = nn.Linear(c.inter, c.d)
        self.output_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, x, mask):
        x = self.attention_norm(x + self.attention_dense(self.attention(x, mask)))
        return self.output_norm(x + self.output(gelu_tanh(self.intermediate(x))))


class RobertaLike(Encoder):
    """RoBERTa's embeddings (positions from input_ids, one token type, no token_type_ids input),
    the old transformers mask (1 - mask) * -10000.0, a tanh GELU written out, pooler."""
    outputs = ("last_hidden_state", "pooler_output")
    pad_id = 1

    def __init__(self, c):
        super().__init__()
        self.embeddings = RobertaEmbeddings(c, padding_idx=self.pad_id)
        self.layer = nn.ModuleList(RobertaLikeLayer(c) for _ in range(c.layers))
        self.pooler = BertPooler(c)

    def forward(self, input_ids, attention_mask):
        x = self.embeddings(input_ids)
        mask = extended_attention_mask(attention_mask, x.dtype, -10000.0)
        for layer in self.layer:
            x = layer(x, mask)
        return x, self.pooler(x)


# ---------------------------------------------------------------------------------------------
# DistilBERT (transformers modeling_distilbert.py)


class DistilEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab, c.d, padding_idx=0)
        self.position_embeddings = nn.Embedding(c.max_pos, c.d)
        self.LayerNorm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class DistilMultiHeadSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.dim = c.heads, c.d
        self.q_lin = nn.Linear(c.d, c.d)
        self.k_lin = nn.Linear(c.d, c.d)
        self.v_lin = nn.Linear(c.d, c.d)
        self.out_lin = nn.Linear(c.d, c.d)

    def forward(self, query, key, value, mask):
        bs, q_length, dim = query.size()
        k_length = key.size(1)
        dim_per_head = self.dim // self.n_heads
        mask_reshp = (bs, 1, 1, k_length)

        def shape(x):
            return x.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        def unshape(x):
            return x.transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)

        q = shape(self.q_lin(query))
        k = shape(self.k_lin(key))
        v = shape(self.v_lin(value))
        q = q / math.sqrt(dim_per_head)
        scores = torch.matmul(q, k.transpose(2, 3))
        mask = (mask == 0).view(mask_reshp).expand_as(scores)
        scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
        weights = nn.functional.softmax(scores, dim=-1)
        context = unshape(torch.matmul(weights, v))
        return self.out_lin(context)


class DistilTransformerBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = DistilMultiHeadSelfAttention(c)
        self.sa_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.lin1 = nn.Linear(c.d, c.inter)
        self.lin2 = nn.Linear(c.inter, c.d)
        self.output_layer_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, x, attn_mask):
        sa_output = self.attention(x, x, x, attn_mask)
        sa_output = self.sa_layer_norm(sa_output + x)
        ffn_output = self.lin2(F.gelu(self.lin1(sa_output)))  # FFN: lin1, gelu (erf), lin2
        return self.output_layer_norm(ffn_output + sa_output)


class DistilBert(Encoder):
    """DistilBertModel: word + position embeddings (arange, expand_as), q / sqrt(h) before the
    product, masked_fill of (mask == 0) with finfo.min, post-LN blocks."""
    family = "distilbert"

    def __init__(self, c):
        super().__init__()
        self.embeddings = DistilEmbeddings(c)
        self.layer = nn.ModuleList(DistilTransformerBlock(c) for _ in range(c.layers))

    def forward(self, input_ids, attention_mask):
        hidden_state = self.embeddings(input_ids)
        for layer in self.layer:
            hidden_state = layer(hidden_state, attention_mask)
        return (hidden_state,)


# ---------------------------------------------------------------------------------------------
# torch's own nn.TransformerEncoder (torch 1.13). Exported with autograd enabled (parameters
# requiring grad), which keeps nn.TransformerEncoderLayer / nn.MultiheadAttention on their
# composite path (F.multi_head_attention_forward): under no_grad torch takes
# aten::_transformer_encoder_layer_fwd, which torch.onnx cannot export.


class TorchEncoder(Encoder):
    """nn.Embedding + a learned position parameter, nn.TransformerEncoder with a bool
    src_key_padding_mask (True = padding). batch_first=False: the model transposes (B, S, D) to
    (S, B, D) and back; norm_first adds a final LayerNorm (as pre-LN stacks do)."""
    inputs = ("input_ids", "key_padding_mask")

    def __init__(self, c, batch_first=True, norm_first=False, activation="gelu"):
        super().__init__()
        self.batch_first = batch_first
        self.embed = nn.Embedding(c.vocab, c.d)
        self.pos = nn.Parameter(torch.zeros(1, c.max_pos, c.d))
        layer = nn.TransformerEncoderLayer(c.d, c.heads, c.inter, dropout=0.0, activation=activation,
                                           batch_first=batch_first, norm_first=norm_first)
        norm = nn.LayerNorm(c.d) if norm_first else None
        self.encoder = nn.TransformerEncoder(layer, c.layers, norm=norm, enable_nested_tensor=False)

    def forward(self, input_ids, key_padding_mask):
        x = self.embed(input_ids) + self.pos[:, :input_ids.size(1)]
        if not self.batch_first:
            x = x.transpose(0, 1)
        x = self.encoder(x, src_key_padding_mask=key_padding_mask)
        if not self.batch_first:
            x = x.transpose(0, 1)
        return (x,)


def torch_encoder_seqfirst(c):
    return TorchEncoder(c, batch_first=False, norm_first=True, activation="relu")


# ---------------------------------------------------------------------------------------------
# Vision


class TorchvisionViT(Encoder):
    """torchvision.models.VisionTransformer itself (torchvision 0.14): conv_proj, class token,
    pos_embedding, EncoderBlocks of nn.LayerNorm(eps 1e-6) + nn.MultiheadAttention(batch_first,
    need_weights=False) + MLP(GELU), heads. Same export note as TorchEncoder."""
    family = "vit"
    expected_type = "vit"
    inputs = ("pixel_values",)
    outputs = ("logits",)

    def __init__(self, c):
        super().__init__()
        self.vit = torchvision.models.VisionTransformer(
            image_size=c.image, patch_size=c.patch, num_layers=c.layers, num_heads=c.heads, hidden_dim=c.d,
            mlp_dim=c.inter, num_classes=c.classes)

    def forward(self, pixel_values):
        return (self.vit(pixel_values),)


class ViTEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.d))
        self.projection = nn.Conv2d(3, c.d, kernel_size=c.patch, stride=c.patch)  # ViTPatchEmbeddings
        self.position_embeddings = nn.Parameter(torch.zeros(1, c.patches + 1, c.d))

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        embeddings = self.projection(pixel_values).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        return embeddings + self.position_embeddings


class ViTLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(c.d, eps=c.eps)
        self.attention = BertSelfAttention(c)  # ViTSelfAttention is the same code
        self.attention_output = nn.Linear(c.d, c.d)  # ViTSelfOutput.dense
        self.layernorm_after = nn.LayerNorm(c.d, eps=c.eps)
        self.intermediate = nn.Linear(c.d, c.inter)
        self.output = nn.Linear(c.inter, c.d)

    def forward(self, hidden_states):
        attention_output = self.attention_output(self.attention(self.layernorm_before(hidden_states)))
        hidden_states = attention_output + hidden_states
        layer_output = F.gelu(self.intermediate(self.layernorm_after(hidden_states)))
        return self.output(layer_output) + hidden_states  # ViTOutput: dense, + input_tensor


class HFViT(Encoder):
    """transformers ViTModel (no pooler): patch conv -> flatten(2).transpose(1, 2), cls token
    concatenated, + position embeddings, pre-LN layers with BERT's attention (no mask), final
    LayerNorm; layer_norm_eps 1e-12."""
    family = "vit"
    expected_type = "vit"
    inputs = ("pixel_values",)

    def __init__(self, c):
        super().__init__()
        self.embeddings = ViTEmbeddings(c)
        self.layer = nn.ModuleList(ViTLayer(c) for _ in range(c.layers))
        self.layernorm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, pixel_values):
        hidden_states = self.embeddings(pixel_values)
        for layer in self.layer:
            hidden_states = layer(hidden_states)
        return (self.layernorm(hidden_states),)


class CLIPVisionEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.class_embedding = nn.Parameter(torch.randn(c.d))
        self.patch_embedding = nn.Conv2d(3, c.d, kernel_size=c.patch, stride=c.patch, bias=False)
        self.num_positions = c.patches + 1
        self.position_embedding = nn.Embedding(self.num_positions, c.d)
        self.register_buffer("position_ids", torch.arange(self.num_positions).expand((1, -1)), persistent=False)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        patch_embeds = self.patch_embedding(pixel_values)
        patch_embeds = patch_embeds.flatten(2).transpose(1, 2)
        class_embeds = self.class_embedding.expand(batch_size, 1, -1)
        embeddings = torch.cat([class_embeds, patch_embeds], dim=1)
        return embeddings + self.position_embedding(self.position_ids)


class CLIPAttention(nn.Module):
    """HF CLIPAttention: q_proj(x) * scale, heads as contiguous (B, N, S, h) viewed to 3-D
    (B * N, S, h), bmm, softmax, bmm, back to (B, S, D). The text tower passes two 4-D additive
    masks (B, 1, S, S): HF adds the causal one first, then the padding one, each through a view of
    the scores to (B, N, S, S) and back; nested_masks adds them in the other order inside one view,
    `(w + attention_mask) + causal_attention_mask`. The vision tower passes none."""

    def __init__(self, c, nested_masks=False):
        super().__init__()
        self.nested_masks = nested_masks
        self.embed_dim, self.num_heads, self.head_dim = c.d, c.heads, c.hd
        self.scale = self.head_dim ** -0.5
        self.k_proj = nn.Linear(c.d, c.d)
        self.v_proj = nn.Linear(c.d, c.d)
        self.q_proj = nn.Linear(c.d, c.d)
        self.out_proj = nn.Linear(c.d, c.d)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, attention_mask=None, causal_attention_mask=None):
        bsz, tgt_len, embed_dim = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scale
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if self.nested_masks and attention_mask is not None and causal_attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = (attn_weights + attention_mask) + causal_attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        else:
            # apply the causal_attention_mask first
            if causal_attention_mask is not None:
                attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + causal_attention_mask
                attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
            if attention_mask is not None:
                attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
                attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.bmm(attn_weights, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, embed_dim)
        return self.out_proj(attn_output)


class CLIPEncoderLayer(nn.Module):
    def __init__(self, c, nested_masks=False):
        super().__init__()
        self.self_attn = CLIPAttention(c, nested_masks)
        self.layer_norm1 = nn.LayerNorm(c.d, eps=c.eps)
        self.fc1 = nn.Linear(c.d, c.inter)
        self.fc2 = nn.Linear(c.inter, c.d)
        self.layer_norm2 = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, hidden_states, attention_mask=None, causal_attention_mask=None):
        residual = hidden_states
        hidden_states = self.self_attn(self.layer_norm1(hidden_states), attention_mask, causal_attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.fc2(quick_gelu(self.fc1(self.layer_norm2(hidden_states))))
        return residual + hidden_states


class CLIPVision(Encoder):
    """transformers CLIPVisionTransformer: embeddings, pre_layrnorm, pre-LN layers,
    post_layernorm on the CLS token (pooler_output); layer_norm_eps 1e-5."""
    family = "vit"
    expected_type = "clip"
    inputs = ("pixel_values",)
    outputs = ("last_hidden_state", "pooler_output")

    def __init__(self, c):
        super().__init__()
        self.embeddings = CLIPVisionEmbeddings(c)
        self.pre_layrnorm = nn.LayerNorm(c.d, eps=c.eps)
        self.layers = nn.ModuleList(CLIPEncoderLayer(c) for _ in range(c.layers))
        self.post_layernorm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, pixel_values):
        hidden_states = self.pre_layrnorm(self.embeddings(pixel_values))
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        last_hidden_state = hidden_states
        pooled_output = self.post_layernorm(last_hidden_state[:, 0, :])
        return last_hidden_state, pooled_output


# ---------------------------------------------------------------------------------------------
# CLIP's text tower (transformers modeling_clip.py CLIPTextTransformer)


def create_4d_causal_attention_mask(input_shape, dtype):
    """transformers 4.36 _create_4d_causal_attention_mask (AttentionMaskConverter.to_causal_4d,
    _make_causal_mask) with no past: (B, 1, S, S), finfo.min above the diagonal, 0 elsewhere."""
    bsz, tgt_len = input_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


def build_causal_attention_mask(bsz, seq_len, dtype):
    """transformers < 4.30 CLIPTextTransformer._build_causal_attention_mask: an empty (B, S, S)
    filled with finfo.min, triu_(1), unsqueeze(1)."""
    mask = torch.empty(bsz, seq_len, seq_len, dtype=dtype)
    mask.fill_(torch.tensor(torch.finfo(dtype).min))
    mask.triu_(1)  # zero out the lower diagonal
    mask = mask.unsqueeze(1)  # expand mask
    return mask


class CLIPTextEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.token_embedding = nn.Embedding(c.vocab, c.d)
        self.position_embedding = nn.Embedding(c.max_pos, c.d)
        self.register_buffer("position_ids", torch.arange(c.max_pos).expand((1, -1)), persistent=False)

    def forward(self, input_ids):
        seq_length = input_ids.shape[-1]
        position_ids = self.position_ids[:, :seq_length]
        inputs_embeds = self.token_embedding(input_ids)
        position_embeddings = self.position_embedding(position_ids)
        return inputs_embeds + position_embeddings


class CLIPText(Encoder):
    """transformers CLIPTextTransformer (CLIPTextModel): token + position embeddings (no norm),
    a causal mask and the expanded padding mask, both (B, 1, S, S) additive finfo.min, given to
    every layer and added to the scores one after the other; pre-LN CLIPEncoderLayers (QuickGELU);
    final_layer_norm; pooler_output = the hidden state at each row's EOS, the largest token id
    (`input_ids.to(int).argmax(-1)`, eos_token_id 2's legacy path); layer_norm_eps 1e-5.
    nested_masks: the transformers < 4.30 mask builders (_build_causal_attention_mask,
    _expand_mask) and the masks added padding first in one view (see CLIPAttention)."""
    family = "clip"
    expected_type = "clip"
    outputs = ("last_hidden_state", "pooler_output")
    def __init__(self, c, nested_masks=False):
        super().__init__()
        self.nested_masks = nested_masks
        self.eos_id = c.vocab - 1  # the last id (CLIP's <|endoftext|> 49407): each row's largest id
        self.embeddings = CLIPTextEmbeddings(c)
        self.layers = nn.ModuleList(CLIPEncoderLayer(c, nested_masks) for _ in range(c.layers))  # CLIPEncoder
        self.final_layer_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, input_ids, attention_mask):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        hidden_states = self.embeddings(input_ids)
        if self.nested_masks:
            bsz, seq_len = input_shape
            causal_attention_mask = build_causal_attention_mask(bsz, seq_len, hidden_states.dtype)
            attention_mask = prepare_4d_attention_mask(attention_mask, hidden_states.dtype, None)  # _expand_mask
        else:
            causal_attention_mask = create_4d_causal_attention_mask(input_shape, hidden_states.dtype)
            attention_mask = prepare_4d_attention_mask(attention_mask, hidden_states.dtype, None)
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, causal_attention_mask)
        last_hidden_state = self.final_layer_norm(hidden_states)
        pooled_output = last_hidden_state[
            torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device),
            input_ids.to(dtype=torch.int, device=last_hidden_state.device).argmax(dim=-1),
        ]
        return last_hidden_state, pooled_output


def clip_text_nested_masks(c):
    return CLIPText(c, nested_masks=True)


# ---------------------------------------------------------------------------------------------
# T5's encoder (transformers modeling_t5.py)


class T5LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class T5Attention(nn.Module):
    def __init__(self, c, has_relative_attention_bias, num_buckets=32, max_distance=128):
        super().__init__()
        self.n_heads, self.key_value_proj_dim, self.inner_dim = c.heads, c.hd, c.d
        self.q = nn.Linear(c.d, c.d, bias=False)
        self.k = nn.Linear(c.d, c.d, bias=False)
        self.v = nn.Linear(c.d, c.d, bias=False)
        self.o = nn.Linear(c.d, c.d, bias=False)
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = num_buckets
        self.relative_attention_max_distance = max_distance
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, c.heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length):
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position, bidirectional=True, num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance)
        values = self.relative_attention_bias(relative_position_bucket)  # (S, S, N)
        return values.permute([2, 0, 1]).unsqueeze(0)  # (1, N, S, S)

    def forward(self, hidden_states, mask, position_bias):
        batch_size, seq_length = hidden_states.shape[:2]

        def shape(states):
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

        query_states = shape(self.q(hidden_states))
        key_states = shape(self.k(hidden_states))
        value_states = shape(self.v(hidden_states))
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            position_bias = self.compute_bias(seq_length, seq_length)
            position_bias = position_bias + mask  # (B, N, S, S)
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        return self.o(attn_output), position_bias


class T5Block(nn.Module):
    def __init__(self, c, has_relative_attention_bias):
        super().__init__()
        self.attention_norm = T5LayerNorm(c.d, c.eps)  # T5LayerSelfAttention.layer_norm
        self.SelfAttention = T5Attention(c, has_relative_attention_bias)
        self.ff_norm = T5LayerNorm(c.d, c.eps)  # T5LayerFF.layer_norm
        self.wi = nn.Linear(c.d, c.inter, bias=False)  # T5DenseActDense
        self.wo = nn.Linear(c.inter, c.d, bias=False)

    def forward(self, hidden_states, mask, position_bias):
        attention_output, position_bias = self.SelfAttention(self.attention_norm(hidden_states), mask, position_bias)
        hidden_states = hidden_states + attention_output
        hidden_states = hidden_states + self.wo(F.relu(self.wi(self.ff_norm(hidden_states))))
        return hidden_states, position_bias


class T5Encoder(Encoder):
    """T5EncoderModel: shared embedding, no positions; the relative position bias (bidirectional,
    32 buckets, max distance 128) computed in layer 0 only and summed with the extended mask,
    that sum shared by every layer; no score scaling; pre-RMSNorm blocks; ReLU FF."""
    family = "t5"
    expected_type = "t5"

    def __init__(self, c):
        super().__init__()
        self.shared = nn.Embedding(c.vocab, c.d)
        self.block = nn.ModuleList(T5Block(c, has_relative_attention_bias=(i == 0)) for i in range(c.layers))
        self.final_layer_norm = T5LayerNorm(c.d, c.eps)

    def forward(self, input_ids, attention_mask):
        hidden_states = self.shared(input_ids)
        mask = extended_attention_mask(attention_mask, hidden_states.dtype)
        position_bias = None
        for layer in self.block:
            hidden_states, position_bias = layer(hidden_states, mask, position_bias)
        return (self.final_layer_norm(hidden_states),)


# ---------------------------------------------------------------------------------------------
# A BART decoder (transformers 4.36 modeling_bart.py), no past


def prepare_4d_attention_mask(mask, dtype, tgt_len):
    """transformers 4.36 _prepare_4d_attention_mask (AttentionMaskConverter._expand_mask; before
    4.30 each model's _expand_mask, the same code); tgt_len None: the mask's own length."""
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


class BartLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids, past_key_values_length=0):
        bsz, seq_len = input_ids.shape[:2]
        positions = torch.arange(past_key_values_length, past_key_values_length + seq_len, dtype=torch.long,
                                 device=self.weight.device).expand(bsz, -1)
        return super().forward(positions + self.offset)


class BartAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = c.d, c.heads, c.hd
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(c.d, c.d)
        self.v_proj = nn.Linear(c.d, c.d)
        self.q_proj = nn.Linear(c.d, c.d)
        self.out_proj = nn.Linear(c.d, c.d)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states=None, attention_mask=None):
        is_cross_attention = key_value_states is not None
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        kv = key_value_states if is_cross_attention else hidden_states
        key_states = self._shape(self.k_proj(kv), -1, bsz)
        value_states = self._shape(self.v_proj(kv), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.bmm(attn_weights, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output)


class BartDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = BartAttention(c)
        self.self_attn_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.encoder_attn = BartAttention(c)
        self.encoder_attn_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.fc1 = nn.Linear(c.d, c.inter)
        self.fc2 = nn.Linear(c.inter, c.d)
        self.final_layer_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask):
        residual = hidden_states
        hidden_states = self.self_attn(hidden_states, attention_mask=attention_mask)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.encoder_attn(hidden_states, key_value_states=encoder_hidden_states,
                                          attention_mask=encoder_attention_mask)
        hidden_states = self.encoder_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.fc2(F.gelu(self.fc1(hidden_states)))
        return self.final_layer_norm(residual + hidden_states)


class BartDecoder(Encoder):
    """BartDecoder without a past: learned positions (offset 2), embed_scale 1.0 (bart-base),
    layernorm_embedding, post-LN layers of causal self-attention and cross-attention, GELU FFN."""
    family = "bart"
    expected_type = "bart"
    inputs = ("input_ids", "attention_mask", "encoder_hidden_states", "encoder_attention_mask")

    def __init__(self, c):
        super().__init__()
        self.embed_scale = 1.0  # scale_embedding False
        self.embed_tokens = nn.Embedding(c.vocab, c.d, padding_idx=1)
        self.embed_positions = BartLearnedPositionalEmbedding(c.max_pos, c.d)
        self.layers = nn.ModuleList(BartDecoderLayer(c) for _ in range(c.layers))
        self.layernorm_embedding = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, input_ids, attention_mask, encoder_hidden_states, encoder_attention_mask):
        input_shape = input_ids.size()
        inputs_embeds = self.embed_tokens(input_ids.view(-1, input_shape[-1])) * self.embed_scale
        attention_mask = prepare_4d_causal_attention_mask(attention_mask, input_shape, inputs_embeds.dtype, 0)
        encoder_attention_mask = prepare_4d_attention_mask(encoder_attention_mask, inputs_embeds.dtype,
                                                           tgt_len=input_shape[-1])
        positions = self.embed_positions(input_ids, 0)
        hidden_states = self.layernorm_embedding(inputs_embeds + positions)
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask)
        return (hidden_states,)


# ---------------------------------------------------------------------------------------------
# Whisper's audio encoder (transformers modeling_whisper.py WhisperEncoder)


def sinusoids(length, channels, max_timescale=10000):
    """transformers modeling_whisper.py (and openai/whisper): sin | cos position table."""
    log_timescale_increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length).view(-1, 1) * inv_timescales.view(1, -1)
    return torch.cat([scaled_time.sin(), scaled_time.cos()], dim=1)


class WhisperAttention(BartAttention):
    """WhisperAttention is BartAttention's code ("Copied from ... BartAttention") with a k_proj
    without bias: q_proj(x) * head_dim^-0.5, 3-D (B * N, S, h) heads, bmm, softmax, bmm."""

    def __init__(self, c):
        super().__init__(c)
        self.k_proj = nn.Linear(c.d, c.d, bias=False)


class WhisperEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = WhisperAttention(c)
        self.self_attn_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.fc1 = nn.Linear(c.d, c.inter)
        self.fc2 = nn.Linear(c.inter, c.d)
        self.final_layer_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = F.gelu(self.fc1(hidden_states))  # activation_function "gelu": erf
        hidden_states = self.fc2(hidden_states)
        return residual + hidden_states


class WhisperEncoder(Encoder):
    """WhisperEncoder: conv1 (k 3, pad 1) -> GELU -> conv2 (k 3, stride 2, pad 1) -> GELU ->
    permute(0, 2, 1), + embed_positions (an nn.Embedding holding sinusoids, not trained), pre-LN
    layers without a mask, final layer_norm (nn.LayerNorm's default eps 1e-5). HF adds the whole
    table (its inputs are always 3000 frames, 1500 positions); here it is sliced to the S positions
    so that the frame count stays dynamic (T frames -> T / 2 positions, T even)."""
    family = "whisper"
    expected_type = "whisper"
    inputs = ("input_features",)

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv1d(c.mels, c.d, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(c.d, c.d, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(c.max_pos, c.d)  # max_source_positions
        self.embed_positions.requires_grad_(False)
        self.layers = nn.ModuleList(WhisperEncoderLayer(c) for _ in range(c.layers))
        self.layer_norm = nn.LayerNorm(c.d)

    def fixed_weights(self):
        """After the random init: WhisperPreTrainedModel._init_weights copies sinusoids into the
        position table."""
        with torch.no_grad():
            self.embed_positions.weight.copy_(sinusoids(*self.embed_positions.weight.shape))

    def forward(self, input_features):
        inputs_embeds = nn.functional.gelu(self.conv1(input_features))
        inputs_embeds = nn.functional.gelu(self.conv2(inputs_embeds))
        inputs_embeds = inputs_embeds.permute(0, 2, 1)
        embed_pos = self.embed_positions.weight[: inputs_embeds.shape[1]]
        hidden_states = inputs_embeds + embed_pos
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return (self.layer_norm(hidden_states),)


# ---------------------------------------------------------------------------------------------
# ALBERT (transformers modeling_albert.py): one layer's weights shared by every layer


class AlbertEmbeddings(nn.Module):
    """BertEmbeddings at embedding_size: word + token type, += positions, LayerNorm."""

    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab, c.embed, padding_idx=0)
        self.position_embeddings = nn.Embedding(c.max_pos, c.embed)
        self.token_type_embeddings = nn.Embedding(2, c.embed)
        self.LayerNorm = nn.LayerNorm(c.embed, eps=c.eps)
        self.register_buffer("position_ids", torch.arange(c.max_pos).expand((1, -1)), persistent=False)

    def forward(self, input_ids, token_type_ids, past_key_values_length=0):
        seq_length = input_ids.size()[1]
        position_ids = self.position_ids[:, past_key_values_length: seq_length + past_key_values_length]
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        return self.LayerNorm(embeddings)


class AlbertAttention(nn.Module):
    """BERT's self-attention and self-output in one module; the context merged by
    `transpose(2, 1).flatten(2)`."""

    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c.heads
        self.attention_head_size = c.hd
        self.all_head_size = c.heads * c.hd
        self.query = nn.Linear(c.d, self.all_head_size)
        self.key = nn.Linear(c.d, self.all_head_size)
        self.value = nn.Linear(c.d, self.all_head_size)
        self.dense = nn.Linear(c.d, c.d)
        self.LayerNorm = nn.LayerNorm(c.d, eps=c.eps)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        mixed_query_layer = self.query(hidden_states)
        mixed_key_layer = self.key(hidden_states)
        mixed_value_layer = self.value(hidden_states)
        query_layer = self.transpose_for_scores(mixed_query_layer)
        key_layer = self.transpose_for_scores(mixed_key_layer)
        value_layer = self.transpose_for_scores(mixed_value_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.transpose(2, 1).flatten(2)
        projected_context_layer = self.dense(context_layer)
        return self.LayerNorm(hidden_states + projected_context_layer)


class AlbertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.full_layer_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.attention = AlbertAttention(c)
        self.ffn = nn.Linear(c.d, c.inter)
        self.ffn_output = nn.Linear(c.inter, c.d)

    def ff_chunk(self, attention_output):  # apply_chunking_to_forward with chunk size 0: one call
        ffn_output = self.ffn(attention_output)
        ffn_output = gelu_tanh(ffn_output)  # hidden_act "gelu_new"
        return self.ffn_output(ffn_output)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        ffn_output = self.ff_chunk(attention_output)
        return self.full_layer_layer_norm(ffn_output + attention_output)


class AlbertLayerGroup(nn.Module):
    def __init__(self, c, inner_group_num=1):
        super().__init__()
        self.albert_layers = nn.ModuleList(AlbertLayer(c) for _ in range(inner_group_num))

    def forward(self, hidden_states, attention_mask):
        for albert_layer in self.albert_layers:
            hidden_states = albert_layer(hidden_states, attention_mask)
        return hidden_states


class AlbertLike(Encoder):
    """AlbertModel: embeddings of size c.embed, embedding_hidden_mapping_in (Linear embed -> d),
    num_hidden_groups 1: the same AlbertLayerGroup (one AlbertLayer) called c.layers times, so the
    export has one set of layer initializers read by every layer; post-LN; gelu_new; the extended
    mask `(1.0 - mask.unsqueeze(1).unsqueeze(2).to(float)) * finfo.min`; pooler tanh(Linear(h[:, 0]))."""
    family = "albert"
    inputs = ("input_ids", "attention_mask", "token_type_ids")
    outputs = ("last_hidden_state", "pooler_output")

    def __init__(self, c, num_hidden_groups=1):
        super().__init__()
        self.num_hidden_layers, self.num_hidden_groups = c.layers, num_hidden_groups
        self.embeddings = AlbertEmbeddings(c)
        self.embedding_hidden_mapping_in = nn.Linear(c.embed, c.d)  # AlbertTransformer
        self.albert_layer_groups = nn.ModuleList(AlbertLayerGroup(c) for _ in range(num_hidden_groups))
        self.pooler = nn.Linear(c.d, c.d)
        self.pooler_activation = nn.Tanh()

    def forward(self, input_ids, attention_mask, token_type_ids):
        extended_attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)
        extended_attention_mask = extended_attention_mask.to(dtype=torch.float32)  # fp16 compatibility
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(torch.float32).min
        embedding_output = self.embeddings(input_ids, token_type_ids)
        hidden_states = self.embedding_hidden_mapping_in(embedding_output)
        for i in range(self.num_hidden_layers):
            group_idx = int(i / (self.num_hidden_layers / self.num_hidden_groups))
            hidden_states = self.albert_layer_groups[group_idx](hidden_states, extended_attention_mask)
        sequence_output = hidden_states
        pooled_output = self.pooler_activation(self.pooler(sequence_output[:, 0]))
        return sequence_output, pooled_output


# ---------------------------------------------------------------------------------------------
# name -> (constructor, Config, opsets exported)

MODELS = {
    "hf_bert": (HFBert, cfg(4), (14, 17)),
    "hf_bert_no_types": (HFBertNoTypes, cfg(2), (17,)),
    "roberta_like": (RobertaLike, cfg(2, 1e-5), (17,)),
    "distilbert_like": (DistilBert, cfg(3), (14,)),
    "bert_masked_fill": (BertMaskedFill, Config(vocab=128, max_pos=16, inter=16, layers=2), (17,)),
    "torch_encoder": (TorchEncoder, cfg(2, 1e-5), (17,)),
    "torch_encoder_seqfirst": (torch_encoder_seqfirst, cfg(2, 1e-5), (14,)),
    "torchvision_vit": (TorchvisionViT, cfg(4, 1e-6), (17,)),
    "hf_vit": (HFViT, cfg(2), (17,)),
    "clip_vision": (CLIPVision, cfg(2, 1e-5), (17,)),
    "t5_encoder": (T5Encoder, cfg(3, 1e-6), (17,)),
    "bart_decoder": (BartDecoder, cfg(2, 1e-5), (17,)),
    "clip_text": (CLIPText, Config(vocab=128, layers=2, eps=1e-5), (17,)),
    "clip_text_nested_masks": (clip_text_nested_masks, Config(vocab=128, layers=2, eps=1e-5), (17,)),
    "whisper_encoder": (WhisperEncoder, Config(max_pos=32, layers=2, eps=1e-5), (17,)),
    "albert_like": (AlbertLike, cfg(3), (17,)),
    "trap_softmax_query_axis": (trap_softmax_query_axis, TINY, (17,)),
    "trap_mask_adds_positive": (trap_mask_adds_positive, TINY, (17,)),
    "trap_scores_not_product": (trap_scores_not_product, TINY, (17,)),
}


# name -> Config of a realistic size, built by the same code (make_encoder_exports.py --size base;
# benchmarks/encoders/compare.sh times them): BERT-base, DistilBERT-base, a 6-layer
# nn.TransformerEncoder of width 512, torchvision's ViT-B/16, CLIP's ViT-B/32 vision tower, T5-small's
# encoder.
BASE = {
    "hf_bert": Config(vocab=30522, max_pos=512, d=768, heads=12, layers=12, inter=3072, eps=1e-12),
    "distilbert_like": Config(vocab=30522, max_pos=512, d=768, heads=12, layers=6, inter=3072, eps=1e-12),
    "torch_encoder": Config(vocab=30522, max_pos=512, d=512, heads=8, layers=6, inter=2048, eps=1e-5),
    "torchvision_vit": Config(d=768, heads=12, layers=12, inter=3072, eps=1e-6, image=224, patch=16, classes=1000),
    "clip_vision": Config(d=768, heads=12, layers=12, inter=3072, eps=1e-5, image=224, patch=32),
    "t5_encoder": Config(vocab=32128, d=512, heads=8, layers=6, inter=2048, eps=1e-6),
}


def build(name, size="small"):
    """The model `name` with seeded random weights, in eval mode (parameters still require grad:
    see TorchEncoder); size "base" takes its Config from BASE."""
    make, c, _ = MODELS[name]
    if size == "base":
        c = BASE[name]
    torch.manual_seed(sum(map(ord, name)))
    model = make(c).eval()
    model.cfg = c
    init_weights(model)
    if hasattr(model, "fixed_weights"):  # tables the real model does not draw at random
        model.fixed_weights()
    return model
