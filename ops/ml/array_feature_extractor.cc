// ArrayFeatureExtractor: selects elements of X along its last axis at the indices Y (any shape,
// flattened). Z has shape X.shape[:-1] + [len(Y)], or [1, len(Y)] when X is 1-D.
#include "ml_common.h"

namespace refeval::ops {
namespace {

class ArrayFeatureExtractor : public OpRun {
 public:
  using Types = TypeList<float, double, int64_t, int32_t, std::string>;
  explicit ArrayFeatureExtractor(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& y = input_tensor(in, 1);
    if (x.rank() == 0) fail_runtime("X must have at least one dimension");
    const int64_t last = x.dim(x.rank() - 1), k = y.size(), outer = last == 0 ? 0 : x.size() / last;
    const int64_t* idx = y.data<int64_t>();
    for (int64_t j = 0; j < k; ++j)
      if (idx[j] < 0 || idx[j] >= last)
        fail_runtime(fmt::format("index {} is out of range for the last axis of size {}", idx[j], last));
    Shape shape = x.rank() == 1 ? Shape{1, k} : x.shape();
    shape.back() = k;
    Tensor z(x.dtype(), shape);
    visit<Types>(x.dtype(), [&]<class T>() {
      for (int64_t o = 0; o < (x.rank() == 1 ? 1 : outer); ++o)
        for (int64_t j = 0; j < k; ++j) z.data<T>()[o * k + j] = x.data<T>()[o * last + idx[j]];
    });
    return {z};
  }
};

}  // namespace

void register_array_feature_extractor(Registry& reg) {
  reg.add(kMl, "ArrayFeatureExtractor", {1}, make<ArrayFeatureExtractor>);
}

}  // namespace refeval::ops
