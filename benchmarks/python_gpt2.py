#!/usr/bin/python3
"""The Python package on a GPT-2 export: loaded from a path, from bytes and from an
onnx.ModelProto, each gives torch's logits (test_data_set_0/output_0.pb) within 1e-4.
usage: PYTHONPATH=build/python benchmarks/python_gpt2.py DIR   (a make_gpt2.py folder)
"""
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

import refeval


def main(folder):
    path = os.path.join(folder, "model.onnx")
    ids = np.load(os.path.join(folder, "input_ids.npy"))
    expected = onnx.TensorProto()
    with open(os.path.join(folder, "test_data_set_0", "output_0.pb"), "rb") as f:
        expected.ParseFromString(f.read())
    expected = numpy_helper.to_array(expected)
    with open(path, "rb") as f:
        data = f.read()
    for how, proto in (("path", path), ("bytes", data), ("ModelProto", onnx.load(path))):
        start = time.perf_counter()
        sess = refeval.ReferenceEvaluator(proto)
        (logits,) = sess.run(None, {"input_ids": ids})
        diff = float(np.abs(logits - expected).max())
        print(f"{how:10s}: logits {logits.shape} max |refeval - torch| = {diff:.3g} ({time.perf_counter() - start:.2f} s load + run)")
        assert diff <= 1e-4, how


if __name__ == "__main__":
    main(sys.argv[1])
