#!/usr/bin/python3
"""The float model with the weights read back from its int4 twin (make_int4_twin.py):
  dequantized_float.py FLOAT.onnx TWIN.onnx OUT.onnx
Unpacks every MatMulNBits of TWIN by the letter of ORT's contrib operator spec, independently of
make_int4_twin.py's packing code (code j of a block in byte j // 2, the even j in the low nibble;
zero points packed the same way along a column's blocks; w = (code - zero_point) * scale), and writes
FLOAT with each replaced MatMul's weight set to that W (K, N). ONNX Runtime's MatMulNBits on TWIN
and its float MatMul on OUT then agree up to float32 rounding if, and only if, the packing is what
ORT reads."""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

if len(sys.argv) != 4:
    sys.exit(__doc__)
flt, twin = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
twin_inits = {t.name: numpy_helper.to_array(t) for t in twin.graph.initializer}
weights = {}
for node in twin.graph.node:
    if node.op_type != "MatMulNBits":
        continue
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    K, N, bits, block = a["K"], a["N"], a["bits"], a["block_size"]
    assert bits == 4, node.name
    B, scales, zps = (twin_inits[i] for i in node.input[1:4])
    k_blocks = -(-K // block)
    assert B.shape == (N, k_blocks, block // 2), (node.name, B.shape)
    zps = zps.reshape(N, -1)
    zp = np.stack([(zps[:, b // 2] >> (4 * (b % 2))) & 15 for b in range(k_blocks)], axis=1)  # (N, k_blocks)
    code = np.stack([(B[:, :, j // 2] >> (4 * (j % 2))) & 15 for j in range(block)], axis=2)  # (N, k_blocks, block)
    w = ((code.astype(np.float32) - zp[:, :, None]) * scales.reshape(N, k_blocks)[:, :, None]).reshape(N, -1)
    weights[node.output[0]] = w[:, :K].T
count = 0
producer = {o: n for n in flt.graph.node for o in n.output}
for t in flt.graph.initializer:
    for out, w in weights.items():
        node = producer.get(out)
        if node is not None and node.op_type == "MatMul" and node.input[1] == t.name:
            t.CopyFrom(numpy_helper.from_array(w.astype(np.float32), t.name))
            count += 1
onnx.save(flt, sys.argv[3])
print(f"{sys.argv[3]}: {count} weights read back from {len(weights)} MatMulNBits")
