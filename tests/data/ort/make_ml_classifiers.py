"""Suite `ml_classifiers`: one ai.onnx.ml SVMClassifier or LinearClassifier node per case, expected
outputs from ONNX Runtime 1.30's CPU kernels. Regenerate with
  /usr/bin/python3 tests/data/ort/make_ml_classifiers.py

The cases span the SVM kernels (LINEAR, POLY, RBF, SIGMOID), libsvm's pairwise votes and its Platt
probabilities coupled over three classes, the binary rules of a single rho, every post transform
(SOFTMAX, LOGISTIC, SOFTMAX_ZERO with scores of exactly 0, PROBIT) and the numeric input types
(float, double, int64, int32, a rank-1 [C] row). Labels are integers: the fixtures' .npy bridge to
onnxruntime-node carries no strings (string labels are in refeval's unit tests).

Where ORT 1.30 and the ONNX reference evaluator (whose rules refeval follows) part, refeval's unit
tests (tests/ops/ml/svm_classifier_test.cc) check the reference's values instead:
- PROBIT: ORT's inverse error function differs from the reference's approximation by up to 2e-3;
- SOFTMAX_ZERO over a row of zeros: ORT divides 0 by 0 (NaN), the reference writes 0.5;
- the label of a linear SVM with a single rho: ORT keeps its class label, the reference takes
  libsvm's binary rule.
"""
import numpy as np
from onnx import TensorProto, helper

import fixture

SUITE = "ml_classifiers"
ELEM = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
        np.int32: TensorProto.INT32}
rng = np.random.default_rng(7)


def case(name, op, x, **attrs):
    node = helper.make_node(op, ["X"], ["Y", "Z"], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", ELEM[x.dtype.type], list(x.shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.INT64, None),
                               helper.make_tensor_value_info("Z", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)],
                              ir_version=8, producer_name="refeval make_ml_classifiers.py")
    fixture.write_case(SUITE, name, model, {"X": x})


def floats(*shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


X = floats(6, 3)
# Three classes with 2, 1 and 2 support vectors: coefficients [classes - 1, vectors].
SVC3 = dict(classlabels_ints=[0, 1, 2], vectors_per_class=[2, 1, 2], support_vectors=floats(5, 3).ravel().tolist(),
            coefficients=floats(2, 5).ravel().tolist(), rho=[0.1, -0.2, 0.3])
PROBA3 = dict(prob_a=[-1.2, -0.8, -1.5], prob_b=[0.1, -0.2, 0.05])

case("svc3_rbf_probabilities", "SVMClassifier", X, kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0], **SVC3, **PROBA3)
case("svc3_poly_votes", "SVMClassifier", X, kernel_type="POLY", kernel_params=[0.5, 1.0, 2.0], **SVC3)
case("svc3_sigmoid_votes_softmax", "SVMClassifier", X, kernel_type="SIGMOID", kernel_params=[0.3, 0.1, 0.0],
     post_transform="SOFTMAX", **SVC3)
case("svc3_linear_probabilities_double", "SVMClassifier", X.astype(np.float64), kernel_params=[1.0, 0.0, 1.0], **SVC3, **PROBA3)

# Two classes, one rho: libsvm's binary decision (label 1 when the score is positive).
SVC2 = dict(classlabels_ints=[0, 1], vectors_per_class=[2, 2], support_vectors=floats(4, 3).ravel().tolist(),
            coefficients=floats(1, 4).ravel().tolist(), rho=[0.05])
case("svc2_rbf", "SVMClassifier", X, kernel_type="RBF", kernel_params=[0.4, 0.0, 0.0], **SVC2)
case("svc2_rbf_logistic", "SVMClassifier", X, kernel_type="RBF", kernel_params=[0.4, 0.0, 0.0], post_transform="LOGISTIC", **SVC2)
case("svc2_rbf_probabilities", "SVMClassifier", X, kernel_type="RBF", kernel_params=[0.4, 0.0, 0.0], prob_a=[-2.0], prob_b=[0.3],
     **SVC2)

# Linear mode (no support vectors): score[k] = rho[0] + x . coefficients[k]. ORT reads kernel_params even here.
# A single rho would make the label libsvm's binary 0 / 1, where ORT and the ONNX reference part (the
# reference's rule, refeval's, is in its unit tests): these give one rho per class pair.
LIN3 = dict(kernel_params=[1.0, 0.0, 1.0], classlabels_ints=[3, 5, 7], coefficients=floats(3, 3, scale=0.2).ravel().tolist(),
            rho=[0.1, 0.1, 0.1])
case("linear3_none_int64", "SVMClassifier", (10 * X).astype(np.int64), **LIN3)
case("linear3_softmax", "SVMClassifier", X, post_transform="SOFTMAX", **LIN3)
case("linear3_logistic_int32", "SVMClassifier", (10 * X).astype(np.int32), post_transform="LOGISTIC", **LIN3)
case("linear3_rank1", "SVMClassifier", X[0], post_transform="SOFTMAX", **LIN3)
# Scores of exactly 0 beside others: SOFTMAX_ZERO keeps them at 0.
case("linear3_softmax_zero", "SVMClassifier", np.array([[1, 0, -1], [2, 0.5, 0], [0, 3, 2]], np.float32), post_transform="SOFTMAX_ZERO",
     kernel_params=[1.0, 0.0, 1.0], classlabels_ints=[0, 1, 2], coefficients=[1.0, 0, 0, 0, 0, 0, 0.5, 0, 1], rho=[0.0, 0.0, 0.0])

# LinearClassifier with the same post transforms (their shared code in ml_common.h).
LC = dict(classlabels_ints=[1, 2, 3], coefficients=floats(3, 3, scale=0.3).ravel().tolist(), intercepts=[0.1, -0.1, 0.2])
for transform in ("SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"):
    case(f"linear_classifier_{transform.lower()}", "LinearClassifier", X, post_transform=transform, **LC)
