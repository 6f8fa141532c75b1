#include "refeval/compare.h"

#include <algorithm>
#include <cmath>
#include <complex>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/format.h"

namespace refeval {
namespace {

std::string index_of(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

Comparison compare_tensors(const Tensor& a, const Tensor& e, Tolerance tol) {
  Comparison c;
  if (a.dtype() != e.dtype()) {
    c.equal = false;
    c.reason = fmt::format("element type {} vs expected {}", dtype_short_name(a.dtype()), dtype_short_name(e.dtype()));
    return c;
  }
  if (a.shape() != e.shape()) {
    c.equal = false;
    c.reason = fmt::format("shape {} vs expected {}", shape_to_string(a.shape()), shape_to_string(e.shape()));
    return c;
  }
  auto note = [&](int64_t i) {
    ++c.mismatches;
    if (c.equal) {
      c.equal = false;
      c.reason = fmt::format("element {}: {} vs expected {}", index_of(e.shape(), i), python_scalar(a, i), python_scalar(e, i));
    }
  };
  const int64_t row = e.rank() == 0 ? 1 : std::max<int64_t>(e.shape().back(), 1);
  visit<All>(a.dtype(), [&]<class T>() {
    const T* pa = a.data<T>();
    const T* pe = e.data<T>();
    double row_scale = 0;  // max |e| over the current row's finite elements, with tol.row_rtol
    for (int64_t i = 0; i < a.size(); ++i) {
      if constexpr (std::is_floating_point_v<T> || is_narrow_float_v<T>) {
        if (tol.row_rtol > 0 && i % row == 0) {
          row_scale = 0;
          for (int64_t j = i; j < std::min(i + row, e.size()); ++j)
            if (std::isfinite(double(pe[j]))) row_scale = std::max(row_scale, std::fabs(double(pe[j])));
        }
        const double x = double(pa[i]), y = double(pe[i]);
        if (std::isnan(x) || std::isnan(y)) { if (std::isnan(x) != std::isnan(y)) note(i); continue; }
        if (std::isinf(x) || std::isinf(y)) { if (x != y) note(i); continue; }
        const double diff = std::fabs(x - y);
        c.max_abs = std::max(c.max_abs, diff);
        if (y != 0) c.max_rel = std::max(c.max_rel, diff / std::fabs(y));
        if (diff > tol.atol + tol.rtol * std::fabs(y) + tol.row_rtol * row_scale) note(i);
      } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
        const double diff = std::abs(std::complex<double>(pa[i]) - std::complex<double>(pe[i]));
        c.max_abs = std::max(c.max_abs, diff);
        if (diff > tol.atol + tol.rtol * std::abs(std::complex<double>(pe[i]))) note(i);
      } else if constexpr (std::is_same_v<T, int4> || std::is_same_v<T, uint4> || std::is_same_v<T, int2> || std::is_same_v<T, uint2>) {
        if (pa[i].value != pe[i].value) note(i);
      } else {
        if (!(pa[i] == pe[i])) note(i);
      }
    }
  });
  return c;
}

}  // namespace

Comparison compare_values(const Value& a, const Value& e, Tolerance tol) {
  Comparison c;
  auto differ = [&](std::string why) { c.equal = false; c.reason = std::move(why); return c; };
  if (e.is_optional() && !a.is_optional()) {
    if (!e.optional().has_value()) return differ(fmt::format("got a {} but expected an empty optional", a.kind_name()));
    return compare_values(a, *e.optional().value, tol);
  }
  if (a.is_optional() && !e.is_optional()) {
    if (!a.optional().has_value()) return differ(fmt::format("got an empty optional but expected a {}", e.kind_name()));
    return compare_values(*a.optional().value, e, tol);
  }
  if (a.kind_name() != e.kind_name()) return differ(fmt::format("got a {} but expected a {}", a.kind_name(), e.kind_name()));
  if (a.is_tensor()) return compare_tensors(a.tensor(), e.tensor(), tol);
  if (a.is_sequence()) {
    const auto& x = a.sequence().items;
    const auto& y = e.sequence().items;
    if (x.size() != y.size()) return differ(fmt::format("sequence of {} items vs expected {}", x.size(), y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      Comparison item = compare_values(x[i], y[i], tol);
      c.max_abs = std::max(c.max_abs, item.max_abs);
      c.max_rel = std::max(c.max_rel, item.max_rel);
      c.mismatches += item.mismatches;
      if (!item.equal && c.equal) { c.equal = false; c.reason = fmt::format("item {}: {}", i, item.reason); }
    }
    return c;
  }
  if (a.is_optional()) {
    if (a.optional().has_value() != e.optional().has_value())
      return differ(a.optional().has_value() ? "got a value but expected an empty optional" : "got an empty optional but expected a value");
    if (!a.optional().has_value()) return c;
    return compare_values(*a.optional().value, *e.optional().value, tol);
  }
  if (a.is_map()) {
    Comparison k = compare_tensors(a.map().keys, e.map().keys, tol);
    if (!k.equal) return differ("map keys: " + k.reason);
    Comparison v = compare_tensors(a.map().values, e.map().values, tol);
    if (!v.equal) return differ("map values: " + v.reason);
    return v;
  }
  return c;
}

}  // namespace refeval
