// LRN (1, 13): local response normalisation across channels. For X [N, C, ...],
// Y = X / (bias + alpha / size * sum of X^2 over channels c - floor((size-1)/2) ..
// c + ceil((size-1)/2))^beta.
#include <cmath>

#include "nn_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class LRN : public OpRun {
 public:
  using Types = Floats;
  explicit LRN(const NodeContext& ctx)
      : alpha_(ctx.attr<float>("alpha", 1e-4f)),
        beta_(ctx.attr<float>("beta", 0.75f)),
        bias_(ctx.attr<float>("bias", 1.0f)),
        size_(ctx.required<int64_t>("size")) {
    if (size_ <= 0) ctx.fail(fmt::format("size must be positive, got {}", size_));
  }
  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    visit<Types>(x.dtype(), [&]<class T>() {});
    if (x.rank() < 2) ctx.fail(fmt::format("X must be [N, C, ...], got {}", shape_to_string(x.shape())));
    const int64_t N = x.dim(0), C = x.dim(1), inner = N * C == 0 ? 0 : x.size() / (N * C);
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    const std::vector<double> v = to_doubles(x);
    std::vector<double> y(v.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t s = 0; s < inner; ++s) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(C - 1, c + after); ++k) {
            const double e = v[size_t((n * C + k) * inner + s)];
            sq += e * e;
          }
          const size_t i = size_t((n * C + c) * inner + s);
          y[i] = v[i] / std::pow(double(bias_) + double(alpha_) / double(size_) * sq, double(beta_));
        }
    return {from_doubles(x.dtype(), x.shape(), y)};
  }

 private:
  float alpha_, beta_, bias_;
  int64_t size_;
};

}  // namespace

void register_lrn(Registry& reg) { reg.add("", "LRN", {1, 13}, make<LRN>); }

}  // namespace refeval::ops
