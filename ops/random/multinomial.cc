// Multinomial: for each batch row of unnormalized log-probabilities x[b, :], draws sample_size
// class indices from softmax(x[b, :]). Output [batch, sample_size] of int32 (default) or int64.
#include <fmt/format.h>

#include "random_common.h"

namespace refeval::ops {
namespace {

class Multinomial : public OpRun {
 public:
  static constexpr Determinism determinism = Determinism::Random;
  using Types = Floats;
  explicit Multinomial(const NodeContext& ctx)
      : rng_(ctx),
        dtype_(dtype_attr<TypeList<int32_t, int64_t>>(ctx, DType::Int32)),
        sample_size_(ctx.attr<int64_t>("sample_size", 1)) {
    if (sample_size_ < 0) ctx.fail("sample_size must not be negative");
  }

  Values run(const Values& in, RunContext&) override {
    Draw draw = rng_.draw();
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() != 2) fail_runtime("input must be 2-D [batch_size, class_size], got " + shape_to_string(x.shape()));
    const int64_t batch = x.dim(0), classes = x.dim(1);
    if (classes == 0 && sample_size_ > 0) fail_runtime("cannot sample from zero classes");
    std::vector<double> logits(size_t(x.size()));
    visit<Types>(x.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < x.size(); ++i) logits[i] = double(compute_t<T>(x.data<T>()[i]));
    });
    std::vector<int64_t> out;
    std::vector<double> cdf(static_cast<size_t>(classes));
    for (int64_t b = 0; b < batch; ++b) {
      const double* row = logits.data() + b * classes;
      double mx = -INFINITY, total = 0;
      for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, row[c]);
      for (int64_t c = 0; c < classes; ++c) cdf[c] = (total += std::exp(row[c] - mx));
      for (int64_t s = 0; s < sample_size_; ++s) {
        const double u = draw.uniform() * total;
        int64_t c = 0;
        while (c + 1 < classes && cdf[c] <= u) ++c;
        out.push_back(c);
      }
    }
    return {fill_random<TypeList<int32_t, int64_t>>(dtype_, {batch, sample_size_},
                                                    [&, i = size_t(0)]() mutable { return double(out[i++]); })};
  }

 private:
  RandomSource rng_;
  DType dtype_;
  int64_t sample_size_;
};

}  // namespace

void register_multinomial(Registry& reg) { reg.add("", "Multinomial", {7, 22}, make<Multinomial>); }

}  // namespace refeval::ops
