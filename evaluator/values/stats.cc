#include "refeval/stats.h"

#include <cmath>
#include <limits>

#include "refeval/dispatch.h"

namespace refeval {

TensorStats tensor_stats(const Tensor& t, size_t keep) {
  TensorStats s;
  s.count = t.size();
  if (t.dtype() == DType::String || t.dtype() == DType::Complex64 || t.dtype() == DType::Complex128) return s;
  s.numeric = true;
  visit<AllNumeric>(t.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, std::complex<float>> && !std::is_same_v<T, std::complex<double>>) {
      const T* p = t.data<T>();
      double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
      int64_t finite = 0;
      for (int64_t i = 0; i < s.count; ++i) {
        const double v = double(p[i]);
        if (std::isfinite(v)) {
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          sum += v;
          ++finite;
          continue;
        }
        (std::isnan(v) ? s.nan : s.inf) += 1;
        if (s.first_nonfinite.size() < keep) s.first_nonfinite.push_back(i);
      }
      if (finite > 0) {
        s.min = lo;
        s.max = hi;
        s.mean = sum / double(finite);
      }
    }
  });
  return s;
}

std::vector<int64_t> unravel_index(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) return index;
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

}  // namespace refeval
