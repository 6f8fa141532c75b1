"""refeval.set_emulate_accuracy_level on an accuracy_level 4 MatMulNBits fixture whose expected
output is ONNX Runtime's int8 path (tests/data/ort/matmul_nbits_level4)."""
import os

import numpy as np
import onnx
from onnx import numpy_helper

import refeval

SOURCE = os.environ.get("REFEVAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CASE = os.path.join(SOURCE, "tests", "data", "ort", "matmul_nbits_level4", "b4_asym_block16_m5_bias_partial_block")


def load(name):
    return numpy_helper.to_array(onnx.load_tensor(os.path.join(CASE, "test_data_set_0", name)))


def test_the_emulation_reproduces_ort_and_is_off_by_default():
    sess = refeval.ReferenceEvaluator(os.path.join(CASE, "model.onnx"))
    a, ort = load("input_0.pb"), load("output_0.pb")
    assert not refeval.emulate_accuracy_level()
    (exact,) = sess.run(None, {"A": a})
    refeval.set_emulate_accuracy_level(True)
    try:
        assert refeval.emulate_accuracy_level()
        (emulated,) = sess.run(None, {"A": a})
    finally:
        refeval.set_emulate_accuracy_level(False)
    np.testing.assert_allclose(emulated, ort, rtol=1e-5, atol=1e-5)
    assert np.abs(exact - ort).max() > 100 * np.abs(emulated - ort).max()
