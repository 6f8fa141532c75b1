// com.microsoft BiasAdd (v1): Y = X + bias + skip, with X and skip (N, S, C) and bias (C); the
// residual add after a convolution-as-matmul in diffusion models.
#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

class BiasAdd : public OpRun {
 public:
  using Types = TypeList<float, float16>;
  explicit BiasAdd(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& skip = input_tensor(in, 2);
    require_types<Types>(x.dtype());
    require_rank(x, 3, 3, "X");
    require_dtype(skip, x.dtype(), "skip");
    require_shape(skip, x.shape(), "skip");
    const std::vector<double> bias = vector_input(in, 1, x.dim(2), x.dtype(), "bias");
    std::vector<double> y = to_doubles(x);
    const std::vector<double> s = to_doubles(skip);
    for (size_t i = 0; i < y.size(); ++i) y[i] += bias[i % bias.size()] + s[i];
    return {from_doubles(x.dtype(), x.shape(), y)};
  }
};

}  // namespace

void register_bias_add(Registry& reg) { reg.add("com.microsoft", "BiasAdd", {1}, make<BiasAdd>); }

}  // namespace refeval::ops::contrib
