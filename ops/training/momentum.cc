// Momentum (ai.onnx.preview.training 1): for each X_i with gradient G_i and momentum V_i:
//   G' = norm_coefficient * X + G;  beta' = T > 0 ? beta : 1;  V_new = alpha * V + beta' * G'
//   standard: X_new = X - R * V_new;   nesterov: X_new = X - R * (G' + alpha * V_new)
// Outputs: X_new_1..n, V_new_1..n.
#include "training_common.h"

namespace refeval::ops {
namespace {

class Momentum : public OpRun {
 public:
  using Types = OptimizerTypes;
  explicit Momentum(const NodeContext& ctx)
      : alpha_(ctx.required<float>("alpha")),
        beta_(ctx.required<float>("beta")),
        norm_coefficient_(ctx.required<float>("norm_coefficient")) {
    const std::string mode = ctx.required<std::string>("mode");
    if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be 'standard' or 'nesterov', got '" + mode + "'");
    nesterov_ = mode == "nesterov";
  }

  Values run(const Values& in, RunContext&) override {
    const size_t n = tensors_per_group(in, 3);
    const double r = learning_rate(in);
    const double beta = step_count(in) > 0 ? beta_ : 1.0;
    Values out(2 * n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = input_tensor(in, 2 + i);
      const Tensor& g = group_tensor(in, n, 1, i);
      const Tensor& v = group_tensor(in, n, 2, i);
      visit<Types>(x.dtype(), [&]<class T>() {
        Tensor xn(x.dtype(), x.shape()), vn(x.dtype(), x.shape());
        const T *px = x.data<T>(), *pg = g.data<T>(), *pv = v.data<T>();
        T *pxn = xn.data<T>(), *pvn = vn.data<T>();
        for (int64_t k = 0; k < x.size(); ++k) {
          const T gr = T(norm_coefficient_) * px[k] + pg[k];
          pvn[k] = T(alpha_) * pv[k] + T(beta) * gr;
          pxn[k] = nesterov_ ? px[k] - T(r) * (gr + T(alpha_) * pvn[k]) : px[k] - T(r) * pvn[k];
        }
        out[i] = xn;
        out[n + i] = vn;
      });
    }
    return out;
  }

 private:
  float alpha_, beta_, norm_coefficient_;
  bool nesterov_ = false;
};

}  // namespace

void register_momentum(Registry& reg) { reg.add("ai.onnx.preview.training", "Momentum", {1}, make<Momentum>); }

}  // namespace refeval::ops
