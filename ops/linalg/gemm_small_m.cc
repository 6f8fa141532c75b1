// The float GEMM of transformer inference on few tokens, C (M x N) = A (M x K) B (K x N) with M
// small and B a large weight (GPT-2 small at 32 tokens: 32 x 768 x 50257 for the LM head).
// OpenBLAS packs B on every call, which costs about as much as computing with it at such M: it
// reaches 55-75 GFLOP/s here against ONNX Runtime's 90 with weights packed once at load, and
// packing once would double the weights' memory. This kernel reads B where it lies instead,
// 48 columns at a time, holds an 8 x 48 tile of C in 24 AVX-512 registers (3 loads of B and 8
// broadcasts of A per 24 multiply-adds) and prefetches the next block of B while the first rows
// of C use this one. The LM head above took 19.1 ms with 4 x 64 tiles, 17.4 with 6 x 64, 16.2
// with these; a Llama-style decoder's prefill 68 -> 56 ms and decode step 21.2 -> 19.3.
//
// Every element of C is one chain of fused multiply-adds over k = 0 .. K-1 (starting from C
// when accumulating), whatever its row, column or thread: equal rows of A give equal rows of C,
// and the result does not depend on the thread count, which splits the blocks of 48 columns.
#include <immintrin.h>

#include "linalg_common.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

constexpr int kTileRows = 8;
constexpr int kTileVectors = 3;                   // 16 floats each
constexpr int64_t kBlockCols = 16 * kTileVectors;  // columns of B per block
constexpr int64_t kDepth = 256;                    // rows of B per pass over a block (48 KB)
constexpr int64_t kMaxA = int64_t(1) << 17;        // A's elements (512 KB): A and a block of B stay in L2

// Rows [0, R) x columns [0, 16 V) of C; the last vector holds the columns `last` selects.
template <int R, int V>
__attribute__((target("avx512f"))) void tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
                                             float* c, int64_t ldc, __mmask16 last, bool accumulate,
                                             const float* prefetch) {
  __m512 sum[R][V];  // the loops over r and v unroll early so that sum lives in registers
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      sum[r][v] = accumulate ? _mm512_maskz_loadu_ps(v == V - 1 ? last : __mmask16(0xFFFF), c + r * ldc + 16 * v)
                             : _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* row = b + k * ldb;
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm512_maskz_loadu_ps(v == V - 1 ? last : __mmask16(0xFFFF), row + 16 * v);
    if (prefetch)
#pragma GCC unroll 4
      for (int v = 0; v < kTileVectors; ++v) _mm_prefetch(reinterpret_cast<const char*>(prefetch + k * ldb + 16 * v), _MM_HINT_T1);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) sum[r][v] = _mm512_fmadd_ps(av, bv[v], sum[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, v == V - 1 ? last : __mmask16(0xFFFF), sum[r][v]);
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, __mmask16, bool, const float*);

template <int R>
constexpr TileFn tile_for(int vectors) {
  switch (vectors) {
    case 1: return tile<R, 1>;
    case 2: return tile<R, 2>;
    default: return tile<R, 3>;
  }
}
TileFn tile_for(int rows, int vectors) {
  switch (rows) {
    case 1: return tile_for<1>(vectors);
    case 2: return tile_for<2>(vectors);
    case 3: return tile_for<3>(vectors);
    case 4: return tile_for<4>(vectors);
    case 5: return tile_for<5>(vectors);
    case 6: return tile_for<6>(vectors);
    case 7: return tile_for<7>(vectors);
    default: return tile_for<8>(vectors);
  }
}

// Columns [n0, n0 + 64) (fewer in the last block) of C, every row, 256 values of k at a time:
// a tile goes on from the partial sums it stored, so each element stays one chain over k.
void column_block(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate, int64_t n0) {
  const int64_t width = std::min(kBlockCols, N - n0);
  const int vectors = int((width + 15) / 16);
  const int tail = int(width - 16 * (vectors - 1));
  const __mmask16 last = __mmask16((1u << tail) - 1);
  const float* next = n0 + kBlockCols < N ? b + n0 + kBlockCols : nullptr;
  for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
    const int64_t depth = std::min(kDepth, K - k0);
    for (int64_t m0 = 0; m0 < M; m0 += kTileRows) {
      const int rows = int(std::min<int64_t>(kTileRows, M - m0));
      tile_for(rows, vectors)(depth, a + m0 * K + k0, K, b + k0 * N + n0, N, c + m0 * N + n0, N, last,
                              accumulate || k0 > 0, m0 == 0 && next ? next + k0 * N : nullptr);
    }
  }
}

}  // namespace

bool gemm_small_m(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate) {
  static const bool has_avx512 = __builtin_cpu_supports("avx512f");
  if (!has_avx512 || M * K > kMaxA || N < kBlockCols) return false;
  parallel_for((N + kBlockCols - 1) / kBlockCols, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) column_block(M, N, K, a, b, c, accumulate, block * kBlockCols);
  });
  return true;
}

}  // namespace refeval::ops
