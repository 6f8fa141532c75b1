// Bernoulli: y[i] = 1 with probability x[i] (x in [0, 1]), else 0, in the element type `dtype`
// (default: the input's). Seeding: random_common.h. Each draw is numpy's binomial(1, p) by
// inversion, so a seeded node matches the ONNX reference evaluator: no draw for p = 0; for
// p <= 0.5, 1 iff u > exp(log(1 - p)); otherwise 0 iff u > exp(log(p)).
#include <fmt/format.h>

#include "random_common.h"

namespace refeval::ops {
namespace {

class Bernoulli : public OpRun {
 public:
  static constexpr Determinism determinism = Determinism::Random;
  using Types = Floats;
  using OutTypes = NumericAndBool;
  explicit Bernoulli(const NodeContext& ctx) : rng_(ctx) {
    if (ctx.has_attr("dtype")) dtype_ = dtype_attr<OutTypes>(ctx, std::nullopt);
  }

  Values run(const Values& in, RunContext&) override {
    Draw draw = rng_.draw();
    const Tensor& x = input_tensor(in, 0);
    std::vector<double> p(size_t(x.size()));
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      for (int64_t i = 0; i < x.size(); ++i) {
        p[i] = double(compute_t<T>(px[i]));
        if (!(p[i] >= 0.0 && p[i] <= 1.0)) fail_runtime(fmt::format("probability {} is outside [0, 1]", p[i]));
      }
    });
    size_t i = 0;
    return {fill_random<OutTypes>(dtype_.value_or(x.dtype()), x.shape(),
                                  [&] { return sample(draw, p[i++]); })};
  }

 private:
  static double sample(Draw& draw, double p) {
    if (p == 0.0) return 0.0;
    if (p <= 0.5) return draw.uniform() > std::exp(std::log(1.0 - p)) ? 1.0 : 0.0;
    const double q = 1.0 - p;
    return draw.uniform() > std::exp(std::log(1.0 - q)) ? 0.0 : 1.0;
  }
  RandomSource rng_;
  std::optional<DType> dtype_;
};

}  // namespace

void register_bernoulli(Registry& reg) { reg.add("", "Bernoulli", {15, 22}, make<Bernoulli>); }

}  // namespace refeval::ops
