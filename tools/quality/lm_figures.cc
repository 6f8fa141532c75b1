#include "lm_figures.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace refeval::quality {
namespace {

// log softmax of one row, in float64.
std::vector<double> log_softmax(const float* row, int64_t vocab) {
  std::vector<double> out(static_cast<size_t>(vocab));
  double top = -INFINITY;
  for (int64_t v = 0; v < vocab; ++v) top = std::max(top, double(row[v]));
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - top);
  const double log_sum = top + std::log(sum);
  for (int64_t v = 0; v < vocab; ++v) out[size_t(v)] = double(row[v]) - log_sum;
  return out;
}

// The k likeliest ids, the first of equal values first (as argmax picks).
std::vector<int64_t> top_k(const std::vector<double>& logp, int k) {
  std::vector<int64_t> ids(logp.size());
  std::iota(ids.begin(), ids.end(), 0);
  k = std::min<int>(k, int(ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int64_t x, int64_t y) {
    return logp[size_t(x)] != logp[size_t(y)] ? logp[size_t(x)] > logp[size_t(y)] : x < y;
  });
  ids.resize(size_t(k));
  return ids;
}

}  // namespace

std::vector<TokenFigures> window_figures(int window, const std::vector<int64_t>& tokens, const float* logits_a,
                                         const float* logits_b, int64_t vocab) {
  std::vector<TokenFigures> out;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    const std::vector<double> la = log_softmax(logits_a + int64_t(i) * vocab, vocab);
    const std::vector<double> lb = log_softmax(logits_b + int64_t(i) * vocab, vocab);
    TokenFigures f;
    f.window = window, f.position = int(i), f.next = tokens[i + 1];
    f.nll_a = -la[size_t(f.next)], f.nll_b = -lb[size_t(f.next)];
    double kl = 0;
    for (size_t v = 0; v < la.size(); ++v) kl += std::exp(la[v]) * (la[v] - lb[v]);
    f.kl = std::max(0.0, kl);  // >= 0 but for the last bits of rounding
    const std::vector<int64_t> ta = top_k(la, 5), tb = top_k(lb, 5);
    f.top1_a = ta.front(), f.top1_b = tb.front();
    for (int64_t id : ta) f.top5_common += std::count(tb.begin(), tb.end(), id) > 0;
    out.push_back(f);
  }
  return out;
}

LmFigures summarize(std::vector<TokenFigures> per_token, int windows, int64_t context) {
  LmFigures s;
  s.windows = windows, s.context = context, s.tokens = int64_t(per_token.size());
  if (per_token.empty()) return s;
  double nll_a = 0, nll_b = 0, kl = 0, top1 = 0, top5 = 0;
  std::vector<double> kls;
  for (const TokenFigures& f : per_token) {
    nll_a += f.nll_a, nll_b += f.nll_b, kl += f.kl;
    top1 += f.top1_a == f.top1_b, top5 += f.top5_common / 5.0;
    kls.push_back(f.kl);
    if (f.kl > s.kl_max || kls.size() == 1) s.kl_max = f.kl, s.kl_max_window = f.window, s.kl_max_position = f.position;
  }
  const double n = double(per_token.size());
  s.perplexity_a = std::exp(nll_a / n), s.perplexity_b = std::exp(nll_b / n);
  s.kl_mean = kl / n, s.top1_agreement = top1 / n, s.top5_overlap = top5 / n;
  std::sort(kls.begin(), kls.end());
  const double rank = 0.99 * (n - 1);  // numpy.percentile's linear interpolation
  const size_t lo = size_t(std::floor(rank)), hi = std::min(kls.size() - 1, lo + 1);
  s.kl_p99 = kls[lo] + (kls[hi] - kls[lo]) * (rank - double(lo));
  s.per_token = std::move(per_token);
  return s;
}

nlohmann::ordered_json LmFigures::to_json(bool with_tokens) const {
  nlohmann::ordered_json j;
  j["mode"] = "lm";
  j["windows"] = windows;
  j["context"] = context;
  j["tokens"] = tokens;
  j["perplexity_a"] = perplexity_a;
  j["perplexity_b"] = perplexity_b;
  j["perplexity_ratio"] = perplexity_ratio();
  j["kl_mean"] = kl_mean;
  j["kl_p99"] = kl_p99;
  j["kl_max"] = kl_max;
  j["kl_max_at"] = {{"window", kl_max_window}, {"position", kl_max_position}};
  j["top1_agreement"] = top1_agreement;
  j["top5_overlap"] = top5_overlap;
  if (generate_steps > 0) {
    nlohmann::ordered_json d = nlohmann::ordered_json::array();
    for (const auto& f : first_divergence) d.push_back(f ? nlohmann::ordered_json(*f) : nlohmann::ordered_json(nullptr));
    j["generate"] = {{"steps", generate_steps}, {"first_divergence", d}};
  }
  if (with_tokens) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const TokenFigures& f : per_token)
      rows.push_back({{"window", f.window}, {"position", f.position}, {"next", f.next}, {"nll_a", f.nll_a}, {"nll_b", f.nll_b},
                      {"kl", f.kl}, {"top1_a", f.top1_a}, {"top1_b", f.top1_b}, {"top5_common", f.top5_common}});
    j["per_token"] = std::move(rows);
  }
  return j;
}

}  // namespace refeval::quality
