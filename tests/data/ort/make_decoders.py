#!/usr/bin/python3
"""Writes the decoder suites (ORT 1.30's outputs as the expected ones; see fixture.py):

  decoders_genai     the GenAI-builder form, int4 symmetric and asymmetric (packed zero points),
                     lm_head bias, 2 layers, 4 heads over 2 KV heads, rotary inside GQA
  decoders_optimum   the Optimum export after ORT's optimizer (MultiHeadAttention, RotaryEmbedding)
  decoders_torch     a torch.onnx.export of Hugging Face's Llama code, plain ai.onnx ops (GQA by repeat_kv)
  decoders_portable  the opset-24 portable form (Attention, RMSNormalization, RotaryEmbedding,
                     TensorScatter static cache)

Each model runs a prefill over the prompt with an empty past, then one decode step fed with the
prefill's present.* (ORT's values), at batch 1 and batch 2 (and a padded batch where the form supports it).
"""
import numpy as np
from onnx import numpy_helper
import onnx

import decoders
import fixture

RNG = np.random.default_rng(7)


def load_outputs(folder, model):
    return {o.name: numpy_helper.to_array(onnx.load_tensor(str(folder / "test_data_set_0" / f"output_{k}.pb")))
            for k, o in enumerate(model.graph.output)}


def past(cfg, batch, length):
    return {f"past_key_values.{i}.{kind}": np.zeros((batch, cfg.kv_heads, length, cfg.head_size), np.float32)
            for i in range(cfg.layers) for kind in ("key", "value")}


def presents_as_past(cfg, outputs):
    return {f"past_key_values.{i}.{kind}": outputs[f"present.{i}.{kind}"]
            for i in range(cfg.layers) for kind in ("key", "value")}


def ids(batch, length, cfg):
    return RNG.integers(0, cfg.vocab, (batch, length), dtype=np.int64)


def prefill_then_decode(suite, name, cfg, model, mask, make_feeds):
    """One case folder: test_data_set_0 the prefill, test_data_set_1 the decode step. mask: (B, S) prompt mask, 1 = token, 0 = right padding. make_feeds(step, ids, mask, past)
    returns the feeds of one run; past is None for the prefill."""
    batch, prompt = mask.shape
    folder = fixture.write_case(suite, name, model, make_feeds(ids(batch, prompt, cfg), mask, None))
    state = presents_as_past(cfg, load_outputs(folder, model))
    grown = np.concatenate([mask, np.ones((batch, 1), np.int64)], axis=1)
    fixture.add_data_set(folder, model, make_feeds(ids(batch, 1, cfg), grown, state))


def positions(mask, new):
    """Hugging Face's position ids: cumsum(mask) - 1 (padding at 1), the last `new` columns."""
    pos = np.cumsum(mask, axis=1) - 1
    pos[mask == 0] = 1
    return pos[:, -new:].astype(np.int64)


def genai_suite():
    for variant, symmetric, batch in (("int4_sym_b1", True, 1), ("int4_asym_b1", False, 1), ("int4_asym_b2", False, 2)):
        cfg = decoders.Config(symmetric=symmetric, seed=len(variant) + batch)
        model = decoders.genai(cfg)

        def feeds(input_ids, mask, state, cfg=cfg):
            f = {"input_ids": input_ids, "attention_mask": mask}
            f.update(state if state is not None else past(cfg, input_ids.shape[0], 0))
            return f

        prefill_then_decode("decoders_genai", variant, cfg, model, np.ones((batch, 5), np.int64), feeds)
        if batch == 2:
            # GQA supports right padding only: the second prompt is two tokens shorter. Prefill only:
            # after it, the rows' present buffers hold positions ORT leaves unwritten.
            mask = np.ones((batch, 5), np.int64)
            mask[1, 3:] = 0
            fixture.write_case("decoders_genai", f"{variant}_right_padded_prefill", model,
                               feeds(ids(batch, 5, cfg), mask, None))


def genai_level4_suite():
    """decoders_genai_level4: int4_asym_b1 with accuracy_level 4 on every MatMulNBits (the GenAI
    builder's CPU default), fed the same prefill and decode inputs as decoders_genai/int4_asym_b1.
    ORT computes it with A quantized to int8 per block; refeval reproduces that only with
    --emulate-accuracy-level (its own ctest entry), and without the flag gives the exact math:
    tests/cli/generate_test.sh checks it against int4_asym_b1's level-0 outputs."""
    cfg = decoders.Config(symmetric=False, seed=len("int4_asym_b1") + 1, accuracy_level=4)
    model = decoders.genai(cfg)
    exact = fixture.OUT / "decoders_genai" / "int4_asym_b1"
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]

    def inputs(k):
        return {n: numpy_helper.to_array(onnx.load_tensor(str(exact / f"test_data_set_{k}" / f"input_{j}.pb")))
                for j, n in enumerate(names)}

    folder = fixture.write_case("decoders_genai_level4", "int4_asym_b1", model, inputs(0))
    fixture.add_data_set(folder, model, inputs(1))
    (folder.parent / "OWN_CTEST_ENTRY").write_text(
        "accuracy_level 4 outputs of ORT's int8 path: tests/CMakeLists.txt runs this suite with --emulate-accuracy-level\n")


def optimum_suite():
    cfg = decoders.Config(kv_heads=4, seed=11)
    model = decoders.optimum(cfg)

    def feeds(input_ids, mask, state):
        f = {"input_ids": input_ids, "attention_mask": mask, "position_ids": positions(mask, input_ids.shape[1])}
        f.update(state if state is not None else past(cfg, input_ids.shape[0], 0))
        return f

    prefill_then_decode("decoders_optimum", "b1", cfg, model, np.ones((1, 6), np.int64), feeds)
    # Right padding: with left padding the padded query rows see no key at all, and such rows are
    # left undefined by MultiHeadAttention's contract (ORT and refeval fill them differently); the
    # generate tests check left padding by the ids it generates.
    mask = np.ones((2, 6), np.int64)
    mask[0, 4:] = 0
    prefill_then_decode("decoders_optimum", "b2_right_padded", cfg, model, mask, feeds)


def torch_suite():
    cfg = decoders.Config(seed=31)
    model = decoders.torch_export(cfg)

    def feeds(input_ids, mask, state):
        f = {"input_ids": input_ids, "attention_mask": mask, "position_ids": positions(mask, input_ids.shape[1])}
        f.update(state if state is not None else past(cfg, input_ids.shape[0], 0))
        return f

    prefill_then_decode("decoders_torch", "b1", cfg, model, np.ones((1, 5), np.int64), feeds)
    mask = np.ones((2, 6), np.int64)
    mask[1, :3] = 0
    prefill_then_decode("decoders_torch", "b2_left_padded", cfg, model, mask, feeds)

    # the same decoder merged as Optimum merges it (If on use_cache_branch)
    def merged_feeds(input_ids, mask, state):
        f = feeds(input_ids, mask, state)
        f["use_cache_branch"] = np.array([state is not None])
        return f

    prefill_then_decode("decoders_torch", "merged_b1", cfg, decoders.merged(model), np.ones((1, 5), np.int64), merged_feeds)


def portable_suite():
    cfg = decoders.Config(seed=23)
    model = decoders.portable(cfg)
    max_len = 16

    def feeds(input_ids, mask, state):
        batch, new = input_ids.shape
        f = {"input_ids": input_ids, "cache_position": (mask.sum(axis=1) - new).astype(np.int64),
             "position_ids": positions(mask, new)}
        f.update(state if state is not None else past(cfg, batch, max_len))
        return f

    prefill_then_decode("decoders_portable", "b1", cfg, model, np.ones((1, 5), np.int64), feeds)
    prefill_then_decode("decoders_portable", "b2", cfg, model, np.ones((2, 4), np.int64), feeds)


if __name__ == "__main__":
    genai_suite()
    genai_level4_suite()
    optimum_suite()
    torch_suite()
    portable_suite()
