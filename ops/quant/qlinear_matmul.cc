// QLinearMatMul (10, 21): quantized numpy matmul,
//   y = saturate(round((a - a_zero_point) @ (b - b_zero_point) * (a_scale * b_scale / y_scale)) + y_zero_point)
// with a's scale/zero point per tensor or per row (1-D of M), b's per tensor or per column (1-D
// of N), y's per tensor. 8-bit integers (10) and float8 types (21, no integer rounding); the
// scale ratio is computed in the scales' type.
#include <fmt/format.h>

#include "../linalg/linalg_common.h"
#include "quant_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

double in_type(DType t, double v) {
  if (t == DType::Float) return double(float(v));
  if (t == DType::Float16) return double(float(float16(v)));
  if (t == DType::BFloat16) return double(float(bfloat16(v)));
  return v;
}

class QLinearMatMul : public OpRun {
 public:
  using Types = Concat<Int8Types, QuantFloat8>;
  explicit QLinearMatMul(const NodeContext&) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &a = input_tensor(in, 0), &as = input_tensor(in, 1), &az = input_tensor(in, 2);
    const Tensor &b = input_tensor(in, 3), &bs = input_tensor(in, 4), &bz = input_tensor(in, 5);
    const Tensor &ys = input_tensor(in, 6), &yz = input_tensor(in, 7);
    if (az.dtype() != a.dtype() || bz.dtype() != b.dtype()) ctx.fail("a zero point must have its operand's type");
    visit<Types>(a.dtype(), [&]<class T>() {});
    visit<Types>(b.dtype(), [&]<class T>() {});
    const MatMulShape s = matmul_shape(a.shape(), b.shape());
    auto per = [&](const Tensor& t, int64_t n, const char* what) {
      if (t.size() != 1 && t.size() != n) ctx.fail(fmt::format("{} must hold 1 or {} values", what, n));
      return t.size() != 1;
    };
    const bool a_rows = per(as, s.M, "a_scale") | per(az, s.M, "a_zero_point");
    const bool b_cols = per(bs, s.N, "b_scale") | per(bz, s.N, "b_zero_point");
    if (ys.size() != 1 || yz.size() != 1) ctx.fail("y_scale and y_zero_point must be scalars");
    (void)a_rows, (void)b_cols;
    auto at = [](const Tensor& t, int64_t i) { return element_as_double(t, t.size() == 1 ? 0 : i); };
    const int64_t M = s.M, N = s.N, K = s.K;
    std::vector<double> av(size_t(a.size())), bv(size_t(b.size()));
    for (int64_t i = 0; i < a.size(); ++i) av[size_t(i)] = element_as_double(a, i) - at(az, (i / K) % M);
    for (int64_t i = 0; i < b.size(); ++i) bv[size_t(i)] = element_as_double(b, i) - at(bz, i % N);
    Tensor y(yz.dtype(), s.out);
    const double yzv = element_as_double(yz, 0);
    visit<Types>(yz.dtype(), [&]<class Q>() {
      Q* py = y.data<Q>();
      std::vector<double> c(size_t(M * N));
      for (size_t bi = 0; bi < s.a_batch.size(); ++bi) {
        gemm(false, false, M, N, K, av.data() + s.a_batch[bi] * M * K, bv.data() + s.b_batch[bi] * K * N, c.data(), false);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const DType st = as.dtype();
            const double f = in_type(st, in_type(st, at(as, i) * at(bs, j)) / element_as_double(ys, 0));
            const double v = c[size_t(i * N + j)] * f;
            py[int64_t(bi) * M * N + i * N + j] =
                quant_from_double<Q>(std::is_integral_v<Q> ? std::nearbyint(v) + yzv : v + yzv);
          }
      }
    });
    return {y};
  }
};

}  // namespace

void register_qlinear_matmul(Registry& reg) { reg.add("", "QLinearMatMul", {10, 21}, make<QLinearMatMul>); }

}  // namespace refeval::ops
