// com.microsoft GELU family (v1), each an elementwise function of z = X (+ a bias over the last
// dimension):
//   Gelu(X)            y = 0.5 z (1 + erf(z / sqrt 2))                              (exact)
//   BiasGelu(A, B)     Gelu(A + B)
//   FastGelu(X, bias?) y = 0.5 z (1 + tanh(sqrt(2 / pi) (z + 0.044715 z^3)))       (tanh form)
//   QuickGelu(X)       y = z * sigmoid(alpha z), alpha defaults to 1.702
#include <cmath>
#include <numbers>

#include "../math/vector_math.h"
#include "contrib_common.h"
#include "refeval/registry.h"

namespace refeval::ops::contrib {
namespace {

void gelu_erf(std::vector<double>& v) {
  for (double& z : v) z = 0.5 * z * (1.0 + std::erf(z / std::numbers::sqrt2));
}
// The tanh through the vector math library in double (ops/math/vector_math.h), a whole tensor at once.
void gelu_tanh(std::vector<double>& v) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  std::vector<double> t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = k * (v[i] + 0.044715 * v[i] * v[i] * v[i]);
  tanh_doubles(t.data(), t.data(), int64_t(t.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * v[i] * (1.0 + t[i]);
}

// y = f(x + bias[i % H]) with the bias (input `bias_input`, optional unless `bias_required`)
// a 1-D tensor of X's last dimension H; f transforms the whole vector in place.
template <class F>
Tensor apply_with_bias(const Values& in, size_t bias_input, const F& f) {
  const Tensor& x = input_tensor(in, 0);
  std::vector<double> v = to_doubles(x);
  if (has_value(in, bias_input)) {
    if (x.rank() == 0) fail_runtime("X must have at least one dimension to take a bias");
    const std::vector<double> bias = vector_input(in, bias_input, x.shape().back(), x.dtype(), "bias");
    for (size_t i = 0; i < v.size(); ++i) v[i] += bias[i % bias.size()];
  }
  f(v);
  return from_doubles(x.dtype(), x.shape(), v);
}

class Gelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit Gelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override { return {apply_with_bias(in, 1, gelu_erf)}; }
};

class BiasGelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit BiasGelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    input_tensor(in, 1);  // B is required: a clear error when it is missing
    return {apply_with_bias(in, 1, gelu_erf)};
  }
};

class FastGelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit FastGelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override { return {apply_with_bias(in, 1, gelu_tanh)}; }
};

class QuickGelu : public OpRun {
 public:
  using Types = FloatTypes;
  explicit QuickGelu(const NodeContext& ctx) : alpha_(ctx.attr<float>("alpha", 1.702f)) {}
  Values run(const Values& in, RunContext&) override {
    const double alpha = alpha_;
    return {apply_with_bias(in, 1, [alpha](std::vector<double>& v) {
      for (double& z : v) z = z / (1.0 + std::exp(-alpha * z));
    })};
  }
 private:
  float alpha_;
};

}  // namespace

void register_gelu(Registry& reg) {
  reg.add("com.microsoft", "Gelu", {1}, make<Gelu>);
  reg.add("com.microsoft", "BiasGelu", {1}, make<BiasGelu>);
  reg.add("com.microsoft", "FastGelu", {1}, make<FastGelu>);
  reg.add("com.microsoft", "QuickGelu", {1}, make<QuickGelu>);
}

}  // namespace refeval::ops::contrib
