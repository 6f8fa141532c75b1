// Two decoders on the same token windows (`refeval compare A B --tokens T.npy`): each window one
// prefill from an empty cache through the generation loop's own feeds (generate/generator.h), the
// logits of every position compared as lm_figures.h says; with `generate` steps, greedy decoding
// from each window's first half on both, and the first step where their ids part.
#pragma once

#include <string>

#include "generate/generator.h"
#include "lm_figures.h"

namespace refeval::quality {

struct LmOptions {
  Tensor tokens;        // int64 or int32 (rows, length)
  int64_t context = 0;  // window length; 0: each row is one window
  int generate = 0;     // greedy steps from each window's first half (0: none)
  // B runs with ONNX Runtime's accuracy_level arithmetic (refeval/numerics.h) and A as the process
  // is set: the same model exact against ORT's int8 MatMulNBits.
  bool emulate_b = false;
};

// ErrorKind::Usage when a model is not a decoder, gives the last position's logits only, or a
// token is outside its vocabulary.
LmFigures compare_language_models(ReferenceEvaluator& a, const std::string& name_a, ReferenceEvaluator& b,
                                  const std::string& name_b, const LmOptions& options);

// The windows of `tokens`: each row cut into floor(length / context) windows of `context` ids.
std::vector<std::vector<int64_t>> token_windows(const Tensor& tokens, int64_t context);

}  // namespace refeval::quality
