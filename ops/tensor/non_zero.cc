// NonZero: the coordinates of the non-zero elements, row-major order, as an int64 tensor of shape
// (rank, count). A scalar is treated as 1-D, as numpy does. Strings count when non-empty.
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class NonZero : public OpRun {
 public:
  using Types = Concat<AllNumeric, TypeList<std::string>>;
  explicit NonZero(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x0 = input_tensor(in, 0);
    const Tensor x = x0.rank() == 0 ? x0.reshaped({1}) : x0;
    std::vector<int64_t> hits;
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.size(); ++i) {
        bool nz;
        if constexpr (std::is_same_v<T, std::string>) nz = !p[i].empty();
        else if constexpr (std::is_same_v<T, bool>) nz = p[i];
        else if constexpr (std::is_class_v<T> && !std::is_same_v<T, std::complex<float>> && !std::is_same_v<T, std::complex<double>>)
          nz = float(p[i]) != 0.0f;
        else nz = p[i] != T(0);
        if (nz) hits.push_back(i);
      }
    });
    const size_t rank = x.rank();
    const int64_t n = int64_t(hits.size());
    Tensor y(DType::Int64, {int64_t(rank), n});
    int64_t* out = y.data<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      int64_t flat = hits[size_t(k)];
      for (size_t d = rank; d-- > 0;) {
        out[int64_t(d) * n + k] = flat % x.dim(d);
        flat /= x.dim(d);
      }
    }
    return {y};
  }
};

}  // namespace

void register_non_zero(Registry& reg) {
  reg.add("", "NonZero", {9, 13}, make<NonZero>);
}

}  // namespace refeval::ops
