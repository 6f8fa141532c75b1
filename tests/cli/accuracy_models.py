# The models of tests/cli/accuracy_more_test.sh, each with what numpy says about it (Debian's
# python3: numpy and onnx 1.12):
#   var16.onnx     float16 variance two ways: E[x^2] - E[x]^2 beside E[(x - m)^2], on inputs of mean
#                  100 (x^2 ~ 1e4, where float16's spacing is 8)
#   cnn.onnx       a small float CNN (Conv, Relu, Conv, GlobalAveragePool)
#   cnn_qdq.onnx   the same in ONNX Runtime's static QDQ form (QuantizeLinear/DequantizeLinear pairs
#                  around activations, int8 weights and int32 biases behind DequantizeLinear, the
#                  quantizer's `_QuantizeLinear_Output` / `_DequantizeLinear_Output` / `_quantized`
#                  names); want_sqnr.json: every QDQ-model value's SQNR against the float value of
#                  its base name, computed here with qdq_loss_debug's formula
#   cnn16.onnx     cnn.onnx in float16 (same names)
#   fused.onnx     reference.onnx with MatMul + Add replaced by one Gemm whose output has a new
#                  name, and the optimizer's provenance (metadata refeval.fused_from:NODE)
# Usage: accuracy_models.py DIR
import json, os, sys
import numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh

os.chdir(sys.argv[1])
# float16 variance
rng = np.random.default_rng(2)
x = (100 + rng.standard_normal((8, 64))).astype(np.float16)
ax = [1]
nodes = [h.make_node("ReduceMean", ["X"], ["m"], name="mean", axes=ax),
         h.make_node("Mul", ["X", "X"], ["x2"], name="sq"),
         h.make_node("ReduceMean", ["x2"], ["ex2"], name="mean_sq", axes=ax),
         h.make_node("Mul", ["m", "m"], ["m2"], name="mean_squared"),
         h.make_node("Sub", ["ex2", "m2"], ["var_naive"], name="naive"),
         h.make_node("Sub", ["X", "m"], ["d"], name="centre"),
         h.make_node("Mul", ["d", "d"], ["d2"], name="dev_sq"),
         h.make_node("ReduceMean", ["d2"], ["var_stable"], name="stable", axes=ax)]
g = h.make_graph(nodes, "var", [h.make_tensor_value_info("X", T.FLOAT16, [8, 64])],
                 [h.make_tensor_value_info("var_naive", T.FLOAT16, [8, 1]), h.make_tensor_value_info("var_stable", T.FLOAT16, [8, 1])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, "var16.onnx"); np.save("x16.npy", x)

rng = np.random.default_rng(5)
x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
W1 = (0.3 * rng.standard_normal((4, 3, 3, 3))).astype(np.float32); B1 = (0.1 * rng.standard_normal(4)).astype(np.float32)
W2 = (0.3 * rng.standard_normal((6, 4, 3, 3))).astype(np.float32); B2 = (0.1 * rng.standard_normal(6)).astype(np.float32)

def conv(x, w, b):  # pads 1, stride 1, in float64
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c h w 3 3
    return np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64)) + b.astype(np.float64)[None, :, None, None]

# The float model in numpy (float64 arithmetic on the float32 weights).
f = {"X": x.astype(np.float64)}
f["conv1_out"] = conv(f["X"], W1, B1); f["relu1_out"] = np.maximum(f["conv1_out"], 0)
f["conv2_out"] = conv(f["relu1_out"], W2, B2); f["Y"] = f["conv2_out"].mean(axis=(2, 3), keepdims=True)

# ORT's static QDQ form: uint8 activations (asymmetric), int8 weights (symmetric), int32 bias with
# scale x_scale * w_scale; scales calibrated with min/max on this very input.
def act_params(v):
    lo, hi = min(v.min(), 0.0), max(v.max(), 0.0)
    s = np.float32((hi - lo) / 255); z = np.uint8(np.clip(np.rint(-lo / s), 0, 255)); return s, z
def w_params(w):
    return np.float32(np.abs(w).max() / 127), np.int8(0)
def q(v, s, z, dt, lo, hi): return np.clip(np.rint(v / np.float64(s)) + np.float64(z), lo, hi).astype(dt)
def dq(qv, s, z): return ((qv.astype(np.float64) - np.float64(z)) * np.float64(s))

inits, nodes = [], []
def qdq_act(name, v):
    s, z = act_params(v)
    inits.extend([nh.from_array(np.array(s, np.float32), name + "_scale"), nh.from_array(np.array(z, np.uint8), name + "_zero_point")])
    nodes.append(h.make_node("QuantizeLinear", [name, name + "_scale", name + "_zero_point"], [name + "_QuantizeLinear_Output"], name=name + "_QuantizeLinear"))
    nodes.append(h.make_node("DequantizeLinear", [name + "_QuantizeLinear_Output", name + "_scale", name + "_zero_point"], [name + "_DequantizeLinear_Output"], name=name + "_DequantizeLinear"))
    return s, z
def qdq_weight(name, w):
    s, z = w_params(w)
    inits.extend([nh.from_array(q(w, s, z, np.int8, -127, 127), name + "_quantized"), nh.from_array(np.array(s, np.float32), name + "_scale"),
                  nh.from_array(np.array(z, np.int8), name + "_zero_point")])
    nodes.append(h.make_node("DequantizeLinear", [name + "_quantized", name + "_scale", name + "_zero_point"], [name + "_DequantizeLinear_Output"], name=name + "_DequantizeLinear"))
    return s
def qdq_bias(name, b, s):
    inits.extend([nh.from_array(q(b, s, 0, np.int32, -2**31, 2**31 - 1), name + "_quantized"), nh.from_array(np.array(s, np.float32), name + "_quantized_scale"),
                  nh.from_array(np.array(0, np.int32), name + "_quantized_zero_point")])
    nodes.append(h.make_node("DequantizeLinear", [name + "_quantized", name + "_quantized_scale", name + "_quantized_zero_point"], [name + "_DequantizeLinear_Output"], name=name + "_DequantizeLinear"))

# numpy's QDQ model, computed along the way, and its graph.
qv = {}
sx, zx = qdq_act("X", f["X"]); qv["X_DequantizeLinear_Output"] = dq(q(f["X"], sx, zx, np.uint8, 0, 255), sx, zx)
sw1 = qdq_weight("W1", W1); qv["W1_DequantizeLinear_Output"] = dq(q(W1, sw1, 0, np.int8, -127, 127), sw1, 0)
sb1 = np.float32(sx * sw1); qdq_bias("B1", B1, sb1); qv["B1_DequantizeLinear_Output"] = dq(q(B1, sb1, 0, np.int32, -2**31, 2**31 - 1), sb1, 0)
nodes.append(h.make_node("Conv", ["X_DequantizeLinear_Output", "W1_DequantizeLinear_Output", "B1_DequantizeLinear_Output"], ["conv1_out"], name="conv1", pads=[1, 1, 1, 1]))
qv["conv1_out"] = conv(qv["X_DequantizeLinear_Output"], qv["W1_DequantizeLinear_Output"], qv["B1_DequantizeLinear_Output"])
s1, z1 = qdq_act("conv1_out", f["conv1_out"]); qv["conv1_out_DequantizeLinear_Output"] = dq(q(qv["conv1_out"], s1, z1, np.uint8, 0, 255), s1, z1)
nodes.append(h.make_node("Relu", ["conv1_out_DequantizeLinear_Output"], ["relu1_out"], name="relu1"))
qv["relu1_out"] = np.maximum(qv["conv1_out_DequantizeLinear_Output"], 0)
s2, z2 = qdq_act("relu1_out", f["relu1_out"]); qv["relu1_out_DequantizeLinear_Output"] = dq(q(qv["relu1_out"], s2, z2, np.uint8, 0, 255), s2, z2)
sw2 = qdq_weight("W2", W2); qv["W2_DequantizeLinear_Output"] = dq(q(W2, sw2, 0, np.int8, -127, 127), sw2, 0)
sb2 = np.float32(s2 * sw2); qdq_bias("B2", B2, sb2); qv["B2_DequantizeLinear_Output"] = dq(q(B2, sb2, 0, np.int32, -2**31, 2**31 - 1), sb2, 0)
nodes.append(h.make_node("Conv", ["relu1_out_DequantizeLinear_Output", "W2_DequantizeLinear_Output", "B2_DequantizeLinear_Output"], ["conv2_out"], name="conv2", pads=[1, 1, 1, 1]))
qv["conv2_out"] = conv(qv["relu1_out_DequantizeLinear_Output"], qv["W2_DequantizeLinear_Output"], qv["B2_DequantizeLinear_Output"])
s3, z3 = qdq_act("conv2_out", f["conv2_out"]); qv["conv2_out_DequantizeLinear_Output"] = dq(q(qv["conv2_out"], s3, z3, np.uint8, 0, 255), s3, z3)
nodes.append(h.make_node("GlobalAveragePool", ["conv2_out_DequantizeLinear_Output"], ["Y"], name="gap"))
qv["Y"] = qv["conv2_out_DequantizeLinear_Output"].mean(axis=(2, 3), keepdims=True)

io = ([h.make_tensor_value_info("X", T.FLOAT, [1, 3, 8, 8])], [h.make_tensor_value_info("Y", T.FLOAT, [1, 6, 1, 1])])
m = h.make_model(h.make_graph(nodes, "cnn_qdq", *io, inits), opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 7
onnx.save(m, "cnn_qdq.onnx")
fn = [h.make_node("Conv", ["X", "W1", "B1"], ["conv1_out"], name="conv1", pads=[1, 1, 1, 1]),
      h.make_node("Relu", ["conv1_out"], ["relu1_out"], name="relu1"),
      h.make_node("Conv", ["relu1_out", "W2", "B2"], ["conv2_out"], name="conv2", pads=[1, 1, 1, 1]),
      h.make_node("GlobalAveragePool", ["conv2_out"], ["Y"], name="gap")]
fi = [nh.from_array(a, n) for a, n in [(W1, "W1"), (B1, "B1"), (W2, "W2"), (B2, "B2")]]
m = h.make_model(h.make_graph(fn, "cnn", *io, fi), opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 7
onnx.save(m, "cnn.onnx"); np.save("xc.npy", x)

# qdq_loss_debug's SQNR of every QDQ-model value against the float value of its base name.
ref = dict(f, W1=W1, B1=B1, W2=W2, B2=B2)
def sqnr(a, b):
    eps = np.finfo(float).eps
    return 20 * np.log10(max(np.linalg.norm(a.flatten()), eps) / max(np.linalg.norm((a - b).flatten()), eps))
want = {}
for name, v in qv.items():
    base = name.replace("_DequantizeLinear_Output", "")
    want[name] = [base, sqnr(np.asarray(ref[base], np.float64), v)]
json.dump(want, open("want_sqnr.json", "w"), indent=1)

# cnn.onnx in float16: every float initializer and the graph's I/O.
m16 = onnx.load("cnn.onnx")
for i, t in enumerate(m16.graph.initializer):
    m16.graph.initializer[i].CopyFrom(nh.from_array(nh.to_array(t).astype(np.float16), t.name))
for vi in list(m16.graph.input) + list(m16.graph.output):
    vi.type.tensor_type.elem_type = T.FLOAT16
onnx.save(m16, "cnn16.onnx"); np.save("xc16.npy", x.astype(np.float16))

# A fusion as `refeval optimize` records it: MatMul + Add (reference) became one Gemm whose output
# has a new name.
rng = np.random.default_rng(7)
A = rng.standard_normal((4, 8)).astype(np.float32)
Wf = rng.standard_normal((8, 5)).astype(np.float32); bf = rng.standard_normal(5).astype(np.float32)
io = ([h.make_tensor_value_info("A", T.FLOAT, [4, 8])], [h.make_tensor_value_info("out", T.FLOAT, [4, 5])])
wi = [nh.from_array(Wf, "Wf"), nh.from_array(bf, "bf")]
rn = [h.make_node("MatMul", ["A", "Wf"], ["t"], name="mm"), h.make_node("Add", ["t", "bf"], ["u"], name="add"),
      h.make_node("Tanh", ["u"], ["out"], name="tanh")]
m = h.make_model(h.make_graph(rn, "ref", *io, wi), opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, "reference.onnx")
fn = [h.make_node("Gemm", ["A", "Wf", "bf"], ["gemm_out"], name="fused_gemm"), h.make_node("Tanh", ["gemm_out"], ["out"], name="tanh")]
m = h.make_model(h.make_graph(fn, "fused", *io, wi), opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.helper.set_model_props(m, {"refeval.fused_from:fused_gemm": "mm,add"})
onnx.save(m, "fused.onnx"); np.save("a.npy", A)
