// Helpers shared by the control-flow and sequence operators: cutting a tensor along an axis,
// joining tensors along an axis, reading the declared types of a body's outputs.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/op_run.h"
#include "refeval/tensor.h"

namespace refeval::ops {

// Normalises an axis in [-rank, rank-1]; `what` names it in the error.
inline int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    fail_runtime(fmt::format("{} {} is out of range for rank {} (accepted: [{}, {}])", what, axis, rank, -rank, rank - 1));
  return axis < 0 ? axis + rank : axis;
}

// Copies n elements of any element type between two tensors of the same dtype.
inline void copy_elements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  visit_by_width(src.dtype(), [&]<class W>() {
    const W* s = static_cast<const W*>(src.raw_data()) + src_off;
    W* d = static_cast<W*>(dst.raw_data()) + dst_off;
    std::copy(s, s + n, d);
  });
}

// Elements before `axis` (outer) and after it (inner) in a row-major shape.
inline int64_t outer_size(const Shape& s, size_t axis) {
  int64_t n = 1;
  for (size_t i = 0; i < axis; ++i) n *= s[i];
  return n;
}
inline int64_t inner_size(const Shape& s, size_t axis) {
  int64_t n = 1;
  for (size_t i = axis + 1; i < s.size(); ++i) n *= s[i];
  return n;
}

// Indices [start, start + len) of `axis`, keeping the axis (of length len).
inline Tensor slice_axis(const Tensor& t, size_t axis, int64_t start, int64_t len) {
  Shape shape = t.shape();
  const int64_t dim = shape[axis];
  shape[axis] = len;
  Tensor out(t.dtype(), shape);
  const int64_t outer = outer_size(shape, axis), inner = inner_size(shape, axis);
  for (int64_t o = 0; o < outer; ++o)
    copy_elements(t, (o * dim + start) * inner, out, o * len * inner, len * inner);
  return out;
}

// Index i of `axis`, with the axis removed.
inline Tensor take_axis(const Tensor& t, size_t axis, int64_t i) {
  Shape shape = t.shape();
  shape.erase(shape.begin() + std::ptrdiff_t(axis));
  return slice_axis(t, axis, i, 1).reshaped(shape);
}

// Joins tensors of one dtype along an existing axis; all other dimensions must agree.
inline Tensor concat_axis(const std::vector<Tensor>& parts, size_t axis) {
  if (parts.empty()) fail_runtime("nothing to concatenate");
  const Tensor& first = parts[0];
  Shape shape = first.shape();
  int64_t total = 0;
  for (const Tensor& p : parts) {
    if (p.dtype() != first.dtype())
      fail_runtime(fmt::format("cannot join {} and {} tensors", dtype_short_name(first.dtype()), dtype_short_name(p.dtype())));
    bool same = p.rank() == first.rank();
    for (size_t d = 0; same && d < p.rank(); ++d) same = d == axis || p.dim(d) == first.dim(d);
    if (!same)
      fail_runtime(fmt::format("cannot join shapes {} and {} along axis {}", shape_to_string(first.shape()),
                               shape_to_string(p.shape()), axis));
    total += p.dim(axis);
  }
  shape[axis] = total;
  Tensor out(first.dtype(), shape);
  const int64_t outer = outer_size(shape, axis), inner = inner_size(shape, axis);
  int64_t offset = 0;  // position along the axis
  for (const Tensor& p : parts) {
    const int64_t len = p.dim(axis);
    for (int64_t o = 0; o < outer; ++o) copy_elements(p, o * len * inner, out, (o * total + offset) * inner, len * inner);
    offset += len;
  }
  return out;
}

// Stacks tensors of one shape along a new axis at `axis` (in [0, rank]).
inline Tensor stack_axis(const std::vector<Tensor>& parts, size_t axis) {
  std::vector<Tensor> expanded;
  expanded.reserve(parts.size());
  for (const Tensor& p : parts) {
    if (p.shape() != parts[0].shape())
      fail_runtime(fmt::format("cannot stack shapes {} and {}", shape_to_string(parts[0].shape()), shape_to_string(p.shape())));
    Shape s = p.shape();
    s.insert(s.begin() + std::ptrdiff_t(axis), 1);
    expanded.push_back(p.reshaped(s));
  }
  return concat_axis(expanded, axis);
}

// The shape of a tensor type when every dimension is fixed.
inline std::optional<Shape> fixed_shape(const ValueType& t) {
  if (t.kind != ValueType::Kind::Tensor || !t.has_shape || t.dtype == DType::Undefined) return std::nullopt;
  Shape s;
  for (const Dim& d : t.dims) {
    if (!d.fixed()) return std::nullopt;
    s.push_back(d.value);
  }
  return s;
}

// The declared output types of a GRAPH attribute (Unknown where not declared).
inline std::vector<ValueType> body_output_types(const NodeContext& ctx, const std::string& attr_name) {
  std::vector<ValueType> types;
  if (const Attribute* a = ctx.node().find_attribute(attr_name); a && a->g)
    for (const ValueInfo& o : a->g->outputs) types.push_back(o.type);
  return types;
}

// The declared input types of a GRAPH attribute (Unknown where not declared).
inline std::vector<ValueType> body_input_types(const NodeContext& ctx, const std::string& attr_name) {
  std::vector<ValueType> types;
  if (const Attribute* a = ctx.node().find_attribute(attr_name); a && a->g)
    for (const ValueInfo& i : a->g->inputs) types.push_back(i.type);
  return types;
}

// A tensor or sequence bound to a body input declared optional becomes an optional holding it
// (as when a loop-carried optional is fed back from a body output that is a plain sequence).
inline Value conform_to(Value v, const ValueType& declared) {
  if (declared.kind != ValueType::Kind::Optional || v.is_optional() || v.is_absent()) return v;
  Optional o;
  o.value = std::make_shared<const Value>(std::move(v));
  if (declared.elem) o.type = declared.elem;
  return o;
}

// Scan outputs of zero iterations: an empty tensor whose element shape must be declared. `axis`
// is where the iteration axis goes.
inline Tensor empty_scan_output(const ValueType& declared, size_t k, int64_t axis, const char* op) {
  const auto shape = fixed_shape(declared);
  if (!shape)
    fail_runtime(fmt::format("{} ran zero iterations and the body does not declare the element type and shape of "
                             "scan output {}, so its (empty) value is unknown", op, k));
  Shape s = *shape;
  const int64_t a = axis < 0 ? axis + int64_t(s.size()) + 1 : axis;
  if (a < 0 || a > int64_t(s.size())) fail_runtime(fmt::format("scan output axis {} is out of range", axis));
  s.insert(s.begin() + a, 0);
  return Tensor(declared.dtype, s);
}

// The one element of a condition tensor (If, Loop), which must be a bool with one element.
inline bool condition_value(const Tensor& t, const char* what) {
  if (t.dtype() != DType::Bool)
    fail_runtime(fmt::format("{} must be a bool tensor, got {}", what, dtype_short_name(t.dtype())));
  if (t.size() != 1)
    fail_runtime(fmt::format("{} must have exactly one element, got shape {}", what, shape_to_string(t.shape())));
  return t.data<bool>()[0];
}

}  // namespace refeval::ops
