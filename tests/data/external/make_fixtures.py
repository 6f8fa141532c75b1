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

# matmul.onnx: y = x (1 x 128) W (128 x 128), W from matmul_weights.bin at offset 4096, a weight
# large enough (64 KB) to be read as a view of its file (refeval/file_backed.h), W[k, n] = (k - n) / 1000
# (not exact in float16 or bfloat16, so the packed copy is float).
k, n = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
with open("matmul_weights.bin", "wb") as f:
    f.write(b"\0" * 4096 + ((k - n) / 1000).astype(np.float32).tobytes())
w = TensorProto()
w.name = "W"
w.data_type = TensorProto.FLOAT
w.dims.extend([128, 128])
w.data_location = TensorProto.EXTERNAL
for key, value in (("location", "matmul_weights.bin"), ("offset", "4096"), ("length", str(128 * 128 * 4))):
    e = w.external_data.add()
    e.key, e.value = key, value
g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"])], "g",
                      [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 128])],
                      [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 128])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), "matmul.onnx")

# transpose_matmul.onnx: y = x (1 x 128) Transpose(W), W the same weight in the same file: the
# Transpose is folded once, and W (read by nothing else) leaves memory after it.
g = helper.make_graph([helper.make_node("Transpose", ["W"], ["Wt"], perm=[1, 0]), helper.make_node("MatMul", ["X", "Wt"], ["Y"])], "g",
                      [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 128])],
                      [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 128])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), "transpose_matmul.onnx")
