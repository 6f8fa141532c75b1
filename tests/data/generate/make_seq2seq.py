#!/usr/bin/python3
"""Tiny encoder-decoder models (BART, T5, Whisper) exported the way Hugging Face Optimum splits them,
and torch's greedy ids, for `refeval generate` on seq2seq models. See SEQ2SEQ.md.

Per family, the folder seq2seq_<family>/ holds
  encoder_model.onnx            input_ids (B, L) int64, attention_mask (B, L) int64
                                (Whisper: input_features (B, mels, 2 L) float) -> last_hidden_state (B, L, D)
  decoder_model.onnx            the first step, no past: input_ids (B, S) int64, encoder_hidden_states
                                (B, L, D), encoder_attention_mask (B, L) int64 (not Whisper) -> logits
                                (B, S, V), per layer i present.{i}.decoder.key/value (B, N, S, h) and
                                present.{i}.encoder.key/value (B, N, L, h)
  decoder_with_past_model.onnx  input_ids (B, 1) int64, encoder_attention_mask (not Whisper), per layer
                                past_key_values.{i}.decoder.key/value (B, N, P, h) and
                                past_key_values.{i}.encoder.key/value (B, N, L, h) -> logits (B, 1, V) and
                                present.{i}.decoder.key/value (B, N, P + 1, h) only (the encoder's K/V
                                are not output again, as Optimum)
  expected.txt                  "<case> <decoder_start_token_id> <new_tokens>" per case
  <case>.prompt.npy, <case>.mask.npy   int64 (B, L), 0 on padding (Whisper: <case>.features.npy,
                                float32 (B, mels, 2 L), instead)
  <case>.ids                    one line per row: the new ids, space separated, without the start id
  <case>.logits.npy             float32 (new_tokens, B, V): the logits each step's argmax read
The ids come from torch's greedy loop over the three exported modules themselves (the encoder
once, the decoder without past on the start token, then the decoder with past one token at a
time, presents fed back as past; the argmax of the last position, the first of equal maxima).

Each model is transformers 4.36's eager code re-written (transformers is not imported), as
tests/data/optimize/exporters.py and encoder_exporters.py do: hidden 32, 4 heads of 8, 2 encoder
and 2 decoder layers, FFN 32, vocab 64, 64 positions, opset 17, dynamic batch and lengths (traced
at batch 2, encoder length 6, decoder length 5, past 3; the decoder with past at one token, as
Optimum traces it, so BART's and Whisper's with-past graphs have no causal mask: HF's to_causal_4d
gives None for one query). torch 1.13's scoped node and value names are replaced by short ones in
torch <= 1.12's style (short_names(): the same graph, ~30% smaller folders), and the shapes of the
graph inputs and outputs are written out (shapes(): torch leaves some output dims unnamed).
The generated ids may contain special ids (BART's eos is 2, its decoder start id): the cases are
meant to run without an eos id.

Weights are random and seeded (Config): biases normal 0.1, norm weights 1 + 0.1 noise, the rest
per family (emb_std, pos_std, lin_std, qk_std, cross_std). At "neutral" scales these random models
decode greedily into one repeated token (the cross-attention's output, the same at every step,
dominates the decoder state; with tied embeddings the current token copies itself), so the scales
favour what changes from step to step: large learned positions (BART, Whisper) or a large
relative position bias with small query / key projections (T5), and a cross-attention output
projection at a fifth of the other Linear weights. The seed is sum(map(ord, family)) + k for the
first k >= 0 whose ids pass check_ids(): in every row no cycle of period <= 4 over the last 8 ids
(make_expected.py's check), >= MIN_DISTINCT distinct ids and no run longer than MAX_RUN; rows of
different prompts differ at >= MIN_DIFFERENT steps; every step's top logit leads the second by
>= MARGIN; and the padded row's ids change when its mask is ignored (the mask matters). Each
candidate's ids must also agree (else an error: a bug, not a bad seed) with (a) the decoder
without past run on the whole teacher-forced sequence (argmaxes and logits) and (b) each row
generated alone, the padded row without its pads.

Cases (prompt ids drawn from [4, vocab) by default_rng([family seed, case index])):
  b1               batch 1, L 7, unpadded
  b2_right_padded  batch 2, L 7, row 1 right-padded by 2 (pad id at the pads; BART 1, T5 0)
  Whisper: b1 and b2 (no mask: no padding), features normal, 14 frames (7 positions).

Then runs seq2seq_ort_greedy.js (ONNX Runtime 1.30 through onnxruntime-node, graph optimizations
disabled and all) on each folder and asserts that it gives the same ids (and logits within
1e-4 + 1e-5 max|logits|).

  /usr/bin/python3 tests/data/generate/make_seq2seq.py [--only bart t5 whisper] [--out DIR] [--no-ort]
"""
import argparse
import dataclasses
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OPSET = 17
NEW_TOKENS, PROMPT_LEN, PADS = 12, 7, 2
WINDOW, MAX_PERIOD = 8, 4  # make_expected.py's cycle check
MIN_DISTINCT = 5  # the least number of distinct ids in a row
MAX_RUN = 3  # the most times one id follows itself in a row
MIN_DIFFERENT = NEW_TOKENS // 2  # the least number of steps at which two rows (two prompts) differ
MARGIN = 0.05  # the least gap between a step's top two logits
ATTEMPTS = 500


@dataclasses.dataclass
class Config:
    vocab: int = 64
    max_pos: int = 64
    d: int = 32
    heads: int = 4
    layers: int = 2  # encoder layers and decoder layers
    inter: int = 32
    eps: float = 1e-5
    mels: int = 16  # Whisper
    pad_id: int = 1
    start_id: int = 2  # decoder_start_token_id
    emb_std: float = 1.0  # token embeddings
    pos_std: float = 2.0  # learned position tables (BART, Whisper's decoder); T5's relative position bias table
    lin_std: float = 0.3  # Linear and Conv weights
    qk_std: float = None  # the query and key projections (None: lin_std)
    cross_std: float = 0.06  # the cross-attention's output projection

    @property
    def hd(self):
        return self.d // self.heads


# BART: pad 1, decoder start 2 (</s>, as bart-base's config); T5: pad 0 = decoder start;
# Whisper: the tiny vocab's 1 plays <|startoftranscript|>, 0 the pad (embed_tokens' padding_idx).
CONFIGS = {
    "bart": Config(pad_id=1, start_id=2),
    "t5": Config(pad_id=0, start_id=0, eps=1e-6, emb_std=1.8, pos_std=12.0, lin_std=0.7, qk_std=0.2, cross_std=0.14),
    "whisper": Config(pad_id=0, start_id=1, lin_std=0.5, cross_std=0.1),
}


# ---------------------------------------------------------------------------------------------
# transformers 4.36 modeling_attn_mask_utils.py


def prepare_4d_attention_mask(mask, dtype, tgt_len=None):
    """_prepare_4d_attention_mask (AttentionMaskConverter._expand_mask): (B, 1, tgt, src)."""
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


def make_causal_mask(input_ids_shape, dtype, past_key_values_length=0):
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def prepare_4d_causal_attention_mask(input_shape, dtype, past_key_values_length):
    """_prepare_4d_causal_attention_mask(None, ...) = to_causal_4d: None for one query (the
    decoder with past is traced at one token, as Optimum does, so its graph has no self-attention
    mask); the decoder without past is traced at 5 tokens."""
    if input_shape[-1] > 1:
        return make_causal_mask(input_shape, dtype, past_key_values_length)
    return None


def sinusoids(length, channels, max_timescale=10000):
    log_timescale_increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length).view(-1, 1) * inv_timescales.view(1, -1)
    return torch.cat([scaled_time.sin(), scaled_time.cos()], dim=1)


# ---------------------------------------------------------------------------------------------
# BART (modeling_bart.py) and Whisper (modeling_whisper.py, whose attention is BART's)


class BartAttention(nn.Module):
    """BartAttention: q_proj(x) * h ** -0.5, 3-D (B * N, S, h) heads, bmm, + mask, softmax, bmm.
    Self-attention: the new keys / values concatenated to the past; cross-attention: computed from
    the encoder states, or the past read as it is (HF's reuse branch, past length == encoder
    length, which is what Optimum traces: the encoder states are then unused and no input)."""

    def __init__(self, c, k_bias=True):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = c.d, c.heads, c.hd
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(c.d, c.d, bias=k_bias)
        self.v_proj = nn.Linear(c.d, c.d)
        self.q_proj = nn.Linear(c.d, c.d)
        self.out_proj = nn.Linear(c.d, c.d)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states=None, past_key_value=None, attention_mask=None, cross=False):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        if cross and past_key_value is not None:
            key_states = past_key_value[0]
            value_states = past_key_value[1]
        elif cross:
            key_states = self._shape(self.k_proj(key_value_states), -1, bsz)
            value_states = self._shape(self.v_proj(key_value_states), -1, bsz)
        elif past_key_value is not None:
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
            value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
            key_states = torch.cat([past_key_value[0], key_states], dim=2)
            value_states = torch.cat([past_key_value[1], value_states], dim=2)
        else:
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
            value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        present = (key_states, value_states)
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
        return self.out_proj(attn_output), present


class BartLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids, past_key_values_length=0):
        bsz, seq_len = input_ids.shape[:2]
        positions = torch.arange(past_key_values_length, past_key_values_length + seq_len, dtype=torch.long,
                                 device=self.weight.device).expand(bsz, -1)
        return super().forward(positions + self.offset)


class BartEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = BartAttention(c)
        self.self_attn_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.fc1 = nn.Linear(c.d, c.inter)
        self.fc2 = nn.Linear(c.inter, c.d)
        self.final_layer_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states, attention_mask=attention_mask)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.fc2(F.gelu(self.fc1(hidden_states)))  # activation_function "gelu"
        return self.final_layer_norm(residual + hidden_states)


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

    def forward(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask, past_key_value):
        residual = hidden_states
        self_past = past_key_value[:2] if past_key_value is not None else None
        hidden_states, present = self.self_attn(hidden_states, past_key_value=self_past, attention_mask=attention_mask)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        cross_past = past_key_value[-2:] if past_key_value is not None else None
        hidden_states, cross_present = self.encoder_attn(hidden_states, encoder_hidden_states, cross_past,
                                                         encoder_attention_mask, cross=True)
        hidden_states = self.encoder_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.fc2(F.gelu(self.fc1(hidden_states)))
        return self.final_layer_norm(residual + hidden_states), present + cross_present


class BartEncoder(nn.Module):
    def __init__(self, c, embed_tokens):
        super().__init__()
        self.embed_scale = 1.0  # scale_embedding False (bart-base)
        self.embed_tokens = embed_tokens
        self.embed_positions = BartLearnedPositionalEmbedding(c.max_pos, c.d)
        self.layers = nn.ModuleList(BartEncoderLayer(c) for _ in range(c.layers))
        self.layernorm_embedding = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, input_ids, attention_mask):
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale
        embed_pos = self.embed_positions(input_ids)
        hidden_states = self.layernorm_embedding(inputs_embeds + embed_pos)
        attention_mask = prepare_4d_attention_mask(attention_mask, inputs_embeds.dtype)
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class BartDecoder(nn.Module):
    def __init__(self, c, embed_tokens):
        super().__init__()
        self.embed_scale = 1.0
        self.embed_tokens = embed_tokens
        self.embed_positions = BartLearnedPositionalEmbedding(c.max_pos, c.d)
        self.layers = nn.ModuleList(BartDecoderLayer(c) for _ in range(c.layers))
        self.layernorm_embedding = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, input_ids, encoder_hidden_states, encoder_attention_mask, past_key_values):
        input_shape = input_ids.size()
        past_key_values_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale
        attention_mask = prepare_4d_causal_attention_mask(input_shape, inputs_embeds.dtype, past_key_values_length)
        encoder_attention_mask = prepare_4d_attention_mask(encoder_attention_mask, inputs_embeds.dtype,
                                                           tgt_len=input_shape[-1])
        positions = self.embed_positions(input_ids, past_key_values_length)
        hidden_states = self.layernorm_embedding(inputs_embeds + positions)
        presents = []
        for i, layer in enumerate(self.layers):
            past = past_key_values[i] if past_key_values is not None else None
            hidden_states, present = layer(hidden_states, attention_mask, encoder_hidden_states,
                                           encoder_attention_mask, past)
            presents.append(present)
        return hidden_states, presents


class Bart(nn.Module):
    """BartForConditionalGeneration (bart-base's form): shared embedding (padding_idx 1), learned
    positions with offset 2, layernorm_embedding, post-LN layers, erf GELU, the padding mask on the
    encoder and on the cross-attention, the causal mask in the decoder's self-attention, lm_head
    tied to the embedding plus final_logits_bias."""
    family = "bart"
    has_mask = True

    def __init__(self, c):
        super().__init__()
        self.cfg = c
        self.shared = nn.Embedding(c.vocab, c.d, padding_idx=c.pad_id)
        self.encoder = BartEncoder(c, self.shared)
        self.decoder = BartDecoder(c, self.shared)
        self.lm_head = nn.Linear(c.d, c.vocab, bias=False)
        self.lm_head.weight = self.shared.weight
        self.register_buffer("final_logits_bias", torch.zeros((1, c.vocab)))

    def fixed_weights(self, g):
        """HF keeps final_logits_bias at 0; drawn here so that the Add matters."""
        self.final_logits_bias.copy_(0.1 * torch.randn(self.final_logits_bias.shape, generator=g))

    def encode(self, input_ids, attention_mask):
        return self.encoder(input_ids, attention_mask)

    def decode(self, input_ids, encoder_hidden_states, encoder_attention_mask, past_key_values):
        hidden_states, presents = self.decoder(input_ids, encoder_hidden_states, encoder_attention_mask,
                                               past_key_values)
        return self.lm_head(hidden_states) + self.final_logits_bias, presents


class WhisperEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = BartAttention(c, k_bias=False)
        self.self_attn_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.fc1 = nn.Linear(c.d, c.inter)
        self.fc2 = nn.Linear(c.inter, c.d)
        self.final_layer_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states, _ = self.self_attn(self.self_attn_layer_norm(hidden_states))
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.fc2(F.gelu(self.fc1(self.final_layer_norm(hidden_states))))
        return residual + hidden_states


class WhisperDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = BartAttention(c, k_bias=False)
        self.self_attn_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.encoder_attn = BartAttention(c, k_bias=False)
        self.encoder_attn_layer_norm = nn.LayerNorm(c.d, eps=c.eps)
        self.fc1 = nn.Linear(c.d, c.inter)
        self.fc2 = nn.Linear(c.inter, c.d)
        self.final_layer_norm = nn.LayerNorm(c.d, eps=c.eps)

    def forward(self, hidden_states, attention_mask, encoder_hidden_states, past_key_value):
        residual = hidden_states
        self_past = past_key_value[:2] if past_key_value is not None else None
        hidden_states, present = self.self_attn(self.self_attn_layer_norm(hidden_states), past_key_value=self_past,
                                                attention_mask=attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        cross_past = past_key_value[-2:] if past_key_value is not None else None
        hidden_states, cross_present = self.encoder_attn(self.encoder_attn_layer_norm(hidden_states),
                                                         encoder_hidden_states, cross_past, None, cross=True)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.fc2(F.gelu(self.fc1(self.final_layer_norm(hidden_states))))
        return residual + hidden_states, present + cross_present


class WhisperPositionalEmbedding(nn.Embedding):
    def forward(self, input_ids, past_key_values_length=0):
        return self.weight[past_key_values_length: past_key_values_length + input_ids.shape[1]]


class WhisperEncoder(nn.Module):
    """conv1 (k 3, pad 1) -> GELU -> conv2 (k 3, stride 2, pad 1) -> GELU -> permute, + sinusoid
    positions (HF adds the whole 1500-row table to its fixed 3000 frames; here the table is
    sliced to the L positions so that the frame count stays dynamic), pre-LN layers without a mask,
    final layer_norm."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv1d(c.mels, c.d, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(c.d, c.d, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(c.max_pos, c.d)  # max_source_positions
        self.embed_positions.requires_grad_(False)
        self.layers = nn.ModuleList(WhisperEncoderLayer(c) for _ in range(c.layers))
        self.layer_norm = nn.LayerNorm(c.d)

    def forward(self, input_features):
        inputs_embeds = nn.functional.gelu(self.conv1(input_features))
        inputs_embeds = nn.functional.gelu(self.conv2(inputs_embeds))
        inputs_embeds = inputs_embeds.permute(0, 2, 1)
        hidden_states = inputs_embeds + self.embed_positions.weight[: inputs_embeds.shape[1]]
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return self.layer_norm(hidden_states)


class WhisperDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab, c.d, padding_idx=c.pad_id)
        self.embed_positions = WhisperPositionalEmbedding(c.max_pos, c.d)  # max_target_positions
        self.layers = nn.ModuleList(WhisperDecoderLayer(c) for _ in range(c.layers))
        self.layer_norm = nn.LayerNorm(c.d)

    def forward(self, input_ids, encoder_hidden_states, past_key_values):
        input_shape = input_ids.size()
        past_key_values_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = prepare_4d_causal_attention_mask(input_shape, inputs_embeds.dtype, past_key_values_length)
        positions = self.embed_positions(input_ids, past_key_values_length=past_key_values_length)
        hidden_states = inputs_embeds + positions
        presents = []
        for i, layer in enumerate(self.layers):
            past = past_key_values[i] if past_key_values is not None else None
            hidden_states, present = layer(hidden_states, attention_mask, encoder_hidden_states, past)
            presents.append(present)
        return self.layer_norm(hidden_states), presents


class Whisper(nn.Module):
    """WhisperForConditionalGeneration: the audio encoder, a decoder of learned positions and pre-LN
    layers (causal self-attention, cross-attention without a mask, k_proj without bias, erf GELU),
    final layer_norm, proj_out tied to embed_tokens."""
    family = "whisper"
    has_mask = False

    def __init__(self, c):
        super().__init__()
        self.cfg = c
        self.encoder = WhisperEncoder(c)
        self.decoder = WhisperDecoder(c)
        self.proj_out = nn.Linear(c.d, c.vocab, bias=False)
        self.proj_out.weight = self.decoder.embed_tokens.weight

    def fixed_weights(self, g):
        """WhisperPreTrainedModel._init_weights copies sinusoids into the encoder's positions."""
        self.encoder.embed_positions.weight.copy_(sinusoids(*self.encoder.embed_positions.weight.shape))

    def encode(self, input_features):
        return self.encoder(input_features)

    def decode(self, input_ids, encoder_hidden_states, encoder_attention_mask, past_key_values):
        hidden_states, presents = self.decoder(input_ids, encoder_hidden_states, past_key_values)
        return self.proj_out(hidden_states), presents


# ---------------------------------------------------------------------------------------------
# T5 (modeling_t5.py)


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
    def __init__(self, c, is_decoder, has_relative_attention_bias, num_buckets=32, max_distance=128):
        super().__init__()
        self.is_decoder = is_decoder
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
            relative_position, bidirectional=(not self.is_decoder), num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance)
        values = self.relative_attention_bias(relative_position_bucket)  # (q, k, N)
        return values.permute([2, 0, 1]).unsqueeze(0)  # (1, N, q, k)

    def forward(self, hidden_states, mask=None, key_value_states=None, position_bias=None, past_key_value=None,
                query_length=None, cross=False):
        """T5Attention.forward; a cross-attention with a past reads it as it is (HF's branch when the
        past's length equals the encoder states', which Optimum traces; the encoder states are
        then unused), its key length that of the past."""
        batch_size, seq_length = hidden_states.shape[:2]
        real_seq_length = seq_length
        if past_key_value is not None:
            real_seq_length += past_key_value[0].shape[2] if query_length is None else query_length
        if not cross:
            key_length = real_seq_length
        elif past_key_value is not None:
            key_length = past_key_value[0].shape[2]
        else:
            key_length = key_value_states.shape[1]

        def shape(states):
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

        def project(hidden_states, proj_layer, past):
            if cross:
                return past if past is not None else shape(proj_layer(key_value_states))
            hidden_states = shape(proj_layer(hidden_states))
            if past is not None:
                hidden_states = torch.cat([past, hidden_states], dim=2)
            return hidden_states

        query_states = shape(self.q(hidden_states))
        key_states = project(hidden_states, self.k, past_key_value[0] if past_key_value is not None else None)
        value_states = project(hidden_states, self.v, past_key_value[1] if past_key_value is not None else None)
        scores = torch.matmul(query_states, key_states.transpose(3, 2))  # no scaling
        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, real_seq_length, key_length), dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(real_seq_length, key_length)
            if past_key_value is not None:  # only the last queries' bias
                position_bias = position_bias[:, :, -hidden_states.size(1):, :]
            if mask is not None:
                position_bias = position_bias + mask  # (B, N, S, key_length)
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        present = (key_states, value_states) if self.is_decoder else None
        return self.o(attn_output), present, position_bias


class T5LayerSelfAttention(nn.Module):
    def __init__(self, c, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.SelfAttention = T5Attention(c, is_decoder, has_relative_attention_bias)
        self.layer_norm = T5LayerNorm(c.d, c.eps)

    def forward(self, hidden_states, attention_mask, position_bias, past_key_value):
        out, present, position_bias = self.SelfAttention(self.layer_norm(hidden_states), mask=attention_mask,
                                                         position_bias=position_bias, past_key_value=past_key_value)
        return hidden_states + out, present, position_bias


class T5LayerCrossAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.EncDecAttention = T5Attention(c, True, has_relative_attention_bias=False)
        self.layer_norm = T5LayerNorm(c.d, c.eps)

    def forward(self, hidden_states, key_value_states, attention_mask, position_bias, past_key_value, query_length):
        out, present, position_bias = self.EncDecAttention(
            self.layer_norm(hidden_states), mask=attention_mask, key_value_states=key_value_states,
            position_bias=position_bias, past_key_value=past_key_value, query_length=query_length, cross=True)
        return hidden_states + out, present, position_bias


class T5LayerFF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wi = nn.Linear(c.d, c.inter, bias=False)  # T5DenseActDense
        self.wo = nn.Linear(c.inter, c.d, bias=False)
        self.layer_norm = T5LayerNorm(c.d, c.eps)

    def forward(self, hidden_states):
        return hidden_states + self.wo(F.relu(self.wi(self.layer_norm(hidden_states))))


class T5Block(nn.Module):
    def __init__(self, c, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        self.layer = nn.ModuleList([T5LayerSelfAttention(c, is_decoder, has_relative_attention_bias)])
        if is_decoder:
            self.layer.append(T5LayerCrossAttention(c))
        self.layer.append(T5LayerFF(c))

    def forward(self, hidden_states, attention_mask, position_bias, encoder_hidden_states=None,
                encoder_attention_mask=None, encoder_decoder_position_bias=None, past_key_value=None):
        self_past = past_key_value[:2] if past_key_value is not None else None
        cross_past = past_key_value[2:] if past_key_value is not None else None
        hidden_states, present, position_bias = self.layer[0](hidden_states, attention_mask, position_bias, self_past)
        if self.is_decoder:
            query_length = present[0].shape[2]
            hidden_states, cross_present, encoder_decoder_position_bias = self.layer[1](
                hidden_states, encoder_hidden_states, encoder_attention_mask, encoder_decoder_position_bias,
                cross_past, query_length)
            present = present + cross_present
        hidden_states = self.layer[-1](hidden_states)
        return hidden_states, present, position_bias, encoder_decoder_position_bias


class T5Stack(nn.Module):
    def __init__(self, c, embed_tokens, is_decoder):
        super().__init__()
        self.is_decoder = is_decoder
        self.embed_tokens = embed_tokens
        self.block = nn.ModuleList(T5Block(c, is_decoder, has_relative_attention_bias=(i == 0))
                                   for i in range(c.layers))
        self.final_layer_norm = T5LayerNorm(c.d, c.eps)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None,
                past_key_values=None):
        batch_size, seq_length = input_ids.size()
        inputs_embeds = self.embed_tokens(input_ids)
        dtype = inputs_embeds.dtype
        past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        mask_seq_length = past_length + seq_length
        if attention_mask is None:
            attention_mask = torch.ones(batch_size, mask_seq_length)
        if self.is_decoder:  # ModuleUtilsMixin.create_extended_attention_mask_for_decoder
            seq_ids = torch.arange(seq_length)
            causal_mask = seq_ids[None, None, :].repeat(batch_size, seq_length, 1) <= seq_ids[None, :, None]
            causal_mask = causal_mask.to(attention_mask.dtype)
            if causal_mask.shape[1] < attention_mask.shape[1]:
                prefix_seq_len = attention_mask.shape[1] - causal_mask.shape[1]
                causal_mask = torch.cat([torch.ones((batch_size, seq_length, prefix_seq_len), dtype=causal_mask.dtype),
                                         causal_mask], axis=-1)
            extended_attention_mask = causal_mask[:, None, :, :] * attention_mask[:, None, None, :]
        else:
            extended_attention_mask = attention_mask[:, None, None, :]
        extended_attention_mask = extended_attention_mask.to(dtype=dtype)
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(dtype).min
        encoder_extended_attention_mask = None
        if self.is_decoder:  # invert_attention_mask
            encoder_extended_attention_mask = encoder_attention_mask[:, None, None, :].to(dtype=dtype)
            encoder_extended_attention_mask = (1.0 - encoder_extended_attention_mask) * torch.finfo(dtype).min
        position_bias = None
        encoder_decoder_position_bias = None
        hidden_states = inputs_embeds
        presents = []
        for i, layer in enumerate(self.block):
            past = past_key_values[i] if past_key_values is not None else None
            hidden_states, present, position_bias, encoder_decoder_position_bias = layer(
                hidden_states, extended_attention_mask, position_bias, encoder_hidden_states,
                encoder_extended_attention_mask, encoder_decoder_position_bias, past)
            presents.append(present)
        return self.final_layer_norm(hidden_states), presents


class T5(nn.Module):
    """T5ForConditionalGeneration (t5-small's form, tied): shared embedding, no positions, the
    relative position bias of layer 0's self-attention (encoder: bidirectional buckets, decoder:
    causal buckets; 32 buckets, max distance 128) summed with the mask and shared by later layers,
    no score scaling, pre-RMSNorm blocks without biases, ReLU FF, lm_head tied and its input
    scaled by d_model ** -0.5."""
    family = "t5"
    has_mask = True

    def __init__(self, c):
        super().__init__()
        self.cfg = c
        self.model_dim = c.d
        self.shared = nn.Embedding(c.vocab, c.d)
        self.encoder = T5Stack(c, self.shared, is_decoder=False)
        self.decoder = T5Stack(c, self.shared, is_decoder=True)
        self.lm_head = nn.Linear(c.d, c.vocab, bias=False)
        self.lm_head.weight = self.shared.weight

    def fixed_weights(self, g):
        pass

    def encode(self, input_ids, attention_mask):
        return self.encoder(input_ids, attention_mask)[0]

    def decode(self, input_ids, encoder_hidden_states, encoder_attention_mask, past_key_values):
        sequence_output, presents = self.decoder(input_ids, encoder_hidden_states=encoder_hidden_states,
                                                 encoder_attention_mask=encoder_attention_mask,
                                                 past_key_values=past_key_values)
        sequence_output = sequence_output * (self.model_dim ** -0.5)  # tie_word_embeddings
        return self.lm_head(sequence_output), presents


FAMILIES = {"bart": Bart, "t5": T5, "whisper": Whisper}


# ---------------------------------------------------------------------------------------------
# The three exported modules (Optimum's split) and their interfaces


class EncoderModel(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        return self.model.encode(*inputs)


class DecoderModel(nn.Module):
    """decoder_model.onnx: no past; every layer's self and cross presents."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, encoder_hidden_states, encoder_attention_mask=None):
        logits, presents = self.model.decode(input_ids, encoder_hidden_states, encoder_attention_mask, None)
        return (logits, *[t for p in presents for t in p])


class DecoderWithPastModel(nn.Module):
    """decoder_with_past_model.onnx: the past of every layer in, the self presents out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, *rest):
        if self.model.has_mask:
            encoder_attention_mask, past = rest[0], rest[1:]
        else:
            encoder_attention_mask, past = None, rest
        past = [tuple(past[4 * i: 4 * i + 4]) for i in range(self.model.cfg.layers)]
        logits, presents = self.model.decode(input_ids, None, encoder_attention_mask, past)
        return (logits, *[t for p in presents for t in p[:2]])


def names(model):
    """{file: (input names, output names, dynamic axes)} as Optimum names them."""
    n = model.cfg.layers
    b = "batch_size"
    enc, dec, past = "encoder_sequence_length", "decoder_sequence_length", "past_decoder_sequence_length"
    if model.has_mask:
        enc_in = ["input_ids", "attention_mask"]
        enc_axes = {"input_ids": {0: b, 1: enc}, "attention_mask": {0: b, 1: enc}}
    else:
        enc_in = ["input_features"]
        enc_axes = {"input_features": {0: b, 2: "encoder_frames"}}
    enc_axes["last_hidden_state"] = {0: b, 1: enc}
    mask_in = ["encoder_attention_mask"] if model.has_mask else []
    mask_axes = {"encoder_attention_mask": {0: b, 1: enc}} if model.has_mask else {}

    parts = [(i, part, kv) for i in range(n) for part in ("decoder", "encoder") for kv in ("key", "value")]
    presents = [f"present.{i}.{part}.{kv}" for i, part, kv in parts]
    dec_axes = {"input_ids": {0: b, 1: dec}, "encoder_hidden_states": {0: b, 1: enc}, "logits": {0: b, 1: dec},
                **mask_axes}
    for name in presents:
        dec_axes[name] = {0: b, 2: dec if ".decoder." in name else enc}

    pasts = [f"past_key_values.{i}.{part}.{kv}" for i, part, kv in parts]
    self_presents = [f"present.{i}.decoder.{kv}" for i in range(n) for kv in ("key", "value")]
    past_axes = {"input_ids": {0: b}, "logits": {0: b}, **mask_axes}
    for name in pasts:
        past_axes[name] = {0: b, 2: past if ".decoder." in name else enc}
    for name in self_presents:
        past_axes[name] = {0: b, 2: past + " + 1"}
    return {
        "encoder_model.onnx": (enc_in, ["last_hidden_state"], enc_axes),
        "decoder_model.onnx": (["input_ids", "encoder_hidden_states"] + mask_in, ["logits"] + presents, dec_axes),
        "decoder_with_past_model.onnx": (["input_ids"] + mask_in + pasts, ["logits"] + self_presents, past_axes),
    }


def shapes(model):
    """Every graph input's and output's shape, the symbolic dims named as in names(): torch names the
    output dims it cannot infer ("Transposepresent.0.decoder.key_dim_1"); they are set from these."""
    c = model.cfg
    b, enc, dec = "batch_size", "encoder_sequence_length", "decoder_sequence_length"
    past = "past_decoder_sequence_length"
    out = {"input_ids": [b, enc], "attention_mask": [b, enc], "input_features": [b, c.mels, "encoder_frames"],
           "last_hidden_state": [b, enc, c.d], "encoder_hidden_states": [b, enc, c.d],
           "encoder_attention_mask": [b, enc]}
    per_file = {"encoder_model.onnx": dict(out), "decoder_model.onnx": dict(out),
                "decoder_with_past_model.onnx": dict(out)}
    per_file["decoder_model.onnx"].update(input_ids=[b, dec], logits=[b, dec, c.vocab])
    per_file["decoder_with_past_model.onnx"].update(input_ids=[b, 1], logits=[b, 1, c.vocab])
    for i in range(c.layers):
        for kv in ("key", "value"):
            per_file["decoder_model.onnx"][f"present.{i}.decoder.{kv}"] = [b, c.heads, dec, c.hd]
            per_file["decoder_model.onnx"][f"present.{i}.encoder.{kv}"] = [b, c.heads, enc, c.hd]
            per_file["decoder_with_past_model.onnx"][f"past_key_values.{i}.decoder.{kv}"] = [b, c.heads, past, c.hd]
            per_file["decoder_with_past_model.onnx"][f"past_key_values.{i}.encoder.{kv}"] = [b, c.heads, enc, c.hd]
            per_file["decoder_with_past_model.onnx"][f"present.{i}.decoder.{kv}"] = [b, c.heads, past + " + 1", c.hd]
    return per_file


def set_shapes(m, want):
    """Writes want's shapes on the graph inputs and outputs, checking the static dims torch wrote."""
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        assert len(dims) == len(want[v.name]), (v.name, dims, want[v.name])
        for d, w in zip(dims, want[v.name]):
            if isinstance(w, int):
                assert not d.HasField("dim_value") or d.dim_value == w, (v.name, d, w)
                d.Clear()
                d.dim_value = w
            else:
                d.Clear()
                d.dim_param = w
    return m


def build(family, seed):
    c = CONFIGS[family]
    torch.manual_seed(seed)
    model = FAMILIES[family](c).eval()
    g = torch.Generator().manual_seed(seed)
    seen = set()  # a tied weight is drawn once, as its embedding
    with torch.no_grad():
        for module_name, module in model.named_modules():
            norm = "Norm" in type(module).__name__
            cross = module_name.endswith(("encoder_attn.out_proj", "EncDecAttention.o"))
            qk = module_name.endswith(("q_proj", "k_proj", ".q", ".k"))
            for name, p in module.named_parameters(recurse=False):
                if id(p) in seen:
                    continue
                seen.add(id(p))
                if isinstance(module, (BartLearnedPositionalEmbedding, WhisperPositionalEmbedding)) or \
                        module_name.endswith("relative_attention_bias"):
                    p.normal_(0.0, c.pos_std, generator=g)
                elif isinstance(module, nn.Embedding):
                    p.normal_(0.0, c.emb_std, generator=g)
                    if module.padding_idx is not None:
                        p[module.padding_idx].zero_()  # as nn.Embedding and HF's _init_weights do
                elif norm:
                    p.copy_((1.0 if name == "weight" else 0.0) + 0.1 * torch.randn(p.shape, generator=g))
                elif name.endswith("weight") and p.dim() >= 2:
                    std = c.cross_std if cross else c.qk_std if qk and c.qk_std is not None else c.lin_std
                    p.normal_(0.0, std, generator=g)
                elif name.endswith("bias"):
                    p.normal_(0.0, 0.1, generator=g)
                else:
                    raise AssertionError(name)
        model.fixed_weights(g)
    return model


# ---------------------------------------------------------------------------------------------
# Cases and the greedy loop


def cases(family):
    """[(name, {"prompt", "mask"} or {"features"})], drawn from default_rng([seed, case index])."""
    c = CONFIGS[family]
    seed = sum(map(ord, family))
    out = []
    if family == "whisper":
        for index, (name, batch) in enumerate((("b1", 1), ("b2", 2))):
            rng = np.random.default_rng([seed, index])
            out.append((name, {"features": rng.standard_normal((batch, c.mels, 2 * PROMPT_LEN)).astype(np.float32)}))
        return out
    for index, (name, batch) in enumerate((("b1", 1), ("b2_right_padded", 2))):
        rng = np.random.default_rng([seed, index])
        prompt = rng.integers(4, c.vocab, (batch, PROMPT_LEN), dtype=np.int64)
        mask = np.ones((batch, PROMPT_LEN), np.int64)
        if batch == 2:
            mask[1, -PADS:] = 0
            prompt[1, -PADS:] = c.pad_id
        out.append((name, {"prompt": prompt, "mask": mask}))
    return out


def greedy(encoder, decoder, decoder_past, has_mask, inputs, start, new_tokens=NEW_TOKENS):
    """torch's greedy loop over the three exported modules: (ids (B, new_tokens), logits (steps, B, V))."""
    with torch.no_grad():
        if has_mask:
            enc_in = (torch.from_numpy(inputs["prompt"]), torch.from_numpy(inputs["mask"]))
        else:
            enc_in = (torch.from_numpy(inputs["features"]),)
        hidden = encoder(*enc_in)
        mask = enc_in[1:]
        batch = hidden.shape[0]
        out = decoder(torch.full((batch, 1), start, dtype=torch.int64), hidden, *mask)
        logits, presents = out[0], out[1:]
        past = list(presents)  # per layer: decoder key, value, encoder key, value
        ids, read = [], []
        for step in range(new_tokens):
            last = logits[:, -1, :].numpy()
            nxt = np.argmax(last, axis=-1)  # the first of equal maxima
            ids.append(nxt)
            read.append(last.copy())
            if step == new_tokens - 1:
                break
            out = decoder_past(torch.from_numpy(nxt[:, None].astype(np.int64)), *mask, *past)
            logits, self_presents = out[0], out[1:]
            for i in range(len(past) // 4):
                past[4 * i], past[4 * i + 1] = self_presents[2 * i], self_presents[2 * i + 1]
    return np.stack(ids, 1).astype(np.int64), np.stack(read).astype(np.float32)


def cycles(ids, window=WINDOW, max_period=MAX_PERIOD):
    """The period (1..max_period) of ids' last `window` ids, or 0 when they have none."""
    tail = list(ids)[-window:]
    for p in range(1, max_period + 1):
        if all(tail[i] == tail[i + p] for i in range(len(tail) - p)):
            return p
    return 0


def longest_run(ids):
    run = best = 1
    for a, b in zip(ids[:-1], ids[1:]):
        run = run + 1 if a == b else 1
        best = max(best, run)
    return best


def close(got, want):
    """Logits equal to float32 rounding: within 1e-4 + 1e-5 max|want|."""
    return float(np.abs(got - want).max()) <= 1e-4 + 1e-5 * float(np.abs(want).max())


def check_ids(model, mods, family, results):
    """None when the seed's ids are good (see the module doc), else why not."""
    c = model.cfg
    rows = [r for name, _ in cases(family) for r in results[name][0]]
    for i in range(len(rows)):
        for j in range(i):
            if (rows[i] != rows[j]).sum() < MIN_DIFFERENT:
                return (f"two rows (different prompts) differ at < {MIN_DIFFERENT} steps: "
                        f"{rows[j].tolist()} {rows[i].tolist()}")
    for name, inputs in cases(family):
        ids, logits = results[name]
        for r, row in enumerate(ids):
            if cycles(row) or len(set(row.tolist())) < MIN_DISTINCT or longest_run(row) > MAX_RUN:
                return f"{name} row {r} cycles or repeats: {row.tolist()}"
        top2 = np.sort(logits, axis=-1)[..., -2:]
        margin = float((top2[..., 1] - top2[..., 0]).min())
        if margin < MARGIN:
            return f"{name}: a step's top two logits differ by {margin:.4f}"
        # (a) teacher forcing: the decoder without past on [start] + ids[:-1] reads the same argmaxes
        with torch.no_grad():
            if model.has_mask:
                enc_in = (torch.from_numpy(inputs["prompt"]), torch.from_numpy(inputs["mask"]))
            else:
                enc_in = (torch.from_numpy(inputs["features"]),)
            hidden = mods[0](*enc_in)
            seq = np.concatenate([np.full((ids.shape[0], 1), c.start_id, np.int64), ids[:, :-1]], 1)
            full = mods[1](torch.from_numpy(seq), hidden, *enc_in[1:])[0].numpy()
        if not np.array_equal(full.argmax(-1), ids) or not close(full.transpose(1, 0, 2), logits):
            raise AssertionError(f"{family} {name}: the cached loop differs from the decoder without past: "
                                 f"{np.abs(full.transpose(1, 0, 2) - logits).max()} {full.argmax(-1).tolist()} "
                                 f"{ids.tolist()}")
        # (b) each row alone, the padded row without its pads
        for r in range(ids.shape[0]):
            if model.has_mask:
                keep = inputs["mask"][r].astype(bool)
                alone = {"prompt": inputs["prompt"][r:r + 1, keep], "mask": inputs["mask"][r:r + 1, keep]}
            else:
                alone = {"features": inputs["features"][r:r + 1]}
            got, _ = greedy(*mods, model.has_mask, alone, c.start_id)
            if not np.array_equal(got[0], ids[r]):
                raise AssertionError(f"{family} {name} row {r}: alone {got[0].tolist()} != {ids[r].tolist()}")
        # (c) the padding matters: with the mask ignored, a padded row's ids change
        if model.has_mask and not inputs["mask"].all():
            unmasked, _ = greedy(*mods, True, {"prompt": inputs["prompt"], "mask": np.ones_like(inputs["mask"])},
                                 c.start_id)
            padded = ~inputs["mask"].all(1)
            if np.array_equal(unmasked[padded], ids[padded]):
                return f"{name}: the padded row's ids do not change with the mask ignored"
    return None


def short_names(m):
    """The export with its node and intermediate value names in torch <= 1.12's style ("Add_12",
    "345") instead of torch 1.13's scoped ones ("/decoder/layers.0/self_attn/Add",
    "/decoder/layers.0/self_attn/Add_output_0"): the graph is unchanged, and the folder ~30% smaller.
    Graph inputs, outputs and initializers keep their names."""
    g = m.graph
    keep = {v.name for v in g.input} | {v.name for v in g.output} | {t.name for t in g.initializer}
    rename = {}
    for node in g.node:
        for o in node.output:
            if o and o not in keep:
                rename[o] = str(len(rename))
    for i, node in enumerate(g.node):
        node.name = f"{node.op_type}_{i}"
        node.input[:] = [rename.get(x, x) for x in node.input]
        node.output[:] = [rename.get(x, x) for x in node.output]
    for v in g.value_info:
        v.name = rename.get(v.name, v.name)
    return m


def export(model, out):
    c = model.cfg
    b, L, S, P = 2, 6, 5, 3  # traced sizes: none is 0 or 1 but the with-past step's one token
    if model.has_mask:
        enc_args = (torch.randint(4, c.vocab, (b, L)), torch.ones(b, L, dtype=torch.int64))
        mask = (torch.ones(b, L, dtype=torch.int64),)
    else:
        enc_args = (torch.randn(b, c.mels, 2 * L),)
        mask = ()
    hidden = torch.randn(b, L, c.d)
    past = []
    for _ in range(c.layers):
        past += [torch.randn(b, c.heads, P, c.hd), torch.randn(b, c.heads, P, c.hd),
                 torch.randn(b, c.heads, L, c.hd), torch.randn(b, c.heads, L, c.hd)]
    args = {
        "encoder_model.onnx": (EncoderModel(model), enc_args),
        "decoder_model.onnx": (DecoderModel(model), (torch.randint(4, c.vocab, (b, S)), hidden, *mask)),
        "decoder_with_past_model.onnx": (DecoderWithPastModel(model), (torch.randint(4, c.vocab, (b, 1)), *mask, *past)),
    }
    for file, (inputs, outputs, axes) in names(model).items():
        module, a = args[file]
        torch.onnx.export(module, a, str(out / file), opset_version=OPSET, input_names=inputs,
                          output_names=outputs, dynamic_axes=axes)
        m = set_shapes(short_names(onnx.load(str(out / file))), shapes(model)[file])
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, str(out / file))
        got_in = [i.name for i in m.graph.input]
        got_out = [o.name for o in m.graph.output]
        assert got_in == inputs and got_out == outputs, (file, got_in, got_out)


def run_ort(folder, opt):
    env = dict(os.environ, NODE_PATH=str(ROOT / "benchmarks" / "ort" / "node_modules"))
    res = subprocess.run(["node", str(HERE / "seq2seq_ort_greedy.js"), str(folder), "--opt", opt], check=True,
                         capture_output=True, text=True, env=env)
    return json.loads(res.stdout)


def make(family, out_root, use_ort):
    c = CONFIGS[family]
    base = sum(map(ord, family))
    for k in range(ATTEMPTS):
        model = build(family, base + k)
        mods = (EncoderModel(model), DecoderModel(model), DecoderWithPastModel(model))
        results = {name: greedy(*mods, model.has_mask, inputs, c.start_id) for name, inputs in cases(family)}
        why = check_ids(model, mods, family, results)
        if why is None:
            break
        print(f"{family}: seed {base + k}: {why}")
    else:
        raise SystemExit(f"{family}: no seed in {ATTEMPTS} gives ids that pass")
    out = out_root / f"seq2seq_{family}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    export(model, out)
    lines = []
    for name, inputs in cases(family):
        ids, logits = results[name]
        for key, array in inputs.items():
            np.save(out / f"{name}.{key}.npy", array)
        np.save(out / f"{name}.logits.npy", logits)
        (out / f"{name}.ids").write_text("\n".join(" ".join(map(str, r)) for r in ids.tolist()) + "\n")
        lines.append(f"{name} {c.start_id} {NEW_TOKENS}")
    (out / "expected.txt").write_text("\n".join(lines) + "\n")
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{family}: seed {base + k} ({k} redraws), {size} bytes in {out}")
    for name, _ in cases(family):
        print(f"  {name}: " + " | ".join(" ".join(map(str, r)) for r in results[name][0].tolist()))
    if use_ort:
        for opt in ("disabled", "all"):
            got = run_ort(out, opt)
            for name, _ in cases(family):
                ids, logits = results[name]
                ort_ids = np.array(got[name]["ids"], np.int64)
                ort_logits = np.array(got[name]["logits"], np.float32).reshape(logits.shape)
                assert np.array_equal(ort_ids, ids), (family, opt, name, ort_ids.tolist(), ids.tolist())
                diff = float(np.abs(ort_logits - logits).max())
                assert close(ort_logits, logits), (family, opt, name, diff)
                print(f"  ORT ({opt}) {name}: same ids, logits within {diff:.2e}")


def main():
    # the tracer's notes on Python values taken from shapes (the branches HF's code takes at the traced
    # sizes, as in an Optimum export) and on T5's `real_seq_length += ...` (HF's code)
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    warnings.filterwarnings("ignore", message="In-place op on output of tensor.shape")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=sorted(FAMILIES), default=list(FAMILIES))
    ap.add_argument("--out", type=pathlib.Path, default=HERE)
    ap.add_argument("--no-ort", action="store_true", help="skip the ONNX Runtime check")
    args = ap.parse_args()
    for family in args.only:
        make(family, args.out, not args.no_ort)


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    main()
