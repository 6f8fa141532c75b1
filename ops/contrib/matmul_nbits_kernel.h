// The products behind com.microsoft MatMulNBits (matmul_nbits.cc): Y = A · dequant(B)ᵀ + bias,
// with B's blocks dequantized on the fly, never materialised as a whole float matrix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>

#include "refeval/aligned.h"

namespace refeval::ops::contrib {

// MatMulNBits' B and its quantization parameters. S is A's element type (float, float16 or
// bfloat16): the type of the scales and of unpacked zero points.
template <class S>
struct NBitsWeight {
  int64_t K = 0, N = 0, bits = 0, block_size = 0, k_blocks = 0;
  const uint8_t* data = nullptr;                // (N, k_blocks, block_size * bits / 8), low bits first
  const S* scales = nullptr;                    // (N, k_blocks)
  const uint8_t* packed_zero_points = nullptr;  // (N, ceil(k_blocks * bits / 8)), low bits first
  const S* zero_points = nullptr;               // (N, k_blocks); with neither, 2^(bits - 1)
  const int32_t* g_idx = nullptr;               // the block of each k; null: k / block_size
};

// Block b of column n: its blob, scale and zero point.
template <class S>
inline const uint8_t* blob_of(const NBitsWeight<S>& w, int64_t n, int64_t b) {
  return w.data + (n * w.k_blocks + b) * (w.block_size * w.bits / 8);
}
template <class S>
inline float scale_of(const NBitsWeight<S>& w, int64_t n, int64_t b) { return float(w.scales[n * w.k_blocks + b]); }
template <class S>
inline float zero_point_of(const NBitsWeight<S>& w, int64_t n, int64_t b) {
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


// Columns per thread for an M-row product over K that makes a split pay for itself (about 64K
// multiply-adds each).
inline int64_t nbits_column_grain(int64_t K, int64_t M) {
  return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, K * M));
}

// y (M x N) = a (M x K) · dequant(w)ᵀ + bias (bias may be null), row-major, in float. Weight
// (n, k) is (float(q) - zp) * scale computed in float, with the zp and scale of block g_idx[k]
// (default k / block_size) and q the k-th value of column n. Each y[m][n] is one fixed sum over
// the k in groups of 32 (zeros beyond K), each group's values in the order unpacking them whole
// yields (4 bits: the even k, then the odd k; 2 and 8 bits: k order): 32 chains of fused
// multiply-adds, chain j over position j of every group in increasing k, then
// u_i = (c_i + c_(i+16)) + (c_(i+8) + c_(i+24)) for i < 8, ((u0 + u4) + (u2 + u6)) + ((u1 + u5) +
// (u3 + u7)), then + bias. It depends neither on M, on the row, on the thread count (the work is
// split over N) nor on the CPU (the AVX-512, AVX2 and portable code perform the same operations).
template <class S>
void nbits_gemm(const NBitsWeight<S>& w, const float* a, int64_t M, const float* bias, float* y);

// The same product as ONNX Runtime 1.30's CPU kernel computes it for accuracy_level 4 (MLAS's
// SQNBIT_CompInt8): each row of a is quantized to int8 per block of block_size along K, with
// scale_a = max|a| / 127 and q_a = round-half-even(a * (127 / max|a|)) in float (a zero block gives
// zeros); then y[m][n] = sum over the blocks of float(dot(q_a, q - zp)) * (scale_a * scale), the
// integer dot products exact, the float sum a chain of fused multiply-adds over the blocks, + bias.
// MLAS's SIMD kernels order that float sum differently: results differ from ORT's by float
// rounding. Requires integer zero points (packed or default) and no g_idx.
// With `cache` (for a B constant while the cache lives), 4-bit weights are laid out once for the
// CPU's integer dot products (NBitsInt8Cache); the result is the same either way, on every CPU.
class NBitsInt8Cache;
template <class S>
void nbits_gemm_int8(const NBitsWeight<S>& w, const float* a, int64_t M, const float* bias, float* y,
                     NBitsInt8Cache* cache = nullptr);

// Whether ORT 1.30's CPU kernel takes its int8 path for accuracy_level 4 (measured on x86-64): 4-
// and 8-bit weights in blocks of 16 to 256, 2-bit ones in blocks of 32 to 128, integer zero points
// (packed or default) and no g_idx. Otherwise it dequantizes B to float: the level changes nothing.
bool ort_int8_path(int64_t bits, int64_t block_size, bool has_g_idx, bool float_zero_points);

// 4-bit B in the layout of the int8 path's dot-product kernel (AVX-512 VNNI): columns in tiles of
// 16; for each tile, block and 8 values of k (k0 .. k0 + 7 of the block), 64 bytes whose bytes
// 4i .. 4i + 3 hold column i's values k0 .. k0 + 3 in their low nibbles and k0 + 4 .. k0 + 7 in
// their high ones, so that one load, a mask and a shift give each 32-bit lane (a column) four
// consecutive values to multiply with four of A's, broadcast. Then the block's 16 scales and zero
// points. Columns past N are zeros.
struct NBitsInt8Tiles {
  int64_t tiles = 0, k_blocks = 0, block_size = 0;
  AlignedVector<uint8_t> values;  // tiles x k_blocks x (block_size / 8) x 64
  AlignedVector<float> scales;    // tiles x k_blocks x 16
  AlignedVector<uint8_t> zeros;   // tiles x k_blocks x 16
};
// The layout of one constant B, made on its first use and kept with the node.
class NBitsInt8Cache {
 public:
  // w's B laid out (at the first call; w must be the same at every call); null when the tile
  // kernels do not take w on this CPU (then the portable code runs).
  template <class S>
  std::shared_ptr<const NBitsInt8Tiles> get(const NBitsWeight<S>& w);

 private:
  std::mutex mutex_;
  std::shared_ptr<const NBitsInt8Tiles> tiles_;
};

}  // namespace refeval::ops::contrib
