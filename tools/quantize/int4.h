// `refeval quantize --int4`: every MatMul of the main graph whose B is a constant 2-D float
// weight becomes com.microsoft.MatMulNBits (bits 4) over RTN blocks (rtn.h), as ONNX Runtime's
// MatMulNBitsQuantizer writes it; a weight no other node reads is dropped. Each MatMul with a weight
// left alone is listed with the reason; products of two computed values are counted.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "refeval/ir.h"
#include "weights.h"

namespace refeval::quantize {

struct Int4Options {
  int64_t block_size = 32;
  bool symmetric = false;
  int64_t accuracy_level = 0;  // MatMulNBits' attribute; 0 leaves it out, as ORT's quantizer does
  std::set<std::string> exclude;  // node names or operator types
};


QuantizeResult quantize_int4(const Model& model, const Int4Options& options);

}  // namespace refeval::quantize
