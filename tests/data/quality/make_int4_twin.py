#!/usr/bin/python3
"""The int4 twin of a float model, as ONNX Runtime's MatMul4BitsQuantizer writes it (is_symmetric=False,
block_size 32):
  make_int4_twin.py SRC.onnx DST.onnx
Every MatMul whose B is a 2-D float32 initializer W (K, N) becomes a com.microsoft MatMulNBits
(bits 4, block_size 32, attributes K and N) with, in ORT's contrib operator spec layout:
  B            uint8 (N, k_blocks, 16): W's column n, block b, values k = 32 b + j as 4-bit codes, two
               per byte, the even j in the low nibble (k_blocks = ceil(K / 32), K padded with zeros);
  scales       float32 (N * k_blocks,): per block, (max(w, 0) - min(w, 0)) / 15;
  zero_points  uint8 (N * ceil(k_blocks / 2),): per block round(-min(w, 0) / scale) in [0, 15],
               packed like B along the blocks of one column (each column starts on a byte).
A weight w dequantizes to (code - zero_point) * scale, code = clamp(round(w / scale + zero_point), 0,
15), as MLAS's blockwise quantizer computes it (round half away from zero, a zero scale kept as 0).
The MatMuls with a computed B (attention scores and context) stay float. Adds the com.microsoft
opset import. Prints how many MatMuls it replaced and the largest dequantization error."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BITS, BLOCK = 4, 32
TOP = (1 << BITS) - 1


def quantize(w):
    """W (K, N) float32 -> (packed B, scales, packed zero points, dequantized W) in MatMulNBits' layout."""
    K, N = w.shape
    k_blocks = -(-K // BLOCK)
    padded = np.zeros((k_blocks * BLOCK, N), np.float32)
    padded[:K] = w
    blocks = padded.T.reshape(N, k_blocks, BLOCK)  # column n, block b, position j in the block
    lo = np.minimum(blocks.min(axis=2), 0).astype(np.float32)
    hi = np.maximum(blocks.max(axis=2), 0).astype(np.float32)
    scale = ((hi - lo) / np.float32(TOP)).astype(np.float32)
    zp_real = np.where(scale != 0, -lo / np.where(scale != 0, scale, 1), lo)
    zp = np.clip(np.floor(np.abs(zp_real) + 0.5) * np.sign(zp_real), 0, TOP).astype(np.int32)  # roundf
    inv = np.where(scale != 0, np.float32(1) / np.where(scale != 0, scale, 1), 0).astype(np.float32)
    v = blocks * inv[:, :, None] + zp[:, :, None].astype(np.float32)
    code = np.clip(np.floor(np.abs(v) + 0.5) * np.sign(v), 0, TOP).astype(np.uint8)
    packed = (code[:, :, 0::2] | (code[:, :, 1::2] << 4)).astype(np.uint8)  # (N, k_blocks, 16)
    zp_cols = np.zeros((N, 2 * -(-k_blocks // 2)), np.uint8)
    zp_cols[:, :k_blocks] = zp
    zp_packed = (zp_cols[:, 0::2] | (zp_cols[:, 1::2] << 4)).astype(np.uint8)  # (N, ceil(k_blocks / 2))
    deq = ((code.astype(np.float32) - zp[:, :, None]) * scale[:, :, None]).reshape(N, -1)[:, :K].T
    return packed, scale.reshape(-1), zp_packed.reshape(-1), deq


def twin(model):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    nodes, replaced, worst = [], 0, 0.0
    for node in g.node:
        b = inits.get(node.input[1]) if node.op_type == "MatMul" and node.domain in ("", "ai.onnx") else None
        if b is None or len(b.dims) != 2 or b.data_type != TensorProto.FLOAT:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(b)
        K, N = w.shape
        packed, scales, zps, deq = quantize(w)
        worst = max(worst, float(np.abs(deq - w).max()))
        name = node.name or node.output[0]
        new = [numpy_helper.from_array(packed, f"{b.name}_Q4"), numpy_helper.from_array(scales, f"{b.name}_scales"),
               numpy_helper.from_array(zps, f"{b.name}_zero_points")]
        g.initializer.extend(new)
        nodes.append(helper.make_node("MatMulNBits", [node.input[0]] + [t.name for t in new], list(node.output),
                                      name=f"{name}_Q4", domain="com.microsoft", K=K, N=N, bits=BITS, block_size=BLOCK))
        replaced += 1
    del g.node[:]
    g.node.extend(nodes)
    # the float weights no longer read by any node go (a weight also read elsewhere stays)
    used = {i for n in g.node for i in n.input} | {i.name for i in g.input} | {o.name for o in g.output}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return replaced, worst


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    m = onnx.load(sys.argv[1])
    count, err = twin(m)
    if count == 0:
        sys.exit(f"make_int4_twin.py: {sys.argv[1]}: no MatMul with a 2-D float32 initializer as B")
    onnx.save(m, sys.argv[2])
    print(f"{sys.argv[2]}: {count} MatMul -> MatMulNBits (4 bits, block 32, asymmetric); largest |dequantized - W| {err:.3g}")
