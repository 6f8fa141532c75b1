// MatMulNBits' int8 path (accuracy_level 4 under --emulate-accuracy-level; contract in
// matmul_nbits_kernel.h): A quantized to int8 per block, exact integer dot products per block,
// scaled and summed in float one block after another. The integer sums are exact in any order, so
// the dot-product kernel below (AVX-512 VNNI: 64 multiply-adds of bytes per instruction, 4-bit
// weights laid out once per node, NBitsInt8Tiles) and the portable code give the same bits: each
// output is the same chain of fused multiply-adds over the blocks.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define REFEVAL_NBITS_AVX2 1
#endif

#include "matmul_nbits_kernel.h"
#include "refeval/file_backed.h"
#include "refeval/isa.h"
#include "refeval/limits.h"
#include "refeval/narrow_types.h"
#include "refeval/threads.h"

namespace refeval::ops::contrib {
namespace {

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

// A's rows quantized per block as MLAS's QuantizeARow_CompInt8 does: M x k_blocks blocks of
// block_size values (zeros beyond K) and their scales.
struct QuantizedA {
  std::vector<int16_t> values;
  std::vector<float> scales;
};
QuantizedA quantize_a(const float* a, int64_t M, int64_t K, int64_t bs, int64_t kb) {
  QuantizedA q{scratch_vector<int16_t>(M * kb * bs, "MatMulNBits' int8 A"), scratch_vector<float>(M * kb, "MatMulNBits' A scales")};
  std::vector<int16_t>& qa = q.values;
  std::vector<float>& scale_a = q.scales;
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
  return q;
}

// 4-bit B in NBitsInt8Tiles' layout (matmul_nbits_kernel.h).
template <class S>
NBitsInt8Tiles lay_out_tiles(const NBitsWeight<S>& w) {
  constexpr int64_t kCols = 16;
  NBitsInt8Tiles t;
  const int64_t bs = w.block_size, kb = w.k_blocks;
  t.tiles = (w.N + kCols - 1) / kCols, t.k_blocks = kb, t.block_size = bs;
  t.values.assign(size_t(t.tiles * kb * bs * 8), 0);
  t.scales.assign(size_t(t.tiles * kb * kCols), 0.0f);
  t.zeros.assign(size_t(t.tiles * kb * kCols), 0);
  parallel_for(t.tiles, 1, [&](int64_t first, int64_t last) {
    for (int64_t tile = first; tile < last; ++tile)
      for (int64_t i = 0; i < kCols && tile * kCols + i < w.N; ++i) {
        const int64_t n = tile * kCols + i;
        for (int64_t b = 0; b < kb; ++b) {
          const size_t at = size_t((tile * kb + b) * kCols + i);
          t.scales[at] = scale_of(w, n, b);
          t.zeros[at] = uint8_t(zero_point_of(w, n, b));
          const uint8_t* blob = blob_of(w, n, b);
          uint8_t* out = t.values.data() + (tile * kb + b) * bs * 8 + 4 * i;
          for (int64_t k0 = 0; k0 < bs; k0 += 8, out += 64)
            for (int r = 0; r < 4; ++r) out[r] = uint8_t(quantized(blob, 4, k0 + r) | quantized(blob, 4, k0 + 4 + r) << 4);
        }
      }
  });
  return t;
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
// R rows of y times one tile of 16 columns: per block, the exact integer dot products of the
// 16 columns at once (each 32-bit lane a column, 4 products a step), minus zero point x the sum of
// A's block, then acc = fma(float(dot), scale_a * scale_b, acc), lane by lane: the portable code's
// operations, in its order.
template <int R>
void int8_tile(const NBitsInt8Tiles& t, int64_t tile, const int8_t* qa, const int32_t* sum_a, const float* scale_a,
               int64_t m0, const float* bias, int64_t N, float* y) {
  const int64_t kb = t.k_blocks, bs = t.block_size, n0 = tile * 16;
  const __m512i low = _mm512_set1_epi8(0x0F);
  const uint8_t* values = t.values.data() + tile * kb * bs * 8;
  const float* scales = t.scales.data() + tile * kb * 16;
  const uint8_t* zeros = t.zeros.data() + tile * kb * 16;
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < kb; ++b) {
    __m512i dot[R];
    for (int r = 0; r < R; ++r) dot[r] = _mm512_setzero_si512();
    for (int64_t k0 = 0; k0 < bs; k0 += 8, values += 64) {
      const __m512i x = _mm512_load_si512(values);
      const __m512i lo = _mm512_and_si512(x, low), hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), low);
      for (int r = 0; r < R; ++r) {
        const int8_t* ar = qa + ((m0 + r) * kb + b) * bs + k0;
        int32_t first, second;  // A's values k0 .. k0 + 3 and k0 + 4 .. k0 + 7
        std::memcpy(&first, ar, 4), std::memcpy(&second, ar + 4, 4);
        dot[r] = _mm512_dpbusd_epi32(dot[r], lo, _mm512_set1_epi32(first));
        dot[r] = _mm512_dpbusd_epi32(dot[r], hi, _mm512_set1_epi32(second));
      }
    }
    const __m512i zero = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(zeros + b * 16)));
    const __m512 scale_b = _mm512_load_ps(scales + b * 16);
    for (int r = 0; r < R; ++r) {
      const size_t at = size_t((m0 + r) * kb + b);
      const __m512i exact = _mm512_sub_epi32(dot[r], _mm512_mullo_epi32(zero, _mm512_set1_epi32(sum_a[at])));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(_mm512_set1_ps(scale_a[at]), scale_b), acc[r]);
    }
  }
  const __mmask16 mask = N - n0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (N - n0)) - 1);
  const __m512 b16 = bias ? _mm512_maskz_loadu_ps(mask, bias + n0) : _mm512_setzero_ps();
  for (int r = 0; r < R; ++r)
    _mm512_mask_storeu_ps(y + (m0 + r) * N + n0, mask, bias ? _mm512_add_ps(acc[r], b16) : acc[r]);
}
#endif

#if REFEVAL_NBITS_AVX2
// The same on AVX2 (no integer dot product of bytes): each 64-byte step as two halves of 8
// columns, products of bytes paired into 16 bits (|sum| <= 2 * 15 * 128 + 2 * 15 * 128, no
// saturation) then summed into 32-bit lanes: the same exact integers, the same float steps.
template <int R>
void int8_tile_avx2(const NBitsInt8Tiles& t, int64_t tile, const int8_t* qa, const int32_t* sum_a, const float* scale_a,
                    int64_t m0, const float* bias, int64_t N, float* y) {
  const int64_t kb = t.k_blocks, bs = t.block_size, n0 = tile * 16;
  const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const uint8_t* values = t.values.data() + tile * kb * bs * 8;
  const float* scales = t.scales.data() + tile * kb * 16;
  const uint8_t* zeros = t.zeros.data() + tile * kb * 16;
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < kb; ++b) {
    __m256i dot[R][2];
    for (int r = 0; r < R; ++r) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
    for (int64_t k0 = 0; k0 < bs; k0 += 8, values += 64)
      for (int h = 0; h < 2; ++h) {
        const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(values + 32 * h));
        const __m256i lo = _mm256_and_si256(x, low), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low);
        for (int r = 0; r < R; ++r) {
          const int8_t* ar = qa + ((m0 + r) * kb + b) * bs + k0;
          int32_t first, second;
          std::memcpy(&first, ar, 4), std::memcpy(&second, ar + 4, 4);
          const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(first)),
                                                 _mm256_maddubs_epi16(hi, _mm256_set1_epi32(second)));
          dot[r][h] = _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(pairs, ones));
        }
      }
    for (int h = 0; h < 2; ++h) {
      const __m256i zero = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(zeros + b * 16 + 8 * h)));
      const __m256 scale_b = _mm256_load_ps(scales + b * 16 + 8 * h);
      for (int r = 0; r < R; ++r) {
        const size_t at = size_t((m0 + r) * kb + b);
        const __m256i exact = _mm256_sub_epi32(dot[r][h], _mm256_mullo_epi32(zero, _mm256_set1_epi32(sum_a[at])));
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(_mm256_set1_ps(scale_a[at]), scale_b), acc[r][h]);
      }
    }
  }
  const int64_t width = std::min<int64_t>(16, N - n0);
  for (int r = 0; r < R; ++r) {
    alignas(32) float out[16];
    _mm256_store_ps(out, acc[r][0]), _mm256_store_ps(out + 8, acc[r][1]);
    float* row = y + (m0 + r) * N + n0;
    for (int64_t i = 0; i < width; ++i) row[i] = bias ? out[i] + bias[n0 + i] : out[i];
  }
}
#endif

bool vnni() {
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  static const bool has = __builtin_cpu_supports("avx512vnni");
  return has && active_isa() == Isa::Avx512;
#else
  return false;
#endif
}

// The whole product on the tiles: R rows at a time share each tile's loads.
void int8_tiles_gemm(const NBitsInt8Tiles& t, const QuantizedA& q, int64_t M, int64_t N, const float* bias, float* y) {
  using Tile = void (*)(const NBitsInt8Tiles&, int64_t, const int8_t*, const int32_t*, const float*, int64_t, const float*,
                        int64_t, float*);
  Tile kernels[4] = {};  // kernels[r - 1] takes r rows
  int64_t rows_per_call = 0;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  if (vnni()) kernels[0] = int8_tile<1>, kernels[1] = int8_tile<2>, kernels[2] = int8_tile<3>, kernels[3] = int8_tile<4>, rows_per_call = 4;
#endif
#if REFEVAL_NBITS_AVX2
  if (!rows_per_call) kernels[0] = int8_tile_avx2<1>, kernels[1] = int8_tile_avx2<2>, rows_per_call = 2;  // 16 registers
#endif
  const int64_t kb = t.k_blocks, bs = t.block_size;
  std::vector<int8_t> qa(q.values.size());
  std::vector<int32_t> sum_a(size_t(M * kb), 0);
  for (size_t i = 0; i < qa.size(); ++i) qa[i] = int8_t(q.values[i]), sum_a[i / size_t(bs)] += q.values[i];
  parallel_for(t.tiles, std::max<int64_t>(1, nbits_column_grain(kb * bs, M) / 16), [&](int64_t first, int64_t last) {
    for (int64_t tile = first; tile < last; ++tile)
      for (int64_t m = 0; m < M; m += rows_per_call) {
        const int64_t rows = std::min(rows_per_call, M - m);
        kernels[rows - 1](t, tile, qa.data(), sum_a.data(), q.scales.data(), m, bias, N, y);
      }
  });
}

// Whether the tile kernels take this weight here: 4-bit values with integer zero points, no
// g_idx, on a CPU with AVX2 (the portable code computes the rest).
template <class S>
bool int8_tiles_suit(const NBitsWeight<S>& w) {
#if REFEVAL_NBITS_AVX2
  return w.bits == 4 && !w.g_idx && !w.zero_points && active_isa() != Isa::Generic;
#else
  return false;
#endif
}
}  // namespace

template <class S>
std::shared_ptr<const NBitsInt8Tiles> NBitsInt8Cache::get(const NBitsWeight<S>& w) {
  if (!int8_tiles_suit(w)) return nullptr;
  std::lock_guard lock(mutex_);
  if (!tiles_) {
    tiles_ = std::make_shared<const NBitsInt8Tiles>(lay_out_tiles(w));
    // The kernel reads the tiles from now on: a B mapped from its file may leave memory.
    release_file_pages(w.data, size_t(w.N * w.k_blocks * w.block_size / 2));
  }
  return tiles_;
}

template <class S>
void nbits_gemm_int8(const NBitsWeight<S>& w, const float* a, int64_t M, const float* bias, float* y, NBitsInt8Cache* cache) {
  if (M == 0) return;
  const int64_t K = w.K, bs = w.block_size, kb = w.k_blocks;
  const QuantizedA q = quantize_a(a, M, K, bs, kb);
  const std::vector<int16_t>& qa = q.values;
  const std::vector<float>& scale_a = q.scales;
  if (cache) {
    if (std::shared_ptr<const NBitsInt8Tiles> tiles = cache->get(w)) return int8_tiles_gemm(*tiles, q, M, w.N, bias, y);
  } else if (int8_tiles_suit(w)) {
    return int8_tiles_gemm(lay_out_tiles(w), q, M, w.N, bias, y);
  }
  parallel_for(w.N, nbits_column_grain(K, M), [&](int64_t n0, int64_t n1) {
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


template std::shared_ptr<const NBitsInt8Tiles> NBitsInt8Cache::get(const NBitsWeight<float>&);
template std::shared_ptr<const NBitsInt8Tiles> NBitsInt8Cache::get(const NBitsWeight<float16>&);
template std::shared_ptr<const NBitsInt8Tiles> NBitsInt8Cache::get(const NBitsWeight<bfloat16>&);
template void nbits_gemm_int8(const NBitsWeight<float>&, const float*, int64_t, const float*, float*, NBitsInt8Cache*);
template void nbits_gemm_int8(const NBitsWeight<float16>&, const float*, int64_t, const float*, float*, NBitsInt8Cache*);
template void nbits_gemm_int8(const NBitsWeight<bfloat16>&, const float*, int64_t, const float*, float*, NBitsInt8Cache*);

}  // namespace refeval::ops::contrib
