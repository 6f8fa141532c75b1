// GPTQ (Frantar et al., 2022) for 4-bit blocks: the weight quantized one input row k at a time,
// each row's rounding error spread over the rows not yet quantized through the inverse of the
// inputs' Hessian H = X^T X (X: the rows a MatMul saw on the calibration inputs), so that the
// product on inputs like them changes least. The block's scale and zero point (asymmetric RTN,
// rtn.h) are taken from the updated weight when the block starts. Returns the quantized-and-
// dequantized weight (K x N, row-major), which ONNX Runtime's GPTQ path then quantizes again with
// RTN for MatMulNBits (its blocks land on the same levels).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "refeval/ir.h"
#include "refeval/observer.h"

namespace refeval::quantize {

// GPTQ's calibration: X^T X of every weight MatMul's input (the rows of its last axis), summed
// over the runs it observes, by the name of the MatMul's A input.
class HessianCollector final : public Observer {
 public:
  explicit HessianCollector(const Graph& graph);
  void before_node(const NodeEvent& e) override;
  std::map<std::string, std::vector<double>> hessians;

 private:
  std::set<std::string> inputs_;
};

// w: K x N; hessian: K x K (X^T X, summed over the calibration rows; symmetric).
std::vector<float> gptq_dequantized(const float* w, int64_t K, int64_t N, std::vector<double> hessian, int64_t block_size);

}  // namespace refeval::quantize
