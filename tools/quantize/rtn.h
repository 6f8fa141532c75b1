// Round-to-nearest block quantization of a weight to 4 bits, as ONNX Runtime's default int4
// quantizer (MatMulNBitsQuantizer's DefaultWeightOnlyQuantConfig, MLAS's blockwise quantizer)
// writes it for com.microsoft.MatMulNBits, bit for bit:
//   - blocks of `block_size` consecutive K values of one output column n; K padded to whole blocks;
//   - asymmetric: the block's range widened to include 0, scale = (max - min) / 15, zero point =
//     round(-min / scale) clamped to [0, 15];
//   - symmetric: m = the value of largest magnitude (the minimum on a tie), scale = m / -8 (negative
//     when m > 0), no zero points (the kernel takes 8);
//   - q = clamp(round(v * (1 / scale) + zero point), 0, 15), round = half away from zero (roundf),
//     a multiply and an add each rounded to float (never fused).
// Layouts (MatMulNBits): data [N, blocks, block_size / 2] with even k in the low nibble; scales
// [N * blocks]; zero points [N * ceil(blocks / 2)], the even block in the low nibble, a missing
// odd block 8.
#pragma once

#include <cstdint>
#include <vector>

namespace refeval::quantize {

struct Int4Blocks {
  int64_t K = 0, N = 0, block_size = 0, blocks = 0;  // blocks = ceil(K / block_size) per column
  std::vector<uint8_t> data;
  std::vector<float> scales;
  std::vector<uint8_t> zero_points;  // empty when symmetric
};

// b is K x N, row-major (an ONNX MatMul's weight).
Int4Blocks quantize_int4_rtn(const float* b, int64_t K, int64_t N, int64_t block_size, bool symmetric);

}  // namespace refeval::quantize
