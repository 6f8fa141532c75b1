"""ORT fixtures for products with float16 and bfloat16 weights, which refeval streams in their own
type (packed strips widened as the kernel reads them):
- suite half_weights: a float model whose weights are stored float16 or bfloat16 and cast to float
  before MatMul / Gemm (the Cast is folded and its output packed). Float outputs, so the common
  1e-5 tolerance of the ORT suites.
- suite half_models: a float16 model (X, W and Y float16): MatMul, Gemm with transB, and a two-layer
  MLP. ORT and refeval both sum in float and round once to float16, in different orders, so a
  result near a rounding boundary lands one float16 ulp apart (up to 4 ulps after the MLP's two
  layers, -0.07452 against -0.07477): that suite has its own ctest entry (OWN_CTEST_ENTRY) at
  --rtol 2e-3 --atol 5e-4.
Row counts 1 to 6 and a batch of sequences; K and N odd or not multiples of 16 (partial strips),
every product large enough for the packed path (M N K >= 2^18).
    /usr/bin/python3 tests/data/ort/make_half_weights.py
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import fixture

rng = np.random.default_rng(16)


def weight(k, n):
    return (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)


def bfloat16_initializer(name, w):
    """w rounded to bfloat16 (to nearest even), as a BFLOAT16 initializer, and its float values."""
    bits = w.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    tensor = helper.make_tensor(name, TensorProto.BFLOAT16, w.shape, rounded.tobytes(), raw=True)
    return tensor


def model(nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)])


def io(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


F, H = TensorProto.FLOAT, TensorProto.FLOAT16

# A float model with narrow weights: X (.., K) float, W narrow -> Cast(float) -> MatMul or Gemm.
for name, lead, k, n, kind in [("f16_matmul_m1", [1, 1], 512, 515, "f16"),
                               ("f16_matmul_b2_s3", [2, 3], 301, 517, "f16"),
                               ("f16_gemm_transb_m4", [4], 320, 501, "f16_gemm"),
                               ("bf16_matmul_m1", [1], 520, 515, "bf16"),
                               ("bf16_matmul_m5", [5], 301, 519, "bf16")]:
    w = weight(n, k) if kind == "f16_gemm" else weight(k, n)
    narrow = bfloat16_initializer("W16", w) if kind == "bf16" else numpy_helper.from_array(w.astype(np.float16), "W16")
    product = (helper.make_node("Gemm", ["X", "W"], ["Y"], transB=1) if kind == "f16_gemm"
               else helper.make_node("MatMul", ["X", "W"], ["Y"]))
    nodes = [helper.make_node("Cast", ["W16"], ["W"], to=F), product]
    x = rng.standard_normal(lead + [k]).astype(np.float32)
    fixture.write_case("half_weights", name, model(nodes, [io("X", F, lead + [k])], [io("Y", F, lead + [n])], [narrow]),
                       {"X": x})

# A float16 model.
for name, lead, k, n in [("matmul_m1", [1, 1], 512, 515), ("matmul_b2_s3", [2, 3], 301, 517),
                         ("matmul_m4", [4], 1024, 259)]:
    w = weight(k, n).astype(np.float16)
    x = rng.standard_normal(lead + [k]).astype(np.float16)
    fixture.write_case("half_models", name,
                       model([helper.make_node("MatMul", ["X", "W"], ["Y"])], [io("X", H, lead + [k])],
                             [io("Y", H, lead + [n])], [numpy_helper.from_array(w, "W")]), {"X": x})

w = weight(501, 320).astype(np.float16)
x = rng.standard_normal([3, 320]).astype(np.float16)
fixture.write_case("half_models", "gemm_transb_m3",
                   model([helper.make_node("Gemm", ["X", "W"], ["Y"], transB=1)], [io("X", H, [3, 320])],
                         [io("Y", H, [3, 501])], [numpy_helper.from_array(w, "W")]), {"X": x})

# Two layers, X (2, 1, 256) -> MatMul 256 x 688 -> Relu -> MatMul 688 x 256.
w1, w2 = weight(256, 688).astype(np.float16), weight(688, 256).astype(np.float16)
x = rng.standard_normal([2, 1, 256]).astype(np.float16)
nodes = [helper.make_node("MatMul", ["X", "W1"], ["H"]), helper.make_node("Relu", ["H"], ["R"]),
         helper.make_node("MatMul", ["R", "W2"], ["Y"])]
fixture.write_case("half_models", "mlp_b2",
                   model(nodes, [io("X", H, [2, 1, 256])], [io("Y", H, [2, 1, 256])],
                         [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")]), {"X": x})
(fixture.OUT / "half_models" / "OWN_CTEST_ENTRY").write_text(
    "tests/CMakeLists.txt runs this suite at --rtol 2e-3 --atol 5e-4: both runtimes sum in float and round to float16"
    " once per product, in other orders (make_half_weights.py)\n")
