// MatMulInteger (10): int32 matmul of (A - a_zero_point) and (B - b_zero_point), A and B int8 or
// uint8. A's zero point is a scalar or per row (1-D of M, or N-D [..., M, 1]); B's is a scalar or
// per column (1-D of N, or N-D [..., 1, N]). Products wrap in int32.
#include <fmt/format.h>

#include "linalg_common.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

using Int8s = TypeList<int8_t, uint8_t>;

// x - zero_point as int32, with the zero point broadcast to x's shape.
Tensor shifted(const Tensor& x, const Values& in, size_t zp_index, bool per_row) {
  Tensor zp = has_value(in, zp_index) ? input_tensor(in, zp_index)
                                      : visit<Int8s>(x.dtype(), [&]<class T>() { return Tensor::scalar<T>(T(0)); });
  if (zp.dtype() != x.dtype()) fail_runtime("a zero point must have its operand's element type");
  if (per_row && zp.rank() == 1 && zp.size() != 1) zp = zp.reshaped({zp.size(), 1});
  Tensor out = visit<Int8s>(x.dtype(), [&]<class T>() {
    return map_binary<T, T, int32_t>(x, zp, [](auto v, auto z) { return int32_t(v) - int32_t(z); });
  });
  if (out.shape() != x.shape())
    fail_runtime(fmt::format("zero point of shape {} does not fit the operand of shape {}", shape_to_string(zp.shape()),
                             shape_to_string(x.shape())));
  return out;
}

class MatMulInteger : public OpRun {
 public:
  using Types = Int8s;
  explicit MatMulInteger(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor a = shifted(input_tensor(in, 0), in, 2, true);
    const Tensor b = shifted(input_tensor(in, 1), in, 3, false);
    const MatMulShape s = matmul_shape(a.shape(), b.shape());
    Tensor y(DType::Int32, s.out);
    const int32_t *pa = a.data<int32_t>(), *pb = b.data<int32_t>();
    int32_t* py = y.data<int32_t>();
    for (size_t i = 0; i < s.a_batch.size(); ++i)
      gemm_loop(false, false, s.M, s.N, s.K, pa + s.a_batch[i] * s.M * s.K, pb + s.b_batch[i] * s.K * s.N,
                py + int64_t(i) * s.M * s.N, false);
    return {y};
  }
};

}  // namespace

void register_matmul_integer(Registry& reg) { reg.add("", "MatMulInteger", {10}, make<MatMulInteger>); }

}  // namespace refeval::ops
