// GlobalAveragePool (1, 22), GlobalMaxPool (1, 22), GlobalLpPool (1, 2, 22): one value per (n, c)
// over all spatial positions; Y is [N, C, 1, 1, ...]. GlobalLpPool's p is a float (default 2.0)
// in version 1 and an int (default 2) from 2. GlobalMaxPool propagates NaN.
#include <cmath>

#include <fmt/format.h>

#include "../nn/nn_common.h"
#include "pool_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

enum class Global { Average, Max, Lp };

template <Global Kind>
class GlobalPool : public OpRun {
 public:
  using Types = Floats;
  explicit GlobalPool(const NodeContext& ctx) {
    if constexpr (Kind == Global::Lp)
      p_ = ctx.since_version() == 1 ? double(ctx.attr<float>("p", 2.0f)) : double(ctx.attr<int64_t>("p", 2));
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() < 2) ctx.fail(fmt::format("X must be [N, C, ...], got {}", shape_to_string(x.shape())));
    Shape ys = x.shape();
    for (size_t d = 2; d < ys.size(); ++d) ys[d] = 1;
    Tensor y(x.dtype(), ys);
    const int64_t planes = x.dim(0) * x.dim(1), n = planes ? x.size() / planes : 0;
    if (Kind == Global::Max && n == 0 && planes > 0) ctx.fail("GlobalMaxPool of an empty spatial extent");
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t p = 0; p < planes; ++p) {
        const T* v = px + p * n;
        double r = 0;
        if constexpr (Kind == Global::Max) {
          r = double(v[0]);
          for (int64_t i = 1; i < n && !std::isnan(r); ++i) r = std::isnan(double(v[i])) || double(v[i]) > r ? double(v[i]) : r;
        } else if constexpr (Kind == Global::Average) {  // four partial sums: independent chains of additions
          r = sum_of(n, [&](int64_t i) { return double(v[i]); }) / double(n);
        } else {
          for (int64_t i = 0; i < n; ++i) r += std::pow(std::fabs(double(v[i])), p_);
          r = std::pow(r, 1.0 / p_);
        }
        py[p] = from_compute<T>(compute_t<T>(r));
      }
    });
    return {y};
  }

 private:
  double p_ = 2;
};

}  // namespace

void register_global_pools(Registry& reg) {
  reg.add("", "GlobalAveragePool", {1, 22}, make<GlobalPool<Global::Average>>);
  reg.add("", "GlobalMaxPool", {1, 22}, make<GlobalPool<Global::Max>>);
  reg.add("", "GlobalLpPool", {1, 2, 22}, make<GlobalPool<Global::Lp>>);
}

}  // namespace refeval::ops
