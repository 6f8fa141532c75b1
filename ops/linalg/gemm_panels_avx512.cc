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
// Layout: the tile of tile_avx512.h, 8 rows x 3 strips (48 columns) of C in 24 registers. Each
// 8-row group of A (8 x 256, 8 KB) stays in L1 while it passes over the panel's strips (96 KB, in L2).
#include <algorithm>

#include "refeval/isa.h"
#include "linalg_common.h"
#include "tile_avx512.h"

namespace refeval::ops {
namespace {

constexpr int64_t kStrip = 16;  // panels of 256 x 96 (for_each_panel) in strips of 16 columns
using avx512::kTileRows;
using avx512::kTileVectors;

// Rows [0, M) of C (row stride ldc) against the panel's `width` columns from n0: every 8-row group
// passes over all the panel's strips, its slice of A staying in L1.
void panel_product(int64_t M, int64_t width, int64_t depth, const float* a, int64_t lda, const float* panel, float* c,
                   int64_t ldc, int64_t n0, bool accumulate) {
  const int64_t strips = (width + kStrip - 1) / kStrip;
  const int tail = int(width - kStrip * (strips - 1));
  for (int64_t m0 = 0; m0 < M; m0 += kTileRows) {
    const int rows = int(std::min<int64_t>(kTileRows, M - m0));
    for (int64_t s0 = 0; s0 < strips; s0 += kTileVectors) {
      const int count = int(std::min<int64_t>(kTileVectors, strips - s0));
      const __mmask16 last = s0 + count == strips ? __mmask16((1u << tail) - 1) : __mmask16(0xFFFF);
      avx512::tile_for(rows, count)(depth, a + m0 * lda, lda, panel + s0 * kStrip * depth, kStrip, kStrip * depth,
                                    c + m0 * ldc + n0 + s0 * kStrip, ldc, last, accumulate, nullptr);
    }
  }
}

}  // namespace

bool in_order_avx512_suits() { return active_isa() == Isa::Avx512; }

bool gemm_panels_avx512(int64_t M, int64_t N, int64_t K, const float* a, const PanelSource& b, float* c,
                        bool accumulate, const float* row_bias) {
  if (!in_order_avx512_suits()) return false;
  for_each_panel(M, N, K, kTileRows, b, [&](int64_t m0, int64_t rows, int64_t n0, int64_t width, int64_t k0,
                                        int64_t depth, const float* panel) {
    panel_product(rows, width, depth, a + m0 * K + k0, K, panel, c + m0 * N, N, n0, accumulate || k0 > 0);
  }, row_bias, c);
  return true;
}

}  // namespace refeval::ops
