// Scaler: y = (x - offset) * scale, with offset and scale of length 1 or C; float output.
#include "ml_common.h"

namespace refeval::ops {
namespace {

class Scaler : public OpRun {
 public:
  using Types = MlNumeric;
  explicit Scaler(const NodeContext& ctx)
      : offset_(ctx.attr<std::vector<float>>("offset", {})), scale_(ctx.attr<std::vector<float>>("scale", {})) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Rows r = read_rows<Types>(x);
    auto at = [&](const std::vector<float>& v, int64_t j, float dflt) -> double {
      if (v.empty()) return dflt;
      if (v.size() == 1) return v[0];
      if (int64_t(v.size()) != r.c) fail_runtime(fmt::format("offset and scale need 1 or {} values", r.c));
      return v[size_t(j)];
    };
    std::vector<double> y(r.v.size());
    for (int64_t i = 0; i < r.n; ++i)
      for (int64_t j = 0; j < r.c; ++j) y[i * r.c + j] = (r.row(i)[j] - at(offset_, j, 0.f)) * at(scale_, j, 1.f);
    return {float_tensor(x.shape(), y)};
  }

 private:
  std::vector<float> offset_, scale_;
};

}  // namespace

void register_scaler(Registry& reg) { reg.add(kMl, "Scaler", {1}, make<Scaler>); }

}  // namespace refeval::ops
