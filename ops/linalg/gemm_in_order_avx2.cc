// The float GEMM on CPUs with AVX2 and FMA but no AVX-512 (AMD Zen 1-3, Intel before Skylake-X),
// C (M x N) = A (M x K) B (K x N). OpenBLAS's kernels for these CPUs (Haswell, Zen) sum the
// elements of a call in different orders depending on where they sit: equal rows of A give
// unequal rows of C (benchmarks/blas/kernels.sh says "equal rows: DIFFER" on every shape), and
// light_squeezenet's 1000 equal logits of ~1e10 came out 1 ulp apart, a softmax of 0 against 1/64.
// This kernel makes every element of C one chain of fused multiply-adds over k = 0 .. K-1
// (starting from C when accumulating), whatever its row, column or thread, as gemm_small_m.cc
// does with AVX-512: equal inputs give equal outputs, independent of the thread count.
//
// Layout: blocks of 64 columns of B, 256 rows of B per pass (64 KB, in L2), tiles of 6 rows x 16
// columns of C in 12 registers (two B vectors and one broadcast of A make 15 of the 16); the
// last vector of a block is masked.
#include <immintrin.h>

#include <algorithm>

#include "linalg_common.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

constexpr int kTileRows = 6;
constexpr int64_t kBlockCols = 64, kDepth = 256;

__attribute__((target("avx2,fma"))) inline __m256i lane_mask(int lanes) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Rows [0, R) x columns [0, 8 V) of C; the last vector holds the lanes `last` selects.
template <int R, int V>
__attribute__((target("avx2,fma"))) void tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                              int64_t ldc, __m256i last, bool accumulate) {
  const __m256i full = _mm256_set1_epi32(-1);
  __m256 sum[R][V];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v)
      sum[r][v] = accumulate ? _mm256_maskload_ps(c + r * ldc + 8 * v, v == V - 1 ? last : full) : _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m256 bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) bv[v] = _mm256_maskload_ps(b + k * ldb + 8 * v, v == V - 1 ? last : full);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) sum[r][v] = _mm256_fmadd_ps(av, bv[v], sum[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) _mm256_maskstore_ps(c + r * ldc + 8 * v, v == V - 1 ? last : full, sum[r][v]);
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, __m256i, bool);

template <int R>
TileFn tile_for(int vectors) { return vectors == 1 ? tile<R, 1> : tile<R, 2>; }
TileFn tile_for(int rows, int vectors) {
  switch (rows) {
    case 1: return tile_for<1>(vectors);
    case 2: return tile_for<2>(vectors);
    case 3: return tile_for<3>(vectors);
    case 4: return tile_for<4>(vectors);
    case 5: return tile_for<5>(vectors);
    default: return tile_for<6>(vectors);
  }
}

// Columns [n0, n0 + 64) (fewer in the last block) of C, every row, 256 values of k at a time: a
// tile goes on from the partial sums it stored, so each element stays one chain over k.
__attribute__((target("avx2,fma"))) void column_block(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c,
                                                      bool accumulate, int64_t n0) {
  const int64_t width = std::min(kBlockCols, N - n0);
  for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
    const int64_t depth = std::min(kDepth, K - k0);
    for (int64_t m0 = 0; m0 < M; m0 += kTileRows) {
      const int rows = int(std::min<int64_t>(kTileRows, M - m0));
      for (int64_t j = 0; j < width; j += 16) {  // the A tile stays in L1 across the block's 16-column strips
        const int64_t strip = std::min<int64_t>(16, width - j);
        const int vectors = int((strip + 7) / 8);
        tile_for(rows, vectors)(depth, a + m0 * K + k0, K, b + k0 * N + n0 + j, N, c + m0 * N + n0 + j, N,
                                lane_mask(int(strip - 8 * (vectors - 1))), accumulate || k0 > 0);
      }
    }
  }
}

}  // namespace

bool gemm_in_order_avx2(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate) {
  static const bool suits = !__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!suits) return false;
  parallel_for((N + kBlockCols - 1) / kBlockCols, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) column_block(M, N, K, a, b, c, accumulate, block * kBlockCols);
  });
  return true;
}

}  // namespace refeval::ops
