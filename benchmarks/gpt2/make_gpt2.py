#!/usr/bin/python3
"""Exports a GPT-2-architecture model from torch to ONNX, with an input and torch's output saved
in the backend-test layout (model.onnx + test_data_set_0/input_0.pb, output_0.pb), so that
`refeval test DIR --rtol 0 --atol 1e-4` checks refeval against torch.

The model is written here from the GPT-2 paper's architecture (pre-LayerNorm blocks, causal
self-attention, tanh-GELU MLP, tied LM head); weights are random (seeded), since no pretrained
weights can be downloaded. Needs Debian's python3-torch and python3-onnx (run with /usr/bin/python3).
"""
import argparse
import math
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper


class Block(torch.nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(d)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d)
        self.c_fc = torch.nn.Linear(d, 4 * d)
        self.mlp_proj = torch.nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("causal", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)).view(1, 1, ctx, ctx))

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~self.causal[:, :, :t, :t], torch.finfo(scores.dtype).min)
        y = torch.softmax(scores, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        h = self.c_fc(self.ln_2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.mlp_proj(h)


class GPT2(torch.nn.Module):
    def __init__(self, vocab, ctx, d, layers, heads):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(ctx, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads, ctx) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out", help="output folder")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--embd", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--ctx", type=int, default=1024)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    torch.manual_seed(a.seed)
    model = GPT2(a.vocab, a.ctx, a.embd, a.layers, a.heads).eval()
    with torch.no_grad():  # GPT-2's initialisation scale, so activations look like a real model's
        for name, w in model.named_parameters():
            if w.dim() > 1:
                w.normal_(0.0, 0.02)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), dtype=torch.long)
    with torch.no_grad():
        logits = model(ids)

    os.makedirs(os.path.join(a.out, "test_data_set_0"), exist_ok=True)
    path = os.path.join(a.out, "model.onnx")
    torch.onnx.export(model, (ids,), path, opset_version=a.opset, input_names=["input_ids"],
                      output_names=["logits"], dynamic_axes={"input_ids": {0: "batch", 1: "seq"}})
    for name, value, kind in (("input_ids", ids, "input"), ("logits", logits, "output")):
        t = numpy_helper.from_array(value.numpy(), name)
        with open(os.path.join(a.out, "test_data_set_0", f"{kind}_0.pb"), "wb") as f:
            f.write(t.SerializeToString())
    np.save(os.path.join(a.out, "input_ids.npy"), ids.numpy())
    ops = sorted({n.op_type for n in onnx.load(path, load_external_data=False).graph.node})
    print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, opset {a.opset}, ops: {' '.join(ops)}")


if __name__ == "__main__":
    main()
