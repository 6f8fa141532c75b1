#!/usr/bin/python3
"""A twin of a decoder that never says one word in four: its logits plus a bias of -10 on every id
v with v % 4 == 3 (an Add before the output):
  make_suppressed_twin.py SRC.onnx DST.onnx
Against SRC, the divergence is lopsided: KL(SRC || twin) ~ 10 m + log(1 - m), m the mass SRC puts on
the suppressed ids, while KL(twin || SRC) ~ -log(1 - m), several times smaller. A comparison that
computes the divergence the wrong way round, or mixes up A and B, cannot pass against this pair,
which an int4 twin (whose KL is symmetric to 0.1%) cannot show."""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

if len(sys.argv) != 3:
    sys.exit(__doc__)
m = onnx.load(sys.argv[1])
g = m.graph
out = next(o for o in g.output if o.name == "logits")
vocab = out.type.tensor_type.shape.dim[-1].dim_value
bias = np.where(np.arange(vocab) % 4 == 3, -10, 0).astype(np.float32)
producer = next(n for n in g.node if "logits" in n.output)
producer.output[list(producer.output).index("logits")] = "logits_before_suppression"
g.initializer.append(numpy_helper.from_array(bias, "suppression_bias"))
g.node.append(helper.make_node("Add", ["logits_before_suppression", "suppression_bias"], ["logits"], name="/suppression/Add"))
onnx.save(m, sys.argv[2])
print(f"{sys.argv[2]}: logits + (-10 on {int((bias != 0).sum())} of {vocab} ids)")
