#!/usr/bin/python3
"""The decoder MODEL with an int64 attention_mask input cast to the float mask it declares, written
to OUT: ONNX Runtime's gpt2_helper export (tests/data/optimize/ort_gpt2_past_opset17, stacked past
(2, B, N, P, H)) takes a float mask, and `refeval generate` (like generate_ort.js) feeds the
tokenizer's int64 mask. Used by make_expected.py and tests/cli/generate_test.sh (Debian's
python3-onnx).   int64_mask.py MODEL OUT"""
import sys

import onnx
from onnx import TensorProto, helper

model = onnx.load(sys.argv[1])
g = model.graph
mask = next(i for i in g.input if i.name == "attention_mask")
declared = mask.type.tensor_type.elem_type
assert declared != TensorProto.INT64, "the attention_mask is int64 already"
for node in g.node:
    node.input[:] = ["attention_mask_cast" if n == "attention_mask" else n for n in node.input]
g.node.insert(0, helper.make_node("Cast", ["attention_mask"], ["attention_mask_cast"], to=declared, name="attention_mask_cast"))
mask.type.tensor_type.elem_type = TensorProto.INT64
onnx.checker.check_model(model)
onnx.save(model, sys.argv[2])
