// SoftmaxCrossEntropyLoss: the negative log-likelihood of log_softmax(scores) over axis 1, with
// the log-probabilities as an optional second output.
#include <algorithm>
#include <cmath>

#include "loss_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class SoftmaxCrossEntropyLoss : public OpRun {
 public:
  using Types = Floats;
  explicit SoftmaxCrossEntropyLoss(const NodeContext& ctx) : attrs_(ctx) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& scores = input_tensor(in, 0);
    visit<Types>(scores.dtype(), [&]<class T>() {});
    if (scores.rank() < 2) fail_runtime("scores must have at least 2 dimensions (N, C)");
    std::vector<double> lp = to_doubles(scores);
    const int64_t c = scores.dim(1), outer = scores.dim(0), inner = scores.size() / std::max<int64_t>(1, outer * c);
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        double* p = &lp[size_t(b * c * inner + i)];
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < c; ++k) m = std::max(m, p[k * inner]);
        for (int64_t k = 0; k < c; ++k) s += std::exp(p[k * inner] - m);
        const double log_sum = m + std::log(s);
        for (int64_t k = 0; k < c; ++k) p[k * inner] -= log_sum;
      }
    std::optional<std::vector<double>> w;
    if (has_value(in, 2)) w = to_doubles(input_tensor(in, 2));
    Tensor loss = nll_loss(scores.dtype(), scores.shape(), lp, input_tensor(in, 1), w, attrs_);
    return {loss, from_doubles(scores.dtype(), scores.shape(), lp)};
  }
 private:
  LossAttrs attrs_;
};

}  // namespace

void register_softmax_cross_entropy_loss(Registry& reg) {
  reg.add("", "SoftmaxCrossEntropyLoss", {12, 13}, make<SoftmaxCrossEntropyLoss>);
}

}  // namespace refeval::ops
