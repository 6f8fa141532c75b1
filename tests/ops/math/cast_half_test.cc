// Cast between float and float16 / bfloat16 (the direct, F16C-vectorised paths) gives exactly the
// scalar conversions of narrow_types.h: all 65536 float16 and bfloat16 values to float, and to
// float16 / bfloat16 2^24 float bit patterns spread over every exponent (ties to even, subnormals,
// overflow to infinity, NaN payloads) plus the exact halfway cases of every float16 exponent.
#include <cstring>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

Tensor cast(const Tensor& x, DType to) {
  return run_node(node("Cast", {"x"}, {"y"}, {attr("to", int64_t(to))}), {x})[0].tensor();
}

}  // namespace

TEST_CASE("Cast float16 / bfloat16 -> float is exact for every value") {
  std::vector<float16> h(65536);
  std::vector<bfloat16> b(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = float16::from_bits(uint16_t(i)), b[i] = bfloat16::from_bits(uint16_t(i));
  const Tensor fh = cast(tensor<float16>({65536}, h), DType::Float), fb = cast(tensor<bfloat16>({65536}, b), DType::Float);
  int wrong = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float a = float(h[i]), c = float(b[i]);
    wrong += std::memcmp(&fh.data<float>()[i], &a, 4) != 0;
    wrong += std::memcmp(&fb.data<float>()[i], &c, 4) != 0;
  }
  CHECK(wrong == 0);
}

TEST_CASE("Cast float -> float16 / bfloat16 rounds as the scalar conversion, bit for bit") {
  std::vector<float> x;
  for (uint32_t hi = 0; hi < (1u << 24); ++hi) {
    const uint32_t bits = hi << 8 | ((hi * 37u) & 0xffu);
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  for (uint32_t e = 0; e < 256; ++e)  // the float16 and bfloat16 halfway points of every exponent, and their neighbours
    for (uint32_t m : {0x1000u, 0x3000u, 0x0fffu, 0x1001u, 0x8000u, 0x18000u, 0x7fffu, 0x8001u})
      for (uint32_t sign : {0u, 0x80000000u}) {
        const uint32_t bits = sign | e << 23 | m;
        float f;
        std::memcpy(&f, &bits, 4);
        x.push_back(f);
      }
  const Tensor xt = tensor<float>({int64_t(x.size())}, x);
  const Tensor h = cast(xt, DType::Float16), b = cast(xt, DType::BFloat16);
  int wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    wrong += h.data<float16>()[i].bits != float16(x[i]).bits;
    wrong += b.data<bfloat16>()[i].bits != bfloat16(x[i]).bits;
  }
  CHECK(wrong == 0);
}
