// Adagrad (ai.onnx.preview.training 1): for each X_i with gradient G_i and accumulated squared
// gradient H_i:
//   r = R / (1 + T * decay_factor);  G' = norm_coefficient * X + G;  H_new = H + G'^2
//   X_new = X - r * G' / (sqrt(H_new) + epsilon)
// Outputs: X_new_1..n, H_new_1..n.
#include "training_common.h"

namespace refeval::ops {
namespace {

class Adagrad : public OpRun {
 public:
  using Types = OptimizerTypes;
  explicit Adagrad(const NodeContext& ctx)
      : decay_factor_(ctx.attr<float>("decay_factor", 0.0f)),
        epsilon_(ctx.attr<float>("epsilon", 1e-6f)),
        norm_coefficient_(ctx.attr<float>("norm_coefficient", 0.0f)) {}

  Values run(const Values& in, RunContext&) override {
    const size_t n = tensors_per_group(in, 3);
    const double r = learning_rate(in) / (1.0 + double(step_count(in)) * decay_factor_);
    Values out(2 * n);
    for (size_t i = 0; i < n; ++i) {
      const Tensor& x = input_tensor(in, 2 + i);
      const Tensor& g = group_tensor(in, n, 1, i);
      const Tensor& h = group_tensor(in, n, 2, i);
      visit<Types>(x.dtype(), [&]<class T>() {
        Tensor xn(x.dtype(), x.shape()), hn(x.dtype(), x.shape());
        const T *px = x.data<T>(), *pg = g.data<T>(), *ph = h.data<T>();
        T *pxn = xn.data<T>(), *phn = hn.data<T>();
        for (int64_t k = 0; k < x.size(); ++k) {
          const T gr = T(norm_coefficient_) * px[k] + pg[k];
          phn[k] = ph[k] + gr * gr;
          pxn[k] = px[k] - T(r) * gr / (std::sqrt(phn[k]) + T(epsilon_));
        }
        out[i] = xn;
        out[n + i] = hn;
      });
    }
    return out;
  }

 private:
  float decay_factor_, epsilon_, norm_coefficient_;
};

}  // namespace

void register_adagrad(Registry& reg) { reg.add("ai.onnx.preview.training", "Adagrad", {1}, make<Adagrad>); }

}  // namespace refeval::ops
