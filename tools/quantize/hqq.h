// Half-quadratic quantization (HQQ; Badri and Shaji, 2023) of a weight to 4 bits, as ONNX
// Runtime's HQQWeightOnlyQuantizer computes it for com.microsoft.MatMulNBits: blocks of
// `block_size` K values of one column (K padded with zeros to whole blocks), the scale from the
// block's range (15 / (max - min), at most 2e4; 1 for a constant block), the zero point first
// round(-min * scale), then moved by up to 20 rounds of
//   q = clamp(round(w * scale + zero), 0, 15), r = (q - zero) / scale,
//   e = shrink_0.7(w - r, beta), zero = mean over the block of (q - (w - e) * scale), beta *= 1.01
// (beta from 10, shrink_p(x, beta) = sign(x) max(|x| - |x|^(p-1) / beta, 0)), stopping when the
// mean |w - r| over the whole weight no longer falls. The zero points stay float: the stored
// scale is 1 / scale and w = (q - zero point) * stored scale.
#pragma once

#include <cstdint>
#include <vector>

namespace refeval::quantize {

struct HqqBlocks {
  int64_t blocks = 0;             // per column
  std::vector<uint8_t> data;      // [N, blocks, block_size / 2], the even k in the low nibble
  std::vector<float> scales;      // [N * blocks]
  std::vector<float> zero_points; // [N, blocks], float
};

// b is K x N, row-major (an ONNX MatMul's weight).
HqqBlocks quantize_int4_hqq(const float* b, int64_t K, int64_t N, int64_t block_size);

}  // namespace refeval::quantize
