// Values between refeval and numpy: tensors as numpy arrays (float16 native; bfloat16, float8 and
// float4 as ml_dtypes arrays when ml_dtypes is importable, else their raw bit patterns as uint16 /
// uint8; int4/uint4/int2/uint2 as int8/uint8 values), sequences as lists, maps as dicts,
// optionals as None or their value.
#pragma once

#include <map>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval::python {

namespace py = pybind11;

py::object to_python(const Value& v);
py::array tensor_to_numpy(const Tensor& t);
// `declared` (the input's declared type, may be null) decides None / optional wrapping.
Value from_python(const py::handle& obj, const ValueType* declared, const std::string& name);
Tensor numpy_to_tensor(const py::handle& obj, const std::string& name);
// A feed dict, each value converted for the graph input of its name.
std::map<std::string, Value> feeds_from_python(const py::dict& feeds, const Graph& graph);

}  // namespace refeval::python
