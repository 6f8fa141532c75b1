#!/usr/bin/python3
"""Exports a recurrent model (torch.nn.LSTM, GRU or RNN with seeded random weights, batch first)
to ONNX with an input and torch's output in the backend-test layout, so `refeval test DIR --rtol 0
--atol 1e-4` checks refeval against torch. The default is the 2-layer LSTM of
benchmarks/compare.sh; benchmarks/rnn/compare_rnn.sh adds the small cells of issue 31 (a
one-layer GRU and a 2-layer bidirectional LSTM, 32 -> 64, 2 x 20 steps). Needs Debian's
python3-torch and python3-onnx.
Usage: make_lstm.py OUT_DIR [--cell lstm|gru|rnn] [--layers 2] [--bidirectional] [--batch 1]
                            [--seq 64] [--input 128] [--hidden 256]"""
import argparse
import os

import numpy as np
import torch
from onnx import numpy_helper

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("out")
p.add_argument("--cell", choices=["lstm", "gru", "rnn"], default="lstm")
p.add_argument("--layers", type=int, default=2)
p.add_argument("--bidirectional", action="store_true")
p.add_argument("--batch", type=int, default=1)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--input", type=int, default=128)
p.add_argument("--hidden", type=int, default=256)
a = p.parse_args()
torch.manual_seed(0)
cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[a.cell]
model = cls(a.input, a.hidden, num_layers=a.layers, bidirectional=a.bidirectional, batch_first=True).eval()
x = torch.rand(a.batch, a.seq, a.input)
with torch.no_grad():
    y, _ = model(x)
os.makedirs(os.path.join(a.out, "test_data_set_0"), exist_ok=True)
torch.onnx.export(model, (x,), os.path.join(a.out, "model.onnx"), opset_version=14, input_names=["input"], output_names=["output"])
for name, value, kind in (("input", x, "input"), ("output", y, "output")):
    with open(os.path.join(a.out, "test_data_set_0", f"{kind}_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(value.numpy(), name).SerializeToString())
np.save(os.path.join(a.out, "input.npy"), x.numpy())
print(a.out, "output range", float(y.min()), float(y.max()))
