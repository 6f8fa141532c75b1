#include "refeval/format.h"

#include <cmath>
#include <complex>

#include <fmt/format.h>

#include "refeval/dispatch.h"

namespace refeval {

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // fmt's shortest round-trip form uses Python's switch to exponents (below 1e-4, from 1e16),
  // but prints whole numbers without ".0".
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string python_scalar(const Tensor& t, int64_t i, bool quote) {
  return visit<All>(t.dtype(), [&]<class T>() -> std::string {
    const T& x = t.data<T>()[i];
    if constexpr (std::is_same_v<T, std::string>) return quote ? fmt::format("'{}'", x) : x;
    else if constexpr (std::is_same_v<T, bool>) return x ? "True" : "False";
    else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
      return fmt::format("({}{}{}j)", python_float(double(x.real())), x.imag() < 0 ? "" : "+", python_float(double(x.imag())));
    else if constexpr (std::is_floating_point_v<T> || is_narrow_float_v<T>) return python_float(double(x));
    else if constexpr (std::is_same_v<T, int4> || std::is_same_v<T, uint4> || std::is_same_v<T, int2> || std::is_same_v<T, uint2>)
      return std::to_string(int(x));
    else return std::to_string(x);
  });
}

namespace {

// numpy's min/max: NaN wins; strings compare lexicographically.
std::pair<int64_t, int64_t> argminmax(const Tensor& t) {
  return visit<All>(t.dtype(), [&]<class T>() -> std::pair<int64_t, int64_t> {
    const T* p = t.data<T>();
    int64_t lo = 0, hi = 0;
    if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      return {0, 0};
    } else {
      using C = std::conditional_t<std::is_same_v<T, std::string> || std::is_same_v<T, bool>, T, double>;
      auto val = [&](int64_t i) -> C {
        if constexpr (std::is_same_v<C, double>) return double(p[i]);
        else return p[i];
      };
      for (int64_t i = 1; i < t.size(); ++i) {
        if constexpr (std::is_same_v<C, double>) {
          if (std::isnan(val(lo))) break;
          if (std::isnan(val(i))) { lo = hi = i; break; }
        }
        if (val(i) < val(lo)) lo = i;
        if (val(hi) < val(i)) hi = i;
      }
      return {lo, hi};
    }
  });
}

std::string describe_tensor(const Tensor& t, int level) {
  const std::string head = fmt::format("{}:{}", dtype_numpy_name(t.dtype()), shape_to_string(t.shape()));
  if (level < 4) {
    if (t.size() == 0) return head + " (empty)";
    auto [lo, hi] = argminmax(t);
    return fmt::format("{} in [{}, {}]", head, python_scalar(t, lo), python_scalar(t, hi));
  }
  std::vector<std::string> items;
  const int64_t n = std::min<int64_t>(t.size(), 5);
  if (t.size() <= 5) {
    for (int64_t i = 0; i < n; ++i) items.push_back(python_scalar(t, i, true));
    return fmt::format("{}:[{}]", head, fmt::join(items, ", "));
  }
  for (int64_t i = 0; i < n; ++i) items.push_back(python_scalar(t, i, false));
  return fmt::format("{}:{}...", head, fmt::join(items, ","));
}

}  // namespace

std::string describe(const Value& v, int level) {
  if (v.is_tensor()) return describe_tensor(v.tensor(), level);
  if (v.is_sequence()) {
    std::vector<std::string> parts;
    for (const auto& item : v.sequence().items) parts.push_back(describe(item, level));
    return fmt::format("{}", fmt::join(parts, ", "));
  }
  if (v.is_optional()) return v.optional().has_value() ? describe(*v.optional().value, level) : "None";
  if (v.is_map()) {
    const Map& m = v.map();
    std::vector<std::string> parts;
    for (int64_t i = 0; i < m.keys.size(); ++i)
      parts.push_back(fmt::format("{}: {}", python_scalar(m.keys, i, true), python_scalar(m.values, i, true)));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  return "None";
}

}  // namespace refeval
