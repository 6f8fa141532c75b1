// MatMulNBits' products (contract in matmul_nbits_kernel.h). A decode step multiplies a few rows
// by every weight once, so the time goes into reading and unpacking B. B is read 32 values at a
// time (a group) in the order a whole-group unpack yields them: for 4 bits one widening load of
// 16 bytes, a mask (the low nibbles: even k) and a shift (the high ones: odd k); for 8 bits two
// widening loads in k order. Taking 8 values in k order instead cost a broadcast, a variable
// shift and a mask per 8 (k768 x n3072 at M = 1: 0.31 ms, 7.7 GMAC/s, against ONNX Runtime's
// 0.19). A's rows are put in that order once per call.
//   - Up to 4 rows unpack B's groups into registers and consume them at once: AVX-512 all 32
//     chains in one pass (4-bit weights looked up from their block's 16 levels), AVX2 one row in
//     one pass and 2 to 4 rows in two passes of 16 chains.
//   - More rows, g_idx, 2-bit weights and blocks of 16 dequantize a few columns into a float tile
//     in the same order and reuse it for every row.
// All paths, and the portable code below them, compute the same values in the same order, so a
// row's result depends neither on the rows that come with it nor on the CPU.
#include "matmul_nbits_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
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

constexpr int64_t kGroup = 32;       // values per group; output = 32 chains, chain j over positions j (mod 32)
constexpr int64_t kTileColumns = 3;  // columns of the float tile with 8-lane vectors

// The register tiles index their accumulators by loops over R, C and the halves: unrolled this
// early GCC keeps them in registers; unrolled later (its default) it had kept them in memory, a
// store and a load around every multiply-add (k768 x n3072 at M = 1: 7.3 GMAC/s).
#define REFEVAL_UNROLL _Pragma("GCC unroll 16")

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Where value i of a group (k = 32 g + i) sits in the kernel's order: for 4 bits the even k (low
// nibbles) first, then the odd k; otherwise k order.
inline int64_t position_in_group(int64_t bits, int64_t i) { return bits == 4 ? i % 2 * 16 + i / 2 : i; }

// The block of the values at positions 8q .. 8q + 7 of group g. Blocks of 16 split a group: for 4
// bits quarters 0 and 2 hold block 2g's values, 1 and 3 block 2g + 1's; for 8 bits 0-1 and 2-3.
template <class S>
int64_t quarter_block(const NBitsWeight<S>& w, int64_t g, int q) {
  if (w.block_size >= kGroup) return g * kGroup / w.block_size;
  return 2 * g + (w.bits == 4 ? q % 2 : q / 2);
}

// Values [k0, k1) of column n dequantized, (float(q) - zp) * scale, into out[k - k0] (k order).
template <class S>
void dequantize_range(const NBitsWeight<S>& w, int64_t n, int64_t k0, int64_t k1, float* out) {
  for (int64_t k = k0; k < k1;) {
    const int64_t stored = k / w.block_size, end = std::min(k1, (stored + 1) * w.block_size);
    const uint8_t* blob = blob_of(w, n, stored);
    if (w.g_idx) {  // each k may take another block's parameters
      for (; k < end; ++k) {
        const int64_t b = w.g_idx[k];
        out[k - k0] = (float(quantized(blob, w.bits, k % w.block_size)) - zero_point_of(w, n, b)) * scale_of(w, n, b);
      }
    } else {
      const float zero = zero_point_of(w, n, stored), scale = scale_of(w, n, stored);
      for (int64_t i = k % w.block_size; k < end; ++k, ++i) out[k - k0] = (float(quantized(blob, w.bits, i)) - zero) * scale;
    }
  }
}

// Group g of column n dequantized in the kernel's order into out[0, 32), zero beyond K.
template <class S>
void dequantize_group(const NBitsWeight<S>& w, int64_t n, int64_t g, float* out) {
  float natural[kGroup];
  const int64_t k0 = g * kGroup, len = std::min(kGroup, w.K - k0);
  dequantize_range(w, n, k0, k0 + len, natural);
  std::fill(natural + len, natural + kGroup, 0.0f);
  if (w.bits != 4) return (void)std::copy(natural, natural + kGroup, out);
  for (int64_t j = 0; j < kGroup / 2; ++j) out[j] = natural[2 * j], out[kGroup / 2 + j] = natural[2 * j + 1];  // position_in_group
}

// Column n in the kernel's order into out[0, Kp), Kp = round_up(K, 32).
template <class S>
void dequantize_column(const NBitsWeight<S>& w, int64_t n, float* out, int64_t Kp) {
  for (int64_t g = 0; g < Kp / kGroup; ++g) dequantize_group(w, n, g, out + g * kGroup);
}

// The 32 chains c summed: u_j = (c_j + c_(j+16)) + (c_(j+8) + c_(j+24)), then
// ((u0 + u4) + (u2 + u6)) + ((u1 + u5) + (u3 + u7)), the order of the vector reductions below.
inline float reduce_chains(const float* c) {
  float u[8];
  for (int j = 0; j < 8; ++j) u[j] = (c[j] + c[j + 16]) + (c[j + 8] + c[j + 24]);
  const float s0 = u[0] + u[4], s1 = u[1] + u[5], s2 = u[2] + u[6], s3 = u[3] + u[7];
  return (s0 + s2) + (s1 + s3);
}

inline void store(float sum, const float* bias, int64_t n, float* out) { *out = bias ? sum + bias[n] : sum; }

// Columns [n0, n1) in tiles of C, then the rest one at a time: tile(std::integral_constant<int,
// columns>, first column), so that each tile width is its own instantiation.
template <int C, class Tile>
void column_tiles(int64_t n0, int64_t n1, Tile&& tile) {
  int64_t n = n0;
  for (; n + C <= n1; n += C) tile(std::integral_constant<int, C>(), n);
  for (; n < n1; ++n) tile(std::integral_constant<int, 1>(), n);
}

#if REFEVAL_NBITS_AVX2

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), reduce_chains' last step.
inline float reduce_lanes(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // l_i + l_{i+4}
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));                                  // s0 + s2, s1 + s3
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
// Chains 8q .. 8q + 7 in c[q].
inline float reduce_chains(const __m256* c) {
  return reduce_lanes(_mm256_add_ps(_mm256_add_ps(c[0], c[2]), _mm256_add_ps(c[1], c[3])));
}

// reduce_chains of 32 chains stored in memory, with vectors (the float tiles' passes store them):
// the same sums, a few instructions where the scalar tree took about 40 per output.
inline float reduce_stored_chains(const float* c) {
  const __m256 v[4] = {_mm256_loadu_ps(c), _mm256_loadu_ps(c + 8), _mm256_loadu_ps(c + 16), _mm256_loadu_ps(c + 24)};
  return reduce_chains(v);
}

// Full group g of a column (its bytes from `column`) as int32, positions 8q .. 8q + 7 in q[q].
template <int Bits>
inline void unpack_group(const uint8_t* column, int64_t g, __m256i* q) {
  if constexpr (Bits == 4) {
    const uint8_t* p = column + g * 16;
    const __m256i b0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i b1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)));
    const __m256i low = _mm256_set1_epi32(0xF);
    q[0] = _mm256_and_si256(b0, low), q[1] = _mm256_and_si256(b1, low);
    q[2] = _mm256_srli_epi32(b0, 4), q[3] = _mm256_srli_epi32(b1, 4);
  } else {
    for (int i = 0; i < 4; ++i)
      q[i] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(column + g * 32 + 8 * i)));
  }
}

inline __m256 dequantize(__m256i q, __m256 zero, __m256 scale) {
  return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(q), zero), scale);
}

// A row's 8 values, kept in a register. Left to itself GCC folds the load into each of the C
// multiply-adds that use it (a memory operand each), which made an AVX2 float tile read A C times
// a step where one load does (25 against 57 GMAC/s on a Zen 5). The empty asm hides the value.
inline __m256 load_row(const float* p) {
  __m256 v = _mm256_loadu_ps(p);
  asm("" : "+x"(v));
  return v;
}

// Columns [n0, n0 + C) of one row (4 or 8 bits, blocks of 32 or more), B unpacked into registers.
template <int Bits, int C, class S>
void fused_row256(const NBitsWeight<S>& w, const float* a, int64_t n0, const float* bias, float* y) {
  const int64_t full = w.K / kGroup;
  alignas(32) float tail[C][kGroup];  // the last, partial group, dequantized before the loop (see fused_tile512)
  const bool partial = full * kGroup < w.K;
  if (partial)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) dequantize_group(w, n0 + c, full, tail[c]);
  const uint8_t* column[C];
  REFEVAL_UNROLL for (int c = 0; c < C; ++c) column[c] = blob_of(w, n0 + c, 0);
  __m256 acc[C][4];
  REFEVAL_UNROLL for (int c = 0; c < C; ++c)
    REFEVAL_UNROLL for (int q = 0; q < 4; ++q) acc[c][q] = _mm256_setzero_ps();
  for (int64_t b = 0, g = 0; g < full; ++b) {
    __m256 scale[C], zero[C];
    REFEVAL_UNROLL for (int c = 0; c < C; ++c)
      scale[c] = _mm256_set1_ps(scale_of(w, n0 + c, b)), zero[c] = _mm256_set1_ps(zero_point_of(w, n0 + c, b));
    for (const int64_t end = std::min(full, g + w.block_size / kGroup); g < end; ++g) {
      __m256 av[4];
      REFEVAL_UNROLL for (int q = 0; q < 4; ++q) av[q] = load_row(a + g * kGroup + 8 * q);
      REFEVAL_UNROLL for (int c = 0; c < C; ++c) {
        __m256i qv[4];
        unpack_group<Bits>(column[c], g, qv);
        REFEVAL_UNROLL for (int q = 0; q < 4; ++q) acc[c][q] = _mm256_fmadd_ps(av[q], dequantize(qv[q], zero[c], scale[c]), acc[c][q]);
      }
    }
  }
  if (partial)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c)
      REFEVAL_UNROLL for (int q = 0; q < 4; ++q)
        acc[c][q] = _mm256_fmadd_ps(_mm256_loadu_ps(a + full * kGroup + 8 * q), _mm256_load_ps(tail[c] + 8 * q), acc[c][q]);
  REFEVAL_UNROLL for (int c = 0; c < C; ++c) store(reduce_chains(acc[c]), bias, n0 + c, y + n0 + c);
}

// Quarter Q of the chains (positions 8Q .. 8Q + 7 of every group) of rows [0, R) x columns
// [n0, n0 + C), B unpacked into registers; `tail` holds each column's partial last group. A pass
// per quarter keeps one accumulator per row and column, as many as AVX2's 16 registers hold for up
// to 4 rows; each pass unpacks only its quarter (for 4 bits: the low or high nibbles of 8 bytes).
constexpr int64_t kMaxFusedBlocks = 256;  // blocks per column whose parameters the AVX2 row tiles gather first

// Half H of the chains (positions 16H .. 16H + 15 of every group: two of unpack_group's quarters)
// of rows [0, R) x columns [n0, n0 + C), B unpacked into registers; `tail` holds each column's
// partial last group, `scales` and `zeros` its blocks' parameters. Two passes over B fit 2 to 4
// rows in AVX2's 16 registers, where all four quarters of several rows at once would not (one
// pass per quarter, each fetching the blocks' parameters and A again, was slower still).
template <int Bits, int R, int C, int H, class S>
[[gnu::noinline]] void fused_half256(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, const float (*tail)[kGroup],
                                     const float (*scales)[kMaxFusedBlocks], const float (*zeros)[kMaxFusedBlocks],
                                     __m256 (&out)[R][C][2]) {
  const int64_t full = w.K / kGroup;
  const uint8_t* column[C];
  REFEVAL_UNROLL for (int c = 0; c < C; ++c) column[c] = blob_of(w, n0 + c, 0);
  __m256 acc[R][C][2];
  REFEVAL_UNROLL for (int r = 0; r < R; ++r)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
  for (int64_t b = 0, g = 0; g < full; ++b) {
    __m256 scale[C], zero[C];
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) scale[c] = _mm256_broadcast_ss(&scales[c][b]), zero[c] = _mm256_broadcast_ss(&zeros[c][b]);
    for (const int64_t end = std::min(full, g + w.block_size / kGroup); g < end; ++g)
      REFEVAL_UNROLL for (int c = 0; c < C; ++c) {
        __m256i q[2];
        if constexpr (Bits == 4) {
          const uint8_t* p = column[c] + g * 16;
          REFEVAL_UNROLL for (int i = 0; i < 2; ++i) {
            const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * i)));
            q[i] = H == 0 ? _mm256_and_si256(bytes, _mm256_set1_epi32(0xF)) : _mm256_srli_epi32(bytes, 4);
          }
        } else {
          REFEVAL_UNROLL for (int i = 0; i < 2; ++i)
            q[i] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(column[c] + g * 32 + 16 * H + 8 * i)));
        }
        REFEVAL_UNROLL for (int i = 0; i < 2; ++i) {
          const __m256 wv = dequantize(q[i], zero[c], scale[c]);
          REFEVAL_UNROLL for (int r = 0; r < R; ++r)
            acc[r][c][i] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + g * kGroup + 16 * H + 8 * i), wv, acc[r][c][i]);
        }
      }
  }
  if (full * kGroup < w.K)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c)
      REFEVAL_UNROLL for (int r = 0; r < R; ++r)
        REFEVAL_UNROLL for (int i = 0; i < 2; ++i)
          acc[r][c][i] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + full * kGroup + 16 * H + 8 * i),
                                         _mm256_loadu_ps(tail[c] + 16 * H + 8 * i), acc[r][c][i]);
  REFEVAL_UNROLL for (int r = 0; r < R; ++r)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) out[r][c][0] = acc[r][c][0], out[r][c][1] = acc[r][c][1];
}

// Rows [0, R) x columns [n0, n0 + C) with 8-lane vectors (4 or 8 bits, blocks of 32 or more).
template <int Bits, int R, int C, class S>
void fused_tile256(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, const float* bias, float* y, int64_t ldy) {
  alignas(32) float tail[C][kGroup];
  if (w.K % kGroup)
    for (int c = 0; c < C; ++c) dequantize_group(w, n0 + c, w.K / kGroup, tail[c]);
  float scales[C][kMaxFusedBlocks], zeros[C][kMaxFusedBlocks];  // once for both passes
  for (int c = 0; c < C; ++c)
    for (int64_t b = 0; b < w.k_blocks; ++b) scales[c][b] = scale_of(w, n0 + c, b), zeros[c][b] = zero_point_of(w, n0 + c, b);
  __m256 low[R][C][2], high[R][C][2];
  fused_half256<Bits, R, C, 0>(w, a, lda, n0, tail, scales, zeros, low);
  fused_half256<Bits, R, C, 1>(w, a, lda, n0, tail, scales, zeros, high);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const __m256 v[4] = {low[r][c][0], low[r][c][1], high[r][c][0], high[r][c][1]};
      store(reduce_chains(v), bias, n0 + c, y + r * ldy + n0 + c);
    }
}

template <int Bits, int R, int C, class S>
void fused_columns256(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, int64_t n1, const float* bias,
                      float* y, int64_t ldy) {
  column_tiles<C>(n0, n1, [&](auto cols, int64_t n) { fused_tile256<Bits, R, decltype(cols)::value>(w, a, lda, n, bias, y, ldy); });
}

// 2 to 4 rows with 8-lane vectors.
template <int Bits, class S>
void fused256(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
              float* y) {
  switch (M) {
    case 2: return fused_columns256<Bits, 2, 2>(w, a, lda, n0, n1, bias, y, w.N);
    case 3: return fused_columns256<Bits, 3, 1>(w, a, lda, n0, n1, bias, y, w.N);
    default: return fused_columns256<Bits, 4, 1>(w, a, lda, n0, n1, bias, y, w.N);
  }
}

#if defined(__AVX512F__)
// Chains 0-15 in lo, 16-31 in hi.
inline float reduce_chains(__m512 lo, __m512 hi) {
  const __m512 t = _mm512_add_ps(lo, hi);
  return reduce_lanes(_mm256_add_ps(_mm512_castps512_ps256(t), _mm512_extractf32x8_ps(t, 1)));
}

// Full group g of a column as int32: positions 0-15 in lo, 16-31 in hi.
template <int Bits>
inline void unpack_group(const uint8_t* column, int64_t g, __m512i& lo, __m512i& hi) {
  if constexpr (Bits == 4) {
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(column + g * 16)));
    lo = _mm512_and_si512(b, _mm512_set1_epi32(0xF)), hi = _mm512_srli_epi32(b, 4);
  } else {
    lo = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(column + g * 32)));
    hi = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(column + g * 32 + 16)));
  }
}

inline __m512 dequantize(__m512i q, __m512 zero, __m512 scale) {
  return _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(q), zero), scale);
}

// A 4-bit block's 16 weights, (float(i) - zp) * scale for i = 0..15: looked up instead of
// computed per value, the same bits for a multiply less per 16 values (on a Zen 4, whose two
// multiply pipes bound the decode tile: k768 x n3072 at M = 1: 0.153 -> 0.122 ms).
inline __m512 block_levels(__m512 zero, __m512 scale) {
  return dequantize(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), zero, scale);
}
// Full 4-bit group g's weights from its block's levels: positions 0-15 (low nibbles) in lo, 16-31 in hi.
inline void lookup_group(const uint8_t* column, int64_t g, __m512 levels, __m512& lo, __m512& hi) {
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(column + g * 16)));
  lo = _mm512_permutexvar_ps(b, levels);  // the index's low 4 bits: the low nibble
  hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), levels);
}

// A decode step's weights come from memory, not cache: each column's bytes 16 KB further on are
// asked for ahead, once per cache line (a Zen 4, k4096 x n16384 at M = 1, 42 MB: 5.2 ms with 4 KB
// ahead, 4.7 with 16 KB, 5.8 with 1 KB; 32 and 64 KB no better than 16).
constexpr int64_t kPrefetchBytes = 16384;

// Rows [0, R) x columns [n0, n0 + C) (4 or 8 bits, blocks of 32 or more), B unpacked into
// registers; `a` has rows of lda floats in the kernel's order.
template <int Bits, int R, int C, class S>
void fused_tile512(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, const float* bias, float* y,
                   int64_t ldy) {
  constexpr int64_t kGroupBytes = kGroup * Bits / 8;
  const int64_t full = w.K / kGroup;
  // The last, partial group dequantized first: a call while the accumulators are live would make
  // GCC keep them in memory for the whole loop (AVX-512 registers are caller-saved).
  alignas(64) float tail[C][kGroup];
  const bool partial = full * kGroup < w.K;
  if (partial)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) dequantize_group(w, n0 + c, full, tail[c]);
  const uint8_t* column[C];
  REFEVAL_UNROLL for (int c = 0; c < C; ++c) column[c] = blob_of(w, n0 + c, 0);
  __m512 acc[R][C][2];
  REFEVAL_UNROLL for (int r = 0; r < R; ++r)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm512_setzero_ps();
  for (int64_t b = 0, g = 0; g < full; ++b) {
    __m512 scale[C], zero[C], levels[C];
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) {
      scale[c] = _mm512_set1_ps(scale_of(w, n0 + c, b)), zero[c] = _mm512_set1_ps(zero_point_of(w, n0 + c, b));
      if constexpr (Bits == 4) levels[c] = block_levels(zero[c], scale[c]);
    }
    for (const int64_t end = std::min(full, g + w.block_size / kGroup); g < end; ++g) {
      if (g * kGroupBytes % 64 == 0)
        REFEVAL_UNROLL for (int c = 0; c < C; ++c) _mm_prefetch(reinterpret_cast<const char*>(column[c] + g * kGroupBytes + kPrefetchBytes), _MM_HINT_T0);
      __m512 av[R][2];
      REFEVAL_UNROLL for (int r = 0; r < R; ++r)
        REFEVAL_UNROLL for (int h = 0; h < 2; ++h) av[r][h] = _mm512_loadu_ps(a + r * lda + g * kGroup + 16 * h);
      REFEVAL_UNROLL for (int c = 0; c < C; ++c) {
        __m512 wlo, whi;
        if constexpr (Bits == 4) {
          lookup_group(column[c], g, levels[c], wlo, whi);
        } else {
          __m512i lo, hi;
          unpack_group<Bits>(column[c], g, lo, hi);
          wlo = dequantize(lo, zero[c], scale[c]), whi = dequantize(hi, zero[c], scale[c]);
        }
        REFEVAL_UNROLL for (int r = 0; r < R; ++r) {
          acc[r][c][0] = _mm512_fmadd_ps(av[r][0], wlo, acc[r][c][0]);
          acc[r][c][1] = _mm512_fmadd_ps(av[r][1], whi, acc[r][c][1]);
        }
      }
    }
  }
  if (partial)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c)
      REFEVAL_UNROLL for (int r = 0; r < R; ++r)
        REFEVAL_UNROLL for (int h = 0; h < 2; ++h)
          acc[r][c][h] = _mm512_fmadd_ps(_mm512_loadu_ps(a + r * lda + full * kGroup + 16 * h), _mm512_load_ps(tail[c] + 16 * h), acc[r][c][h]);
  REFEVAL_UNROLL for (int r = 0; r < R; ++r)
    REFEVAL_UNROLL for (int c = 0; c < C; ++c) store(reduce_chains(acc[r][c][0], acc[r][c][1]), bias, n0 + c, y + r * ldy + n0 + c);
}

template <int Bits, int R, int C, class S>
void fused_columns512(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t n0, int64_t n1, const float* bias,
                      float* y, int64_t ldy) {
  column_tiles<C>(n0, n1, [&](auto cols, int64_t n) { fused_tile512<Bits, R, decltype(cols)::value>(w, a, lda, n, bias, y, ldy); });
}

template <int Bits, class S>
void fused512(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
              float* y) {
  switch (M) {  // fewer rows, more columns at once: enough independent chains to hide the FMA latency
    case 1: return fused_columns512<Bits, 1, 4>(w, a, lda, n0, n1, bias, y, w.N);
    case 2: return fused_columns512<Bits, 2, 3>(w, a, lda, n0, n1, bias, y, w.N);
    case 3: return fused_columns512<Bits, 3, 2>(w, a, lda, n0, n1, bias, y, w.N);
    default: return fused_columns512<Bits, 4, 2>(w, a, lda, n0, n1, bias, y, w.N);
  }
}

// Rows [0, R) x the tile's 6 columns, a pass per half of the chains (16 per instruction), so that
// 24 accumulators share each load (4 rows x 3 columns x both halves at once loaded as much as
// they computed: k768 x n3072 at M = 32 ran at 27 GMAC/s).
constexpr int64_t kColumns512 = 6;
template <int R>
void tile_dot512(const float* a, int64_t lda, const float* tile, int64_t Kp, int64_t n0, int64_t cols, const float* bias,
                 float* y, int64_t ldy) {
  alignas(64) float chains[R][kColumns512][kGroup];
  for (int h = 0; h < 2; ++h) {
    __m512 acc[R][kColumns512];
    REFEVAL_UNROLL for (int r = 0; r < R; ++r)
      REFEVAL_UNROLL for (int c = 0; c < kColumns512; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t k = 16 * h; k < Kp; k += kGroup) {
      __m512 wv[kColumns512];
      REFEVAL_UNROLL for (int c = 0; c < kColumns512; ++c) {
        wv[c] = _mm512_loadu_ps(tile + c * Kp + k);
        asm("" : "+v"(wv[c]));  // one load each, not one per row or column (see load_row)
      }
      REFEVAL_UNROLL for (int r = 0; r < R; ++r) {
        __m512 av = _mm512_loadu_ps(a + r * lda + k);
        asm("" : "+v"(av));
        REFEVAL_UNROLL for (int c = 0; c < kColumns512; ++c) acc[r][c] = _mm512_fmadd_ps(av, wv[c], acc[r][c]);
      }
    }
    REFEVAL_UNROLL for (int r = 0; r < R; ++r)
      REFEVAL_UNROLL for (int c = 0; c < kColumns512; ++c) _mm512_store_ps(chains[r][c] + 16 * h, acc[r][c]);
  }
  for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < cols; ++c) store(reduce_stored_chains(chains[r][c]), bias, n0 + c, y + r * ldy + n0 + c);
}

// dequantize_column_fast's AVX-512 form for blocks of 32 or more.
template <int Bits, class S>
void dequantize_column512(const NBitsWeight<S>& w, int64_t n, float* out) {
  const uint8_t* column = blob_of(w, n, 0);
  const int64_t full = w.K / kGroup;
  for (int64_t b = 0, g = 0; g < full; ++b) {
    const __m512 scale = _mm512_set1_ps(scale_of(w, n, b)), zero = _mm512_set1_ps(zero_point_of(w, n, b));
    const __m512 levels = Bits == 4 ? block_levels(zero, scale) : scale;
    for (const int64_t end = std::min(full, g + w.block_size / kGroup); g < end; ++g) {
      __m512 wlo, whi;
      if constexpr (Bits == 4) {
        lookup_group(column, g, levels, wlo, whi);
      } else {
        __m512i lo, hi;
        unpack_group<Bits>(column, g, lo, hi);
        wlo = dequantize(lo, zero, scale), whi = dequantize(hi, zero, scale);
      }
      _mm512_storeu_ps(out + g * kGroup, wlo);
      _mm512_storeu_ps(out + g * kGroup + 16, whi);
    }
  }
}
#endif

// Rows [0, R) x the tile's columns with 8-lane vectors: a pass per quarter of the chains.
template <int R>
void tile_dot256(const float* a, int64_t lda, const float* tile, int64_t Kp, int64_t n0, int64_t cols, const float* bias,
                 float* y, int64_t ldy) {
  alignas(32) float chains[R][kTileColumns][kGroup];
  REFEVAL_UNROLL for (int q = 0; q < 4; ++q) {
    __m256 acc[R][kTileColumns];
    REFEVAL_UNROLL for (int r = 0; r < R; ++r)
      REFEVAL_UNROLL for (int c = 0; c < kTileColumns; ++c) acc[r][c] = _mm256_setzero_ps();
    for (int64_t k = 8 * q; k < Kp; k += kGroup) {
      __m256 wv[kTileColumns];
      REFEVAL_UNROLL for (int c = 0; c < kTileColumns; ++c) wv[c] = _mm256_loadu_ps(tile + c * Kp + k);
      REFEVAL_UNROLL for (int r = 0; r < R; ++r) {
        const __m256 av = load_row(a + r * lda + k);
        REFEVAL_UNROLL for (int c = 0; c < kTileColumns; ++c) acc[r][c] = _mm256_fmadd_ps(av, wv[c], acc[r][c]);
      }
    }
    REFEVAL_UNROLL for (int r = 0; r < R; ++r)
      REFEVAL_UNROLL for (int c = 0; c < kTileColumns; ++c) _mm256_store_ps(chains[r][c] + 8 * q, acc[r][c]);
  }
  REFEVAL_UNROLL for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < cols; ++c) store(reduce_stored_chains(chains[r][c]), bias, n0 + c, y + r * ldy + n0 + c);
}

// The tile's shape and its row passes: 4 rows x 6 columns with 16-lane vectors, 4 x 3 with 8-lane
// ones (24 and 12 accumulators).
using TileDot = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, const float*, float*, int64_t);
struct TileDots {
  int64_t rows, columns;
  const TileDot* dot;  // dot[r - 1] multiplies r rows
};
TileDots tile_dots() {
#if defined(__AVX512F__)
  static constexpr TileDot dots512[] = {tile_dot512<1>, tile_dot512<2>, tile_dot512<3>, tile_dot512<4>};
  if (active_isa() == Isa::Avx512) return {4, kColumns512, dots512};
#endif
  static constexpr TileDot dots256[] = {tile_dot256<1>, tile_dot256<2>, tile_dot256<3>, tile_dot256<4>};
  return {4, kTileColumns, dots256};
}

// dequantize_column with vectors for 4 and 8 bits without g_idx.
template <class S>
void dequantize_column_fast(const NBitsWeight<S>& w, int64_t n, float* out, int64_t Kp) {
  if (w.g_idx || w.bits == 2) return dequantize_column(w, n, out, Kp);
#if defined(__AVX512F__)
  if (w.block_size >= kGroup && active_isa() == Isa::Avx512) {
    w.bits == 4 ? dequantize_column512<4>(w, n, out) : dequantize_column512<8>(w, n, out);
    if (w.K % kGroup) dequantize_group(w, n, w.K / kGroup, out + w.K / kGroup * kGroup);
    return;
  }
#endif
  const uint8_t* column = blob_of(w, n, 0);
  const int64_t full = w.K / kGroup;
  for (int64_t g = 0; g < full; ++g) {
    __m256i qv[4];
    if (w.bits == 4) unpack_group<4>(column, g, qv);
    else unpack_group<8>(column, g, qv);
    for (int q = 0; q < 4; ++q) {
      const int64_t b = quarter_block(w, g, q);
      _mm256_storeu_ps(out + g * kGroup + 8 * q,
                       dequantize(qv[q], _mm256_set1_ps(zero_point_of(w, n, b)), _mm256_set1_ps(scale_of(w, n, b))));
    }
  }
  if (full * kGroup < Kp) dequantize_group(w, n, full, out + full * kGroup);
}

// Dequantizes a few columns at a time into a float tile and multiplies every row by it.
template <class S>
void tiled(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
           float* y) {
  const int64_t Kp = round_up(w.K, kGroup);
  const TileDots dots = tile_dots();
  AlignedVector<float> tile(size_t(dots.columns * Kp));  // an edge tile's missing columns are computed, not stored
  for (int64_t n = n0; n < n1; n += dots.columns) {
    const int64_t cols = std::min(dots.columns, n1 - n);
    for (int64_t c = 0; c < cols; ++c) dequantize_column_fast(w, n + c, tile.data() + c * Kp, Kp);
    for (int64_t m = 0; m < M; m += dots.rows)
      dots.dot[std::min(dots.rows, M - m) - 1](a + m * lda, lda, tile.data(), Kp, n, cols, bias, y + m * w.N, w.N);
  }
}

template <class S>
void vector_columns(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
                    float* y) {
  const bool fusable = !w.g_idx && w.bits != 2 && w.block_size >= kGroup;
#if defined(__AVX512F__)
  if (fusable && M <= 4 && active_isa() == Isa::Avx512)
    return w.bits == 4 ? fused512<4>(w, a, lda, M, n0, n1, bias, y) : fused512<8>(w, a, lda, M, n0, n1, bias, y);
#endif
  if (fusable && M == 1) {
    return column_tiles<2>(n0, n1, [&](auto cols, int64_t n) {
      constexpr int kCols = decltype(cols)::value;
      w.bits == 4 ? fused_row256<4, kCols>(w, a, n, bias, y) : fused_row256<8, kCols>(w, a, n, bias, y);
    });
  }
  if (fusable && M <= 4 && w.k_blocks <= kMaxFusedBlocks)
    return w.bits == 4 ? fused256<4>(w, a, lda, M, n0, n1, bias, y) : fused256<8>(w, a, lda, M, n0, n1, bias, y);
  tiled(w, a, lda, M, n0, n1, bias, y);
}

#endif

// The portable code (--isa generic, CPUs without AVX2): the same operations one chain at a time.
template <class S>
void portable_columns(const NBitsWeight<S>& w, const float* a, int64_t lda, int64_t M, int64_t n0, int64_t n1, const float* bias,
                      float* y) {
  const int64_t Kp = round_up(w.K, kGroup);
  std::vector<float> column(static_cast<size_t>(Kp));
  for (int64_t n = n0; n < n1; ++n) {
    dequantize_column(w, n, column.data(), Kp);
    for (int64_t m = 0; m < M; ++m) {
      float chains[kGroup] = {};
      for (int64_t k = 0; k < Kp; k += kGroup)
        for (int64_t j = 0; j < kGroup; ++j) chains[j] = std::fma(a[m * lda + k + j], column[size_t(k + j)], chains[j]);
      store(reduce_chains(chains), bias, n, y + m * w.N + n);
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

}  // namespace


template <class S>
void nbits_gemm(const NBitsWeight<S>& w, const float* a, int64_t M, const float* bias, float* y) {
  if (M == 0) return;
  // A's rows in the kernel's order, padded with zeros to whole groups.
  const int64_t Kp = round_up(w.K, kGroup);
  std::vector<float> ordered;
  if (Kp != w.K || w.bits == 4) {
    ordered = scratch_vector<float>(M * Kp, "MatMulNBits' reordered A");
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < w.K; ++k)
        ordered[size_t(m * Kp + k / kGroup * kGroup + position_in_group(w.bits, k % kGroup))] = a[m * w.K + k];
    a = ordered.data();
  }
  parallel_for(w.N, nbits_column_grain(w.K, M), [&](int64_t n0, int64_t n1) { columns(w, a, Kp, M, n0, n1, bias, y); });
}

template void nbits_gemm(const NBitsWeight<float>&, const float*, int64_t, const float*, float*);
template void nbits_gemm(const NBitsWeight<float16>&, const float*, int64_t, const float*, float*);
template void nbits_gemm(const NBitsWeight<bfloat16>&, const float*, int64_t, const float*, float*);

}  // namespace refeval::ops::contrib
