// The token windows that `compare` and `quantize` measure two language models on: ids from a .npy
// file (--tokens) or a text encoded by a tokenizer (--text, --tokenizer), and the figures printed
// and gated as both verbs report them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lm_figures.h"
#include "refeval/tensor.h"
#include "tokenizer/tokenizer.h"

namespace refeval::quality {

// int64 (or int32) ids (rows, length) from `tokens_npy`, or `text_path` encoded by `tokenizer`
// (without special tokens; null when no --tokenizer was given) as one row of at least `context`
// ids; a usage error naming the file otherwise.
Tensor lm_tokens(const std::string& tokens_npy, const std::string& text_path, const tokenizer::Tokenizer* tokenizer, int64_t context);

// Perplexities, KL and agreement as lines of text (A and B named), then the gates: false, with a
// `gate:` line each, where one is not met.
struct LmGates {
  std::optional<double> max_kl, min_top1, max_perplexity_ratio;
};
bool print_lm_figures(const LmFigures& f, const LmGates& gates);

}  // namespace refeval::quality
