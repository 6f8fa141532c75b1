// The scale layout of Quantize/DequantizeLinear (quant_common.h).
#include "quant_common.h"

#include <fmt/format.h>

namespace refeval::ops {

std::vector<int64_t> scale_indices(const Shape& x, const Shape& s, int64_t axis, int64_t block_size) {
  const int64_t n = shape_size(x), r = int64_t(x.size());
  std::vector<int64_t> idx(size_t(n), 0);
  if (shape_size(s) == 1 && block_size == 0 && s.size() <= 1) return idx;
  if (axis < -r || axis >= r) fail_runtime(fmt::format("axis {} is out of range for rank {}", axis, r));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[size_t(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= x[size_t(d)];
  const int64_t A = x[size_t(axis)];
  auto bad = [&] {
    fail_runtime(fmt::format("scale of shape {} does not fit input {} (axis {}, block_size {})", shape_to_string(s),
                             shape_to_string(x), axis, block_size));
  };
  int64_t SA = A, bs = 1;
  if (block_size == 0) {
    if (s.size() != 1 || s[0] != A) bad();
    for (int64_t o = 0, i = 0; o < outer; ++o)
      for (int64_t a = 0; a < A; ++a)
        for (int64_t k = 0; k < inner; ++k) idx[size_t(i++)] = a;
    return idx;
  }
  if (block_size < 0) bad();
  if (s.size() != x.size()) bad();
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && s[size_t(d)] != x[size_t(d)]) bad();
  SA = s[size_t(axis)];
  bs = block_size;
  if (SA != (A + bs - 1) / bs) bad();
  for (int64_t o = 0, i = 0; o < outer; ++o)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t k = 0; k < inner; ++k) idx[size_t(i++)] = (o * SA + a / bs) * inner + k;
  return idx;
}

std::optional<AxisScale> axis_scale(const Shape& x, const Shape& s, int64_t axis, int64_t block_size) {
  AxisScale a;
  if (shape_size(s) == 1 && block_size == 0 && s.size() <= 1) {
    a.inner = shape_size(x);
    return a;
  }
  const int64_t r = int64_t(x.size());
  if (block_size != 0 || s.size() != 1 || axis < -r || axis >= r) return std::nullopt;
  if (axis < 0) axis += r;
  if (s[0] != x[size_t(axis)]) return std::nullopt;
  a.outer = 1;
  for (int64_t d = 0; d < axis; ++d) a.outer *= x[size_t(d)];
  a.A = x[size_t(axis)];
  for (int64_t d = axis + 1; d < r; ++d) a.inner *= x[size_t(d)];
  return a;
}

double element_as_double(const Tensor& t, int64_t i) {
  return visit<AllNumeric>(t.dtype(), [&]<class T>() -> double {
    if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
      fail_runtime("complex values cannot be quantized");
    else if constexpr (std::is_same_v<T, bool>) return t.data<T>()[i] ? 1.0 : 0.0;
    else return quant_to_double(t.data<T>()[i]);
  });
}

}  // namespace refeval::ops
