#!/usr/bin/python3
"""Writes one of the decoders of tests/data/ort/decoders.py at benchmark size: DIR/model.onnx.
  make_decoder.py DIR FORM [--layers 12 --hidden 768 --heads 12 --kv-heads 4 --intermediate 3072
                            --vocab 32000 --max-length 2048 --accuracy-level 0] [--tied] [--external-data]
FORM: genai (int4 MatMulNBits + GroupQueryAttention), torch (plain ops, as torch.onnx.export),
optimum (MultiHeadAttention, needs --kv-heads = --heads), portable (opset 24).
--tied: the LM head reuses the embedding table, as Qwen2 ties them (and has no LM head bias, so the
GenAI form's head loses its bias): torch / optimum / portable read the table through a Transpose
node (one float copy in the file), genai quantizes the table's values into its int4 MatMulNBits head
(a second, int4 copy, as the GenAI builder writes it; see decoders.py).
--external-data: the weights in DIR/model.onnx.data beside DIR/model.onnx (ONNX external data, one
file), as models over protobuf's 2 GiB limit are written; a Qwen2-0.5B-sized float32 decoder:
  make_decoder.py /tmp/qwen2 torch --layers 24 --hidden 896 --heads 14 --kv-heads 2 --intermediate 4864
                  --vocab 151936 --tied --external-data"""
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
p.add_argument("--tied", action="store_true")
p.add_argument("--external-data", action="store_true")
a = p.parse_args()
cfg = decoders.Config(layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads, intermediate=a.intermediate,
                      vocab=a.vocab, max_length=a.max_length, accuracy_level=a.accuracy_level)
if a.tied:
    cfg.tied, cfg.lm_head_bias = True, False
build = {"genai": decoders.genai, "torch": decoders.torch_export, "optimum": decoders.optimum, "portable": decoders.portable}
out = pathlib.Path(a.dir)
out.mkdir(parents=True, exist_ok=True)
if a.external_data:
    # onnx.save appends to an existing data file, and (onnx 1.12) writes it only when given a str path
    (out / "model.onnx.data").unlink(missing_ok=True)
    onnx.save(build[a.form](cfg), str(out / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx.data")
else:
    onnx.save(build[a.form](cfg), out / "model.onnx")
