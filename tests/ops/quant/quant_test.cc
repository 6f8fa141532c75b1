// Quantization: QuantizeLinear / DequantizeLinear granularities (per tensor, per axis, blocked),
// rounding half to even, saturation, the narrow output types; DynamicQuantizeLinear,
// QLinearMatMul, ConvInteger and QLinearConv.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("QuantizeLinear rounds half to even and saturates") {
  const Tensor x = tensor<float>({6}, {0.5f, 1.5f, 2.5f, -2.5f, 300.f, -300.f});
  struct Case { const char* what; Tensor zp, expected; };
  const Case cases[] = {
      {"uint8 with zero point 10", tensor<uint8_t>({}, {10}), tensor<uint8_t>({6}, {10, 12, 12, 8, 255, 0})},
      {"int8", tensor<int8_t>({}, {0}), tensor<int8_t>({6}, {0, 2, 2, -2, 127, -128})},
      {"int16 (21)", tensor<int16_t>({}, {0}), tensor<int16_t>({6}, {0, 2, 2, -2, 300, -300})},
      {"int4 saturates to [-8, 7] (21)", tensor<int4>({}, {int4::wrap(1)}),
       tensor<int4>({6}, {int4::wrap(1), int4::wrap(3), int4::wrap(3), int4::wrap(-1), int4::wrap(7), int4::wrap(-8)})},
      {"uint2 saturates to [0, 3] (25)", tensor<uint2>({}, {uint2::wrap(0)}),
       tensor<uint2>({6}, {uint2::wrap(0), uint2::wrap(2), uint2::wrap(2), uint2::wrap(0), uint2::wrap(3), uint2::wrap(0)})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("QuantizeLinear", {"x", "s", "z"}, {"y"}), {x, tensor<float>({}, {1.f}), c.zp})[0], c.expected);
  }
  // no zero point: uint8, or output_dtype (21)
  check_equal(run_node(node("QuantizeLinear", {"x", "s"}, {"y"}), {tensor<float>({2}, {-1.f, 4.f}), tensor<float>({}, {2.f})})[0],
              tensor<uint8_t>({2}, {0, 2}));
  check_equal(run_node(node("QuantizeLinear", {"x", "s"}, {"y"}, {attr("output_dtype", int64_t(DType::Int8))}),
                       {tensor<float>({2}, {-1.f, 4.f}), tensor<float>({}, {2.f})})[0], tensor<int8_t>({2}, {0, 2}));
  CHECK_THROWS_AS(run_node(node("QuantizeLinear", {"x", "s", "z"}, {"y"}, {attr("output_dtype", int64_t(DType::Int8))}),
                           {x, tensor<float>({}, {1.f}), tensor<uint8_t>({}, {0})}), Error);
}

TEST_CASE("QuantizeLinear float8: saturate or not") {
  const Tensor x = tensor<float>({2}, {1000.f, 1.f});
  const Tensor zp = tensor<float8e4m3fn>({}, {float8e4m3fn(0.f)});
  check_equal(run_node(node("QuantizeLinear", {"x", "s", "z"}, {"y"}), {x, tensor<float>({}, {1.f}), zp})[0],
              tensor<float8e4m3fn>({2}, {float8e4m3fn(448.f), float8e4m3fn(1.f)}));
  auto y = run_node(node("QuantizeLinear", {"x", "s", "z"}, {"y"}, {attr("saturate", int64_t(0))}), {x, tensor<float>({}, {1.f}), zp})[0];
  CHECK(std::isnan(float(y.tensor().data<float8e4m3fn>()[0])));
}

TEST_CASE("QuantizeLinear and DequantizeLinear per axis and blocked") {
  const Tensor x = tensor<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // per axis 0: row scales 1 and 2
  check_equal(run_node(node("QuantizeLinear", {"x", "s", "z"}, {"y"}, {attr("axis", int64_t(0))}),
                       {x, tensor<float>({2}, {1, 2}), tensor<uint8_t>({2}, {0, 100})})[0],
              tensor<uint8_t>({2, 4}, {1, 2, 3, 4, 102, 103, 104, 104}));
  // blocked along axis 1 with blocks of 2: scale [2, 2]
  check_equal(run_node(node("QuantizeLinear", {"x", "s", "z"}, {"y"}, {attr("axis", int64_t(1)), attr("block_size", int64_t(2))}),
                       {x, tensor<float>({2, 2}, {1, 2, 4, 8}), tensor<int8_t>({2, 2}, {0, 0, 0, 0})})[0],
              tensor<int8_t>({2, 4}, {1, 2, 2, 2, 1, 2, 1, 1}));
  // dequantize with the same layouts
  check_equal(run_node(node("DequantizeLinear", {"x", "s", "z"}, {"y"}, {attr("axis", int64_t(0))}),
                       {tensor<uint8_t>({2, 2}, {1, 2, 102, 104}), tensor<float>({2}, {1, 2}), tensor<uint8_t>({2}, {0, 100})})[0],
              tensor<float>({2, 2}, {1, 2, 4, 8}));
  check_equal(run_node(node("DequantizeLinear", {"x", "s"}, {"y"}, {attr("axis", int64_t(1)), attr("block_size", int64_t(3))}),
                       {tensor<int8_t>({1, 4}, {1, 2, 3, 4}), tensor<float>({1, 2}, {10, 0.5f})})[0],
              tensor<float>({1, 4}, {10, 20, 30, 2}));
  // a scale that fits no layout
  CHECK_THROWS_AS(run_node(node("QuantizeLinear", {"x", "s"}, {"y"}), {x, tensor<float>({3}, {1, 1, 1})}), Error);
  CHECK_THROWS_AS(run_node(node("QuantizeLinear", {"x", "s"}, {"y"}, {attr("axis", int64_t(1)), attr("block_size", int64_t(2))}),
                           {x, tensor<float>({2, 3}, {1, 1, 1, 1, 1, 1})}), Error);
}

TEST_CASE("DequantizeLinear types") {
  check_equal(run_node(node("DequantizeLinear", {"x", "s", "z"}, {"y"}), {tensor<int32_t>({2}, {-5, 100000}), tensor<float>({}, {2.f}),
                                                                      tensor<int32_t>({}, {1})})[0], tensor<float>({2}, {-12, 199998}));
  check_equal(run_node(node("DequantizeLinear", {"x", "s"}, {"y"}), {tensor<int4>({2}, {int4::wrap(-8), int4::wrap(7)}),
                                                                tensor<float16>({}, {float16(0.5f)})})[0],
              tensor<float16>({2}, {float16(-4.f), float16(3.5f)}));
  check_equal(run_node(node("DequantizeLinear", {"x", "s"}, {"y"}), {tensor<float8e5m2>({1}, {float8e5m2(3.f)}), tensor<float>({}, {2.f})})[0],
              tensor<float>({1}, {6}));
  CHECK_THROWS_AS(run_node(node("DequantizeLinear", {"x", "s", "z"}, {"y"}), {tensor<int8_t>({1}, {1}), tensor<float>({}, {1.f}),
                                                                          tensor<uint8_t>({}, {0})}), Error);
}

TEST_CASE("DynamicQuantizeLinear") {
  auto out = run_node(node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), {tensor<float>({4}, {-1.f, 0.f, 254.f, 2.5f})});
  check_equal(out[1], tensor<float>({}, {1.f}));  // (254 - (-1)) / 255
  check_equal(out[2], tensor<uint8_t>({}, {1}));
  check_equal(out[0], tensor<uint8_t>({4}, {0, 1, 255, 3}));  // 2.5 rounds to 2
  auto zero = run_node(node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), {tensor<float>({2}, {0.f, 0.f})});
  check_equal(zero[0], tensor<uint8_t>({2}, {0, 0}));
  check_equal(zero[1], tensor<float>({}, {0.f}));
}

TEST_CASE("QLinearMatMul") {
  const Tensor a = tensor<uint8_t>({2, 2}, {10, 12, 14, 16});
  const Tensor b = tensor<uint8_t>({2, 1}, {1, 3});
  // (a - 10) @ (b - 1) = [[0*0 + 2*2], [4*0 + 6*2]] = [[4], [12]]; * 0.5 * 1 / 0.25 = 8, 24; + 5
  auto y = run_node(node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}),
                    {a, tensor<float>({}, {0.5f}), tensor<uint8_t>({}, {10}), b, tensor<float>({}, {1.f}), tensor<uint8_t>({}, {1}),
                     tensor<float>({}, {0.25f}), tensor<uint8_t>({}, {5})})[0];
  check_equal(y, tensor<uint8_t>({2, 1}, {13, 29}));
  auto yi = run_node(node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}),
                     {tensor<int8_t>({1, 1}, {100}), tensor<float>({}, {1.f}), tensor<int8_t>({}, {0}), tensor<int8_t>({1, 1}, {100}),
                      tensor<float>({}, {1.f}), tensor<int8_t>({}, {0}), tensor<float>({}, {1.f}), tensor<int8_t>({}, {0})})[0];
  check_equal(yi, tensor<int8_t>({1, 1}, {127}));  // saturates
}

TEST_CASE("ConvInteger and QLinearConv") {
  const Tensor x = tensor<uint8_t>({1, 1, 3}, {2, 3, 4});
  const Tensor w = tensor<uint8_t>({2, 1, 2}, {1, 1, 2, 0});
  // x - 1 = [1, 2, 3]; w - [0, 1] per output channel = [[1, 1], [1, -1]]; pads of 1 read 0 after the shift
  auto ci = run_node(node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, {attr("pads", std::vector<int64_t>{1, 0})}),
                     {x, w, tensor<uint8_t>({}, {1}), tensor<uint8_t>({2}, {0, 1})})[0];
  check_equal(ci, tensor<int32_t>({1, 2, 3}, {1, 3, 5, -1, -1, -1}));
  auto ql = run_node(node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}),
                     {x, tensor<float>({}, {1.f}), tensor<uint8_t>({}, {1}), w, tensor<float>({2}, {1.f, 2.f}), tensor<uint8_t>({2}, {0, 1}),
                      tensor<float>({}, {0.5f}), tensor<uint8_t>({}, {10}), tensor<int32_t>({2}, {1, -10})})[0];
  // sums [3, 5] and [-1, -1] + bias [1, -10] -> [4, 6], [-11, -11]; * [2, 4] -> 8, 12, -44, -44; + 10
  check_equal(ql, tensor<uint8_t>({1, 2, 2}, {18, 22, 0, 0}));
  CHECK_THROWS_AS(run_node(node("ConvInteger", {"x", "w"}, {"y"}), {x, tensor<int32_t>({1, 1, 1}, {1})}), Error);
}
