// Depthwise 2-D convolution (group = C = M: one filter per channel, MobileNet's 3 x 3 layers)
// computed directly, each tap one vector loop over the channel's outputs (phase_planes.h).
// Through im2col it became one GEMM of a single row per channel (M = 1, K = 9), 2-2.5x slower
// than ONNX Runtime. Every output sums its taps in (kh, kw) order, padding taps adding 0 * w as
// im2col does. Channels are independent: threads split them without changing any bit.
#include <algorithm>
#include <vector>

#include "conv_common.h"
#include "phase_planes.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

// acc += tap * in; out of line so that it stays one vector loop (inlined, GCC fused two taps into
// a scalar loop, 3x slower).
template <class T>
__attribute__((noinline)) void add_scaled(T* __restrict acc, const T* __restrict in, T tap, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += tap * in[i];
}

}  // namespace

template <class T>
bool conv_depthwise_2d(const ConvGeometry& g, const T* x, const T* w, T* y) {
  if (g.in.size() != 2 || g.group != g.C || g.M != g.C) return false;
  const int64_t in_n = g.in_size(), out_n = g.out_size(), K = g.kernel_size(), channels = g.N * g.C;
  if (out_n == 0) return true;
  parallel_for(channels, std::max<int64_t>(1, (int64_t(1) << 16) / (out_n * K)), [&](int64_t first, int64_t last) {
    PhasePlanes<T> planes;
    std::vector<T> sums;
    for (int64_t p = first; p < last; ++p) {
      const T* filter = w + (p % g.C) * K;
      planes.build(g, x + p * in_n, T(0));
      sums.assign(size_t(planes.length()), T(0));
      for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
        for (int64_t kw = 0; kw < g.kernel[1]; ++kw)
          add_scaled(sums.data(), planes.tap(kh, kw), filter[kh * g.kernel[1] + kw], planes.length());
      planes.extract(g, sums.data(), y + p * out_n);
    }
  });
  return true;
}

template bool conv_depthwise_2d(const ConvGeometry&, const float*, const float*, float*);
template bool conv_depthwise_2d(const ConvGeometry&, const double*, const double*, double*);

}  // namespace refeval::ops
