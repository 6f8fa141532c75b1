"""refeval.compare_models: two decoders' next-token figures, checked against numpy's own
perplexity, KL and agreement computed from the models' logits window by window."""
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import refeval

SOURCE = os.environ.get("REFEVAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DECODER = os.path.join(SOURCE, "tests", "data", "ort", "decoders_torch", "b1", "model.onnx")


def perturbed(path, out, scale=1.05):
    """The decoder with its largest weight scaled: close predictions, not equal ones."""
    m = onnx.load(path)
    big = max(m.graph.initializer, key=lambda t: np.prod(t.dims))
    w = numpy_helper.to_array(big) * np.float32(scale)
    big.CopyFrom(numpy_helper.from_array(w.astype(np.float32), big.name))
    onnx.save(m, out)
    return out


def logits(path, window):
    """Every position's logits of one window, one prefill from an empty cache."""
    m = onnx.load(path)
    ev = refeval.ReferenceEvaluator(m)
    n = len(window)
    feeds = {"input_ids": np.array([window], np.int64), "attention_mask": np.ones((1, n), np.int64),
             "position_ids": np.arange(n, dtype=np.int64)[None]}
    for i in m.graph.input:
        if i.name.startswith("past_key_values"):
            dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
            feeds[i.name] = np.zeros((1, dims[1], 0, dims[3]), np.float32)
    return ev.run(["logits"], feeds)[0][0].astype(np.float64)


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def test_compare_models_matches_numpy(tmp_path):
    b = perturbed(DECODER, str(tmp_path / "b.onnx"))
    tokens = np.random.default_rng(3).integers(0, 96, (2, 24))
    f = refeval.compare_models(DECODER, b, tokens, context=12, generate=4)
    assert f["windows"] == 4 and f["tokens"] == 4 * 11
    nll_a, nll_b, kl, top1, top5 = [], [], [], [], []
    for row in tokens:
        for start in (0, 12):
            w = list(row[start:start + 12])
            la, lb = log_softmax(logits(DECODER, w)), log_softmax(logits(b, w))
            for i in range(11):
                nll_a.append(-la[i, w[i + 1]])
                nll_b.append(-lb[i, w[i + 1]])
                kl.append(float(np.sum(np.exp(la[i]) * (la[i] - lb[i]))))
                top1.append(np.argmax(la[i]) == np.argmax(lb[i]))
                ta, tb = np.argsort(-la[i], kind="stable")[:5], np.argsort(-lb[i], kind="stable")[:5]
                top5.append(len(set(ta) & set(tb)) / 5)
    assert f["perplexity_a"] == pytest.approx(np.exp(np.mean(nll_a)), rel=1e-9)
    assert f["perplexity_b"] == pytest.approx(np.exp(np.mean(nll_b)), rel=1e-9)
    assert f["kl_mean"] == pytest.approx(np.mean(kl), rel=1e-6)
    assert f["kl_p99"] == pytest.approx(np.percentile(kl, 99), rel=1e-6)
    assert f["kl_max"] == pytest.approx(max(kl), rel=1e-6)
    assert f["top1_agreement"] == pytest.approx(np.mean(top1))
    assert f["top5_overlap"] == pytest.approx(np.mean(top5))
    assert 0 < f["kl_mean"] < 1  # close models, not equal ones
    assert len(f["generate"]["first_divergence"]) == 4
    per_token = f["per_token"]
    assert len(per_token) == 44
    assert list(per_token["kl"]) == pytest.approx(kl, rel=1e-6)


def test_compare_models_same_model_agrees_everywhere():
    tokens = np.arange(16) % 96
    f = refeval.compare_models(DECODER, DECODER, tokens, generate=3)
    assert f["kl_mean"] == 0 and f["top1_agreement"] == 1 and f["perplexity_ratio"] == 1
    assert f["generate"]["first_divergence"] == [None]


def test_compare_models_refuses_a_token_outside_the_vocabulary():
    with pytest.raises(Exception, match="outside .* vocabulary of 96"):
        refeval.compare_models(DECODER, DECODER, np.array([[1, 2, 500, 3]]))
