// OneHot: out has a new axis of size `depth` holding values[1] where the index matches and
// values[0] elsewhere. Indices in [-depth, 0) count from the end; others give an all-off row.
// Non-integer indices and depth are truncated toward zero.
#include "tensor_common.h"

#include <cmath>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

template <class T> int64_t as_int(T v) {
  if constexpr (std::is_integral_v<T>) return int64_t(v);
  else {
    const double d = double(compute_t<T>(v));
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return INT64_MIN;
    return int64_t(d);
  }
}

class OneHot : public OpRun {
 public:
  using Types = All;
  using IndexTypesAll = Numeric;
  explicit OneHot(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", -1)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& ind = input_tensor(in, 0);
    const Tensor& dep = input_tensor(in, 1);
    const Tensor& vals = input_tensor(in, 2);
    if (dep.size() != 1) fail_runtime("OneHot: depth must hold one element");
    if (vals.size() != 2) fail_runtime("OneHot: values must hold two elements [off, on]");
    const int64_t depth = visit<IndexTypesAll>(dep.dtype(), [&]<class T>() { return as_int(dep.data<T>()[0]); });
    if (depth < 1) fail_runtime(fmt::format("OneHot: depth must be positive, got {}", depth));
    const std::vector<int64_t> idx = visit<IndexTypesAll>(ind.dtype(), [&]<class T>() {
      std::vector<int64_t> v(size_t(ind.size()));
      for (int64_t i = 0; i < ind.size(); ++i) v[size_t(i)] = as_int(ind.data<T>()[i]);
      return v;
    });
    const int64_t rank = int64_t(ind.rank()) + 1;
    const size_t axis = size_t(normalize_axis(axis_, rank));
    Shape out = ind.shape();
    out.insert(out.begin() + long(axis), depth);
    const int64_t outer = dims_product(ind.shape(), 0, axis), inner = dims_product(ind.shape(), axis, ind.rank());
    Tensor y(vals.dtype(), out);
    visit_by_width(vals.dtype(), [&]<class W>() {
      const W off = raw_as<W>(vals)[0], on = raw_as<W>(vals)[1];
      W* dst = raw_as<W>(y);
      for (int64_t i = 0; i < y.size(); ++i) dst[i] = off;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t k = idx[size_t(o * inner + j)];
          if (k < 0 && k >= -depth) k += depth;
          if (k >= 0 && k < depth) dst[(o * depth + k) * inner + j] = on;
        }
    });
    return {y};
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_one_hot(Registry& reg) {
  reg.add("", "OneHot", {9, 11}, make<OneHot>);
}

}  // namespace refeval::ops
