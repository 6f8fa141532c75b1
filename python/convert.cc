#include "convert.h"

#include <cstring>

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::python {
namespace {

// The numpy dtype that holds refeval's storage bytes of `t` as they are.
py::dtype storage_dtype(DType t) {
  switch (t) {
    case DType::Float: return py::dtype("float32");
    case DType::Double: return py::dtype("float64");
    case DType::Float16: return py::dtype("float16");
    case DType::Int8: case DType::Int4: case DType::Int2: return py::dtype("int8");
    case DType::UInt8: case DType::UInt4: case DType::UInt2: return py::dtype("uint8");
    case DType::Int16: return py::dtype("int16");
    case DType::UInt16: return py::dtype("uint16");
    case DType::Int32: return py::dtype("int32");
    case DType::UInt32: return py::dtype("uint32");
    case DType::Int64: return py::dtype("int64");
    case DType::UInt64: return py::dtype("uint64");
    case DType::Bool: return py::dtype("bool");
    case DType::Complex64: return py::dtype("complex64");
    case DType::Complex128: return py::dtype("complex128");
    case DType::BFloat16: return py::dtype("uint16");
    default: return py::dtype("uint8");  // float8 and float4 codes
  }
}

bool raw_bits(DType t) {
  switch (t) {
    case DType::BFloat16: case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ: case DType::Float4E2M1: case DType::Float8E8M0: return true;
    default: return false;
  }
}

py::object ml_dtypes() {
  static py::object module = [] {
    try {
      return py::module_::import("ml_dtypes").cast<py::object>();
    } catch (const py::error_already_set&) {
      return py::none().cast<py::object>();
    }
  }();
  return module;
}

}  // namespace

py::array tensor_to_numpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::String) {
    py::array out(py::dtype("O"), shape);
    auto* items = static_cast<PyObject**>(out.mutable_data());
    for (int64_t i = 0; i < t.size(); ++i) {
      Py_XDECREF(items[i]);
      items[i] = py::str(t.data<std::string>()[i]).release().ptr();
    }
    return out;
  }
  py::array out(storage_dtype(t.dtype()), shape);
  if (t.nbytes()) std::memcpy(out.mutable_data(), t.raw_data(), t.nbytes());
  if (raw_bits(t.dtype())) {
    py::object md = ml_dtypes();
    if (!md.is_none() && py::hasattr(md, std::string(dtype_numpy_name(t.dtype())).c_str()))
      return out.attr("view")(md.attr(std::string(dtype_numpy_name(t.dtype())).c_str()));
  }
  return out;
}

py::object to_python(const Value& v) {
  if (v.is_tensor()) return tensor_to_numpy(v.tensor());
  if (v.is_sequence()) {
    py::list items;
    for (const Value& item : v.sequence().items) items.append(to_python(item));
    return items;
  }
  if (v.is_map()) {
    py::dict d;
    const Map& m = v.map();
    py::array keys = tensor_to_numpy(m.keys), values = tensor_to_numpy(m.values);
    for (py::ssize_t i = 0; i < py::ssize_t(m.keys.size()); ++i) d[keys.attr("item")(i)] = values[py::int_(i)];
    return d;
  }
  if (v.is_optional()) return v.optional().has_value() ? to_python(*v.optional().value) : py::none().cast<py::object>();
  return py::none();
}

Tensor numpy_to_tensor(const py::handle& obj, const std::string& name) {
  py::module_ np = py::module_::import("numpy");
  // asarray, not ascontiguousarray: the latter makes a 0-d array (a scalar input) 1-D.
  py::array arr = np.attr("asarray")(obj, py::arg("order") = "C");
  const std::string dname = py::str(arr.dtype().attr("name"));
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  const char kind = arr.dtype().kind();
  if (kind == 'U' || kind == 'S' || kind == 'O') {
    Tensor t(DType::String, shape);
    py::list flat = arr.attr("ravel")().attr("tolist")();
    // ONNX strings are bytes: numpy's bytes_ ('S') as they are, text as UTF-8.
    for (size_t i = 0; i < flat.size(); ++i)
      t.data<std::string>()[i] = py::isinstance<py::bytes>(flat[i]) ? std::string(py::bytes(flat[i])) : std::string(py::str(flat[i]));
    return t;
  }
  DType dt = dname == "bool" ? DType::Bool : dtype_from_name(dname);
  if (dt == DType::Undefined || dt == DType::String)
    throw Error(ErrorKind::Input, fmt::format("input '{}': numpy dtype {} has no ONNX element type", name, dname));
  Tensor t(dt, shape);
  if (size_t(arr.nbytes()) != t.nbytes())
    throw Error(ErrorKind::Input, fmt::format("input '{}': numpy dtype {} has {} bytes per element, refeval stores {}", name, dname,
                                              arr.itemsize(), dtype_size(dt)));
  if (t.nbytes()) std::memcpy(t.raw_data(), arr.data(), t.nbytes());
  return t;
}

Value from_python(const py::handle& obj, const ValueType* declared, const std::string& name) {
  const bool optional = declared && declared->kind == ValueType::Kind::Optional;
  if (obj.is_none()) {
    if (!optional) throw Error(ErrorKind::Input, fmt::format("input '{}' is None but is not declared optional", name));
    Optional o;
    if (declared->elem) o.type = std::make_shared<ValueType>(*declared->elem);
    return o;
  }
  const ValueType* inner = optional ? declared->elem.get() : declared;
  Value v;
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    Sequence s;
    const ValueType* elem = inner && inner->kind == ValueType::Kind::Sequence ? inner->elem.get() : nullptr;
    for (const py::handle& item : obj) s.items.push_back(from_python(item, elem, name));
    if (elem && elem->kind == ValueType::Kind::Tensor) s.elem_dtype = elem->dtype;
    else if (!s.items.empty() && s.items[0].is_tensor()) s.elem_dtype = s.items[0].tensor().dtype();
    v = std::move(s);
  } else if (py::isinstance<py::dict>(obj)) {
    py::module_ np = py::module_::import("numpy");
    py::dict d = py::reinterpret_borrow<py::dict>(obj);
    py::list keys, values;
    for (auto item : d) keys.append(item.first), values.append(item.second);
    v = Map{numpy_to_tensor(np.attr("array")(keys), name), numpy_to_tensor(np.attr("array")(values), name)};
  } else {
    v = numpy_to_tensor(obj, name);
  }
  if (!optional) return v;
  Optional o;
  o.value = std::make_shared<const Value>(std::move(v));
  if (declared->elem) o.type = std::make_shared<ValueType>(*declared->elem);
  return o;
}

std::map<std::string, Value> feeds_from_python(const py::dict& feeds, const Graph& graph) {
  std::map<std::string, Value> values;
  for (auto item : feeds) {
    const std::string name = py::str(item.first);
    const ValueInfo* declared = graph.find_input(name);
    values.emplace(name, from_python(item.second, declared ? &declared->type : nullptr, name));
  }
  return values;
}

}  // namespace refeval::python
