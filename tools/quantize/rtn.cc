#include "rtn.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace refeval::quantize {
namespace {

struct BlockScale {
  float scale = 0;
  uint8_t zero_point = 8;
};

BlockScale asymmetric(float lo, float hi) {
  lo = std::min(lo, 0.0f), hi = std::max(hi, 0.0f);
  BlockScale s;
  s.scale = (hi - lo) / 15.0f;
  const float zp = s.scale != 0.0f ? 0.0f - lo / s.scale : lo;
  s.zero_point = zp < 0.0f ? 0 : zp > 15.0f ? 15 : uint8_t(std::roundf(zp));
  return s;
}

BlockScale symmetric(float lo, float hi) {
  BlockScale s;
  s.scale = (std::fabs(hi) > std::fabs(lo) ? hi : lo) / -8.0f;
  return s;
}

uint8_t level(float v, float reciprocal, uint8_t zero_point) {
  // Two roundings, as the reference computes them (this file is built with -ffp-contract=off).
  const float scaled = v * reciprocal;
  return uint8_t(std::clamp(std::roundf(scaled + float(zero_point)), 0.0f, 15.0f));
}

}  // namespace

Int4Blocks quantize_int4_rtn(const float* b, int64_t K, int64_t N, int64_t block_size, bool is_symmetric) {
  Int4Blocks q;
  q.K = K, q.N = N, q.block_size = block_size, q.blocks = (K + block_size - 1) / block_size;
  const int64_t blob = block_size / 2, column_bytes = q.blocks * blob, zp_bytes = (q.blocks + 1) / 2;
  q.data.assign(size_t(N * column_bytes), 0);  // padding past K stays 0
  q.scales.assign(size_t(N * q.blocks), 0.0f);
  if (!is_symmetric) q.zero_points.assign(size_t(N * zp_bytes), 0x88);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t blk = 0; blk < q.blocks; ++blk) {
      const int64_t k0 = blk * block_size, k1 = std::min(K, k0 + block_size);
      float lo = std::numeric_limits<float>::max(), hi = -lo;
      for (int64_t k = k0; k < k1; ++k) lo = std::min(lo, b[k * N + n]), hi = std::max(hi, b[k * N + n]);
      const BlockScale s = is_symmetric ? symmetric(lo, hi) : asymmetric(lo, hi);
      q.scales[size_t(n * q.blocks + blk)] = s.scale;
      if (!is_symmetric) {
        uint8_t& pair = q.zero_points[size_t(n * zp_bytes + blk / 2)];
        pair = blk % 2 ? uint8_t((pair & 0x0f) | (s.zero_point << 4)) : uint8_t((pair & 0xf0) | s.zero_point);
      }
      const float reciprocal = s.scale != 0.0f ? 1.0f / s.scale : 0.0f;
      uint8_t* out = q.data.data() + n * column_bytes;
      for (int64_t k = k0; k < k1; k += 2) {
        // An odd K's last value pairs with the zero point, as in the reference.
        const uint8_t low = level(b[k * N + n], reciprocal, s.zero_point);
        const uint8_t high = k + 1 < k1 ? level(b[(k + 1) * N + n], reciprocal, s.zero_point) : s.zero_point;
        out[k / 2] = uint8_t((low & 0x0f) | (high << 4));
      }
    }
  return q;
}

}  // namespace refeval::quantize
