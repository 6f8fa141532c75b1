// EyeLike: a 2-D tensor shaped like the input with ones on the k-th diagonal, of the `dtype`
// attribute's element type (default: the input's).
#include "tensor_common.h"

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class EyeLike : public OpRun {
 public:
  using Types = Concat<Numeric, TypeList<bool>>;
  explicit EyeLike(const NodeContext& ctx) : k_(ctx.attr<int64_t>("k", 0)) {
    if (auto d = ctx.optional_attr<int64_t>("dtype")) {
      if (!is_valid_dtype(int32_t(*d)) || !Types::contains(DType(*d))) ctx.fail(fmt::format("EyeLike: unsupported dtype {}", *d));
      dtype_ = DType(*d);
    }
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() != 2) fail_runtime("EyeLike: the input must be 2-D, got shape " + shape_to_string(x.shape()));
    const DType t = dtype_ == DType::Undefined ? x.dtype() : dtype_;
    Tensor y(t, x.shape());
    visit<Types>(t, [&]<class T>() {
      T* out = y.data<T>();
      const int64_t rows = x.dim(0), cols = x.dim(1);
      if (k_ <= -rows || k_ >= cols) return;  // the diagonal misses the matrix (and i + k cannot overflow)
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t j = i + k_;
        if (j >= 0 && j < cols) out[i * cols + j] = from_compute<T>(compute_t<T>(1));
      }
    });
    return {y};
  }

 private:
  int64_t k_;
  DType dtype_ = DType::Undefined;
};

}  // namespace

void register_eye_like(Registry& reg) {
  reg.add("", "EyeLike", {9, 22}, make<EyeLike>);
}

}  // namespace refeval::ops
