// Adam (ai.onnx.preview.training 1): for each X_i with gradient G_i, first moment V_i and second
// moment H_i:
//   G' = norm_coefficient * X + G;  V_new = alpha * V + (1 - alpha) * G';  H_new = beta * H + (1 - beta) * G'^2
//   R' = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
//   X_new = (1 - norm_coefficient_post) * (X - R' * V_new / (sqrt(H_new) + epsilon))
// Outputs: X_new_1..n, V_new_1..n, H_new_1..n.
#include "training_common.h"

namespace refeval::ops {
namespace {

class Adam : public OpRun {
 public:
  using Types = OptimizerTypes;
  explicit Adam(const NodeContext& ctx)
      : alpha_(ctx.attr<float>("alpha", 0.9f)),
        beta_(ctx.attr<float>("beta", 0.999f)),
        epsilon_(ctx.attr<float>("epsilon", 1e-6f)),
        norm_coefficient_(ctx.attr<float>("norm_coefficient", 0.0f)),
        norm_coefficient_post_(ctx.attr<float>("norm_coefficient_post", 0.0f)) {}

  Values run(const Values& in, RunContext&) override {
    const size_t n = tensors_per_group(in, 4);
    const int64_t t = step_count(in);
    double r = learning_rate(in);
    if (t > 0)
      r = r * std::sqrt(1.0 - std::pow(double(beta_), double(t))) / (1.0 - std::pow(double(alpha_), double(t)));
    Values out(3 * n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = input_tensor(in, 2 + i);
      const Tensor& g = group_tensor(in, n, 1, i);
      const Tensor& v = group_tensor(in, n, 2, i);
      const Tensor& h = group_tensor(in, n, 3, i);
      visit<Types>(x.dtype(), [&]<class T>() {
        Tensor xn(x.dtype(), x.shape()), vn(x.dtype(), x.shape()), hn(x.dtype(), x.shape());
        const T *px = x.data<T>(), *pg = g.data<T>(), *pv = v.data<T>(), *ph = h.data<T>();
        T *pxn = xn.data<T>(), *pvn = vn.data<T>(), *phn = hn.data<T>();
        const T a = T(alpha_), b = T(beta_);
        for (int64_t k = 0; k < x.size(); ++k) {
          const T gr = T(norm_coefficient_) * px[k] + pg[k];
          pvn[k] = a * pv[k] + (T(1) - a) * gr;
          phn[k] = b * ph[k] + (T(1) - b) * gr * gr;
          const T step = px[k] - T(r) * (pvn[k] / (std::sqrt(phn[k]) + T(epsilon_)));
          pxn[k] = (T(1) - T(norm_coefficient_post_)) * step;
        }
        out[i] = xn;
        out[n + i] = vn;
        out[2 * n + i] = hn;
      });
    }
    return out;
  }

 private:
  float alpha_, beta_, epsilon_, norm_coefficient_, norm_coefficient_post_;
};

}  // namespace

void register_adam(Registry& reg) { reg.add("ai.onnx.preview.training", "Adam", {1}, make<Adam>); }

}  // namespace refeval::ops
