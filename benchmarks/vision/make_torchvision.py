#!/usr/bin/python3
"""Exports a torchvision classifier (random, seeded weights: nothing can be downloaded) to ONNX with
an input and torch's output in the backend-test layout, so `refeval test DIR --rtol 0 --atol 1e-4`
checks refeval against torch. Needs Debian's python3-torch, python3-torchvision, python3-onnx.
Usage: make_torchvision.py OUT_DIR NET [--opset N] [--batch B]   (NET: a torchvision.models
classifier: resnet18, mobilenet_v2, resnet34, mobilenet_v3_large, efficientnet_b0, ...)"""
import argparse
import os

import numpy as np
import torch
import torchvision
from onnx import numpy_helper

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("out")
p.add_argument("net")
p.add_argument("--opset", type=int, default=13)
p.add_argument("--batch", type=int, default=1)
a = p.parse_args()
torch.manual_seed(0)
model = getattr(torchvision.models, a.net)(weights=None).eval()
x = torch.rand(a.batch, 3, 224, 224)
with torch.no_grad():
    y = model(x)
os.makedirs(os.path.join(a.out, "test_data_set_0"), exist_ok=True)
torch.onnx.export(model, (x,), os.path.join(a.out, "model.onnx"), opset_version=a.opset,
                  input_names=["input"], output_names=["logits"])
for name, value, kind in (("input", x, "input"), ("logits", y, "output")):
    with open(os.path.join(a.out, "test_data_set_0", f"{kind}_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(value.numpy(), name).SerializeToString())
np.save(os.path.join(a.out, "input.npy"), x.numpy())
print(a.out, "logits range", float(y.min()), float(y.max()))
