#!/usr/bin/python3
"""Expected token ids of `refeval generate` (tests/cli/generate_test.sh): greedy decoding of the
decoders in tests/data/ort/ driven step by step in ONNX Runtime 1.30 (benchmarks/ort/generate_ort.js),
16 new tokens from a 32-token prompt, batch 1 and batch 2 with padding where the form supports it.
Writes <case>.prompt.npy, <case>.mask.npy (when padded) and <case>.ids (one row of ids per line),
and cases.txt: "<case> <model> <extra refeval options>". Regenerate after changing the models."""
import os
import pathlib
import subprocess

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
rng = np.random.default_rng(3)

# case, model (from the repo root), batch, padding ("left", "right", None), extra options
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
]

lines = []
for name, model, batch, padding, extra in CASES:
    prompt = rng.integers(0, 96, (batch, 32), dtype=np.int64)
    np.save(HERE / f"{name}.prompt.npy", prompt)
    options = ["--prompt-file", f"tests/data/generate/{name}.prompt.npy"] + extra
    ort = ["--prompt", ";".join(" ".join(map(str, r)) for r in prompt)] + extra
    if padding:
        mask = np.ones((batch, 32), np.int64)
        mask[1, :5] = 0 if padding == "left" else 1
        if padding == "right":
            mask[1, -5:] = 0
        np.save(HERE / f"{name}.mask.npy", mask)
        options += ["--prompt-mask", f"tests/data/generate/{name}.mask.npy"]
        ort += ["--prompt-mask", str(HERE / f"{name}.mask.npy")]
    env = dict(os.environ, NODE_PATH=str(ROOT / "benchmarks" / "ort" / "node_modules"))
    out = subprocess.run(["node", str(ROOT / "benchmarks" / "ort" / "generate_ort.js"), str(ROOT / model), "--new-tokens", "16"] + ort,
                         check=True, capture_output=True, text=True, env=env).stdout.splitlines()
    (HERE / f"{name}.ids").write_text("\n".join(out[:batch]) + "\n")
    lines.append(" ".join([name, model] + options))
(HERE / "cases.txt").write_text("\n".join(lines) + "\n")
