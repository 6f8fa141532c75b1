#include "hqq.h"

#include <algorithm>
#include <cmath>

namespace refeval::quantize {
namespace {

float shrink(float x, float beta) {
  const float a = std::fabs(x);
  return std::copysign(std::max(a - std::pow(a + 1e-8f, 0.7f - 1.0f) / beta, 0.0f), x);
}

float level(float w, float scale, float zero) { return std::clamp(std::nearbyint(w * scale + zero), 0.0f, 15.0f); }

}  // namespace

HqqBlocks quantize_int4_hqq(const float* b, int64_t K, int64_t N, int64_t block_size) {
  HqqBlocks q;
  q.blocks = (K + block_size - 1) / block_size;
  const int64_t groups = N * q.blocks, padded = q.blocks * block_size;
  // The weight by groups: group g = n * blocks + blk holds column n's k in [blk * size, ...), zeros past K.
  std::vector<float> w(size_t(groups * block_size), 0.0f), scale(static_cast<size_t>(groups)), zero(static_cast<size_t>(groups));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) w[size_t(n * padded + k)] = b[k * N + n];
  for (int64_t g = 0; g < groups; ++g) {
    const float* x = w.data() + g * block_size;
    const float lo = *std::min_element(x, x + block_size), hi = *std::max_element(x, x + block_size);
    const float range = hi - lo == 0.0f ? 15.0f : hi - lo;
    scale[size_t(g)] = std::min(15.0f / range, 2e4f);
    zero[size_t(g)] = std::nearbyint(-lo * scale[size_t(g)]);
  }
  float beta = 10.0f, best = 1e4f;
  for (int iter = 0; iter < 20; ++iter) {
    double error = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const float* x = w.data() + g * block_size;
      const float s = scale[size_t(g)], z = zero[size_t(g)];
      double moved = 0;
      for (int64_t i = 0; i < block_size; ++i) {
        const float wq = level(x[i], s, z), wr = (wq - z) / s;
        error += std::fabs(x[i] - wr);
        moved += wq - (x[i] - shrink(x[i] - wr, beta)) * s;
      }
      zero[size_t(g)] = float(moved / double(block_size));
    }
    beta *= 1.01f;
    const float current = float(error / double(groups * block_size));
    if (current < best) best = current;
    else break;
  }
  const int64_t blob = block_size / 2;
  q.data.assign(size_t(groups * blob), 0);
  q.scales.resize(size_t(groups));
  q.zero_points = zero;
  for (int64_t g = 0; g < groups; ++g) {
    const float* x = w.data() + g * block_size;
    q.scales[size_t(g)] = 1.0f / scale[size_t(g)];
    for (int64_t i = 0; i < block_size; i += 2) {
      const auto low = uint8_t(level(x[i], scale[size_t(g)], zero[size_t(g)]));
      const auto high = uint8_t(level(x[i + 1], scale[size_t(g)], zero[size_t(g)]));
      q.data[size_t(g * blob + i / 2)] = uint8_t((low & 0x0f) | (high << 4));
    }
  }
  return q;
}

}  // namespace refeval::quantize
