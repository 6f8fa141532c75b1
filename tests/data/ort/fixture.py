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
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE  # where the suites go (a test of this script may point it elsewhere)
ORT_MODULES = HERE.parents[2] / "benchmarks" / "ort" / "node_modules"


def write_case(suite, name, model, feeds):
    """Writes model and feeds (a dict name -> numpy array) as tests/data/ort/<suite>/<name>/ with
    test_data_set_0, ORT's outputs as the expected ones. Returns the folder."""
    folder = OUT / suite / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # No onnx.checker: Debian 12's onnx (1.12) predates opset 23 and the contrib schemas; ORT checks.
    onnx.save(model, folder / "model.onnx")
    add_data_set(folder, model, feeds)
    return folder


def add_data_set(folder, model, feeds):
    """Adds the next test_data_set_K to a case folder (e.g. a decode step after its prefill) and
    returns ORT's outputs as a dict name -> numpy array."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if sorted(inputs) != sorted(feeds):
        raise ValueError(f"{folder.name}: feeds {sorted(feeds)} do not match the graph inputs {sorted(inputs)}")
    work = folder / ".ort"
    shutil.rmtree(work, ignore_errors=True)
    save_feeds(folder, feeds)
    subprocess.run(["node", str(HERE / "run_ort.js"), str(folder)], check=True, env=ort_env())
    data = folder / f"test_data_set_{len(list(folder.glob('test_data_set_*')))}"
    data.mkdir()
    for k, key in enumerate(inputs):
        write_pb(data / f"input_{k}.pb", feeds[key], key)
    outputs = {}
    for k, out in enumerate(model.graph.output):
        outputs[out.name] = np.load(work / "outputs" / f"{out.name}.npy")
        write_pb(data / f"output_{k}.pb", outputs[out.name], out.name)
    shutil.rmtree(work)
    return outputs


def write_pb(path, array, name):
    path.write_bytes(numpy_helper.from_array(np.asarray(array), name).SerializeToString())


def write_sequences(model, by_type, got, data):
    """Ends `model` with one SequenceConstruct per element type (by_type: element type -> output
    names, in order; each sequence named after its type) and writes ORT's values `got` (name ->
    array) as the expected sequences, data/output_K.pb: a file per type rather than per output
    keeps a suite of many small cases small on disk (make_edge_shapes.py, make_contrib_edges.py)."""
    for k, (elem, names) in enumerate(by_type.items()):
        seq_name = TensorProto.DataType.Name(elem).lower()
        model.graph.node.append(helper.make_node("SequenceConstruct", names, [seq_name], name=seq_name))
        model.graph.output.append(helper.make_value_info(seq_name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, None))))
        seq = onnx.SequenceProto(name=seq_name, elem_type=onnx.SequenceProto.TENSOR)
        seq.tensor_values.extend(numpy_helper.from_array(got[n], n) for n in names)
        (data / f"output_{k}.pb").write_bytes(seq.SerializeToString())


def ort_env():
    """The environment run_ort.js runs in: node finds onnxruntime-node in benchmarks/ort."""
    return dict(os.environ, NODE_PATH=str(ORT_MODULES))


def save_feeds(folder, feeds):
    """Writes the feeds run_ort.js reads, folder/.ort/feeds/NAME.npy."""
    (folder / ".ort" / "feeds").mkdir(parents=True)
    for key, value in feeds.items():
        np.save(folder / ".ort" / "feeds" / f"{key}.npy", value)


def stage_case(folder, model, feeds):
    """Writes folder/model.onnx and the feeds run_ort.js reads."""
    save_feeds(folder, feeds)
    onnx.save(model, folder / "model.onnx")


def write_inputs(folder, model, feeds):
    """Makes folder/test_data_set_0 with the model's inputs as input_K.pb; returns that folder."""
    data = folder / "test_data_set_0"
    data.mkdir()
    for k, inp in enumerate(model.graph.input):
        write_pb(data / f"input_{k}.pb", feeds[inp.name], inp.name)
    return data


def run_ort_on(folders):
    """Runs run_ort.js on case folders prepared as add_data_set prepares one (FOLDER/.ort/feeds), all
    in one node process; when ORT refuses some, finds them one at a time. Returns {folder name: ORT's
    last error line} of the refused ones (the others have their FOLDER/.ort/outputs)."""
    env = ort_env()
    script = str(HERE / "run_ort.js")
    refused = {}
    if subprocess.run(["node", script] + [str(f) for f in folders], env=env, capture_output=True).returncode != 0:
        for f in folders:
            if (f / ".ort" / "outputs").exists():
                continue
            p = subprocess.run(["node", script, str(f)], env=env, capture_output=True, text=True)
            if p.returncode != 0:
                refused[f.name] = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "?"
    return refused
