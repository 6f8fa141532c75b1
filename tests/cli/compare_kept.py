#!/usr/bin/python3
"""Outputs a model wrote (OUT/output_*.pb, `refeval run --save-outputs`) against a backend-test
data set's expected ones (SET/output_*.pb) within ATOL, leaving out the positions (b, t) where the
set's (B, T) input MASK is 0, in every output with those axes (logits (B, S, V), presents
(B, N, T, h), ORT's stacked (2, B, N, T, h)): a left-padded row's pads, where every key is hidden
and the fused operator answers otherwise than the export (those values are never read).
    compare_kept.py OUT SET MASK_INPUT ATOL"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import numpy_helper

out, data, mask_name, atol = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3], float(sys.argv[4])
inputs = {t.name: numpy_helper.to_array(t) for t in (onnx.load_tensor(str(p)) for p in data.glob("input_*.pb"))}
mask = inputs[mask_name]
worst = 0.0
for expected_path in sorted(data.glob("output_*.pb")):
    got = numpy_helper.to_array(onnx.load_tensor(str(out / expected_path.name))).astype(np.float64)
    want = numpy_helper.to_array(onnx.load_tensor(str(expected_path))).astype(np.float64)
    if got.shape != want.shape:
        sys.exit(f"{expected_path.name}: shape {got.shape}, expected {want.shape}")
    kept = np.ones(got.shape, bool)
    for b_axis, t_axis in ((0, 1), (0, 2), (1, 3)):
        if got.ndim > t_axis and got.shape[b_axis] == mask.shape[0] and got.shape[t_axis] == mask.shape[1]:
            shape = [1] * got.ndim
            shape[b_axis], shape[t_axis] = mask.shape
            kept = np.broadcast_to(mask.reshape(shape) != 0, got.shape)
            break
    diff = np.abs(got - want)[kept]
    worst = max(worst, float(diff.max()) if diff.size else 0.0)
print(f"{data.name}: max difference on kept positions {worst:.3g}")
sys.exit(0 if worst <= atol else 1)
