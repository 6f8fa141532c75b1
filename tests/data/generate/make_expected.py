#!/usr/bin/python3
"""Expected ids and logits of `refeval generate` (tests/cli/generate_test.sh): greedy decoding of the
decoders in tests/data/ort/ (and ORT's gpt2_helper export with a stacked past) driven step by step
in ONNX Runtime 1.30 by ort_greedy.js (the loop of benchmarks/ort/generate_ort.js, plus --eos, a
stacked past and the logits of every step), 16 new tokens from a 32-token prompt, batch 1 and
batch 2 with padding where the form supports it.

Writes, per case: <case>.prompt.npy, <case>.mask.npy (when padded), <case>.ids (one row of ids per
line; a row that produced the --eos id is padded with it) and <case>.logits.npy, float32
(steps, batch, vocab): the logits each step's argmax read, the prefill's at each row's last valid
position, a decode step's at its one position (steps is 16, fewer when every row stopped). And
cases.txt: "<case> <model> <extra refeval options>"; a model WORK/<file> is made by the test in its
scratch folder (int64_mask.py: the gpt2_helper export takes a float mask, generate feeds int64).

No cycles: every row's ids must have no period of length <= 4 over their last 8 ids (cycles(),
asserted again by the test on the .ids): a model that ignores its cache also falls into a short
cycle, and a cycle checks few distinct steps. A case's prompt is drawn from one shared stream
(default_rng(3), in the order of CASES, so the prompts written before the check stay as they
were); when ORT's ids cycle, the prompt is redrawn from default_rng([3, case index, attempt]),
attempt 1, 2, ... until they do not. A row that stops on --eos is exempt (its ids end in the eos
padding); the eos case picks its id from row 0's continuation without --eos: the first id from
step 3 on that row 0 has not produced before and row 1 never produces, so row 0 stops at that
step and row 1 runs to the end (its ids are asserted to be unchanged by row 0's stop).

Also checks that ort_greedy.js gives generate_ort.js's ids on every case that script can run
(no --eos, no stacked past). Regenerate after changing the models (about a minute)."""
import os
import pathlib
import subprocess
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ENV = dict(os.environ, NODE_PATH=str(ROOT / "benchmarks" / "ort" / "node_modules"))
NEW_TOKENS, PROMPT_LEN, PROMPT_VOCAB = 16, 32, 96
WINDOW, MAX_PERIOD = 8, 4
GPT2_STACKED = "tests/data/optimize/ort_gpt2_past_opset17/model.onnx"


def cycles(ids, window=WINDOW, max_period=MAX_PERIOD):
    """The period (1..max_period) of ids' last `window` ids, or 0 when they have none."""
    tail = list(ids)[-window:]
    for p in range(1, max_period + 1):
        if all(tail[i] == tail[i + p] for i in range(len(tail) - p)):
            return p
    return 0


def stopped(ids, eos):
    """ids stop on eos: eos at some step, and eos on every step after it."""
    return eos is not None and eos in ids and all(t == eos for t in ids[ids.index(eos):])


# case, model (from the repo root; WORK/ = made by the test), batch, padding ("left", "right",
# None), extra options; "eos" in the options marks the case whose id is chosen here
CASES = [
    ("optimum_b1", "tests/data/ort/decoders_optimum/b1/model.onnx", 1, None, []),
    ("optimum_b2_left_padded", "tests/data/ort/decoders_optimum/b1/model.onnx", 2, "left", []),
    ("torch_b1", "tests/data/ort/decoders_torch/b1/model.onnx", 1, None, []),
    ("torch_b2_left_padded", "tests/data/ort/decoders_torch/b1/model.onnx", 2, "left", []),
    ("torch_merged_b2", "tests/data/ort/decoders_torch/merged_b1/model.onnx", 2, "left", []),
    ("portable_b1", "tests/data/ort/decoders_portable/b1/model.onnx", 1, None, ["--max-length", "48"]),
    ("portable_b2", "tests/data/ort/decoders_portable/b1/model.onnx", 2, None, ["--max-length", "48"]),
    ("genai_int4_b1", "tests/data/ort/decoders_genai/int4_sym_b1/model.onnx", 1, None, []),
    ("genai_int4_asym_b2_right_padded", "tests/data/ort/decoders_genai/int4_asym_b2/model.onnx", 2, "right", []),
    ("genai_int4_shared_buffer", "tests/data/ort/decoders_genai/int4_sym_b1/model.onnx", 1, None, ["--max-length", "48"]),
    ("ort_gpt2_stacked_b2_left_padded", "WORK/ort_gpt2_past_int64_mask.onnx", 2, "left", []),
    ("optimum_b2_eos", "tests/data/ort/decoders_optimum/b1/model.onnx", 2, None, ["eos"]),
]


def ort_greedy(model, prompt, mask_file, extra, logits_file=None):
    """ort_greedy.js's ids (one list per row) and its number of steps."""
    ort = ["--prompt", ";".join(" ".join(map(str, r)) for r in prompt), "--new-tokens", str(NEW_TOKENS)] + extra
    if mask_file:
        ort += ["--prompt-mask", str(mask_file)]
    if logits_file:
        ort += ["--logits", str(logits_file)]
    out = subprocess.run(["node", str(HERE / "ort_greedy.js"), str(model)] + ort,
                         check=True, capture_output=True, text=True, env=ENV).stdout.splitlines()
    assert out[len(prompt)].startswith("steps "), out
    return [list(map(int, line.split())) for line in out[:len(prompt)]], int(out[len(prompt)].split()[1])


def generate_ort(model, prompt, mask_file, extra):
    """benchmarks/ort/generate_ort.js's ids."""
    ort = ["--prompt", ";".join(" ".join(map(str, r)) for r in prompt), "--new-tokens", str(NEW_TOKENS)] + extra
    if mask_file:
        ort += ["--prompt-mask", str(mask_file)]
    out = subprocess.run(["node", str(ROOT / "benchmarks" / "ort" / "generate_ort.js"), str(model)] + ort,
                         check=True, capture_output=True, text=True, env=ENV).stdout.splitlines()
    return [list(map(int, line.split())) for line in out[:len(prompt)]]


def main():
    scratch = pathlib.Path(tempfile.mkdtemp())
    subprocess.run(["/usr/bin/python3", str(HERE / "int64_mask.py"), str(ROOT / GPT2_STACKED),
                    str(scratch / "ort_gpt2_past_int64_mask.onnx")], check=True)
    stream = np.random.default_rng(3)
    lines = []
    for index, (name, model, batch, padding, extra) in enumerate(CASES):
        path = scratch / model[len("WORK/"):] if model.startswith("WORK/") else ROOT / model
        want_eos = "eos" in extra
        extra = [e for e in extra if e != "eos"]
        mask = None
        if padding:
            mask = np.ones((batch, PROMPT_LEN), np.int64)
            if padding == "left":
                mask[1, :5] = 0
            else:
                mask[1, -5:] = 0
            np.save(HERE / f"{name}.mask.npy", mask)
        mask_file = HERE / f"{name}.mask.npy" if padding else None
        prompt = stream.integers(0, PROMPT_VOCAB, (batch, PROMPT_LEN), dtype=np.int64)
        for attempt in range(1, 200):
            ids, _ = ort_greedy(path, prompt, mask_file, extra)
            eos = None
            if want_eos:  # row 0 stops at step >= 3 on an id row 1 never produces
                eos = next((t for s, t in enumerate(ids[0]) if s >= 3 and t not in ids[0][:s] and t not in ids[1]), None)
            if not any(cycles(r) for r in ids) and (not want_eos or eos is not None):
                break
            prompt = np.random.default_rng([3, index, attempt]).integers(0, PROMPT_VOCAB, (batch, PROMPT_LEN), dtype=np.int64)
        else:
            raise SystemExit(f"{name}: no prompt found whose ids do not cycle")
        if want_eos:
            extra = extra + ["--eos", str(eos)]
            free = ids
        raw = scratch / f"{name}.f32"
        ids, steps = ort_greedy(path, prompt, mask_file, extra, raw)
        if want_eos:
            stop = free[0].index(eos)
            assert ids[0] == free[0][:stop + 1] + [eos] * (NEW_TOKENS - 1 - stop), (ids[0], free[0])
            assert ids[1] == free[1] and eos not in ids[1], (ids[1], free[1])
        else:
            assert ids == generate_ort(path, prompt, mask_file, extra), f"{name}: ort_greedy.js differs from generate_ort.js"
        eos = int(extra[extra.index("--eos") + 1]) if "--eos" in extra else None
        for r in ids:
            assert stopped(r, eos) or not cycles(r), (name, r)
        logits = np.fromfile(raw, np.float32).reshape(steps, batch, -1)
        np.save(HERE / f"{name}.prompt.npy", prompt)
        np.save(HERE / f"{name}.logits.npy", logits)
        (HERE / f"{name}.ids").write_text("\n".join(" ".join(map(str, r)) for r in ids) + "\n")
        options = ["--prompt-file", f"tests/data/generate/{name}.prompt.npy"] + extra
        if padding:
            options += ["--prompt-mask", f"tests/data/generate/{name}.mask.npy"]
        lines.append(" ".join([name, model] + options))
        print(f"{name}: {attempt - 1} redraws, {steps} steps, logits {logits.shape}" + (f", eos {eos}" if eos is not None else ""))
    (HERE / "cases.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
