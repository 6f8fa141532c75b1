// Softmax, LogSoftmax, Hardmax. Versions 1 and 11 coerce the input to 2-D at `axis` (default 1)
// and normalise each row of prod(shape[axis:]) elements; version 13 normalises along the one
// axis (default -1). Softmax subtracts the maximum first, so it cannot overflow.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "refeval/elementwise.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

enum class Kind { Softmax, LogSoftmax, Hardmax };

template <Kind K>
class SoftmaxFamily : public OpRun {
 public:
  using Types = Floats;
  explicit SoftmaxFamily(const NodeContext& ctx)
      : coerce_2d_(ctx.since_version() < 13), axis_(ctx.attr<int64_t>("axis", ctx.since_version() < 13 ? 1 : -1)) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t r = int64_t(x.rank());
    if (axis_ < -r || axis_ > (r == 0 ? 0 : r - 1))
      ctx.fail(fmt::format("axis {} is out of range for rank {}", axis_, r));
    const size_t axis = size_t(axis_ < 0 ? axis_ + r : axis_);
    int64_t outer = 1, n = 1, inner = 1;
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      else if (d == axis || coerce_2d_) n *= x.dim(d);
      else inner *= x.dim(d);
    }
    Tensor y(x.dtype(), x.shape());
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      // Rows (o, i) are independent: large inputs split them across threads.
      parallel_for(outer * inner, kParallelElements / std::max<int64_t>(n, 1) + 1, [&](int64_t first, int64_t last) {
        std::vector<C> row(static_cast<size_t>(n));
        for (int64_t r = first; r < last; ++r) {
          const int64_t base = (r / inner) * n * inner + r % inner;
          for (int64_t j = 0; j < n; ++j) row[size_t(j)] = C(px[base + j * inner]);
          normalise(row);
          for (int64_t j = 0; j < n; ++j) py[base + j * inner] = from_compute<T>(row[size_t(j)]);
        }
      });
    });
    return {y};
  }

 private:
  template <class C>
  static void normalise(std::vector<C>& v) {
    if (v.empty()) return;
    size_t arg = 0;  // first maximum (NaN wins, as numpy's argmax / max)
    for (size_t j = 1; j < v.size(); ++j)
      if (!std::isnan(v[arg]) && (std::isnan(v[j]) || v[j] > v[arg])) arg = j;
    const C m = v[arg];
    if constexpr (K == Kind::Hardmax) {
      for (size_t j = 0; j < v.size(); ++j) v[j] = C(j == arg ? 1 : 0);
    } else {
      if constexpr (K == Kind::Softmax) {
        C sum = 0;
        for (C& e : v) sum += (e = std::exp(e - m));
        for (C& e : v) e /= sum;
      } else {
        C sum = 0;
        for (const C e : v) sum += std::exp(e - m);
        const C log_sum = std::log(sum);
        for (C& e : v) e = e - m - log_sum;
      }
    }
  }

  bool coerce_2d_;
  int64_t axis_;
};

}  // namespace

void register_softmax(Registry& reg) {
  reg.add("", "Softmax", {1, 11, 13}, make<SoftmaxFamily<Kind::Softmax>>);
  reg.add("", "LogSoftmax", {1, 11, 13}, make<SoftmaxFamily<Kind::LogSoftmax>>);
  reg.add("", "Hardmax", {1, 11, 13}, make<SoftmaxFamily<Kind::Hardmax>>);
}

}  // namespace refeval::ops
