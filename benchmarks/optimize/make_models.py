#!/usr/bin/python3
"""The models benchmarks/optimize/ort_speed.sh times: the families of the optimizer's fixtures
(tests/data/optimize/*exporters.py, the same modeling code) at one realistic middle size, hidden
512, 8 heads of 64, 4 layers, MLP 2048, vocabulary 8000, with seeded random weights, exported with
dynamic axes at opset 17, each with the inputs of the cases timed as .npy files:
  <out>/<case>/model.onnx -> a symlink to <out>/models/<model>.onnx, <out>/<case>/<input>.npy
Cases:
  encoders (text)   batch 2 x 128 tokens, row 1 right-padded by 16
  vision            batch 2 x 3 x 224 x 224 (ViT-B/16 patches: 196 + 1 tokens; CLIP's /32: 49 + 1)
  audio (Whisper)   batch 2 x 80 mels x 512 frames (256 positions)
  decoders          prefill: batch 2 x 128 tokens, row 1 right-padded by 16 (position ids from the
                    mask where the model takes them); decode: one token after a past of 512, batch 2
  encoder-decoder   the BART decoder with past: one token after a decoder past of 128 over an
                    encoder of 128 (row 1's encoder padded by 16)
Run with Debian's python3 (torch 1.13):
  /usr/bin/python3 benchmarks/optimize/make_models.py OUT [--only CASE...]
Prints one line per case: "<case> <model>".
"""
import argparse
import dataclasses
import pathlib
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests/data/optimize"
sys.path.insert(0, str(FIXTURES))
import encoder_exporters as E  # noqa: E402
import exporters as D  # noqa: E402
import make_encoder_exports as ME  # noqa: E402
import make_exports as MD  # noqa: E402

BATCH, TOKENS, PADS, PAST = 2, 128, 16, 512

ENCODER = E.Config(vocab=8000, max_pos=512, d=512, heads=8, layers=4, inter=2048, eps=1e-12, embed=128)
ENCODERS = {  # model -> its Config at the middle size
    "hf_bert": ENCODER,
    "roberta_like": dataclasses.replace(ENCODER, eps=1e-5),
    "distilbert_like": ENCODER,
    "albert_like": ENCODER,
    "torch_encoder": dataclasses.replace(ENCODER, eps=1e-5),
    "t5_encoder": dataclasses.replace(ENCODER, eps=1e-6),
    "clip_text": dataclasses.replace(ENCODER, eps=1e-5),
    "torchvision_vit": dataclasses.replace(ENCODER, eps=1e-6, image=224, patch=16, classes=1000),
    "clip_vision": dataclasses.replace(ENCODER, eps=1e-5, image=224, patch=32),
    "whisper_encoder": dataclasses.replace(ENCODER, eps=1e-5, mels=80, max_pos=256),
}
DECODER = D.Config(vocab=8000, ctx=1024, d=512, heads=8, kv_heads=2, layers=4, inter=2048, eps=1e-5)
DECODERS = {  # model -> (Config, cases)
    "hf_gpt2": (DECODER, ("prefill",)),
    "hf_gpt2_past": (DECODER, ("prefill", "decode")),
    "hf_llama": (DECODER, ("prefill", "decode")),
    "phi2_like": (dataclasses.replace(DECODER, rotary=0.5), ("prefill", "decode")),
    "gpt_neox_like": (dataclasses.replace(DECODER, rotary=0.25), ("prefill",)),
    "mixformer_phi": (dataclasses.replace(DECODER, rotary=0.5), ("decode",)),
    "bart_decoder_past": (DECODER, ("decode",)),
}


def mask_right_padded(length, pads):
    mask = torch.ones(BATCH, length, dtype=torch.int64)
    mask[1, length - pads:] = 0
    return mask


def encoder_cases(name, models, out):
    E.BASE[name] = ENCODERS[name]
    model = E.build(name, "base")
    path = models / f"{name}.onnx"
    if not path.exists():
        ME.export(model, path, 17)
    g = torch.Generator().manual_seed(7)
    c = model.cfg
    if model.inputs == ("pixel_values",):
        feeds = [torch.randn(BATCH, 3, c.image, c.image, generator=g)]
    elif model.inputs == ("input_features",):
        feeds = [torch.randn(BATCH, c.mels, 2 * c.max_pos, generator=g)]
    else:
        feeds = ME.text_feeds(model, g, mask_right_padded(TOKENS, PADS))
    write_case(out / name, path, model.inputs, feeds)


def decoder_cases(name, models, out):
    cfg, cases = DECODERS[name]
    D.CONFIGS[name] = (cfg, cfg)
    model = D.build(name, "full")
    path = models / f"{name}.onnx"
    if not path.exists():
        MD.export(model, path, 17)
    g = torch.Generator().manual_seed(7)
    names = model.input_names()
    if model.past == "seq2seq":  # BART's decoder with past: Optimum's decoder_with_past split
        ids = torch.randint(3, cfg.vocab, (BATCH, 1), generator=g)
        past = [torch.randn(BATCH, cfg.heads, TOKENS, cfg.hd, generator=g) for _ in model.past_names()]
        write_case(out / f"{name}-decode", path, names, [ids, mask_right_padded(TOKENS, PADS)] + past)
        return
    for case in cases:
        if case == "prefill":
            mask = mask_right_padded(TOKENS, PADS)
            ids = torch.randint(3, cfg.vocab, (BATCH, TOKENS), generator=g)
            past = None
        else:
            mask = torch.ones(BATCH, PAST + 1, dtype=torch.int64)
            ids = torch.randint(3, cfg.vocab, (BATCH, 1), generator=g)
            past = [torch.randn(MD.past_shape(model, BATCH, PAST), generator=g) for _ in model.past_names()]
        write_case(out / f"{name}-{case}", path, names, MD.feeds_for(model, ids, mask, past))


def write_case(folder, model_path, names, feeds):
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "model.onnx"
    link.unlink(missing_ok=True)
    link.symlink_to(model_path)
    for n, t in zip(names, feeds):
        np.save(folder / f"{n}.npy", t.numpy())
    print(folder.name, model_path.stem, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=pathlib.Path)
    p.add_argument("--only", nargs="+", metavar="MODEL", choices=sorted(list(ENCODERS) + list(DECODERS)))
    args = p.parse_args()
    models = args.out / "models"
    models.mkdir(parents=True, exist_ok=True)
    torch.set_grad_enabled(True)  # as the fixtures export them (nn.TransformerEncoder's composite path)
    for name in args.only or list(ENCODERS) + list(DECODERS):
        (encoder_cases if name in ENCODERS else decoder_cases)(name, models, args.out)


if __name__ == "__main__":
    main()
