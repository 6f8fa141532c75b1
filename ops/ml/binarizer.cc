// Binarizer: y = x > threshold ? 1 : 0, in the input's type.
#include "ml_common.h"
#include "refeval/elementwise.h"

namespace refeval::ops {
namespace {

class Binarizer : public OpRun {
 public:
  using Types = MlNumeric;
  explicit Binarizer(const NodeContext& ctx) : threshold_(ctx.attr<float>("threshold", 0.0f)) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    return {visit<Types>(x.dtype(), [&]<class T>() {
      return map_unary<T>(x, [&](T v) { return double(v) > double(threshold_) ? T(1) : T(0); });
    })};
  }

 private:
  float threshold_;
};

}  // namespace

void register_binarizer(Registry& reg) { reg.add(kMl, "Binarizer", {1}, make<Binarizer>); }

}  // namespace refeval::ops
