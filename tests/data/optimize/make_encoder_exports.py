#!/usr/bin/python3
"""Exports the encoder, vision and encoder-decoder models of encoder_exporters.py with
torch.onnx.export (torch 1.13) and writes backend-test folders
<out>/<name>_opset<N>/model.onnx + test_data_set_<k>/input_<i>.pb, output_<j>.pb holding torch's
outputs, so that
  refeval test <out>/<folder> --rtol 0 --atol 1e-4
checks an export (or its optimized form) against torch, and encoder_forms.txt
(<folder> <family> <expected_type> <layers> <opset>). Run with Debian's python3:
  /usr/bin/python3 tests/data/optimize/make_encoder_exports.py [--only NAME...] [--out DIR]
  /usr/bin/python3 tests/data/optimize/make_encoder_exports.py --size base [--only NAME...] [--out DIR]
--size base builds the models of encoder_exporters.BASE at realistic sizes (BERT-base, DistilBERT,
a 6-layer nn.TransformerEncoder, ViT-B/16, CLIP ViT-B/32's vision tower, T5-small's encoder) with
the same code and writes only <out>/<name>_opset<N>/model.onnx, at the last opset of the small
model's list, no data sets (default out: /tmp/refeval-encoders-base; benchmarks/encoders/compare.sh).
Data sets (k), text models (7 tokens; the decoder's encoder length is 6):
  0  batch 1, attention_mask all ones
  1  batch 2, row 1 right-padded by 2 (pad id at the pads: 0, RoBERTa's padding_idx 1);
     the decoder's encoder_attention_mask: row 1's last position padded
  2  batch 2, row 1 left-padded by 2 (positions as each model computes them); the decoder's
     encoder_attention_mask: row 1's first position padded
  (a model's `pads` attribute sets the 2: bert_masked_fill pads 3)
  key_padding_mask (nn.TransformerEncoder) is the negation of attention_mask.
  CLIP text (a model with eos_id): real ids from [3, eos_id), eos_id at each row's last real
  position (the pooled one).
Vision models: 0 one image, 1 three images (normal pixels).
Audio (input_features, Whisper): normal features, 0 batch 1 and 1 batch 2 of 14 frames (7
positions), 2 batch 2 of 20 frames (10 positions).
The export is traced at batch 2, 5 tokens (an encoder length of 6; Whisper: 10 frames) with batch,
sequence, encoder_sequence and frames dynamic, so that no dim is specialised to 1. Every model is
exported and its outputs computed with autograd enabled (parameters requiring grad): that keeps
torch's nn.TransformerEncoderLayer and nn.MultiheadAttention on their composite path (see
README.md).
"""
import argparse
import pathlib
import shutil
import sys

import onnx
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import encoder_exporters  # noqa: E402
from make_exports import write_pb  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
TOKENS = 7
ENCODER_TOKENS = 6


def text_feeds(model, g, mask, encoder_mask=None):
    """The inputs in model.inputs order for a (B, S) 0/1 mask; real token ids are drawn from
    [3, vocab) so that none is a pad id."""
    c = model.cfg
    b, s = mask.shape
    high = c.vocab if model.eos_id is None else model.eos_id
    ids = torch.randint(3, high, (b, s), generator=g).masked_fill(mask == 0, model.pad_id)
    if model.eos_id is not None:  # each row's real tokens end with EOS (CLIP pools there)
        last = s - 1 - mask.flip(1).argmax(1)
        ids[torch.arange(b), last] = model.eos_id
    feeds = []
    for name in model.inputs:
        if name == "input_ids":
            feeds.append(ids)
        elif name == "attention_mask":
            feeds.append(mask)
        elif name == "token_type_ids":  # a sentence pair: the last 3 positions are segment B
            feeds.append((torch.arange(s) >= s - 3).long().expand(b, s) * mask)
        elif name == "key_padding_mask":
            feeds.append(mask == 0)
        elif name == "encoder_hidden_states":
            feeds.append(torch.randn(b, encoder_mask.shape[1], c.d, generator=g))
        elif name == "encoder_attention_mask":
            feeds.append(encoder_mask)
        else:
            raise ValueError(name)
    return feeds


def data_sets(model):
    """[(inputs, outputs)] for the sets in the module docstring, outputs computed by torch."""
    g = torch.Generator().manual_seed(1234)
    if model.inputs == ("pixel_values",):
        c = model.cfg
        feeds = [[torch.randn(b, 3, c.image, c.image, generator=g)] for b in (1, 3)]
    elif model.inputs == ("input_features",):
        c = model.cfg
        feeds = [[torch.randn(b, c.mels, frames, generator=g)] for b, frames in ((1, 14), (2, 14), (2, 20))]
    else:
        ones = torch.ones(1, TOKENS, dtype=torch.int64)
        pads = model.pads
        right = torch.tensor([[1] * TOKENS, [1] * (TOKENS - pads) + [0] * pads])
        left = torch.tensor([[1] * TOKENS, [0] * pads + [1] * (TOKENS - pads)])
        enc = [torch.ones(1, ENCODER_TOKENS, dtype=torch.int64),
               torch.tensor([[1] * ENCODER_TOKENS, [1] * (ENCODER_TOKENS - 1) + [0]]),
               torch.tensor([[1] * ENCODER_TOKENS, [0] + [1] * (ENCODER_TOKENS - 1)])]
        feeds = [text_feeds(model, g, m, e) for m, e in zip((ones, right, left), enc)]
    sets = []
    for inputs in feeds:
        outputs = model(*inputs)  # with autograd on, as exported
        sets.append((inputs, [t.detach() for t in outputs]))
    return sets


def dynamic_axes(model):
    axes = {}
    for name in model.inputs:
        if name == "pixel_values":
            axes[name] = {0: "batch"}
        elif name == "input_features":
            axes[name] = {0: "batch", 2: "frames"}
        elif name.startswith("encoder_"):
            axes[name] = {0: "batch", 1: "encoder_sequence"}
        else:
            axes[name] = {0: "batch", 1: "sequence"}
    for name in model.outputs:
        axes[name] = {0: "batch"} if name in ("pooler_output", "logits") or "pixel_values" in model.inputs \
            else {0: "batch", 1: "sequence"}
    return axes


def export(model, path, opset):
    """Traced at batch 2, 5 tokens (an encoder length of 6); batch and lengths dynamic."""
    g = torch.Generator().manual_seed(99)
    if model.inputs == ("pixel_values",):
        args = (torch.randn(2, 3, model.cfg.image, model.cfg.image, generator=g),)
    elif model.inputs == ("input_features",):
        args = (torch.randn(2, model.cfg.mels, 10, generator=g),)
    else:
        mask = torch.ones(2, 5, dtype=torch.int64)
        args = tuple(text_feeds(model, g, mask, torch.ones(2, ENCODER_TOKENS, dtype=torch.int64)))
    torch.onnx.export(model, args, str(path), opset_version=opset, input_names=list(model.inputs),
                      output_names=list(model.outputs), dynamic_axes=dynamic_axes(model))


def make(name, out, size="small"):
    model = encoder_exporters.build(name, size)
    sets = data_sets(model) if size == "small" else []
    opsets = encoder_exporters.MODELS[name][2]
    folders = []
    for opset in opsets if size == "small" else opsets[-1:]:
        folder = out / f"{name}_opset{opset}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        export(model, folder / "model.onnx", opset)
        proto = onnx.load(str(folder / "model.onnx"))
        onnx.checker.check_model(proto, full_check=True)
        graph_inputs = tuple(i.name for i in proto.graph.input)
        if graph_inputs != model.inputs:
            raise RuntimeError(f"{folder.name}: graph inputs {graph_inputs} != {model.inputs}")
        fast = [n.op_type for n in proto.graph.node if "transformer" in n.op_type.lower() or "ATen" in n.op_type]
        if fast:
            raise RuntimeError(f"{folder.name}: exported {fast}")
        for k, (inputs, outputs) in enumerate(sets):
            data = folder / f"test_data_set_{k}"
            data.mkdir()
            for i, (n, t) in enumerate(zip(model.inputs, inputs)):
                write_pb(data / f"input_{i}.pb", t.numpy(), n)
            for j, (n, t) in enumerate(zip(model.outputs, outputs)):
                write_pb(data / f"output_{j}.pb", t.numpy(), n)
        kb = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e3
        if size == "small":
            print(f"{folder}: {len(proto.graph.node)} nodes, {kb:.0f} kB, {len(sets)} data sets", flush=True)
        else:
            print(f"{folder}: {len(proto.graph.node)} nodes, {kb / 1e3:.0f} MB", flush=True)
        folders.append((folder.name, model.family, model.expected_type, model.cfg.layers, opset))
    return folders


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=("small", "base"), default="small",
                   help="small: the test models and their data sets (default); base: realistic sizes,"
                        " model.onnx only")
    p.add_argument("--out", help="output folder (default: this folder; --size base: /tmp/refeval-encoders-base)")
    p.add_argument("--only", nargs="+", metavar="NAME", choices=sorted(encoder_exporters.MODELS),
                   help="only these models")
    a = p.parse_args()
    names = encoder_exporters.BASE if a.size == "base" else encoder_exporters.MODELS
    if a.only and any(n not in names for n in a.only):
        p.error(f"--size {a.size} has only: {' '.join(names)}")
    out = pathlib.Path(a.out or (HERE if a.size == "small" else "/tmp/refeval-encoders-base"))
    folders = []
    for name in a.only or list(names):
        folders += make(name, out, a.size)
    if out == HERE and not a.only and a.size == "small":
        with open(HERE / "encoder_forms.txt", "w") as f:
            f.write("# <folder> <family> <expected_type> <layers> <opset>: one backend-test folder per line"
                    " (make_encoder_exports.py)\n")
            for row in folders:
                f.write(" ".join(map(str, row)) + "\n")


if __name__ == "__main__":
    main()
