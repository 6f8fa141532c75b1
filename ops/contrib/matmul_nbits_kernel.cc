// MatMulNBits' products (contract in matmul_nbits_kernel.h). A decode step multiplies a few rows
// by every weight once, so the time goes into reading and unpacking B: for up to 4 rows each
// column's blocks are unpacked into registers (AVX2: one broadcast, variable shift and mask per 8
// values), scaled and consumed at once, C columns side by side so that C * R fused multiply-add
// chains overlap their latency. More rows (prefill) dequantize 3 columns (AVX-512: 6, interleaved
// in pairs so that one 512-bit vector serves two columns) into a small float tile and reuse it for
// every row. All compute the same values in the same order, as does the portable code below
// them, so a row's result does not depend on how many rows come with it.
#include "matmul_nbits_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define REFEVAL_NBITS_AVX2 1
#endif

#include "refeval/dispatch.h"
#include "refeval/isa.h"
#include "refeval/aligned.h"
#include "refeval/limits.h"
#include "refeval/threads.h"

namespace refeval::ops::contrib {
namespace {

constexpr int64_t kLanes = 8;
constexpr int64_t kMaxFusedRows = 4;  // rows unpacked into registers; more go through a float tile
constexpr int64_t kTileColumns = 3;   // columns of the float tile (4 x 3 accumulators fill AVX2's registers)

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Block b of column n: its blob, scale and zero point.
template <class S>
const uint8_t* blob_of(const NBitsWeight<S>& w, int64_t n, int64_t b) {
  return w.data + (n * w.k_blocks + b) * (w.block_size * w.bits / 8);
}
template <class S>
float scale_of(const NBitsWeight<S>& w, int64_t n, int64_t b) { return float(w.scales[n * w.k_blocks + b]); }
template <class S>
float zero_point_of(const NBitsWeight<S>& w, int64_t n, int64_t b) {
  if (w.zero_points) return float(w.zero_points[n * w.k_blocks + b]);
  if (!w.packed_zero_points) return float(1 << (w.bits - 1));
  const int64_t row = (w.k_blocks * w.bits + 7) / 8, bit = b * w.bits;
  return float((w.packed_zero_points[n * row + bit / 8] >> (bit % 8)) & ((1 << w.bits) - 1));
}
// Value i of a blob: widths 2, 4 and 8 never straddle a byte.
inline int quantized(const uint8_t* blob, int64_t bits, int64_t i) {
  const int64_t bit = i * bits;
  return (blob[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

// Column n's dequantized weights into out[0, Kp), zero beyond K.
template <class S>
void dequantize_column(const NBitsWeight<S>& w, int64_t n, float* out, int64_t Kp) {
  if (w.g_idx) {
    for (int64_t k = 0; k < w.K; ++k) {
      const int64_t b = w.g_idx[k];
      const int q = quantized(blob_of(w, n, k / w.block_size), w.bits, k % w.block_size);
      out[k] = (float(q) - zero_point_of(w, n, b)) * scale_of(w, n, b);
    }
  } else {
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const uint8_t* blob = blob_of(w, n, b);
      const float scale = scale_of(w, n, b), zero = zero_point_of(w, n, b);
      const int64_t k0 = b * w.block_size, len = std::min(w.block_size, w.K - k0);
      for (int64_t i = 0; i < len; ++i) out[k0 + i] = (float(quantized(blob, w.bits, i)) - zero) * scale;
    }
  }
  std::fill(out + w.K, out + Kp, 0.0f);
}

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), the order of the AVX2 reduction.
inline float reduce_lanes(const float* l) {
  const float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
  return (s0 + s2) + (s1 + s3);
}

#if REFEVAL_NBITS_AVX2

inline float reduce_lanes(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // l_i + l_{i+4}
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));                                  // s0 + s2, s1 + s3
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// Values i .. i+7 of a blob (i a multiple of 8) as int32 lanes.
template <int Bits>
inline __m256i unpack8(const uint8_t* blob, int64_t i) {
  if constexpr (Bits == 8) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blob + i)));
  } else if constexpr (Bits == 4) {
    uint32_t v;
    std::memcpy(&v, blob + i / 2, 4);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(v)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                            _mm256_set1_epi32(0xF));
  } else {
    uint16_t v;
    std::memcpy(&v, blob + i / 4, 2);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                            _mm256_set1_epi32(3));
  }
}

// The first `count` lanes set.
inline __m256 lane_mask(int64_t count) {
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

// A row's 8 values, kept in a register. Left to itself GCC folds the load into each of the C
// multiply-adds that use it (a memory operand each): the 4 x 3 float tile read A 12 times a step
// where 4 loads do, and ran at 25 GMAC/s where the FMA units give 57 (32 x 768 x 3072 prefill
// product 2.42 -> 1.72 ms, built for AVX2 on a Zen 5). The empty asm hides the value from the fold.
inline __m256 load_row(const float* p) {
  __m256 v = _mm256_loadu_ps(p);
  asm("" : "+x"(v));
  return v;
}

// Rows [0, R) x columns [n0, n0 + C) of y, unpacking each block of B into registers (no g_idx).
// `a` has rows of lda >= round_up(K, 8) floats, zero beyond K.
template <int Bits, int R, int C, class S>
void fused_tile(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, const float* bias, float* y,
                int64_t ldy) {
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    const int64_t k0 = b * w.block_size, len = std::min(w.block_size, w.K - k0);
    const uint8_t* blob[C];
    __m256 scale[C], zero[C];
    for (int c = 0; c < C; ++c) {
      blob[c] = blob_of(w, n0 + c, b);
      scale[c] = _mm256_set1_ps(scale_of(w, n0 + c, b));
      zero[c] = _mm256_set1_ps(zero_point_of(w, n0 + c, b));
    }
    for (int64_t i = 0; i < len; i += kLanes) {
      __m256 wv[C];
      for (int c = 0; c < C; ++c) wv[c] = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(unpack8<Bits>(blob[c], i)), zero[c]), scale[c]);
      if (len - i < kLanes)  // the last group of a partial block: zero weights, as a is zero there
        for (int c = 0; c < C; ++c) wv[c] = _mm256_and_ps(wv[c], lane_mask(len - i));
      for (int r = 0; r < R; ++r) {
        const __m256 av = load_row(a + r * lda + k0 + i);
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(av, wv[c], acc[r][c]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const float sum = reduce_lanes(acc[r][c]);
      y[r * ldy + n0 + c] = bias ? sum + bias[n0 + c] : sum;
    }
}

#if defined(__AVX512F__)
// Values i .. i+7 of two blobs as int32 lanes, the first blob's in lanes 0-7.
template <int Bits>
inline __m512i unpack8_pair(const uint8_t* x, const uint8_t* y, int64_t i) {
  if constexpr (Bits == 8) {
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)),
                                                   _mm_loadl_epi64(reinterpret_cast<const __m128i*>(y + i))));
  } else {
    constexpr int per_word = Bits == 4 ? 2 : 4;  // values per byte
    uint32_t u = 0, v = 0;
    std::memcpy(&u, x + i / per_word, 8 / per_word);
    std::memcpy(&v, y + i / per_word, 8 / per_word);
    const __m512i words = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(int(u))), _mm256_set1_epi32(int(v)), 1);
    const __m512i shifts = Bits == 4 ? _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28)
                                     : _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    return _mm512_and_si512(_mm512_srlv_epi32(words, shifts), _mm512_set1_epi32((1 << Bits) - 1));
  }
}

// fused_tile for 2P columns with 512-bit vectors, each holding two columns' 8 lanes side by side
// (and each row's 8 values twice): every lane runs the same chain as in fused_tile, so the same
// bits, for about half the instructions of the unpacking. A decode step waits on B's bytes more
// than it computes: each column's next blocks 4 KB further on are asked for ahead (GenAI int4
// 12 x 768's decode step 13.0 -> 9.7 ms; 1 KB ahead helped less, 16 KB as much; the prefill's
// tile, tried the same way, did not change).
constexpr int64_t kPrefetchBytes = 4096;
template <int Bits, int R, int P, class S>
void fused_pair_tile(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, const float* bias, float* y,
                     int64_t ldy) {
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    const int64_t k0 = b * w.block_size, len = std::min(w.block_size, w.K - k0);
    const uint8_t* blob[2 * P];
    __m512 scale[P], zero[P];
    for (int c = 0; c < 2 * P; ++c) blob[c] = blob_of(w, n0 + c, b);
    for (int c = 0; c < 2 * P; ++c) _mm_prefetch(reinterpret_cast<const char*>(blob[c]) + kPrefetchBytes, _MM_HINT_T0);
    for (int p = 0; p < P; ++p) {
      const int64_t n = n0 + 2 * p;
      scale[p] = _mm512_insertf32x8(_mm512_set1_ps(scale_of(w, n, b)), _mm256_set1_ps(scale_of(w, n + 1, b)), 1);
      zero[p] = _mm512_insertf32x8(_mm512_set1_ps(zero_point_of(w, n, b)), _mm256_set1_ps(zero_point_of(w, n + 1, b)), 1);
    }
    for (int64_t i = 0; i < len; i += kLanes) {
      __m512 wv[P];
      for (int p = 0; p < P; ++p)
        wv[p] = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(unpack8_pair<Bits>(blob[2 * p], blob[2 * p + 1], i)), zero[p]), scale[p]);
      if (len - i < kLanes) {  // the last group of a partial block: zero weights, as a is zero there
        const __mmask16 keep = __mmask16(((1u << (len - i)) - 1) * 0x0101u);
        for (int p = 0; p < P; ++p) wv[p] = _mm512_maskz_mov_ps(keep, wv[p]);
      }
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_broadcast_f32x8(_mm256_loadu_ps(a + r * lda + k0 + i));
        for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_ps(av, wv[p], acc[r][p]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < 2 * P; ++c) {
      const __m512 v = acc[r][c / 2];
      const float sum = reduce_lanes(c % 2 ? _mm512_extractf32x8_ps(v, 1) : _mm512_castps512_ps256(v));
      y[r * ldy + n0 + c] = bias ? sum + bias[n0 + c] : sum;
    }
}
#endif

// Columns [n0, n1), R rows: C columns at a time (AVX-512: in pairs), then one at a time.
template <int Bits, int R, int C, class S>
void fused_columns(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, int64_t n1, const float* bias,
                   float* y, int64_t ldy) {
  int64_t n = n0;
#if defined(__AVX512F__)
  if constexpr (C % 2 == 0)
    if (active_isa() == Isa::Avx512)
      for (; n + C <= n1; n += C) fused_pair_tile<Bits, R, C / 2>(w, a, lda, n, bias, y, ldy);
#endif
  for (; n + C <= n1; n += C) fused_tile<Bits, R, C>(w, a, lda, n, bias, y, ldy);
  for (; n < n1; ++n) fused_tile<Bits, R, 1>(w, a, lda, n, bias, y, ldy);
}

template <int Bits, class S>
void fused(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
           float* y) {
  const int64_t N = w.N;
  switch (M) {  // fewer rows, more columns at once: enough independent chains to hide the FMA latency
    case 1: return fused_columns<Bits, 1, 4>(w, a, lda, n0, n1, bias, y, N);
    case 2: return fused_columns<Bits, 2, 4>(w, a, lda, n0, n1, bias, y, N);
    case 3: return fused_columns<Bits, 3, 2>(w, a, lda, n0, n1, bias, y, N);
    default: return fused_columns<Bits, 4, 2>(w, a, lda, n0, n1, bias, y, N);
  }
}

// Rows [0, R) x C tile columns: y[r][n0 + c] = a_r · tile_c over Kp (a multiple of 8).
template <int R, int C>
void tile_dot(const float* a, int64_t lda, const float* tile, int64_t Kp, int64_t n0, const float* bias, float* y,
              int64_t ldy) {
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t k = 0; k < Kp; k += kLanes) {
    __m256 wv[C];
    for (int c = 0; c < C; ++c) wv[c] = _mm256_loadu_ps(tile + c * Kp + k);
    for (int r = 0; r < R; ++r) {
      const __m256 av = load_row(a + r * lda + k);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(av, wv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const float sum = reduce_lanes(acc[r][c]);
      y[r * ldy + n0 + c] = bias ? sum + bias[n0 + c] : sum;
    }
}

template <int C>
void tile_rows(const float* a, int64_t lda, int64_t M, const float* tile, int64_t Kp, int64_t n0, const float* bias,
               float* y, int64_t ldy) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) tile_dot<4, C>(a + m * lda, lda, tile, Kp, n0, bias, y + m * ldy, ldy);
  switch (M - m) {
    case 3: return tile_dot<3, C>(a + m * lda, lda, tile, Kp, n0, bias, y + m * ldy, ldy);
    case 2: return tile_dot<2, C>(a + m * lda, lda, tile, Kp, n0, bias, y + m * ldy, ldy);
    case 1: return tile_dot<1, C>(a + m * lda, lda, tile, Kp, n0, bias, y + m * ldy, ldy);
    default: return;
  }
}

// dequantize_column without g_idx, 8 values at a time; group g (values 8g .. 8g + 7) at
// out + g * stride (stride 8: the column's values in a row; 16: interleaved with another column's).
template <int Bits, class S>
void dequantize_column8(const NBitsWeight<S>& w, int64_t n, float* out, int64_t stride) {
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    const uint8_t* blob = blob_of(w, n, b);
    const __m256 scale = _mm256_set1_ps(scale_of(w, n, b)), zero = _mm256_set1_ps(zero_point_of(w, n, b));
    const int64_t k0 = b * w.block_size, len = std::min(w.block_size, w.K - k0);
    for (int64_t i = 0; i < len; i += kLanes) {
      __m256 wv = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(unpack8<Bits>(blob, i)), zero), scale);
      if (len - i < kLanes) wv = _mm256_and_ps(wv, lane_mask(len - i));
      _mm256_storeu_ps(out + (k0 + i) / kLanes * stride, wv);
    }
  }
}

// Column n's weights, 8 at a time every `stride` floats from out (Kp = round_up(K, 8) values).
template <class S>
void dequantize_column_fast(const NBitsWeight<S>& w, int64_t n, float* out, int64_t Kp, int64_t stride = kLanes) {
  if (w.g_idx && stride == kLanes) return dequantize_column(w, n, out, Kp);
  if (w.g_idx) {
    std::vector<float> column(static_cast<size_t>(Kp));
    dequantize_column(w, n, column.data(), Kp);
    for (int64_t g = 0; g < Kp / kLanes; ++g) std::copy_n(column.data() + g * kLanes, kLanes, out + g * stride);
    return;
  }
  switch (w.bits) {
    case 2: return dequantize_column8<2>(w, n, out, stride);
    case 4: return dequantize_column8<4>(w, n, out, stride);
    default: return dequantize_column8<8>(w, n, out, stride);
  }
}

#if defined(__AVX512F__)
// The float tile with 512-bit vectors: each holds two columns' 8 lanes side by side (the tile
// interleaves column pairs 8 values at a time) and each row's 8 values twice, so every lane runs
// the same fused multiply-add chain as in tile_dot, twice as many per instruction: same bits.
constexpr int64_t kPairs = 3;  // column pairs per tile (24 accumulators with 8 rows)

template <int R>
void pair_tile_dot(const float* a, int64_t lda, const float* tile, int64_t Kp, int64_t n0, int64_t cols,
                   const float* bias, float* y, int64_t ldy) {
  __m512 acc[R][kPairs];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < kPairs; ++p) acc[r][p] = _mm512_setzero_ps();
  for (int64_t k = 0; k < Kp; k += kLanes) {
    __m512 wv[kPairs];
    for (int p = 0; p < kPairs; ++p) wv[p] = _mm512_loadu_ps(tile + p * 2 * Kp + 2 * k);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_broadcast_f32x8(_mm256_loadu_ps(a + r * lda + k));
      for (int p = 0; p < kPairs; ++p) acc[r][p] = _mm512_fmadd_ps(av, wv[p], acc[r][p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const __m512 v = acc[r][c / 2];
      const float sum = reduce_lanes(c % 2 ? _mm512_extractf32x8_ps(v, 1) : _mm512_castps512_ps256(v));
      y[r * ldy + n0 + c] = bias ? sum + bias[n0 + c] : sum;
    }
}

constexpr int64_t kPairRows = 8;  // rows of a full tile: 8 x 3 pairs of accumulators
using PairTileDot = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, const float*, float*, int64_t);
template <int... Rs>
PairTileDot pair_tile_dot_for(int rows, std::integer_sequence<int, Rs...>) {
  PairTileDot f = nullptr;
  ((rows == Rs + 1 ? (f = pair_tile_dot<Rs + 1>, 0) : 0), ...);
  return f;
}
PairTileDot pair_tile_dot_for(int rows) { return pair_tile_dot_for(rows, std::make_integer_sequence<int, kPairRows>()); }

template <class S>
void pair_tiled(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1,
                const float* bias, float* y) {
  const int64_t Kp = round_up(w.K, kLanes);
  AlignedVector<float> tile(size_t(2 * kPairs * Kp));  // the last tile's missing columns are computed, not stored
  for (int64_t n = n0; n < n1; n += 2 * kPairs) {
    const int64_t cols = std::min(2 * kPairs, n1 - n);
    for (int64_t c = 0; c < cols; ++c) dequantize_column_fast(w, n + c, tile.data() + c / 2 * 2 * Kp + c % 2 * kLanes, Kp, 2 * kLanes);
    for (int64_t m = 0; m < M; m += kPairRows)
      pair_tile_dot_for(int(std::min(kPairRows, M - m)))(a + m * lda, lda, tile.data(), Kp, n, cols, bias, y + m * w.N, w.N);
  }
}
#endif

// Dequantizes a few columns at a time into a float tile and multiplies every row by it.
template <class S>
void tiled(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
           float* y) {
  const int64_t Kp = round_up(w.K, kLanes);
  AlignedVector<float> tile(size_t(kTileColumns * Kp));
  for (int64_t n = n0; n < n1; n += kTileColumns) {
    const int64_t cols = std::min(kTileColumns, n1 - n);
    for (int64_t c = 0; c < cols; ++c) dequantize_column_fast(w, n + c, tile.data() + c * Kp, Kp);
    switch (cols) {
      case 3: tile_rows<3>(a, lda, M, tile.data(), Kp, n, bias, y, w.N); break;
      case 2: tile_rows<2>(a, lda, M, tile.data(), Kp, n, bias, y, w.N); break;
      default: tile_rows<1>(a, lda, M, tile.data(), Kp, n, bias, y, w.N); break;
    }
  }
}

template <class S>
void vector_columns(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
                    float* y) {
#if defined(__AVX512F__)
  if ((M > kMaxFusedRows || w.g_idx) && active_isa() == Isa::Avx512) return pair_tiled(w, a, lda, M, n0, n1, bias, y);
#endif
  if (M > kMaxFusedRows || w.g_idx) return tiled(w, a, lda, M, n0, n1, bias, y);
  switch (w.bits) {
    case 2: return fused<2>(w, a, lda, M, n0, n1, bias, y);
    case 4: return fused<4>(w, a, lda, M, n0, n1, bias, y);
    default: return fused<8>(w, a, lda, M, n0, n1, bias, y);
  }
}

#endif

// The portable code (--isa generic, CPUs without AVX2): the same operations one lane at a time.
template <class S>
void portable_columns(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
                      float* y) {
  const int64_t Kp = round_up(w.K, kLanes);
  std::vector<float> column(static_cast<size_t>(Kp));
  for (int64_t n = n0; n < n1; ++n) {
    dequantize_column(w, n, column.data(), Kp);
    for (int64_t m = 0; m < M; ++m) {
      float lanes[kLanes] = {};
      for (int64_t k = 0; k < Kp; k += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] = std::fma(a[m * lda + k + j], column[size_t(k + j)], lanes[j]);
      const float sum = reduce_lanes(lanes);
      y[m * w.N + n] = bias ? sum + bias[n] : sum;
    }
  }
}

template <class S>
void columns(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
             float* y) {
#if REFEVAL_NBITS_AVX2
  if (active_isa() != Isa::Generic) return vector_columns(w, a, lda, M, n0, n1, bias, y);
#endif
  portable_columns(w, a, lda, M, n0, n1, bias, y);
}

// A block's values minus its (integer) zero point, for the int8 path.
template <int Bits>
void unpack_block(const uint8_t* blob, int64_t block_size, int zero, int16_t* out) {
#if REFEVAL_NBITS_AVX2
  if constexpr (Bits != 2)
    if (active_isa() != Isa::Generic) {  // 16 values at a time: bytes in value order, widened, minus the zero point
      const __m256i z = _mm256_set1_epi16(int16_t(zero));
      for (int64_t i = 0; i < block_size; i += 16) {
        __m128i bytes;
        if constexpr (Bits == 8) {
          bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blob + i));
        } else {
          const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blob + i / 2)), low = _mm_set1_epi8(0x0F);
          bytes = _mm_unpacklo_epi8(_mm_and_si128(x, low), _mm_and_si128(_mm_srli_epi16(x, 4), low));
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), z));
      }
      return;
    }
#endif
  constexpr int per_byte = 8 / Bits, mask = (1 << Bits) - 1;
  for (int64_t j = 0; j < block_size / per_byte; ++j)
    for (int v = 0; v < per_byte; ++v) out[j * per_byte + v] = int16_t(((blob[j] >> (v * Bits)) & mask) - zero);
}

// The exact integer dot product of two blocks (n a multiple of 16; |products| < 2^15).
inline int32_t block_dot(const int16_t* x, const int16_t* y, int64_t n) {
#if REFEVAL_NBITS_AVX2
  if (active_isa() != Isa::Generic) {
    __m256i sum = _mm256_setzero_si256();
    for (int64_t i = 0; i < n; i += 16)
      sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)),
                                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i))));
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
    return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
  }
#endif
  int32_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += int32_t(x[i]) * int32_t(y[i]);
  return sum;
}

// Enough columns per thread that a split pays for itself (about 64K multiply-adds).
int64_t column_grain(int64_t K, int64_t M) { return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, K * M)); }

}  // namespace

template <class S>
void nbits_gemm(const NBitsWeight<S>& w, const float* a, int64_t M, const float* bias, float* y) {
  if (M == 0) return;
  // Rows padded with zeros to a multiple of 8 values, so that every group of 8 reads whole lanes.
  const int64_t Kp = round_up(w.K, kLanes);
  std::vector<float> padded;
  if (Kp != w.K) {
    padded = scratch_vector<float>(M * Kp, "MatMulNBits' padded A");
    for (int64_t m = 0; m < M; ++m) std::copy(a + m * w.K, a + (m + 1) * w.K, padded.begin() + m * Kp);
    a = padded.data();
  }
  parallel_for(w.N, column_grain(w.K, M), [&](int64_t n0, int64_t n1) { columns(w, a, Kp, M, n0, n1, bias, y); });
}

template <class S>
void nbits_gemm_int8(const NBitsWeight<S>& w, const float* a, int64_t M, const float* bias, float* y) {
  if (M == 0) return;
  const int64_t K = w.K, bs = w.block_size, kb = w.k_blocks;
  // A quantized per (row, block) as MLAS's QuantizeARow_CompInt8 does; zeros beyond K.
  std::vector<int16_t> qa = scratch_vector<int16_t>(M * kb * bs, "MatMulNBits' int8 A");
  std::vector<float> scale_a = scratch_vector<float>(M * kb, "MatMulNBits' A scales");
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b = 0; b < kb; ++b) {
      const float* in = a + m * K + b * bs;
      const int64_t len = std::min(bs, K - b * bs);
      float max_abs = 0.0f;
      for (int64_t i = 0; i < len; ++i) max_abs = std::max(max_abs, std::fabs(in[i]));
      scale_a[size_t(m * kb + b)] = max_abs / 127.0f;
      const float inverse = max_abs != 0.0f ? 127.0f / max_abs : 0.0f;
      int16_t* out = qa.data() + (m * kb + b) * bs;
      for (int64_t i = 0; i < len; ++i) {
        // MLAS converts with saturation: NaN (an infinite or NaN block) becomes -128.
        const float r = std::nearbyint(in[i] * inverse);
        out[i] = std::isnan(r) ? int16_t(-128) : int16_t(std::clamp(r, -128.0f, 127.0f));
      }
    }
  parallel_for(w.N, column_grain(K, M), [&](int64_t n0, int64_t n1) {
    std::vector<int16_t> qb(static_cast<size_t>(kb * bs));  // column n's q - zp
    std::vector<float> scale_b(static_cast<size_t>(kb));
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t b = 0; b < kb; ++b) {
        const int zero = int(zero_point_of(w, n, b));
        switch (w.bits) {
          case 2: unpack_block<2>(blob_of(w, n, b), bs, zero, qb.data() + b * bs); break;
          case 4: unpack_block<4>(blob_of(w, n, b), bs, zero, qb.data() + b * bs); break;
          default: unpack_block<8>(blob_of(w, n, b), bs, zero, qb.data() + b * bs); break;
        }
        scale_b[size_t(b)] = scale_of(w, n, b);
      }
      for (int64_t m = 0; m < M; ++m) {
        float acc = 0.0f;
        for (int64_t b = 0; b < kb; ++b) {
          const int32_t dot = block_dot(qa.data() + (m * kb + b) * bs, qb.data() + b * bs, bs);
          acc = std::fma(float(dot), scale_a[size_t(m * kb + b)] * scale_b[size_t(b)], acc);
        }
        y[m * w.N + n] = bias ? acc + bias[n] : acc;
      }
    }
  });
}

bool ort_int8_path(int64_t bits, int64_t block_size, bool has_g_idx, bool float_zero_points) {
  if (has_g_idx || float_zero_points) return false;
  if (bits == 2) return block_size >= 32 && block_size <= 128;
  return block_size >= 16 && block_size <= 256;
}

template void nbits_gemm(const NBitsWeight<float>&, const float*, int64_t, const float*, float*);
template void nbits_gemm(const NBitsWeight<float16>&, const float*, int64_t, const float*, float*);
template void nbits_gemm(const NBitsWeight<bfloat16>&, const float*, int64_t, const float*, float*);
template void nbits_gemm_int8(const NBitsWeight<float>&, const float*, int64_t, const float*, float*);
template void nbits_gemm_int8(const NBitsWeight<float16>&, const float*, int64_t, const float*, float*);
template void nbits_gemm_int8(const NBitsWeight<bfloat16>&, const float*, int64_t, const float*, float*);

}  // namespace refeval::ops::contrib
