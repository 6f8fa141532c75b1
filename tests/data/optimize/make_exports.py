#!/usr/bin/python3
"""Exports the decoders of exporters.py with torch.onnx.export and writes backend-test folders
<out>/<name>_opset<N>/model.onnx + test_data_set_<k>/input_<i>.pb, output_<j>.pb holding torch's
outputs (every graph output, presents included), so that
  refeval test <out>/<folder> --rtol 0 --atol 1e-4
checks an export (or its optimized form) against torch. Run with Debian's python3 (torch 1.13):
  /usr/bin/python3 tests/data/optimize/make_exports.py                      # small, committed here
  /usr/bin/python3 tests/data/optimize/make_exports.py --size full          # /tmp/refeval-exports
Data sets (k):
  0  prefill, batch 1, 7 tokens (a zero-length past where the model has past inputs)
  1  one decode step after it (the presents fed back as past); without past inputs, the 8 tokens
  2  batch 2, 7 tokens; with an attention_mask input, row 1 right-padded (2 pads), row 0 unpadded
  3  a decode step after set 2 (batch 2)
  4  (models with position_ids) batch 2, row 1 left-padded, row 0 unpadded
  5  a decode step after set 4
The BART decoder with past (encoder-decoder, Optimum's decoder_with_past split) has its own sets:
  0  batch 1, one token after a decoder past of 3, encoder length 6, no encoder padding
  1  batch 2, one token after a past of 3, row 1's encoder input right-padded by 2
  2  batch 2, three tokens after a past of 3 (the causal block matters), the same padding
  the decoder past is the presents of the prefix run through the same model with an empty past,
  the encoder past each layer's cross-attention k_proj / v_proj of normal encoder states ((B, T, N, h)
  for the trap_cross_kv_bsnh model, whose encoder past is in that layout).
The batch, sequence and past dims are dynamic; the export is traced at batch 2, 5 tokens and a
past of 3, so that no dim is specialised to 0 or 1.
"""
import argparse
import os
import pathlib
import shutil
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exporters  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


# Exported a second time with fixed shapes: what a user gets without dynamic_axes.
FIXED = ["hf_gpt2", "hf_llama", "mixformer_phi"]


def past_shape(model, batch, past_len):
    c = model.cfg
    shape = (batch, model.kv_heads(), past_len, c.hd)
    return (2,) + shape if model.past == "stacked" else shape


def feeds_for(model, ids, mask, past):
    """The inputs in input_names() order. mask (B, P + S) of 0/1; past: presents of a previous run
    (a list of tensors in past_names() order) or None for a zero-length past."""
    b, s = ids.shape
    out = [ids]
    if model.mask is not None:
        out.append(mask.to(model.mask))
    if model.position_ids:
        # as generate() computes them: the count of real tokens before, pads at 1
        pos = mask.long().cumsum(-1) - 1
        pos = pos.masked_fill(mask == 0, 1)
        out.append(pos[:, -s:])
    if model.past is not None:
        if past is None:
            past = [torch.zeros(past_shape(model, b, 0)) for _ in model.past_names()]
        out.extend(past)
    return out


def seq2seq_data_sets(model):
    """[(inputs, outputs)] of the encoder-decoder sets in the module docstring."""
    g = torch.Generator().manual_seed(1234)
    c = model.cfg
    sets = []

    def step(encoder_mask, prefix_len, new_len):
        b, t = encoder_mask.shape
        encoder_states = torch.randn(b, t, c.d, generator=g)
        prefix = torch.randint(0, c.vocab, (b, prefix_len), generator=g)
        ids = torch.randint(0, c.vocab, (b, new_len), generator=g)
        with torch.no_grad():
            cross = model.encoder_past(encoder_states)
            empty = torch.zeros(b, c.heads, 0, c.hd)
            outputs = model(prefix, encoder_mask, *[x for k, v in cross for x in (empty, empty, k, v)])
            decoder = outputs[1:]
            inputs = [ids, encoder_mask] + [x for i, (k, v) in enumerate(cross)
                                            for x in (decoder[2 * i], decoder[2 * i + 1], k, v)]
            outputs = model(*inputs)
        sets.append((inputs, list(outputs)))

    padded = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    step(torch.ones(1, 6, dtype=torch.int64), 3, 1)
    step(padded, 3, 1)
    step(padded, 3, 3)
    return sets


def data_sets(model, vocab):
    """[(inputs, outputs)] for the sets in the module docstring, outputs computed by torch."""
    if model.past == "seq2seq":
        return seq2seq_data_sets(model)
    g = torch.Generator().manual_seed(1234)
    sets = []

    def run(inputs):
        with torch.no_grad():
            outputs = model(*inputs)
        sets.append((inputs, list(outputs)))
        return list(outputs)

    def sequence(batch_mask):
        """A prefill on batch_mask (B, 7), then one decode step with one more real token."""
        b = batch_mask.shape[0]
        ids = torch.randint(0, vocab, (b, 7), generator=g)
        nxt = torch.randint(0, vocab, (b, 1), generator=g)
        full_mask = torch.cat([batch_mask, torch.ones(b, 1, dtype=torch.int64)], dim=1)
        if model.past is None:
            run(feeds_for(model, ids, batch_mask, None))
            run(feeds_for(model, torch.cat([ids, nxt], dim=1), full_mask, None))
        else:
            outputs = run(feeds_for(model, ids, batch_mask, None))
            run(feeds_for(model, nxt, full_mask, outputs[1:]))

    ones = torch.ones(1, 7, dtype=torch.int64)
    sequence(ones)
    right = torch.tensor([[1] * 7, [1] * 5 + [0] * 2])
    sequence(right if model.mask is not None else torch.ones(2, 7, dtype=torch.int64))
    if model.position_ids:
        sequence(torch.tensor([[1] * 7, [0] * 2 + [1] * 5]))
    return sets


def dynamic_axes(model):
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    if model.past == "seq2seq":
        axes["encoder_attention_mask"] = {0: "batch", 1: "encoder_sequence"}
        encoder_axis = 1 if getattr(model, "cross_bsnh", False) else 2  # (B, T, N, h) or (B, N, T, h)
        for name in model.past_names():
            axes[name] = {0: "batch", 2: "past_sequence"} if ".decoder." in name else \
                {0: "batch", encoder_axis: "encoder_sequence"}
        for name in model.output_names()[1:]:
            axes[name] = {0: "batch", 2: "total_sequence"}
        return axes
    total = "total_sequence" if model.past is not None else "sequence"
    if model.mask is not None:
        axes["attention_mask"] = {0: "batch", 1: total}
    if model.position_ids:
        axes["position_ids"] = {0: "batch", 1: "sequence"}
    off = 1 if model.past == "stacked" else 0
    for name in model.past_names():
        axes[name] = {off: "batch", off + 2: "past_sequence"}
    for name in model.output_names()[1:]:
        axes[name] = {off: "batch", off + 2: "total_sequence"}
    return axes


def export(model, path, opset, fixed_inputs=None):
    """Dynamic batch, sequence and past, traced at B 2, S 5, P 3 (no dim is 0 or 1, so none is
    specialised); or every shape fixed to those of `fixed_inputs`."""
    if fixed_inputs is not None:
        torch.onnx.export(model, tuple(fixed_inputs), str(path), opset_version=opset, input_names=model.input_names(),
                          output_names=model.output_names())
        return
    ids = torch.randint(0, model.cfg.vocab, (2, 5))
    if model.past == "seq2seq":  # encoder length 6, a decoder past of 3
        c = model.cfg
        past = [torch.randn(2, c.heads, 3, c.hd) if ".decoder." in n else
                torch.randn(2, 6, c.heads, c.hd) if getattr(model, "cross_bsnh", False) else
                torch.randn(2, c.heads, 6, c.hd) for n in model.past_names()]
        args = tuple([ids, torch.ones(2, 6, dtype=torch.int64)] + past)
    else:
        mask = torch.ones(2, 8 if model.past is not None else 5, dtype=torch.int64)
        past = [torch.randn(past_shape(model, 2, 3)) for _ in model.past_names()] or None
        args = tuple(feeds_for(model, ids, mask, past))
    torch.onnx.export(model, args, str(path), opset_version=opset, input_names=model.input_names(),
                      output_names=model.output_names(), dynamic_axes=dynamic_axes(model))


def write_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def make(name, size, out, all_opsets, fixed=False):
    model = exporters.build(name, size)
    sets = data_sets(model, model.cfg.vocab)
    # Fixed shapes: the model exported at set 2's shapes (batch 2, 7 tokens, one row right-padded,
    # an empty past), which is then its only data set.
    if fixed:
        sets = [sets[2]]
    folders = []
    _, opsets, committed = exporters.MODELS[name]
    for opset in opsets if all_opsets or size == "full" else committed:
        folder = out / f"{name}{'_fixed' if fixed else ''}_opset{opset}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        export(model, folder / "model.onnx", opset, sets[0][0] if fixed else None)
        graph = onnx.load(str(folder / "model.onnx")).graph
        graph_inputs = [i.name for i in graph.input]
        if graph_inputs != model.input_names():
            raise RuntimeError(f"{folder.name}: graph inputs {graph_inputs} != {model.input_names()}")
        for k, (inputs, outputs) in enumerate(sets):
            data = folder / f"test_data_set_{k}"
            data.mkdir()
            for i, (n, t) in enumerate(zip(model.input_names(), inputs)):
                write_pb(data / f"input_{i}.pb", t.numpy(), n)
            for j, (n, t) in enumerate(zip(model.output_names(), outputs)):
                write_pb(data / f"output_{j}.pb", t.numpy(), n)
        nodes = len(graph.node)
        mb = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6
        print(f"{folder}: {nodes} nodes, {mb:.2f} MB, {len(sets)} data sets", flush=True)
        folders.append((folder.name, model.family, model.past is not None, opset))
    return folders


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=("small", "full"), default="small")
    p.add_argument("--out", help="output folder (default: this folder for small, /tmp/refeval-exports for full)")
    p.add_argument("--all-opsets", action="store_true",
                   help="at the small size, also the opset-14 GPT-2 exports the repo does not keep")
    p.add_argument("--only", nargs="+", metavar="NAME", choices=sorted(exporters.MODELS), help="only these models")
    p.add_argument("--fixed", nargs="*", metavar="NAME", choices=sorted(exporters.MODELS), default=FIXED,
                   help=f"also export these with every shape fixed (default: {' '.join(FIXED)})")
    a = p.parse_args()
    out = pathlib.Path(a.out or (HERE if a.size == "small" else "/tmp/refeval-exports"))
    names = a.only or list(exporters.MODELS)
    folders = []
    for name in names:
        folders += make(name, a.size, out, a.all_opsets)
    for name in a.fixed:
        if name in names:
            folders += make(name, a.size, out, False, fixed=True)
    if a.size == "small" and out == HERE and not a.only and not a.all_opsets:
        with open(HERE / "forms.txt", "w") as f:
            f.write("# <folder> <family> <has_past> <opset>: one backend-test folder per line (make_exports.py)\n")
            for folder, family, has_past, opset in folders:
                f.write(f"{folder} {family} {int(has_past)} {opset}\n")


if __name__ == "__main__":
    main()
