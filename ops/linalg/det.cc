// Det (11, 22): determinant of each square matrix in the last two dimensions ([..., M, M] ->
// [...]), by LU decomposition with partial pivoting (Eigen) in double.
#include <Eigen/LU>
#include <fmt/format.h>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Det : public OpRun {
 public:
  using Types = Floats;
  explicit Det(const NodeContext&) {}
  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
      ctx.fail(fmt::format("input must be [..., M, M], got {}", shape_to_string(x.shape())));
    const int64_t m = x.dim(x.rank() - 1);
    Tensor y(x.dtype(), Shape(x.shape().begin(), x.shape().end() - 2));
    visit<Types>(x.dtype(), [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      Eigen::MatrixXd mat(m, m);
      for (int64_t b = 0; b < y.size(); ++b) {
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < m; ++j) mat(i, j) = double(compute_t<T>(px[(b * m + i) * m + j]));
        py[b] = from_compute<T>(m == 0 ? 1.0 : mat.partialPivLu().determinant());
      }
    });
    return {y};
  }
};

}  // namespace

void register_det(Registry& reg) { reg.add("", "Det", {11, 22}, make<Det>); }

}  // namespace refeval::ops
