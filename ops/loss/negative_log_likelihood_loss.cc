// NegativeLogLikelihoodLoss: loss of log-probabilities (N, C, d1..dk) against class targets.
#include "loss_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class NegativeLogLikelihoodLoss : public OpRun {
 public:
  using Types = Floats;
  explicit NegativeLogLikelihoodLoss(const NodeContext& ctx) : attrs_(ctx) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    visit<Types>(x.dtype(), [&]<class T>() {});
    std::optional<std::vector<double>> w;
    if (has_value(in, 2)) w = to_doubles(input_tensor(in, 2));
    return {nll_loss(x.dtype(), x.shape(), to_doubles(x), input_tensor(in, 1), w, attrs_)};
  }
 private:
  LossAttrs attrs_;
};

}  // namespace

void register_negative_log_likelihood_loss(Registry& reg) {
  reg.add("", "NegativeLogLikelihoodLoss", {12, 13, 22}, make<NegativeLogLikelihoodLoss>);
}

}  // namespace refeval::ops
