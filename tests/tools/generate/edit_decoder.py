#!/usr/bin/python3
"""A decoder (or an encoder-decoder's part) rewritten into a form another exporter writes, for
tests/cli/generate_test.sh and generate_seq2seq_test.sh (Debian's python3-onnx). The computation
is unchanged; only what generate must feed or read differs.

  edit_decoder.py int32-ids MODEL OUT     the int64 inputs input_ids, attention_mask, position_ids
                                          and encoder_attention_mask declared int32 and Cast to
                                          int64 inside (some exporters write int32 ids: generate
                                          must feed int32)
  edit_decoder.py flat-logits MODEL OUT   logits (B, S, V) reshaped to (B * S, V), as a training
                                          export writes them for the loss (logits.view(-1, V))
  edit_decoder.py no-presents MODEL OUT   the present* outputs left out (a decoder exported
                                          without use_cache)
  edit_decoder.py unknown-present-dims MODEL OUT
                                          the present* outputs declared of their rank with every
                                          dim unknown, as onnx.helper.make_tensor_value_info(name,
                                          type, [None] * 4) writes them"""
import sys

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

mode, src, out = sys.argv[1:4]
model = onnx.load(src)
g = model.graph


def rename(old, new):
    """The value `old` renamed `new` where nodes write and read it."""
    for node in g.node:
        node.input[:] = [new if n == old else n for n in node.input]
        node.output[:] = [new if n == old else n for n in node.output]


if mode == "int32-ids":
    casts = []
    for i in g.input:
        tt = i.type.tensor_type
        if i.name in ("input_ids", "attention_mask", "position_ids", "encoder_attention_mask") and tt.elem_type == TensorProto.INT64:
            rename(i.name, i.name + "_int64")
            casts.append(helper.make_node("Cast", [i.name], [i.name + "_int64"], to=TensorProto.INT64, name=i.name + "_int64"))
            tt.elem_type = TensorProto.INT32
    assert casts, "no int64 ids input"
    for k, cast in enumerate(casts):
        g.node.insert(k, cast)
elif mode == "flat-logits":
    logits = next(o for o in g.output if o.name == "logits")
    vocab = logits.type.tensor_type.shape.dim[-1].dim_value
    assert vocab > 0, "the logits declare no fixed vocabulary"
    rename("logits", "logits_3d")
    g.initializer.append(numpy_helper.from_array(np.array([-1, vocab], np.int64), "logits_flat_shape"))
    g.node.append(helper.make_node("Reshape", ["logits_3d", "logits_flat_shape"], ["logits"], name="logits_flat"))
    dims = logits.type.tensor_type.shape
    del dims.dim[:]
    dims.dim.add().dim_param = "batch_x_tokens"
    dims.dim.add().dim_value = vocab
elif mode == "no-presents":
    kept = [o for o in g.output if not o.name.startswith("present")]
    assert len(kept) < len(g.output), "no present output"
    del g.output[:]
    g.output.extend(kept)
elif mode == "unknown-present-dims":
    presents = [o for o in g.output if o.name.startswith("present")]
    assert presents, "no present output"
    for o in presents:
        for d in o.type.tensor_type.shape.dim:
            d.Clear()
else:
    sys.exit(f"unknown mode {mode}")
onnx.save(model, out)
