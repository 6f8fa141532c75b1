// The 512-bit register tile shared by refeval's in-order AVX-512 float GEMMs: gemm_small_m.cc
// reads B where it lies (row-major, vectors of a row 16 floats apart), gemm_panels_avx512.cc from
// panels in strips of 16 columns (a row's vectors one strip apart). 8 rows x 3 vectors of C stay
// in 24 registers: per k, 3 loads of B and 8 broadcasts of A for 24 fused multiply-adds. Each
// element of C is one chain over k in order, whatever the layout B is read from.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <utility>

namespace refeval::ops::avx512 {

constexpr int kTileRows = 8, kTileVectors = 3;

// Rows [0, R) x vectors [0, V) of C (16 columns each; the last holds the columns `last` selects):
// `depth` values of k, vector v of B's row k at b + k ldb + v vstride, A's row r at a + r lda.
// With `accumulate` each chain goes on from C's value (a later pass over k), else from zero.
// `prefetch` (or null): the next block of B, in B's layout, to bring into L2 meanwhile.
template <int R, int V>
__attribute__((target("avx512f"))) void tile(int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb,
                                             int64_t vstride, float* c, int64_t ldc, __mmask16 last, bool accumulate,
                                             const float* prefetch) {
  auto mask = [&](int v) { return v == V - 1 ? last : __mmask16(0xFFFF); };
  __m512 sum[R][V];  // the loops over r and v unroll early so that sum lives in registers
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v)
      sum[r][v] = accumulate ? _mm512_maskz_loadu_ps(mask(v), c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    __m512 bv[V];
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) bv[v] = _mm512_maskz_loadu_ps(mask(v), b + k * ldb + v * vstride);
    if (prefetch)
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) _mm_prefetch(reinterpret_cast<const char*>(prefetch + k * ldb + v * vstride), _MM_HINT_T1);
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
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask(v), sum[r][v]);
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t, __mmask16,
                        bool, const float*);

template <int R, int... Vs>
TileFn tile_with_rows(int vectors, std::integer_sequence<int, Vs...>) {
  TileFn f = nullptr;
  ((vectors == Vs + 1 ? (f = tile<R, Vs + 1>, 0) : 0), ...);
  return f;
}
template <int... Rs>
TileFn tile_for(int rows, int vectors, std::integer_sequence<int, Rs...>) {
  TileFn f = nullptr;
  ((rows == Rs + 1 ? (f = tile_with_rows<Rs + 1>(vectors, std::make_integer_sequence<int, kTileVectors>()), 0) : 0), ...);
  return f;
}
// The tile of 1-8 rows x 1-3 vectors.
inline TileFn tile_for(int rows, int vectors) {
  return tile_for(rows, vectors, std::make_integer_sequence<int, kTileRows>());
}

}  // namespace refeval::ops::avx512
