"""Fixtures whose expected outputs come from ONNX Runtime 1.30 (onnxruntime-node).

A fixture is a backend-test folder, tests/data/ort/<suite>/<case>/model.onnx with
test_data_set_0/input_K.pb and output_K.pb, so `refeval test` checks it and the tests never need
ORT. The make_*.py scripts beside this file build the models and feeds; regenerate with
  python3 tests/data/ort/make_<suite>.py
after `npm install` in benchmarks/ort (ONNXRUNTIME_NODE_INSTALL=skip).
"""
import os
import pathlib
import shutil
import subprocess

import numpy as np
import onnx
from onnx import numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE  # where the suites go (a test of this script may point it elsewhere)
ORT_MODULES = HERE.parents[2] / "benchmarks" / "ort" / "node_modules"


def write_case(suite, name, model, feeds):
    """Writes model and feeds (a dict name -> numpy array, in graph-input order) as
    tests/data/ort/<suite>/<name>/, with ORT's outputs as the expected ones."""
    folder = OUT / suite / name
    shutil.rmtree(folder, ignore_errors=True)
    (folder / ".ort" / "feeds").mkdir(parents=True)
    # No onnx.checker: Debian 12's onnx (1.12) predates opset 23 and the contrib schemas; ORT checks.
    onnx.save(model, folder / "model.onnx")
    inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if sorted(inputs) != sorted(feeds):
        raise ValueError(f"{name}: feeds {sorted(feeds)} do not match the graph inputs {sorted(inputs)}")
    for key, value in feeds.items():
        np.save(folder / ".ort" / "feeds" / f"{key}.npy", value)
    env = dict(os.environ, NODE_PATH=str(ORT_MODULES))
    subprocess.run(["node", str(HERE / "run_ort.js"), str(folder)], check=True, env=env)
    data = folder / "test_data_set_0"
    data.mkdir()
    for k, key in enumerate(inputs):
        write_pb(data / f"input_{k}.pb", feeds[key], key)
    for k, out in enumerate(model.graph.output):
        write_pb(data / f"output_{k}.pb", np.load(folder / ".ort" / "outputs" / f"{out.name}.npy"), out.name)
    shutil.rmtree(folder / ".ort")
    return folder


def write_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(np.asarray(array), name).SerializeToString())
