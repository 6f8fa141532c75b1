// LpNormalization (1, 22): X divided by its L1 (p=1) or L2 (p=2) norm along `axis`. A slice whose
// norm is zero stays zero (the backend data expects 0, not 0 / 0).
#include <cmath>

#include "nn_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class LpNormalization : public OpRun {
 public:
  using Types = Floats;
  explicit LpNormalization(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", -1)), p_(ctx.attr<int64_t>("p", 2)) {
    if (p_ != 1 && p_ != 2) ctx.fail(fmt::format("p must be 1 or 2, got {}", p_));
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    visit<Types>(x.dtype(), [&]<class T>() {});
    const size_t axis = normalize_axis(axis_, x.rank());
    int64_t outer = 1, inner = 1;
    const int64_t n = x.dim(axis);
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      if (d > axis) inner *= x.dim(d);
    }
    std::vector<double> v = to_doubles(x);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const size_t base = size_t(o * n * inner + i);
        double norm = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double e = v[base + size_t(j * inner)];
          norm += p_ == 1 ? std::abs(e) : e * e;
        }
        if (p_ == 2) norm = std::sqrt(norm);
        if (norm != 0)
          for (int64_t j = 0; j < n; ++j) v[base + size_t(j * inner)] /= norm;
      }
    return {from_doubles(x.dtype(), x.shape(), v)};
  }

 private:
  int64_t axis_, p_;
};

}  // namespace

void register_lp_normalization(Registry& reg) { reg.add("", "LpNormalization", {1, 22}, make<LpNormalization>); }

}  // namespace refeval::ops
