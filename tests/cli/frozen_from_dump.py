#!/usr/bin/python3
"""The inputs a reduced or extracted model was given (DIR/test_data_set_0/input_*.pb) equal the
values of the same names in a dump of the original run (`refeval run --dump`): what `reduce` and
`node --extract` froze is what the original computed, checked against files refeval wrote in
another run. Prints one line per input; exits 1 naming the first that differs or is missing.
    frozen_from_dump.py DIR DUMP"""
import json
import pathlib
import sys

import numpy as np
import onnx
from onnx import numpy_helper

folder, dump = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
index = {e["name"]: e["file"] for e in json.load(open(dump / "index.json"))}
inputs = sorted((folder / "test_data_set_0").glob("input_*.pb"))
if not inputs:
    sys.exit(f"{folder}: no inputs")
for path in inputs:
    tensor = onnx.load_tensor(str(path))
    if tensor.name not in index:
        sys.exit(f"{path.name}: '{tensor.name}' is not a value of the original run")
    got, want = numpy_helper.to_array(tensor), numpy_helper.to_array(onnx.load_tensor(str(dump / index[tensor.name])))
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want, equal_nan=True):
        sys.exit(f"{path.name}: '{tensor.name}' differs from the original run's value")
    print(f"{path.name}: '{tensor.name}' {got.dtype}{list(got.shape)} equals the original run's")
