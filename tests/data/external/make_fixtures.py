#!/usr/bin/python3
"""Writes the external-data fixtures (run once; the outputs are committed):
model.onnx reads W (float32[2, 3]) from weights.bin at offset 8; escape.onnx names
../escape.bin, which lies outside the model's folder and must be refused."""
import numpy as np
import onnx
from onnx import TensorProto, helper

def model(location, offset):
    w = TensorProto()
    w.name = "W"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([2, 3])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", "24")):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"])], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

with open("weights.bin", "wb") as f:
    f.write(b"\0" * 8 + np.arange(6, dtype=np.float32).tobytes())
onnx.save(model("weights.bin", 8), "model.onnx")
onnx.save(model("../escape.bin", 0), "escape.onnx")
