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
// laid out once (pack_in_order_avx2) in strips of 16 columns, each K x 16 contiguous: a product
// then reads them in place at any row count instead of copying all of B on every call (8 x 768 x
// 2304 spent 42% of its time in memmove), and a 6 x 16 tile streams its strip sequentially, kept
// in L1 while every 6-row group of A passes over it. A B that is never stored whole (a
// convolution's im2col matrix, PanelSource) is made 256 x 96 at a time in that strip layout, each
// panel just before the tiles read it. A weight whose values are all float16 (bfloat16) is laid
// out in that type and widened as the tiles load it: half the bytes to read, the same floats.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "linalg_common.h"
#include "refeval/isa.h"
#include "refeval/narrow_types.h"
#include "refeval/threads.h"

namespace refeval::ops {
namespace {

constexpr int64_t kBlockCols = 96, kDepth = 256, kStrip = 16;
// A 6-row tile prefetches its strip 32 rows (2 KB) ahead: its 6 broadcasts per row leave the loads
// room, and the hardware prefetcher alone lets it wait on memory (6 x 4096 x 4096: 5.7 -> 4.4 ms,
// 8 x 8181 x 2139: 6.4 -> 5.0, 32 x 768 x 3072: 2.2 -> 2.0). Tiles of fewer rows stream at the
// read bandwidth without it and lose 5-15% with it (their loads are the busier port).
constexpr int64_t kPrefetchRows = 32;
constexpr int64_t kPackFromRows = 8;  // from this many rows a block of B is packed (reused by every row tile)
constexpr int64_t kPairDepth = 32;    // four rows' two 2-row groups alternate this often (strips_block)
constexpr int64_t kStripRowsOnAvx512 = 4;  // products of up to this many rows run here on AVX-512 CPUs too

__attribute__((target("avx2,fma,f16c"))) inline __m256i lane_mask(int lanes) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Eight values of a strip row as floats: float16 by vcvtph2ps, bfloat16 shifted into a float's high
// half. A narrow strip is always read whole (packing pads it with zeros); only the store is masked.
template <class E>
__attribute__((target("avx2,fma,f16c"))) inline __m256 widen8(const E* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<E, float16>) return _mm256_cvtph_ps(h);
  else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Rows [0, R) x columns [0, 8 V) of C; with Masked the last vector holds the lanes `last`
// selects (a strip at the block's edge), else every vector is full and no mask register is taken.
// The loop keeps the smaller operand set in registers: R broadcasts of A while V vectors of B
// stream, or V vectors of B while R broadcasts stream, so 12 sums + min(R, V) + 1 fit the 16
// registers. With Strips, B is in packed strips (ldb = 16): vectors 2 s and 2 s + 1 of a row come
// from the strip `strip_stride` values after the first one's s - 1. E: B's element type (float,
// or float16 / bfloat16 strips). Ahead: on strips, prefetch each strip this many rows ahead.
template <int R, int V, bool Masked, bool Strips, class E = float, int Ahead = (R >= 6 ? kPrefetchRows : 0)>
__attribute__((target("avx2,fma,f16c"))) void tile(int64_t K, const float* a, int64_t lda, const E* b, int64_t ldb,
                                                   int64_t strip_stride, float* c, int64_t ldc, __m256i last,
                                                   bool accumulate) {
  auto load = [&](const float* p, int v) {
    if constexpr (Masked) return v == V - 1 ? _mm256_maskload_ps(p, last) : _mm256_loadu_ps(p);
    else return _mm256_loadu_ps(p);
  };
  auto load_b = [&](const E* p, int v) {
    if constexpr (std::is_same_v<E, float>) return load(p, v);
    else return widen8(p);
  };
  auto column = [&](const E* row, int v) { return Strips ? row + (v >> 1) * strip_stride + 8 * (v & 1) : row + 8 * v; };
  __m256 sum[R][V];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int v = 0; v < V; ++v) sum[r][v] = accumulate ? load(c + r * ldc + 8 * v, v) : _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = 0; k < K; ++k) {
    const E* row = b + k * ldb;
    if constexpr (Strips && Ahead > 0) {
#pragma GCC unroll 6
      for (int v = 0; v < V; v += 2)
        _mm_prefetch(reinterpret_cast<const char*>(column(row, v) + Ahead * kStrip), _MM_HINT_T0);
    }
    if constexpr (R <= V) {
      __m256 av[R];
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) av[r] = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v) {
        const __m256 bv = load_b(column(row, v), v);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) sum[r][v] = _mm256_fmadd_ps(av[r], bv, sum[r][v]);
      }
    } else {
      __m256 bv[V];
#pragma GCC unroll 12
      for (int v = 0; v < V; ++v) bv[v] = load_b(column(row, v), v);
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

template <class E>
using TileFn = void (*)(int64_t, const float*, int64_t, const E*, int64_t, int64_t, float*, int64_t, __m256i, bool);

// Tiles keep 12 sums in registers (R rows x V vectors, R V <= 12): 1 x 12, 2 x 6, 3 x 4, 4 x 3,
// then 6 x 2 from 5 rows on, so that enough independent chains hide the FMA latency however few
// rows C has. `vectors` < V for the strip at a block's edge. On packed strips a tile starts at a
// strip's first column: there rows go in groups of 6, 3, 2 or 1 (strips_block), whose tiles cover
// whole strips.
constexpr int vectors_for(int rows) { return rows >= 5 ? 2 : 12 / rows; }
template <int R, bool Strips, class E, int Ahead = (R >= 6 ? kPrefetchRows : 0), int... Vs>
TileFn<E> pick(int vectors, bool masked, std::integer_sequence<int, Vs...>) {
  TileFn<E> f = nullptr;
  ((vectors == Vs + 1
        ? (f = masked ? tile<R, Vs + 1, true, Strips, E, Ahead> : tile<R, Vs + 1, false, Strips, E, Ahead>, 0)
        : 0),
   ...);
  return f;
}
// `next_pair`: the second 2-row group of four rows on strips, which prefetches the next turn's rows.
template <bool Strips, class E = float>
TileFn<E> tile_for(int rows, int vectors, bool masked, bool next_pair = false) {
  switch (rows) {
    case 1: return pick<1, Strips, E>(vectors, masked, std::make_integer_sequence<int, 12>());
    case 2:
      if constexpr (Strips)
        if (next_pair) return pick<2, true, E, kPairDepth>(vectors, masked, std::make_integer_sequence<int, 6>());
      return pick<2, Strips, E>(vectors, masked, std::make_integer_sequence<int, 6>());
    case 3: return pick<3, Strips, E>(vectors, masked, std::make_integer_sequence<int, 4>());
    case 4: return pick<4, Strips, E>(vectors, masked, std::make_integer_sequence<int, 3>());
    case 5: return pick<5, Strips, E>(vectors, masked, std::make_integer_sequence<int, 2>());
    default: return pick<6, Strips, E>(vectors, masked, std::make_integer_sequence<int, 2>());
  }
}

// Rows [0, M) x columns [n0, n0 + width) of C, `depth` values of k: A from a (row stride lda), B
// in strips of 16 columns from bb (rows of 16 floats, `stride` floats from one strip to the next).
// The 6-row groups run strip by strip, each strip (256 x 16, 16 KB) staying in L1 while every
// group passes over it; the last, smaller group follows. With `rows_outer` each 6-row group runs
// over every strip instead, its slice of A (6 x 256) staying in L1 while the strips come from L2:
// the order for a panel made per call (gemm_panels), where A (a convolution's weights, up to 512 x
// 256 per pass in ResNet-18) would otherwise stream from L3 once per strip.
template <class E>
__attribute__((target("avx2,fma,f16c"))) void strips_block(int64_t M, int64_t N, int64_t lda, int64_t depth,
                                                           const float* a, const E* bb, int64_t stride, float* c,
                                                           int64_t n0, int64_t width, bool acc, bool rows_outer = false) {
  // Rows [m0, m0 + rows) against columns [j, j + 8 * vectors_for) of the block, k in [k0, k0 + d).
  auto run = [&](int64_t m0, int rows, int64_t j, int64_t k0 = 0, int64_t d = -1, bool next_pair = false) {
    const int64_t strip = std::min<int64_t>(8 * vectors_for(rows), width - j);
    const int vectors = int((strip + 7) / 8);
    tile_for<true, E>(rows, vectors, strip % 8 != 0, next_pair)(d < 0 ? depth : d, a + m0 * lda + k0, lda,
                                                  bb + j / kStrip * stride + k0 * kStrip, kStrip, stride,
                                                  c + m0 * N + n0 + j, N, lane_mask(int(strip - 8 * (vectors - 1))),
                                                  acc || k0 > 0);
  };
  const int64_t full = M / 6 * 6;
  if (rows_outer)
    for (int64_t m0 = 0; m0 < full; m0 += 6)
      for (int64_t j = 0; j < width; j += kStrip) run(m0, 6, j);
  else
    for (int64_t j = 0; j < width; j += kStrip)
      for (int64_t m0 = 0; m0 < full; m0 += 6) run(m0, 6, j);
  // The last 1-5 rows in groups of 3, 2 or 1, whose tiles (3 x 32, 2 x 48, 1 x 96 columns) keep
  // 12 chains: a 4 x 16 or 5 x 16 tile keeps 8 or 10, too few to hide the FMA latency, and a few-row
  // product is then bound by arithmetic instead of by reading B (4 x 4096 x 4096: 5.3 -> 4.6 ms).
  // Four rows are two 2-row groups taking turns every kPairDepth values of k on the same strips,
  // the second reading from L1 what the first brought (+7-8% on 4 x 4096 x 4096, 4 x 2048 x 32000,
  // 4 x 704 x 131776) and prefetching the rows of the first's next turn, so that memory streams on
  // while it computes (+4-17% more; 64 rows ahead lost 8-20%). One 2-row group after the other, the
  // second read the block from L2 while memory idled; 4 x 24 tiles over 1.5 strips lost 10-20%
  // (two streams from memory at a time instead of three).
  if (M - full == 4) {
    for (int64_t j = 0; j < width; j += 8 * vectors_for(2))
      for (int64_t k0 = 0; k0 < depth; k0 += kPairDepth) {
        run(full, 2, j, k0, std::min(kPairDepth, depth - k0));
        run(full + 2, 2, j, k0, std::min(kPairDepth, depth - k0), true);
      }
    return;
  }
  for (int64_t m0 = full; m0 < M;) {
    const int rows = int(std::min<int64_t>(M - m0, 3));
    for (int64_t j = 0; j < width; j += 8 * vectors_for(rows)) run(m0, rows, j);
    m0 += rows;
  }
}

// Columns [n0, n0 + 96) (fewer in the last block) of C, every row, 256 values of k at a time: a
// tile goes on from the partial sums it stored, so each element stays one chain over k. With
// many rows the block of B is first copied to a contiguous panel that every row tile then reads,
// the A tile staying in L1 across the block's strips. With `packed` (pack_in_order_avx2's strips)
// nothing is copied (strips_block).
__attribute__((target("avx2,fma,f16c"))) void column_block(int64_t M, int64_t N, int64_t K, const float* a,
                                                           const float* b, PackedStrips packed, float* c,
                                                           bool accumulate, int64_t n0, AlignedVector<float>& panel) {
  const int64_t width = std::min(kBlockCols, N - n0);
  const bool pack = !packed.data && M >= kPackFromRows;
  if (pack) panel.resize(size_t(kDepth * width));
  for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
    const int64_t depth = std::min(kDepth, K - k0);
    const bool acc = accumulate || k0 > 0;
    if (packed.data) {
      // row k0 of the block's first strip; kStrip * K values from one strip to the next
      auto strips = [&](const auto* p) {
        strips_block(M, N, K, depth, a + k0, p + n0 * K + k0 * kStrip, kStrip * K, c, n0, width, acc);
      };
      switch (packed.type) {
        case StripType::Float: strips(static_cast<const float*>(packed.data)); break;
        case StripType::Float16: strips(static_cast<const float16*>(packed.data)); break;
        case StripType::BFloat16: strips(static_cast<const bfloat16*>(packed.data)); break;
      }
      continue;
    }
    const float* bb = b + k0 * N + n0;
    int64_t ldb = N;
    if (pack) {
      for (int64_t k = 0; k < depth; ++k) std::copy_n(bb + k * N, width, panel.data() + k * width);
      bb = panel.data(), ldb = width;
    }
    for (int64_t m0 = 0; m0 < M;) {
      const int rows = int(std::min<int64_t>(6, M - m0));
      const int64_t strip_width = 8 * vectors_for(rows);
      for (int64_t j = 0; j < width; j += strip_width) {
        const int64_t strip = std::min(strip_width, width - j);
        const int vectors = int((strip + 7) / 8);
        tile_for<false>(rows, vectors, strip % 8 != 0)(depth, a + m0 * K + k0, K, bb + j, ldb, 0, c + m0 * N + n0 + j, N,
                                                       lane_mask(int(strip - 8 * (vectors - 1))), acc);
      }
      m0 += rows;
    }
  }
}

// One or two rows of C (a decode step's products): the rows' sums of up to 1024 columns wait in
// an L1 buffer while B streams by rows of 4 KB, as a GEMV reads it; register tiles would read B
// in 384-byte pieces a page apart. Each element is still one FMA chain over k in order.
constexpr int64_t kRowBlockCols = 1024;
template <int M>
__attribute__((target("avx2,fma,f16c"))) void few_rows(int64_t N, int64_t K, const float* a, const float* b, float* c,
                                                  bool accumulate, int64_t n0) {
  const int64_t width = std::min(kRowBlockCols, N - n0), full = width / 8 * 8;
  alignas(32) float sum[M][kRowBlockCols];
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

// The AVX2 path (refeval/isa.h): CPUs with AVX2 and FMA but not AVX-512, or any CPU with --isa avx2.
bool in_order_avx2_suits() { return active_isa() == Isa::Avx2; }

// A product of up to kStripRowsOnAvx512 rows reads each weight for at most 8 flops per float: its
// speed is the read bandwidth, which the packed strips (one sequential stream each) reach with AVX2
// arithmetic to spare, while the AVX-512 kernel reading B where it lies (rows N apart) reached
// 55-70% of it. An AVX-512 CPU runs these AVX2 tiles then: the same in-order chains, the same bits.
bool in_order_avx2_takes(int64_t M) {
  return in_order_avx2_takes_all() || (M <= kStripRowsOnAvx512 && active_isa() == Isa::Avx512);
}

bool in_order_avx2_takes_anywhere(int64_t M) {
  return M <= kStripRowsOnAvx512 && (in_order_avx2_suits() || active_isa() == Isa::Avx512);
}

// On a CPU whose 512-bit arithmetic runs as two halves (AMD's Zen 4) these tiles won at every row
// count of a seeded sweep of packed-weight products (M 6 to 96, K 512-2048, N 768-4096: 1.05-2x
// the AVX-512 kernels' speed; M = 256 even), so they take every product there, unless the path was
// forced (--isa avx512 runs, and the tests check, the AVX-512 kernels on such a CPU too).
bool in_order_avx2_takes_all() {
  return in_order_avx2_suits() || (active_isa() == Isa::Avx512 && half_width_avx512() && !isa_forced());
}

PackedWeight pack_in_order_avx2(bool trans_b, int64_t K, int64_t N, const float* b, bool release_read) {
  // Strip t (columns 16 t .. 16 t + 15) is K rows of 16 from 16 t K on, so the 96-column block
  // from n0 starts at n0 K. Made on AVX-512 CPUs too, for their few-row products (below).
  PackedWeight w;
  if (!in_order_avx2_suits() && active_isa() != Isa::Avx512) return w;
  std::vector<uint16_t> bits;
  w.type = exact_strip_type(b, K * N, &bits);
  if (w.type == StripType::Float) w.wide = pack_column_blocks(trans_b, K, N, b, kStrip, release_read);
  else w.narrow = pack_column_blocks(trans_b, K, N, bits.data(), kStrip);
  return w;
}

PackedWeight pack_in_order_avx2(bool trans_b, int64_t K, int64_t N, const uint16_t* b, StripType type) {
  PackedWeight w;
  if (!in_order_avx2_suits() && active_isa() != Isa::Avx512) return w;
  w.type = type;
  w.narrow = pack_column_blocks(trans_b, K, N, b, kStrip);
  return w;
}

// bfloat16 first (a test of the low bits), then a round trip through float16 with F16C, 8 at a
// time (software conversion took 2.4 ns a value). The bits are kept only once every value passed:
// a float weight fails on its first values, and its n float16 slots made up front were 272 MB
// touched for nothing beside a tied LM head's table.
__attribute__((target("avx2,fma,f16c"))) StripType exact_strip_type(const float* b, int64_t n,
                                                                    std::vector<uint16_t>* bits) {
  const uint32_t* words = reinterpret_cast<const uint32_t*>(b);
  if (std::all_of(words, words + n, [](uint32_t x) { return (x & 0xffffu) == 0; })) {
    if (bits) {
      bits->resize(size_t(n));
      std::transform(words, words + n, bits->begin(), [](uint32_t x) { return uint16_t(x >> 16); });
    }
    return StripType::BFloat16;
  }
  // out: where the float16 bits go (null: only checked); false at the first inexact value
  auto convert = [&](uint16_t* out) {
    alignas(16) uint16_t scratch[8];
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 x = _mm256_loadu_ps(b + i);
      const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m256i same = _mm256_cmpeq_epi32(_mm256_castps_si256(x), _mm256_castps_si256(_mm256_cvtph_ps(h)));
      if (_mm256_movemask_epi8(same) != -1) return false;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out ? out + i : scratch), h);
    }
    for (; i < n; ++i) {
      const float16 h(b[i]);
      if (detail::float_bits(float(h)) != detail::float_bits(b[i])) return false;
      if (out) out[i] = h.bits;
    }
    return true;
  };
  if (!convert(nullptr)) return StripType::Float;
  if (bits) bits->resize(size_t(n)), convert(bits->data());
  return StripType::Float16;
}

bool gemm_in_order_avx2(int64_t M, int64_t N, int64_t K, const float* a, const float* b, float* c, bool accumulate,
                        PackedStrips packed) {
  if (!in_order_avx2_takes(M)) return false;
  if (M <= 2 && !packed.data) {
    parallel_for((N + kRowBlockCols - 1) / kRowBlockCols, 1, [&](int64_t first, int64_t last) {
      for (int64_t block = first; block < last; ++block)
        (M == 1 ? few_rows<1> : few_rows<2>)(N, K, a, b, c, accumulate, block * kRowBlockCols);
    });
    return true;
  }
  parallel_for((N + kBlockCols - 1) / kBlockCols, 1, [&](int64_t first, int64_t last) {
    AlignedVector<float> panel;
    for (int64_t block = first; block < last; ++block)
      column_block(M, N, K, a, b, packed, c, accumulate, block * kBlockCols, panel);
  });
  return true;
}

bool gemm_in_order_avx2(int64_t M, int64_t N, int64_t K, const float* a, const PanelSource& b, float* c,
                        bool accumulate, const float* row_bias) {
  if (!in_order_avx2_suits()) return false;
  for_each_panel(M, N, K, 6, b, [&](int64_t m0, int64_t rows, int64_t n0, int64_t width, int64_t k0, int64_t depth,
                                    const float* panel) {
    strips_block(rows, N, K, depth, a + m0 * K + k0, panel, kStrip * depth, c + m0 * N, n0, width,
                 accumulate || k0 > 0, true);
  }, row_bias, c);
  return true;
}

}  // namespace refeval::ops
