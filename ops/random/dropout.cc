// Dropout. In inference (always before opset 12; from 12 unless the training_mode input is true,
// or when ratio is 0) the output is the input and the mask is all true (all ones, of the input's
// type, before opset 10). In training, mask[i] = (uniform() >= ratio) and
// output = x * mask / (1 - ratio). Seeding: random_common.h.
#include <fmt/format.h>

#include "random_common.h"

namespace refeval::ops {
namespace {

class Dropout : public OpRun {
 public:
  static constexpr Determinism determinism = Determinism::Random;
  using Types = Concat<Floats, Float8s>;
  explicit Dropout(const NodeContext& ctx) : rng_(ctx), version_(ctx.since_version()) {
    if (version_ < 12) ratio_ = ctx.attr<float>("ratio", 0.5f);
    if (version_ < 7) ctx.attr<int64_t>("is_test", 0);  // the spec's reference runs old Dropout as inference
    if (version_ < 6) ctx.ignore("consumed_inputs");
  }

  Values run(const Values& in, RunContext&) override {
    Draw draw = rng_.draw();
    const Tensor& x = input_tensor(in, 0);
    double ratio = ratio_;
    bool training = false;
    if (version_ >= 12) {
      if (has_value(in, 1)) ratio = scalar_of(input_tensor(in, 1), "ratio");
      if (has_value(in, 2)) {
        const Tensor& t = input_tensor(in, 2);
        if (t.size() != 1) fail_runtime("training_mode must be a scalar");
        training = t.data<bool>()[0];
      }
    }
    if (training && !(ratio >= 0.0 && ratio <= 1.0)) fail_runtime(fmt::format("ratio {} is outside [0, 1)", ratio));
    if (!training || ratio == 0.0) {
      if (version_ >= 10) return {x, Tensor::from_vector<bool>(x.shape(), std::vector<bool>(size_t(x.size()), true))};
      return {x, visit<Types>(x.dtype(), [&]<class T>() {
        Tensor m(x.dtype(), x.shape());
        for (int64_t i = 0; i < m.size(); ++i) m.data<T>()[i] = from_compute<T>(compute_t<T>(1));
        return m;
      })};
    }
    const double scale = ratio < 1.0 ? 1.0 / (1.0 - ratio) : 0.0;
    Tensor y(x.dtype(), x.shape()), mask(DType::Bool, x.shape());
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      bool* pm = mask.data<bool>();
      for (int64_t i = 0; i < x.size(); ++i) {
        pm[i] = draw.uniform() >= ratio;
        py[i] = from_compute<T>(compute_t<T>(pm[i] ? double(compute_t<T>(px[i])) * scale : 0.0));
      }
    });
    return {y, mask};
  }

 private:
  static double scalar_of(const Tensor& t, const char* what) {
    if (t.size() != 1) fail_runtime(fmt::format("{} must be a scalar", what));
    return visit<Types>(t.dtype(), [&]<class T>() { return double(compute_t<T>(t.data<T>()[0])); });
  }
  RandomSource rng_;
  int version_;
  float ratio_ = 0.5f;
};

}  // namespace

void register_dropout(Registry& reg) { reg.add("", "Dropout", {1, 6, 7, 10, 12, 13, 22}, make<Dropout>); }

}  // namespace refeval::ops
