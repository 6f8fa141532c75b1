// Next-token figures of two language models on the same token windows (`refeval compare --tokens`),
// as llama.cpp's `llama-perplexity --kl-divergence` reports them: each model's perplexity, and
// between them the KL divergence of their next-token distributions, top-1 agreement and top-5
// overlap. In a window t_0 .. t_{N-1} the logits at position i = 0 .. N-2 predict t_{i+1}; all in
// float64 from the models' logits.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace refeval::quality {

struct TokenFigures {
  int window = 0, position = 0;  // the prediction made at `position` of `window`
  int64_t next = 0;              // the token it predicts
  double nll_a = 0, nll_b = 0;   // -log p(next)
  double kl = 0;                 // KL(A || B) of the two distributions
  int64_t top1_a = 0, top1_b = 0;
  int top5_common = 0;  // how many of A's five likeliest are among B's
};

struct LmFigures {
  int windows = 0;
  int64_t context = 0, tokens = 0;
  double perplexity_a = 0, perplexity_b = 0, kl_mean = 0, kl_p99 = 0, kl_max = 0;
  int kl_max_window = 0, kl_max_position = 0;
  double top1_agreement = 0, top5_overlap = 0;
  std::vector<TokenFigures> per_token;
  int generate_steps = 0;                          // --generate K
  std::vector<std::optional<int>> first_divergence;  // per window: the first step whose greedy ids differ
  double perplexity_ratio() const { return perplexity_a > 0 ? perplexity_b / perplexity_a : 0; }
  nlohmann::ordered_json to_json(bool per_token) const;
};

// The figures of one window: `tokens` (N ids), each model's logits as N rows of V floats.
std::vector<TokenFigures> window_figures(int window, const std::vector<int64_t>& tokens, const float* logits_a,
                                         const float* logits_b, int64_t vocab);
// Perplexities, KL statistics (p99 interpolated as numpy.percentile does) and agreement over all.
LmFigures summarize(std::vector<TokenFigures> per_token, int windows, int64_t context);

}  // namespace refeval::quality
