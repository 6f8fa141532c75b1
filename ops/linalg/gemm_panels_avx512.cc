// C (M x N) = A (M x K) B (K x N) on AVX-512 CPUs with B from a PanelSource: a convolution's
// im2col matrix, gathered 256 x 96 at a time into strips of 16 columns just before the tiles read
// it, never written out whole. The im2col + OpenBLAS path it replaces wrote that matrix, then
// OpenBLAS copied it again (its packing) and packed the weights anew on every call (sgemm_oncopy,
// a tenth of ResNet-18); here A, the weights, is read where it lies, broadcast from L1.
//
// Every element of C is one chain of fused multiply-adds over k = 0 .. K-1 from zero, whatever its
// row, column or thread, as in gemm_small_m.cc and gemm_in_order_avx2.cc: equal inputs give equal
// outputs and the thread count changes no bit.
//
// Layout: a tile holds 8 rows x 3 strips (48 columns) of C in 24 registers; per k it loads the
// strips' 3 vectors and multiplies each by 8 broadcasts of A. Each 8-row group of A (8 x 256, 8 KB)
// stays in L1 while it passes over the panel's strips (96 KB, in L2).
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "linalg_common.h"

namespace refeval::ops {
namespace {

constexpr int64_t kStrip = 16;  // panels of 256 x 96 (for_each_panel) in strips of 16 columns
constexpr int kRows = 8, kStrips = 3;  // the full tile

// Rows [0, R) x strips [0, V) of C from `depth` rows of the strips at b (strip v at b + v
// strip_stride, rows of 16 floats); `last` selects the columns of the last strip inside C. With
// `accumulate` the chains go on from C's values (a later pass over k).
template <int R, int V>
__attribute__((target("avx512f"))) void tile(int64_t depth, const float* a, int64_t lda, const float* b,
                                             int64_t strip_stride, float* c, int64_t ldc, __mmask16 last,
                                             bool accumulate) {
  auto mask = [&](int v) { return v == V - 1 ? last : __mmask16(0xFFFF); };
  __m512 sum[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v)
      sum[r][v] = accumulate ? _mm512_maskz_loadu_ps(mask(v), c + r * ldc + kStrip * v) : _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < depth; ++k) {
    __m512 bv[V];
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(b + v * strip_stride + k * kStrip);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) sum[r][v] = _mm512_fmadd_ps(av, bv[v], sum[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(c + r * ldc + kStrip * v, mask(v), sum[r][v]);
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, __mmask16, bool);

template <int R, int... Vs>
TileFn pick(int strips, std::integer_sequence<int, Vs...>) {
  TileFn f = nullptr;
  ((strips == Vs + 1 ? (f = tile<R, Vs + 1>, 0) : 0), ...);
  return f;
}
template <int... Rs>
TileFn tile_for(int rows, int strips, std::integer_sequence<int, Rs...>) {
  TileFn f = nullptr;
  ((rows == Rs + 1 ? (f = pick<Rs + 1>(strips, std::make_integer_sequence<int, kStrips>()), 0) : 0), ...);
  return f;
}
TileFn tile_for(int rows, int strips) { return tile_for(rows, strips, std::make_integer_sequence<int, kRows>()); }

// Rows [0, M) of C (row stride ldc) against the panel's `width` columns from n0: every 8-row group
// passes over all the panel's strips, its slice of A staying in L1.
void panel_product(int64_t M, int64_t width, int64_t depth, const float* a, int64_t lda, const float* panel, float* c,
                   int64_t ldc, int64_t n0, bool accumulate) {
  const int64_t strips = (width + kStrip - 1) / kStrip;
  const int tail = int(width - kStrip * (strips - 1));
  for (int64_t m0 = 0; m0 < M; m0 += kRows) {
    const int rows = int(std::min<int64_t>(kRows, M - m0));
    for (int64_t s0 = 0; s0 < strips; s0 += kStrips) {
      const int count = int(std::min<int64_t>(kStrips, strips - s0));
      const __mmask16 last = s0 + count == strips ? __mmask16((1u << tail) - 1) : __mmask16(0xFFFF);
      tile_for(rows, count)(depth, a + m0 * lda, lda, panel + s0 * kStrip * depth, kStrip * depth,
                            c + m0 * ldc + n0 + s0 * kStrip, ldc, last, accumulate);
    }
  }
}

}  // namespace

bool in_order_avx512_suits() {
  static const bool suits = __builtin_cpu_supports("avx512f");
  return suits;
}

bool gemm_panels_avx512(int64_t M, int64_t N, int64_t K, const float* a, const PanelSource& b, float* c) {
  if (!in_order_avx512_suits()) return false;
  for_each_panel(M, N, K, kRows, b, [&](int64_t m0, int64_t rows, int64_t n0, int64_t width, int64_t k0,
                                        int64_t depth, const float* panel) {
    panel_product(rows, width, depth, a + m0 * K + k0, K, panel, c + m0 * N, N, n0, k0 > 0);
  });
  return true;
}

}  // namespace refeval::ops
