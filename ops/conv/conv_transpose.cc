// ConvTranspose (1, 11, 22): the adjoint of Conv. X is [N, C, in...], W is [C, M/group, k...];
// each X[n, c, i] * W[c, m, k] adds into Y[n, g*M/group + m, i * stride - pad_begin + k * dilation].
// Output size per axis: stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads, or
// output_shape (pads then derived from the total padding, auto_pad SAME_UPPER putting the odd one
// at the end, otherwise at the beginning), or in * stride for auto_pad SAME_*.
// Fast path: one GEMM per image and group (W^T X) then col2im; the oracle is in the tests.
#include <fmt/format.h>

#include "../linalg/linalg_common.h"
#include "conv_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class ConvTranspose : public OpRun {
 public:
  using Types = Floats;
  explicit ConvTranspose(const NodeContext& ctx)
      : attrs_(ctx),
        output_padding_(ctx.attr<std::vector<int64_t>>("output_padding", {})),
        output_shape_(ctx.attr<std::vector<int64_t>>("output_shape", {})) {}

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor& x = input_tensor(in, 0);
    const Tensor& w = input_tensor(in, 1);
    if (w.dtype() != x.dtype()) ctx.fail("X and W must have one element type");
    const ConvGeometry g = geometry(x.shape(), w.shape());
    const Tensor* b = has_value(in, 2) ? &input_tensor(in, 2) : nullptr;
    if (b && (b->dtype() != x.dtype() || b->rank() != 1 || b->dim(0) != g.M))
      ctx.fail(fmt::format("B must be 1-D of {} elements of X's type", g.M));
    Shape ys{g.N, g.M};
    ys.insert(ys.end(), g.in.begin(), g.in.end());  // g is the conv that maps Y back to X
    Tensor y(x.dtype(), ys);
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      auto load = [](const Tensor& t) {
        std::vector<C> v(size_t(t.size()));
        const T* p = t.data<T>();
        for (size_t i = 0; i < v.size(); ++i) v[i] = C(p[i]);
        return v;
      };
      const std::vector<C> xv = load(x), wv = load(w);
      std::vector<C> yv(size_t(y.size()), C(0));
      const int64_t Cg = g.C / g.group, Mg = g.M / g.group, K = g.kernel_size();
      const int64_t xn = g.out_size(), yn = g.in_size();
      std::vector<C> col(size_t(Mg * K * xn));
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t grp = 0; grp < g.group; ++grp) {
          gemm(true, false, Mg * K, xn, Cg, wv.data() + grp * Cg * Mg * K, xv.data() + (n * g.C + grp * Cg) * xn,
               col.data(), false);
          col2im(g, Mg, col.data(), yv.data() + (n * g.M + grp * Mg) * yn);
        }
      const T* pb = b ? b->data<T>() : nullptr;
      T* out = y.data<T>();
      for (int64_t i = 0; i < y.size(); ++i) {
        const int64_t m = (i / yn) % g.M;
        out[i] = T(yv[size_t(i)] + (pb ? C(pb[m]) : C(0)));
      }
    });
    return {y};
  }

 private:
  // The geometry of the forward conv whose adjoint this is: its input is Y, its output is X.
  ConvGeometry geometry(const Shape& x, const Shape& w) const {
    if (x.size() < 2 || w.size() != x.size())
      fail_runtime(fmt::format("X {} and W {} must be [N, C, ...] and [C, M/group, ...]", shape_to_string(x), shape_to_string(w)));
    const size_t D = x.size() - 2;
    ConvGeometry g;
    g.N = x[0];
    g.C = x[1];
    g.group = attrs_.group;
    g.M = w[1] * g.group;
    if (w[0] != g.C || g.C % g.group != 0)
      fail_runtime(fmt::format("W {} must be [C, M/group, ...] for X {} and group={}", shape_to_string(w), shape_to_string(x), g.group));
    g.out.assign(x.begin() + 2, x.end());
    g.kernel.assign(w.begin() + 2, w.end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != g.kernel)
      fail_runtime("kernel_shape differs from W's spatial shape");
    auto per_axis = [&](const std::vector<int64_t>& v, int64_t dflt, const char* name) {
      if (v.empty()) return std::vector<int64_t>(D, dflt);
      if (v.size() != D) fail_runtime(fmt::format("{} must have {} values, got {}", name, D, v.size()));
      return v;
    };
    g.strides = per_axis(attrs_.strides, 1, "strides");
    g.dilations = per_axis(attrs_.dilations, 1, "dilations");
    const std::vector<int64_t> op = per_axis(output_padding_, 0, "output_padding");
    std::vector<int64_t> out_shape = output_shape_;
    if (out_shape.size() == D + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (!out_shape.empty() && out_shape.size() != D) fail_runtime(fmt::format("output_shape must have {} values", D));
    if (!attrs_.pads.empty() && attrs_.pads.size() != 2 * D) fail_runtime(fmt::format("pads must have {} values", 2 * D));
    const bool same = attrs_.auto_pad == "SAME_UPPER" || attrs_.auto_pad == "SAME_LOWER";
    g.pad_begin.assign(D, 0);
    g.pad_end.assign(D, 0);
    g.in.resize(D);
    for (size_t d = 0; d < D; ++d) {
      if (op[d] < 0) fail_runtime("output_padding must be >= 0");
      const int64_t full = g.strides[d] * (g.out[d] - 1) + op[d] + (g.kernel[d] - 1) * g.dilations[d] + 1;
      if (!out_shape.empty() || same) {
        const int64_t size = !out_shape.empty() ? out_shape[d] : g.out[d] * g.strides[d];
        const int64_t total = full - size, half = floor_div(total, 2);
        g.pad_begin[d] = attrs_.auto_pad == "SAME_UPPER" ? half : total - half;
        g.pad_end[d] = total - g.pad_begin[d];
        g.in[d] = size;
      } else {
        if (!attrs_.pads.empty() && attrs_.auto_pad != "VALID") g.pad_begin[d] = attrs_.pads[d], g.pad_end[d] = attrs_.pads[d + D];
        g.in[d] = full - g.pad_begin[d] - g.pad_end[d];
      }
      if (g.in[d] < 0) fail_runtime(fmt::format("the output size on axis {} is negative ({})", d, g.in[d]));
    }
    return g;
  }

  ConvAttrs attrs_;
  std::vector<int64_t> output_padding_, output_shape_;
};

}  // namespace

void register_conv_transpose(Registry& reg) { reg.add("", "ConvTranspose", {1, 11, 22}, make<ConvTranspose>); }

}  // namespace refeval::ops
