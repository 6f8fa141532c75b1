// A plain-loop, double-precision model of com.microsoft MoE / QMoE for the tests (written from
// ORT's schema and kernels, not from ops/contrib/moe_common.cc): routing, the expert FFN and the
// weighted sum, one token and one expert at a time.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace moe_oracle {

struct Config {
  int k = 1;
  std::string activation = "relu";
  bool normalize = false, sparse_mixer = false;
  int fusion = 0;  // swiglu_fusion
  double limit = INFINITY, alpha = 1, beta = 0;
};

// Weights of one layer for every expert: w[e][n][k] (output n, input k), bias b[e][n] or empty.
struct Layer {
  std::vector<std::vector<std::vector<double>>> w;
  std::vector<std::vector<double>> b;
  std::vector<double> apply(int e, const std::vector<double>& x) const {
    std::vector<double> y(w[e].size());
    for (size_t n = 0; n < y.size(); ++n) {
      double acc = b.empty() ? 0.0 : b[e][n];
      for (size_t i = 0; i < x.size(); ++i) acc += w[e][n][i] * x[i];
      y[n] = acc;
    }
    return y;
  }
};

inline double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

inline double act(double v, const std::string& a) {
  if (a == "relu") return v > 0 ? v : 0;
  if (a == "gelu") return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  if (a == "silu") return v * sigmoid(v);
  return v;  // identity
}

// (expert, weight) pairs of one token.
inline std::vector<std::pair<int, double>> route(const std::vector<double>& logits, const std::vector<double>* mix,
                                                 const Config& c) {
  const int E = int(logits.size());
  std::vector<int> order;
  for (int e = 0; e < E; ++e) order.push_back(e);
  // larger logit first; a tie puts the larger index first
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a > b); });
  std::vector<std::pair<int, double>> r;
  if (c.sparse_mixer) {  // Phi-3.5-MoE sparsemixer: softmax over the experts close to the max
    for (int j = 0; j < 2; ++j) {
      const double m = logits[order[j]];
      double sum = 0;
      for (int e = 0; e < E; ++e) {
        const double factor = std::max(std::fabs(logits[e]), m);
        if ((j == 1 && e == order[0]) || (m - logits[e]) / factor > 0.02) continue;
        sum += std::exp(logits[e] - m);
      }
      r.push_back({order[j], 1 / sum});
    }
    return r;
  }
  double z = 0;
  for (int e = 0; e < E; ++e) z += std::exp(logits[e]);
  double total = 0;
  for (int j = 0; j < c.k; ++j) {
    const double w = mix ? (*mix)[order[j]] : std::exp(logits[order[j]]) / z;
    r.push_back({order[j], w});
    total += w;
  }
  if (c.normalize)
    for (auto& p : r) p.second /= total;
  return r;
}

// Output rows for input rows x; fc3 may be empty (no experts).
inline std::vector<std::vector<double>> run(const std::vector<std::vector<double>>& x,
                                            const std::vector<std::vector<double>>& logits,
                                            const std::vector<std::vector<double>>* mix, const Layer& fc1, const Layer& fc2,
                                            const Layer& fc3, const Config& c) {
  std::vector<std::vector<double>> out;
  for (size_t t = 0; t < x.size(); ++t) {
    std::vector<double> y(x[t].size(), 0.0);
    for (auto [e, weight] : route(logits[t], mix ? &(*mix)[t] : nullptr, c)) {
      const std::vector<double> h1 = fc1.apply(e, x[t]);
      const std::vector<double> h3 = fc3.w.empty() ? std::vector<double>{} : fc3.apply(e, x[t]);
      std::vector<double> h;
      if (c.activation == "swiglu") {
        const size_t I = c.fusion == 0 ? h1.size() : h1.size() / 2;
        for (size_t i = 0; i < I; ++i) {
          double g = c.fusion == 1 ? h1[2 * i] : h1[i];
          double l = c.fusion == 1 ? h1[2 * i + 1] : c.fusion == 2 ? h1[I + i] : h3[i];
          g = std::min(g, c.limit);
          l = std::max(-c.limit, std::min(l, c.limit));
          h.push_back(g * sigmoid(c.alpha * g) * (l + c.beta));
        }
      } else {
        for (size_t i = 0; i < h1.size(); ++i) h.push_back(act(h1[i], c.activation) * (h3.empty() ? 1.0 : h3[i]));
      }
      const std::vector<double> o = fc2.apply(e, h);
      for (size_t j = 0; j < y.size(); ++j) y[j] += weight * o[j];
    }
    out.push_back(y);
  }
  return out;
}

}  // namespace moe_oracle
