#!/usr/bin/python3
"""Writes one of the decoders of tests/data/ort/decoders.py at benchmark size: DIR/model.onnx.
  make_decoder.py DIR FORM [--layers 12 --hidden 768 --heads 12 --kv-heads 4 --intermediate 3072
                            --vocab 32000 --max-length 2048 --accuracy-level 0]
FORM: genai (int4 MatMulNBits + GroupQueryAttention), torch (plain ops, as torch.onnx.export),
optimum (MultiHeadAttention, needs --kv-heads = --heads), portable (opset 24)."""
import argparse
import pathlib
import sys

import onnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "ort"))
import decoders  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("form", choices=["genai", "torch", "optimum", "portable"])
for name, default in (("layers", 12), ("hidden", 768), ("heads", 12), ("kv-heads", 4), ("intermediate", 3072),
                      ("vocab", 32000), ("max-length", 2048), ("accuracy-level", 0)):
    p.add_argument(f"--{name}", type=int, default=default)
a = p.parse_args()
cfg = decoders.Config(layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads, intermediate=a.intermediate,
                      vocab=a.vocab, max_length=a.max_length, accuracy_level=a.accuracy_level)
build = {"genai": decoders.genai, "torch": decoders.torch_export, "optimum": decoders.optimum, "portable": decoders.portable}
out = pathlib.Path(a.dir)
out.mkdir(parents=True, exist_ok=True)
onnx.save(build[a.form](cfg), out / "model.onnx")
