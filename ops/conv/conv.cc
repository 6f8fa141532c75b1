// Conv (1, 11, 22): Y[n, m, o...] = B[m] + sum over c in m's group and kernel taps k of
// X[n, c, o * stride - pad_begin + k * dilation] * W[m, c', k], zero outside X (conv_common.h).
// Fast paths: depthwise 2-D convolutions directly (conv_depthwise.cc), the others per image and
// group as one GEMM of the weights by the im2col matrix: on CPUs with AVX2 or AVX-512 that matrix
// is gathered panel by panel into the strips of refeval's in-order GEMM kernels (conv_panels.cc),
// elsewhere written out whole (conv_by_gemm); float16 and bfloat16 compute in float. The spec-literal loop is the oracle
// in tests/ops/conv/conv_test.cc (and conv_panels_test.cc).
#include <fmt/format.h>

#include "../linalg/linalg_common.h"
#include "conv_common.h"
#include "refeval/elementwise.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// Converts a tensor of T to a buffer of its compute type C (a view when T is C).
template <class T, class C>
const C* as_compute(const Tensor& t, std::vector<C>& buf) {
  if constexpr (std::is_same_v<T, C>) {
    return t.data<T>();
  } else {
    buf.resize(size_t(t.size()));
    const T* p = t.data<T>();
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = C(p[i]);
    return buf.data();
  }
}

class Conv : public OpRun {
 public:
  using Types = Floats;
  explicit Conv(const NodeContext& ctx) : attrs_(ctx) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& w = input_tensor(in, 1);
    if (w.dtype() != x.dtype()) ctx.fail("X and W must have one element type");
    const ConvGeometry g = conv_geometry(attrs_, x.shape(), w.shape());
    const Tensor* b = has_value(in, 2) ? &input_tensor(in, 2) : nullptr;
    if (b && (b->dtype() != x.dtype() || b->rank() != 1 || b->dim(0) != g.M))
      ctx.fail(fmt::format("B must be 1-D of {} elements of X's type", g.M));
    Shape ys{g.N, g.M};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    // The depthwise loop adds into Y; the GEMM writes all of it, so only the former needs zeros.
    const bool depthwise = g.in.size() == 2 && g.group == g.C && g.M == g.C;
    Tensor y = depthwise ? Tensor(x.dtype(), ys) : Tensor::uninitialized(x.dtype(), ys);
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      std::vector<C> xb, wb, bb, yb;
      const C* px = as_compute<T, C>(x, xb);
      const C* pw = as_compute<T, C>(w, wb);
      const C* pb = b ? as_compute<T, C>(*b, bb) : nullptr;
      C* py;
      if constexpr (std::is_same_v<T, C>) py = y.data<T>();
      else { yb.resize(size_t(y.size())); py = yb.data(); }
      forward(g, px, pw, pb, py);
      if constexpr (!std::is_same_v<T, C>) {
        T* out = y.data<T>();
        for (size_t i = 0; i < yb.size(); ++i) out[i] = T(yb[i]);
      }
    });
    return {y};
  }

 private:
  template <class C>
  static void forward(const ConvGeometry& g, const C* x, const C* w, const C* b, C* y) {
    if constexpr (std::is_same_v<C, float>)
      if (conv_by_panels(g, x, w, b, y)) return;  // (the bias added there)
    if (!conv_depthwise_2d(g, x, w, y))
      conv_by_gemm(g, x, w, y, [](int64_t M, int64_t N, int64_t K, const C* pa, const C* pb, C* pc) {
        gemm(false, false, M, N, K, pa, pb, pc, false);
      });
    if (!b) return;
    const int64_t out_n = g.out_size();
    parallel_for(g.N * g.M, std::max<int64_t>(1, kParallelElements / std::max<int64_t>(out_n, 1)),
                 [&](int64_t first, int64_t last) {
                   for (int64_t r = first; r < last; ++r)
                     for (C *row = y + r * out_n, *end = row + out_n; row < end; ++row) *row += b[r % g.M];
                 });
  }

  ConvAttrs attrs_;
};

}  // namespace

void register_conv_op(Registry& reg) { reg.add("", "Conv", {1, 11, 22}, make<Conv>); }

}  // namespace refeval::ops
