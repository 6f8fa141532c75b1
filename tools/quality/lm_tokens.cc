#include "lm_tokens.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "refeval/error.h"
#include "refeval/model_io.h"

namespace refeval::quality {

Tensor lm_tokens(const std::string& tokens_npy, const std::string& text_path, const tokenizer::Tokenizer* tokenizer, int64_t context) {
  if (!tokens_npy.empty() && !text_path.empty()) fail_usage("--tokens and --text: give one");
  if (!text_path.empty() && !tokenizer) fail_usage("--text needs --tokenizer T.json");
  if (!text_path.empty() && !context) fail_usage("--text needs --context N (the window length)");
  if (!tokens_npy.empty()) {
    Tensor t = read_npy(tokens_npy);
    if (t.rank() != 2 || (t.dtype() != DType::Int64 && t.dtype() != DType::Int32))
      fail_usage(fmt::format("--tokens {}: expected int64 (or int32) ids of shape (rows, length), got {}{}", tokens_npy,
                             dtype_short_name(t.dtype()), shape_to_string(t.shape())));
    return t;
  }
  std::ifstream in(text_path, std::ios::binary);
  if (!in) fail_input(fmt::format("--text: cannot read '{}'", text_path));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<int64_t> ids = tokenizer->encode(text, /*add_special_tokens=*/false);
  if (int64_t(ids.size()) < context)
    fail_usage(fmt::format("--text: {} encodes to {} tokens, fewer than one window of --context {}", text_path, ids.size(), context));
  return Tensor::from_vector<int64_t>({1, int64_t(ids.size())}, ids);
}

bool print_lm_figures(const LmFigures& f, const LmGates& gates) {
  fmt::print("perplexity: A {:.6g}, B {:.6g} (B/A {:.6f})\n", f.perplexity_a, f.perplexity_b, f.perplexity_ratio());
  fmt::print("KL(A||B) per token: mean {:.6g}, p99 {:.6g}, max {:.6g} (window {}, position {})\n", f.kl_mean, f.kl_p99, f.kl_max,
             f.kl_max_window, f.kl_max_position);
  fmt::print("top-1 agreement {:.4f}, top-5 overlap {:.4f}\n", f.top1_agreement, f.top5_overlap);
  if (f.generate_steps) {
    std::vector<std::string> d;
    for (const auto& x : f.first_divergence) d.push_back(x ? std::to_string(*x) : "-");
    fmt::print("greedy {} steps from each window's first half: first differing step per window: {}\n", f.generate_steps, fmt::join(d, " "));
  }
  bool passed = true;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) fmt::print("gate: {}\n", what), passed = false;
  };
  if (gates.max_kl) check(f.kl_mean <= *gates.max_kl, fmt::format("mean KL {:.6g} > --max-kl {}", f.kl_mean, *gates.max_kl));
  if (gates.min_top1)
    check(f.top1_agreement >= *gates.min_top1, fmt::format("top-1 agreement {:.4f} < --min-top1 {}", f.top1_agreement, *gates.min_top1));
  if (gates.max_perplexity_ratio)
    check(f.perplexity_ratio() <= *gates.max_perplexity_ratio,
          fmt::format("perplexity ratio {:.6f} > --max-perplexity-ratio {}", f.perplexity_ratio(), *gates.max_perplexity_ratio));
  return passed;
}

}  // namespace refeval::quality
