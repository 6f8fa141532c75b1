// Imputer: replaces every element equal to the replaced value (replaced_value_float, NaN
// matching NaN, for float inputs; replaced_value_int64 for integer inputs) with the imputed value
// of its column (imputed_value_floats / imputed_value_int64s: one value, or one per column).
#include "ml_common.h"

namespace refeval::ops {
namespace {

class Imputer : public OpRun {
 public:
  using Types = MlNumeric;
  explicit Imputer(const NodeContext& ctx)
      : floats_(ctx.attr<std::vector<float>>("imputed_value_floats", {})),
        ints_(ctx.attr<std::vector<int64_t>>("imputed_value_int64s", {})),
        replaced_float_(ctx.attr<float>("replaced_value_float", 0.0f)),
        replaced_int_(ctx.attr<int64_t>("replaced_value_int64", 0)) {
    if (floats_.empty() == ints_.empty()) ctx.fail("exactly one of imputed_value_floats and imputed_value_int64s is required");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t c = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
    return {visit<Types>(x.dtype(), [&]<class T>() {
      constexpr bool is_float = std::is_floating_point_v<T>;
      const size_t count = is_float ? floats_.size() : ints_.size();
      if (count == 0) fail_runtime("the imputed values do not match the input's type");
      if (count != 1 && int64_t(count) != c) fail_runtime(fmt::format("need 1 or {} imputed values, got {}", c, count));
      Tensor y(x.dtype(), x.shape());
      for (int64_t i = 0; i < x.size(); ++i) {
        const T v = x.data<T>()[i];
        const size_t k = count == 1 ? 0 : size_t(i % c);
        bool replace;
        if constexpr (is_float) replace = std::isnan(replaced_float_) ? std::isnan(v) : v == T(replaced_float_);
        else replace = int64_t(v) == replaced_int_;
        y.data<T>()[i] = !replace ? v : is_float ? T(floats_[k]) : T(ints_[k]);
      }
      return y;
    })};
  }

 private:
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
  float replaced_float_;
  int64_t replaced_int_;
};

}  // namespace

void register_imputer(Registry& reg) { reg.add(kMl, "Imputer", {1}, make<Imputer>); }

}  // namespace refeval::ops
