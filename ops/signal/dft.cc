// DFT (17: axis attribute; 20: axis input, default -2). The input holds real (last dim 1) or
// complex (last dim 2) values; the transform runs along one signal axis, zero-padded or cut to
// dft_length. onesided keeps the n/2+1 non-redundant bins of a real forward transform; with
// inverse it reads such a half spectrum and returns a real signal of length n (irfft).
#include "signal_common.h"

namespace refeval::ops {
namespace {

class DFT : public OpRun {
 public:
  using Types = Floats;
  explicit DFT(const NodeContext& ctx)
      : since_(ctx.since_version()),
        inverse_(ctx.attr<int64_t>("inverse", 0) != 0),
        onesided_(ctx.attr<int64_t>("onesided", 0) != 0) {
    if (since_ < 20) axis_ = ctx.attr<int64_t>("axis", 1);
  }

  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t r = int64_t(x.rank());
    if (r < 2) fail_runtime("the input needs a signal axis and a last dimension of 1 or 2");
    const int64_t comps = x.dim(size_t(r - 1));
    if (comps != 1 && comps != 2) fail_runtime(fmt::format("the last dimension must be 1 (real) or 2 (complex), got {}", comps));
    int64_t axis = since_ >= 20 ? (has_value(in, 2) ? scalar_int(input_tensor(in, 2), "axis") : -2) : axis_;
    if (axis < -r || axis > r - 2 || axis == -1) fail_runtime(fmt::format("axis {} is out of range for rank {}", axis, r));
    if (axis < 0) axis += r;
    const int64_t m = x.dim(size_t(axis));
    const bool irfft = inverse_ && onesided_;
    int64_t n = irfft ? 2 * (m - 1) : m;
    if (has_value(in, 1)) n = scalar_int(input_tensor(in, 1), "dft_length");
    if (n < 1) fail_runtime(fmt::format("dft_length must be positive, got {}", n));
    if (onesided_ && !inverse_ && comps == 2) fail_runtime("onesided forward DFT needs a real input");

    const int64_t out_len = irfft ? n : onesided_ ? n / 2 + 1 : n, out_comps = irfft ? 1 : 2;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < r - 1; ++d) inner *= x.dim(size_t(d));
    Shape out_shape = x.shape();
    out_shape[size_t(axis)] = out_len;
    out_shape.back() = out_comps;

    std::vector<cdouble> line = scratch_vector<cdouble>(n, "dft_length");
    std::vector<double> ys = scratch_vector<double>(shape_size(out_shape), "the DFT output");
    const std::vector<double> xs = to_doubles(x);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) {
          const size_t k = size_t(((o * m + j) * inner + i) * comps);
          return cdouble(xs[k], comps == 2 ? xs[k + 1] : 0.0);
        };
        std::fill(line.begin(), line.end(), cdouble(0));
        if (irfft) {  // rebuild the full spectrum from its conjugate-symmetric half
          const int64_t half = std::min(m, n / 2 + 1);
          for (int64_t k = 0; k < half; ++k) {
            line[size_t(k)] = at(k);
            if (k > 0 && n - k > n / 2) line[size_t(n - k)] = std::conj(at(k));
          }
        } else {
          for (int64_t j = 0; j < std::min(m, n); ++j) line[size_t(j)] = at(j);
        }
        fft(line, inverse_);
        for (int64_t k = 0; k < out_len; ++k) {
          const cdouble v = inverse_ ? line[size_t(k)] / double(n) : line[size_t(k)];
          const size_t dst = size_t(((o * out_len + k) * inner + i) * out_comps);
          ys[dst] = v.real();
          if (out_comps == 2) ys[dst + 1] = v.imag();
        }
      }
    return {from_doubles(x.dtype(), out_shape, ys)};
  }

 private:
  int since_;
  bool inverse_, onesided_;
  int64_t axis_ = 1;
};

}  // namespace

void register_dft(Registry& reg) { reg.add("", "DFT", {17, 20}, make<DFT>); }

}  // namespace refeval::ops
