#!/usr/bin/python3
"""Writes a GenAI-builder-style int4 decoder (tests/data/ort/decoders.py) and the feeds of one
prefill and one decode step: DIR/model.onnx, DIR/prefill/*.npy, DIR/decode/*.npy.
  make_int4_decoder.py DIR [--layers 12 --hidden 768 --heads 12 --kv-heads 4 --vocab 32000
                           --prompt 32 --past 128 --accuracy-level 0]"""
import argparse
import pathlib
import sys

import numpy as np
import onnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "ort"))
import decoders  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--layers", type=int, default=12)
p.add_argument("--hidden", type=int, default=768)
p.add_argument("--heads", type=int, default=12)
p.add_argument("--kv-heads", type=int, default=4)
p.add_argument("--intermediate", type=int, default=3072)
p.add_argument("--vocab", type=int, default=32000)
p.add_argument("--prompt", type=int, default=32)
p.add_argument("--past", type=int, default=128)
p.add_argument("--accuracy-level", type=int, default=0)
a = p.parse_args()

cfg = decoders.Config(layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads, intermediate=a.intermediate,
                      vocab=a.vocab, max_length=max(2048, a.past + a.prompt + 1), accuracy_level=a.accuracy_level)
out = pathlib.Path(a.dir)
out.mkdir(parents=True, exist_ok=True)
onnx.save(decoders.genai(cfg), out / "model.onnx")
rng = np.random.default_rng(0)
for step, new, past in (("prefill", a.prompt, 0), ("decode", 1, a.past)):
    d = out / step
    d.mkdir(exist_ok=True)
    np.save(d / "input_ids.npy", rng.integers(0, a.vocab, (1, new), dtype=np.int64))
    np.save(d / "attention_mask.npy", np.ones((1, past + new), np.int64))
    for i in range(a.layers):
        for kind in ("key", "value"):
            np.save(d / f"past_key_values.{i}.{kind}.npy",
                    rng.standard_normal((1, a.kv_heads, past, a.hidden // a.heads)).astype(np.float32))
