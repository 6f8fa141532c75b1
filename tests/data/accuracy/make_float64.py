#!/usr/bin/python3
"""torch's float64 outputs of the GPT-2 export tests/data/optimize/hf_gpt2_opset17: the same model
(exporters.build, seeded weights) run in double on each data set's inputs, written as
gpt2_float64_<k>.npy (logits), with the constants the file holds (float32-rounded GELU coefficients
and epsilon). `refeval accuracy --save-oracle` must reproduce them to 1e-10 relative
(tests/cli/accuracy_more_test.sh): an oracle checked against what refeval did not compute.
Run with Debian's python3 (torch 1.13):
    /usr/bin/python3 tests/data/accuracy/make_float64.py
It first checks that torch's float32 outputs equal the export's stored ones (output_0.pb), so the
weights are the export's."""
import math
import pathlib
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "optimize" / "hf_gpt2_opset17"
sys.dont_write_bytecode = True
sys.path.insert(0, str(HERE.parent / "optimize"))
import exporters  # noqa: E402

# The export holds its constants in float32 (GELU's sqrt(2/pi) and 0.044715, LayerNorm's epsilon):
# the model the file defines computes with those values, so the double reference does too.
def f32(v):
    return float(np.float32(v))


def new_gelu_as_exported(x):
    return 0.5 * x * (1.0 + torch.tanh(f32(math.sqrt(2.0 / math.pi)) * (x + f32(0.044715) * torch.pow(x, 3.0))))


exporters.new_gelu = new_gelu_as_exported
model = exporters.build("hf_gpt2", "small")
for module in model.modules():
    if isinstance(module, torch.nn.LayerNorm):
        module.eps = f32(module.eps)
for k in (0, 2):
    folder = DATA / f"test_data_set_{k}"
    inputs = [torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(str(p))).copy()) for p in sorted(folder.glob("input_*.pb"))]
    stored = numpy_helper.to_array(onnx.load_tensor(str(folder / "output_0.pb")))
    with torch.no_grad():
        single = model(*inputs)[0].numpy()
        double = model.double()(*inputs)[0].numpy()
        model.float()
    if not np.array_equal(single, stored):
        sys.exit(f"set {k}: torch's float32 logits are not the export's stored ones (max diff {np.abs(single - stored).max():g})")
    np.save(HERE / f"gpt2_float64_{k}.npy", double)
    print(f"set {k}: float64 logits {double.shape}, max |float64 - float32| {np.abs(double - single).max():.3g}")
