// The float GEMM on CPUs with AVX2 and FMA but no AVX-512 (AMD Zen 1-3, Intel before Skylake-X),
// C (M x N) = A (M x K) B (K x N). OpenBLAS's kernels for these CPUs (Haswell, Zen) sum the
// elements of a call in different orders depending on where they sit: equal rows of A give
// unequal rows of C (benchmarks/blas/kernels.sh says "equal rows: DIFFER" on every shape), and
// light_squeezenet's 1000 equal logits of ~1e10 came out 1 ulp apart, a softmax of 0 against 1/64.
// This kernel makes every element of C one chain of fused multiply-adds over k = 0 .. K-1
// (starting from C when accumulating), whatever its row, column or thread, as gemm_small_m.cc
// does with AVX-512: equal inputs give equal outputs, independent of the thread count.
//
// Layout: blocks of 96 columns of B, 256 rows of B per pass (96 KB, in L2; copied to a contiguous
// panel when C has 8 rows or more), tiles of C holding 12 sums in registers (1 x 96 columns for a
// single row, up to 6 x 16); the last vector of a strip is masked. A constant B (a weight) is
// laid out once in those panels (pack_in_order_avx2): a product then reads them in place, at any
// row count, instead of copying all of B on every call (8 x 768 x 2304: 42% of the time in memmove).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "linalg_common.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

constexpr int64_t kBlockCols = 96, kDepth = 256;
constexpr int64_t kPackFromRows = 8;  // from this many rows a block of B is packed (reused by every row tile)

__attribute__((target("avx2,fma"))) inline __m256i lane_mask(int lanes) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Rows [0, R) x columns [0, 8 V) of C; with Masked the last vector holds the lanes `last`
// selects (a strip at the block's edge), else every vector is full and no mask register is taken.
// The loop keeps the smaller operand set in registers: R broadcasts of A while V vectors of B
// stream, or V vectors of B while R broadcasts stream, so 12 sums + min(R, V) + 1 fit the 16
// registers.
template <int R, int V, bool Masked>
__attribute__((target("avx2,fma"))) void tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                              int64_t ldc, __m256i last, bool accumulate) {
  auto load = [&](const float* p, int v) {
    if constexpr (Masked) return v == V - 1 ? _mm256_maskload_ps(p, last) : _mm256_loadu_ps(p);
    else return _mm256_loadu_ps(p);
  };
  __m256 sum[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) sum[r][v] = accumulate ? load(c + r * ldc + 8 * v, v) : _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* row = b + k * ldb;
    if constexpr (R <= V) {
      __m256 av[R];
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) av[r] = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v) {
        const __m256 bv = load(row + 8 * v, v);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) sum[r][v] = _mm256_fmadd_ps(av[r], bv, sum[r][v]);
      }
    } else {
      __m256 bv[V];
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v) bv[v] = load(row + 8 * v, v);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 12
        for (int v = 0; v < V; ++v) sum[r][v] = _mm256_fmadd_ps(av, bv[v], sum[r][v]);
      }
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) {
      if (Masked && v == V - 1) _mm256_maskstore_ps(c + r * ldc + 8 * v, last, sum[r][v]);
      else _mm256_storeu_ps(c + r * ldc + 8 * v, sum[r][v]);
    }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t, __m256i, bool);

// Tiles keep 12 sums in registers (R rows x V vectors, R V <= 12): 1 x 12, 2 x 6, 3 x 4, 4 x 3,
// then 6 x 2 from 5 rows on, so that enough independent chains hide the FMA latency however few
// rows C has. `vectors` < V for the strip at a block's edge.
constexpr int vectors_for(int rows) { return rows >= 5 ? 2 : 12 / rows; }
template <int R, int... Vs>
TileFn pick(int vectors, bool masked, std::integer_sequence<int, Vs...>) {
  TileFn f = nullptr;
  ((vectors == Vs + 1 ? (f = masked ? tile<R, Vs + 1, true> : tile<R, Vs + 1, false>, 0) : 0), ...);
  return f;
}
TileFn tile_for(int rows, int vectors, bool masked) {
  switch (rows) {
    case 1: return pick<1>(vectors, masked, std::make_integer_sequence<int, 12>());
    case 2: return pick<2>(vectors, masked, std::make_integer_sequence<int, 6>());
    case 3: return pick<3>(vectors, masked, std::make_integer_sequence<int, 4>());
    case 4: return pick<4>(vectors, masked, std::make_integer_sequence<int, 3>());
    case 5: return pick<5>(vectors, masked, std::make_integer_sequence<int, 2>());
    default: return pick<6>(vectors, masked, std::make_integer_sequence<int, 2>());
  }
}

// Columns [n0, n0 + 96) (fewer in the last block) of C, every row, 256 values of k at a time: a
// tile goes on from the partial sums it stored, so each element stays one chain over k. With
// many rows the block of B is first copied to a contiguous panel that every row tile then reads;
// with `packed` (B's blocks laid out by pack_in_order_avx2) the panel is read where it lies.
__attribute__((target("avx2,fma"))) void column_block(int64_t M, int64_t N, int64_t K, const float* a, const float* b,
                                                      const float* packed, float* c, bool accumulate, int64_t n0,
                                                      std::vector<float>& panel) {
  const int64_t width = std::min(kBlockCols, N - n0);
  const bool pack = !packed && M >= kPackFromRows;
  if (pack) panel.resize(size_t(kDepth * width));
  for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
    const int64_t depth = std::min(kDepth, K - k0);
    const float* bb = packed ? packed + n0 * K + k0 * width : b + k0 * N + n0;
    int64_t ldb = packed ? width : N;
    if (pack) {
      for (int64_t k = 0; k < depth; ++k) std::copy_n(bb + k * N, width, panel.data() + k * width);
      bb = panel.data(), ldb = width;
    }
    for (int64_t m0 = 0; m0 < M;) {
      const int rows = int(std::min<int64_t>(6, M - m0));
      const int64_t strip_width = 8 * vectors_for(rows);
      for (int64_t j = 0; j < width; j += strip_width) {  // the A tile stays in L1 across the block's strips
        const int64_t strip = std::min(strip_width, width - j);
        const int vectors = int((strip + 7) / 8);
        tile_for(rows, vectors, strip % 8 != 0)(depth, a + m0 * K + k0, K, bb + j, ldb, c + m0 * N + n0 + j, N,
                                lane_mask(int(strip - 8 * (vectors - 1))), accumulate || k0 > 0);
      }
      m0 += rows;
    }
  }
}

// One or two rows of C (a decode step's products): the rows' sums of up to 1024 columns wait in
// an L1 buffer while B streams by rows of 4 KB, as a GEMV reads it; register tiles would read B
// in 384-byte pieces a page apart. Each element is still one FMA chain over k in order.
constexpr int64_t kRowBlockCols = 1024;
__attribute__((target("avx2,fma"))) void few_rows(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c,
                                                  bool accumulate, int64_t n0) {
  const int64_t width = std::min(kRowBlockCols, N - n0), full = width / 8 * 8;
  alignas(32) float sum[2][kRowBlockCols];
  for (int64_t r = 0; r < M; ++r)
    for (int64_t j = 0; j < width; ++j) sum[r][j] = accumulate ? c[r * N + n0 + j] : 0.f;
  for (int64_t k = 0; k < K; ++k) {
    const float* row = b + k * N + n0;
    for (int64_t r = 0; r < M; ++r) {
      const float ak = a[r * K + k];
      const __m256 av = _mm256_set1_ps(ak);
      float* s = sum[r];
      for (int64_t j = 0; j < full; j += 8)
        _mm256_store_ps(s + j, _mm256_fmadd_ps(av, _mm256_loadu_ps(row + j), _mm256_load_ps(s + j)));
      for (int64_t j = full; j < width; ++j) s[j] = std::fma(ak, row[j], s[j]);  // vfmadd231ss: the lanes' rounding
    }
  }
  for (int64_t r = 0; r < M; ++r) std::copy_n(sum[r], width, c + r * N + n0);
}

}  // namespace

bool in_order_avx2_suits() {
  static const bool suits = !__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return suits;
}

std::vector<float> pack_in_order_avx2(bool trans_b, int64_t K, int64_t N, const float* b) {
  std::vector<float> packed;
  if (!in_order_avx2_suits()) return packed;
  packed.resize(size_t(K * N));
  for (int64_t n0 = 0; n0 < N; n0 += kBlockCols) {  // block n0 / 96: K rows of its width, from n0 * K on
    const int64_t width = std::min(kBlockCols, N - n0);
    float* block = packed.data() + n0 * K;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < width; ++j) block[k * width + j] = trans_b ? b[(n0 + j) * K + k] : b[k * N + n0 + j];
  }
  return packed;
}

bool gemm_in_order_avx2(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate,
                        const float* packed) {
  if (!in_order_avx2_suits()) return false;
  if (M <= 2 && !packed) {
    parallel_for((N + kRowBlockCols - 1) / kRowBlockCols, 1, [&](int64_t first, int64_t last) {
      for (int64_t block = first; block < last; ++block) few_rows(M, N, K, a, b, c, accumulate, block * kRowBlockCols);
    });
    return true;
  }
  parallel_for((N + kBlockCols - 1) / kBlockCols, 1, [&](int64_t first, int64_t last) {
    std::vector<float> panel;
    for (int64_t block = first; block < last; ++block)
      column_block(M, N, K, a, b, packed, c, accumulate, block * kBlockCols, panel);
  });
  return true;
}

}  // namespace refeval::ops
