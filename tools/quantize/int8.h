// `refeval quantize --int8`: ONNX Runtime's dynamic int8 quantization (quantize_dynamic, its
// QOperator form). Every MatMul of the main graph whose B is a weight (weights.h) becomes
//   DynamicQuantizeLinear(A) -> A_q (uint8), A_scale, A_zero_point   (one per distinct A)
//   MatMulInteger(A_q, B_q, A_zero_point, B_zero_point) -> int32
//   Cast(float) * (A_scale * B_scale)
// with B_q int8, symmetric (zero point 0) over [-127, 127] ([-64, 64] with reduce_range), one
// scale per tensor or per column: rmax = the largest |w|, scale = 2 rmax / (qmax - qmin) in double
// rounded to float (1 where rmax is 0), q = round(w / scale) half to even in float, clipped.
// ONNX Runtime fuses the pattern into DynamicQuantizeMatMul at its level 2. With `calibrated`, the
// static QDQ form of quantize_static instead (MinMax calibration): QuantizeLinear and
// DequantizeLinear around each A with an int8 asymmetric scale from its measured range, a
// DequantizeLinear of each W (axis 1 per column), and the float MatMul between.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "refeval/ir.h"
#include "weights.h"

namespace refeval::quantize {

struct Int8Options {
  bool per_channel = false;  // a scale per column of B instead of one per tensor
  bool reduce_range = false;  // 7-bit weights, [-64, 64] (ORT's reduce_range, for CPUs without VNNI)
  std::set<std::string> exclude;  // node names or operator types
  // Static QDQ (quantize_static's format) instead: each A's int8 scale and zero point from its
  // calibrated range (min, max over the input sets), in `ranges` by value name.
  bool calibrated = false;
  std::map<std::string, std::pair<float, float>> ranges;
};

struct Int8Weight {
  std::vector<int8_t> data;   // K x N, as B
  std::vector<float> scales;  // 1, or N with per_channel
};
// B (K x N float) quantized as above.
Int8Weight quantize_int8_symmetric(const float* b, int64_t K, int64_t N, bool per_channel, bool reduce_range);


QuantizeResult quantize_int8(const Model& model, const Int8Options& options);

// The A inputs of the MatMuls quantize_int8 rewrites: the values --calibrate needs ranges of.
std::set<std::string> int8_activations(const Graph& g, const Int8Options& options);

}  // namespace refeval::quantize
