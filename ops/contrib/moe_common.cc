// Routing and the expert FFN of com.microsoft MoE and QMoE (contract in moe_common.h).
#include "moe_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

namespace refeval::ops::contrib {

MoEAttributes::MoEAttributes(const NodeContext& ctx)
    : k(ctx.required<int64_t>("k")),
      activation(MoEActivation::Relu),
      normalize(ctx.attr<int64_t>("normalize_routing_weights", 0) != 0),
      sparse_mixer(ctx.attr<int64_t>("use_sparse_mixer", 0) != 0),
      swiglu_fusion(ctx.attr<int64_t>("swiglu_fusion", 0)),
      limit(ctx.attr<float>("swiglu_limit", std::numeric_limits<float>::infinity())),
      alpha(ctx.attr<float>("activation_alpha", 1.0f)),
      beta(ctx.attr<float>("activation_beta", 0.0f)) {
  const std::string act = ctx.attr<std::string>("activation_type", "relu");
  if (act == "relu") activation = MoEActivation::Relu;
  else if (act == "gelu") activation = MoEActivation::Gelu;
  else if (act == "silu") activation = MoEActivation::Silu;
  else if (act == "identity") activation = MoEActivation::Identity;
  else if (act == "swiglu") activation = MoEActivation::SwiGLU;
  else ctx.fail(fmt::format("unknown activation_type '{}' (expected relu, gelu, silu, swiglu or identity)", act));
  if (k < 1) ctx.fail(fmt::format("k must be >= 1, got {}", k));
  if (sparse_mixer && k != 2) ctx.fail(fmt::format("use_sparse_mixer needs k = 2, got {}", k));
  if (swiglu_fusion < 0 || swiglu_fusion > 2) ctx.fail(fmt::format("swiglu_fusion must be 0, 1 or 2, got {}", swiglu_fusion));
  if (!(limit >= 0)) ctx.fail(fmt::format("swiglu_limit must be >= 0, got {}", limit));
}

MoESizes moe_sizes(const Tensor& input, const Tensor& router, const Shape& fc1, const Shape& fc2, const Shape* fc3,
                   int64_t pack, const MoEAttributes& a) {
  require_rank(input, 2, 3, "input");
  require_rank(router, 2, 2, "router_probs");
  require_dtype(router, input.dtype(), "router_probs");
  auto rank3 = [](const Shape& s, const char* name) {
    if (s.size() != 3) fail_runtime(fmt::format("{} must have rank 3, got shape {}", name, shape_to_string(s)));
  };
  rank3(fc1, "fc1_experts_weights");
  rank3(fc2, "fc2_experts_weights");
  if (fc3) rank3(*fc3, "fc3_experts_weights");
  MoESizes s{};
  s.hidden = input.dim(input.rank() - 1);
  s.rows = input.size() / std::max<int64_t>(s.hidden, 1);
  s.experts = router.dim(1);
  require_shape(router, {s.rows, s.experts}, "router_probs");
  if (a.k > s.experts) fail_runtime(fmt::format("k = {} exceeds the {} experts", a.k, s.experts));
  if (s.hidden < 1) fail_runtime("input's hidden size must be at least 1");
  s.inter = fc2[1] * fc2[2] * pack / s.hidden;
  if (s.inter < 1 || s.inter * s.hidden != fc2[1] * fc2[2] * pack)
    fail_runtime(fmt::format("fc2_experts_weights has shape {}, which does not hold (experts, hidden {}, inter) weights",
                             shape_to_string(fc2), s.hidden));
  if (a.activation == MoEActivation::SwiGLU && a.swiglu_fusion == 0 && !fc3)
    fail_runtime("swiglu with swiglu_fusion = 0 takes its linear half from fc3_experts_weights, which is missing");
  const int64_t E = s.experts, H = s.hidden, I = s.inter, n1 = a.fused() ? 2 * I : I;
  // ORT's rule for the legacy (experts, K, N) labels of the same memory (moe_helper.h).
  const bool legacy = (H != I && fc2[1] == I) || (H == I && a.fused() && fc1[1] == H);
  auto check = [&](const Shape& got, int64_t n, int64_t k, const char* name) {
    const Shape want{E, n, k / pack}, old{E, k, n / pack};
    if (got != (legacy ? old : want) || k % pack != 0)
      fail_runtime(fmt::format("{} has shape {}, expected {}", name, shape_to_string(got), shape_to_string(want)));
  };
  check(fc1, n1, H, "fc1_experts_weights");
  check(fc2, H, I, "fc2_experts_weights");
  if (fc3) check(*fc3, I, H, "fc3_experts_weights");
  return s;
}

std::vector<double> expert_bias(const Values& in, size_t i, int64_t experts, int64_t n, DType dtype, const std::string& name) {
  if (!has_value(in, i)) return {};
  const Tensor& t = input_tensor(in, i);
  require_dtype(t, dtype, name);
  require_shape(t, {experts, n}, name);
  return to_doubles(t);
}

namespace {

// Experts by decreasing logit; equal logits put the larger index first (ORT's CPU ordering).
std::vector<int64_t> ranked(const double* x, int64_t E) {
  std::vector<int64_t> order(static_cast<size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return x[l] != x[r] ? x[l] > x[r] : l > r; });
  return order;
}

std::vector<Route> sparse_mixer(const double* x, int64_t E, const std::vector<int64_t>& order) {
  constexpr double kJitterEps = 0.01;  // ORT's CUDA kernel and Phi-3.5-MoE's router
  std::vector<Route> r;
  for (size_t j = 0; j < 2; ++j) {
    const int64_t top = order[j];
    const double m = x[top];
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) {
      const bool masked = (j == 1 && e == order[0]) || (m - x[e]) > 2 * kJitterEps * std::max(std::abs(x[e]), m);
      if (!masked) sum += std::exp(x[e] - m);
    }
    r.push_back({top, 1.0 / sum});
  }
  return r;
}

}  // namespace

std::vector<std::vector<Route>> route_rows(const std::vector<double>& logits, const std::vector<double>* router_weights,
                                           const MoESizes& s, const MoEAttributes& a) {
  const int64_t E = s.experts;
  std::vector<std::vector<Route>> routes(size_t(s.rows));
  for (int64_t row = 0; row < s.rows; ++row) {
    const double* x = logits.data() + row * E;
    const std::vector<int64_t> order = ranked(x, E);
    std::vector<Route>& r = routes[size_t(row)];
    if (a.sparse_mixer) {
      r = sparse_mixer(x, E, order);
      continue;
    }
    const double max = x[order[0]];
    double all = 0;
    for (int64_t e = 0; e < E; ++e) all += std::exp(x[e] - max);
    double chosen = 0;
    for (int64_t j = 0; j < a.k; ++j) {
      const int64_t e = order[size_t(j)];
      const double w = router_weights ? (*router_weights)[size_t(row * E + e)] : std::exp(x[e] - max) / all;
      r.push_back({e, w});
      chosen += w;
    }
    // A zero sum gives zero weights, as ORT does, rather than NaN.
    if (a.normalize)
      for (Route& route : r) route.weight = chosen == 0 ? 0 : route.weight / chosen;
  }
  return routes;
}

namespace {

double sigmoid(double v) { return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v)); }

double activate(double v, MoEActivation act) {
  switch (act) {
    case MoEActivation::Relu: return std::max(v, 0.0);
    case MoEActivation::Gelu: return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    case MoEActivation::Silu: return v * sigmoid(v);
    default: return v;
  }
}

// out (M, n) = x (M, k) W^T + bias[e]
std::vector<double> fc(const std::vector<double>& x, int64_t M, const ExpertLayer& layer, int64_t e) {
  const std::vector<double> w = layer.weights(e);
  std::vector<double> out(size_t(M * layer.n));
  gemm(true, M, layer.n, layer.k, x.data(), w.data(), out.data());
  if (!layer.bias.empty())
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < layer.n; ++j) out[size_t(m * layer.n + j)] += layer.bias[size_t(e * layer.n + j)];
  return out;
}

}  // namespace

std::vector<double> run_experts(const std::vector<double>& x, const std::vector<std::vector<Route>>& routes,
                                const ExpertLayer& fc1, const ExpertLayer& fc2, const ExpertLayer* fc3, const MoESizes& s,
                                const MoEAttributes& a) {
  const int64_t H = s.hidden, I = s.inter;
  // Which (row, weight) pairs each expert serves, so every expert's weights are read once.
  std::vector<std::vector<std::pair<int64_t, double>>> served(size_t(s.experts));
  for (int64_t row = 0; row < s.rows; ++row)
    for (const Route& r : routes[size_t(row)]) served[size_t(r.expert)].push_back({row, r.weight});

  std::vector<double> out(size_t(s.rows * H), 0.0);
  for (int64_t e = 0; e < s.experts; ++e) {
    const auto& rows = served[size_t(e)];
    if (rows.empty()) continue;
    const int64_t M = int64_t(rows.size());
    std::vector<double> xe(size_t(M * H));
    for (int64_t m = 0; m < M; ++m) std::copy_n(x.begin() + rows[size_t(m)].first * H, H, xe.begin() + m * H);
    const std::vector<double> h1 = fc(xe, M, fc1, e);
    const std::vector<double> h3 = fc3 ? fc(xe, M, *fc3, e) : std::vector<double>{};
    std::vector<double> h(size_t(M * I));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < I; ++i) {
        double& v = h[size_t(m * I + i)];
        if (a.activation == MoEActivation::SwiGLU) {
          const int64_t n1 = fc1.n;
          const double g = a.swiglu_fusion == 1 ? h1[size_t(m * n1 + 2 * i)] : h1[size_t(m * n1 + i)];
          const double l = a.swiglu_fusion == 1 ? h1[size_t(m * n1 + 2 * i + 1)]
                           : a.swiglu_fusion == 2 ? h1[size_t(m * n1 + I + i)]
                                                  : h3[size_t(m * I + i)];
          const double G = std::min(g, a.limit), L = std::clamp(l, -a.limit, a.limit);
          v = G * sigmoid(a.alpha * G) * (L + a.beta);
        } else {
          v = activate(h1[size_t(m * I + i)], a.activation);
          if (fc3) v *= h3[size_t(m * I + i)];
        }
      }
    const std::vector<double> y = fc(h, M, fc2, e);
    for (int64_t m = 0; m < M; ++m) {
      const auto [row, weight] = rows[size_t(m)];
      for (int64_t j = 0; j < H; ++j) out[size_t(row * H + j)] += weight * y[size_t(m * H + j)];
    }
  }
  return out;
}

}  // namespace refeval::ops::contrib
