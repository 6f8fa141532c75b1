// `refeval quantize --int4`: every MatMul of the main graph whose B is a constant 2-D float
// weight becomes com.microsoft.MatMulNBits (bits 4) over RTN blocks (rtn.h), as ONNX Runtime's
// MatMulNBitsQuantizer writes it; a weight no other node reads is dropped. Each MatMul with a weight
// left alone is listed with the reason; products of two computed values are counted. With
// `embeddings`, each Gather of the token table (the constant 2-D float table with the most rows,
// gathered along axis 0; smaller tables are positions or rotary caches) becomes
// com.microsoft.GatherBlockQuantized (bits 4, gather_axis 0, quantize_axis 1): the same RTN blocks
// along each row (the table's transpose quantized as a MatMul weight), data [vocab, hidden / 2],
// scales [vocab, blocks], zero points [vocab, ceil(blocks / 2)], as ORT's quantizer writes it.
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

struct Int4Options {
  int64_t block_size = 32;
  bool symmetric = false;
  int64_t accuracy_level = 0;  // MatMulNBits' attribute; 0 leaves it out, as ORT's quantizer does
  std::set<std::string> exclude;  // node names or operator types
  bool hqq = false;  // HQQ (hqq.h: float zero points) instead of RTN
  // GPTQ (gptq.h) instead of RTN: X^T X of each MatMul input over the calibration inputs, by value name.
  std::map<std::string, std::vector<double>> hessians;
  bool embeddings = false;  // also the token table [vocab, hidden] to GatherBlockQuantized (blocks along hidden)
};


QuantizeResult quantize_int4(const Model& model, const Int4Options& options);

}  // namespace refeval::quantize
