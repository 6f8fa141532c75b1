#!/usr/bin/python3
"""Structure-aware fuzzing of `refeval optimize`: real exports with an attribute or a small int64
constant set to an edge value.

The byte-level fuzz targets (fuzz_optimize) mostly make files the loader refuses. A user's invalid
graph is different: it loads, and only running a node tells that its Concat axis is past the
rank, its Transpose perm names an axis twice, its Unsqueeze axes repeat. The optimizer does not
run nodes, so each pass and the shape propagation meet such values. Each iteration takes a model
of tests/data/optimize (or the fuzz corpus), sets 1-3 integer attributes or int64 constants
(Reshape shapes, Slice bounds, Gather indices, axes) to values from -9 to 2^62, and runs
`optimize` for both targets. A signal, an uncaught C++ exception ("std::...", "terminate"), an
exit code other than 0-3 or a minute without an answer is a finding: the model is kept with
what was changed.

  optimize_attributes.py REFEVAL SOURCE_DIR [--iterations N] [--seed S] [--keep DIR]

Exits 1 if something was found (one line each), 0 otherwise.
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

EDGE_VALUES = [-9, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 9, 64, 2**31, -2**31, 2**62]


def mutate(model, rng):
    """Changes 1-3 integer attributes or small int64 constants in place; says what it changed."""
    g, changes = model.graph, []
    for _ in range(rng.randint(1, 3)):
        value = rng.choice(EDGE_VALUES)
        if rng.random() < 0.5:
            found = [(n, a) for n in g.node for a in n.attribute if a.type == onnx.AttributeProto.INT
                     or (a.type == onnx.AttributeProto.INTS and len(a.ints) > 0)]
            if not found:
                continue
            n, a = rng.choice(found)
            if a.type == onnx.AttributeProto.INT:
                a.i = value
                changes.append(f"{n.name}.{a.name} = {value}")
            else:
                k = rng.randrange(len(a.ints))
                a.ints[k] = value
                changes.append(f"{n.name}.{a.name}[{k}] = {value}")
        else:
            tensors = [(t.name, t) for t in g.initializer if t.data_type == onnx.TensorProto.INT64 and 0 < np.prod(t.dims or [1]) <= 8]
            tensors += [(n.name, a.t) for n in g.node if n.op_type == "Constant" for a in n.attribute
                        if a.name == "value" and a.t.data_type == onnx.TensorProto.INT64 and 0 < np.prod(a.t.dims or [1]) <= 8]
            if not tensors:
                continue
            name, t = rng.choice(tensors)
            values = numpy_helper.to_array(t).copy()
            flat = values.reshape(-1)
            k = rng.randrange(flat.size)
            flat[k] = value
            t.CopyFrom(numpy_helper.from_array(flat.reshape(values.shape), t.name))
            changes.append(f"{name}[{k}] = {value}")
    return changes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("refeval")
    ap.add_argument("source_dir")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="where to write the models that failed (default: a temporary folder, removed)")
    args = ap.parse_args()
    models = sorted(glob.glob(os.path.join(args.source_dir, "tests/data/optimize/*/model.onnx")))
    models += sorted(glob.glob(os.path.join(args.source_dir, "tests/fuzz/corpus/optimize/*.onnx")))
    models = [m for m in models if os.path.getsize(m) < 3_000_000]  # the larger ones add time, not forms
    if not models:
        sys.exit(f"optimize_attributes.py: no model under {args.source_dir}/tests/data/optimize")
    rng = random.Random(args.seed)
    found = 0
    with tempfile.TemporaryDirectory() as work:
        keep = args.keep or work
        os.makedirs(keep, exist_ok=True)
        for it in range(args.iterations):
            path = rng.choice(models)
            model = onnx.load(path)
            changes = mutate(model, rng)
            mutated = os.path.join(work, "model.onnx")
            onnx.save(model, mutated)
            for target in ("ort", "onnx"):
                cmd = [args.refeval, "optimize", mutated, "-o", os.path.join(work, "out.onnx"), "--target", target]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                    what = None
                    if r.returncode < 0:
                        what = f"signal {-r.returncode}"
                    elif r.returncode > 3 or "std::" in r.stderr or "terminate" in r.stderr:
                        what = f"exit {r.returncode}: {r.stderr.strip()[-160:]}"
                except subprocess.TimeoutExpired:
                    what = "no answer in 60 s"
                if what:
                    found += 1
                    kept = os.path.join(keep, f"{args.seed}_{it}_{os.path.basename(os.path.dirname(path))}.onnx")
                    onnx.save(model, kept)
                    print(f"FOUND ({what}) --target {target} on {os.path.relpath(path, args.source_dir)} with "
                          f"{'; '.join(changes)}" + (f" (kept: {kept})" if args.keep else ""))
                    break
    print(f"optimize_attributes.py: {args.iterations} mutated models, seed {args.seed}: {found} found")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
