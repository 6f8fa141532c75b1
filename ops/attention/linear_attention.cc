// LinearAttention (opset 27): recurrent linear attention over packed (B, T, H*D) inputs with a
// per-KV-head state S (B, H_kv, d_k, d_v), updated token by token by one of four rules:
//   linear:      S = S + k v^T
//   gated:       S = exp(g) S + k v^T
//   delta:       S = S + k (beta (v - S^T k))^T
//   gated_delta: S = exp(g) S, then the delta update
// (erase_gate, when given, multiplies k inside S^T k). Each query head h reads the state of KV
// head h / (q_heads / kv_heads): o = scale q^T S, scale defaulting to 1/sqrt(d_k).
// The recurrence runs in float (double for double inputs).
#include <cmath>

#include <fmt/format.h>

#include "attention_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

// (B, T, H*D) -> index of element (b, h, t, d).
struct Packed {
  int64_t T, H, D;
  int64_t at(int64_t b, int64_t h, int64_t t, int64_t d) const { return ((b * T + t) * H + h) * D + d; }
};

class LinearAttention : public OpRun {
 public:
  using Types = Floats;
  explicit LinearAttention(const NodeContext& ctx)
      : q_heads_(ctx.required<int64_t>("q_num_heads")),
        kv_heads_(ctx.required<int64_t>("kv_num_heads")),
        scale_(ctx.attr<float>("scale", 0.0f)),
        rule_(ctx.attr<std::string>("update_rule", "gated_delta")) {
    ctx.attr<int64_t>("chunk_size", 64);  // a tuning hint without effect on the result
    if (rule_ != "linear" && rule_ != "gated" && rule_ != "delta" && rule_ != "gated_delta")
      ctx.fail(fmt::format("update_rule must be linear, gated, delta or gated_delta, not '{}'", rule_));
    if (q_heads_ <= 0 || kv_heads_ <= 0 || q_heads_ % kv_heads_)
      ctx.fail(fmt::format("q_num_heads {} must be a positive multiple of kv_num_heads {}", q_heads_, kv_heads_));
    gated_ = rule_ == "gated" || rule_ == "gated_delta";
    delta_ = rule_ == "delta" || rule_ == "gated_delta";
    if (gated_ != ctx.has_input(4)) ctx.fail(fmt::format("update_rule '{}' {} the decay input", rule_, gated_ ? "needs" : "forbids"));
    if (delta_ != ctx.has_input(5)) ctx.fail(fmt::format("update_rule '{}' {} the beta input", rule_, delta_ ? "needs" : "forbids"));
    if (!delta_ && ctx.has_input(6)) ctx.fail(fmt::format("update_rule '{}' forbids the erase_gate input", rule_));
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &q = input_tensor(in, 0), &k = input_tensor(in, 1), &v = input_tensor(in, 2);
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3) ctx.fail("query, key and value must be rank 3 (B, T, H*D)");
    const int64_t B = q.dim(0), T = q.dim(1);
    if (q.dim(2) % q_heads_ || k.dim(2) % kv_heads_ || v.dim(2) % kv_heads_) ctx.fail("last dimensions must be multiples of the head counts");
    const int64_t Dk = q.dim(2) / q_heads_, Dv = v.dim(2) / kv_heads_, Hq = q_heads_, Hk = kv_heads_;
    if (k.shape() != Shape{B, T, Hk * Dk} || v.dim(0) != B || v.dim(1) != T)
      ctx.fail(fmt::format("key {} / value {} do not match query {}", shape_to_string(k.shape()), shape_to_string(v.shape()),
                           shape_to_string(q.shape())));
    const Shape state_shape{B, Hk, Dk, Dv};
    return with_compute_type(q.dtype(), [&]<class C>() -> Values {
      const std::vector<C> Q = to_compute<C>(q), K = to_compute<C>(k), V = to_compute<C>(v);
      std::vector<C> S(size_t(shape_size(state_shape)), C(0));
      DType state_dtype = q.dtype();
      if (has_value(in, 3)) {
        const Tensor& p = input_tensor(in, 3);
        if (p.shape() != state_shape) ctx.fail(fmt::format("past_state has shape {}, expected {}", shape_to_string(p.shape()), shape_to_string(state_shape)));
        S = to_compute<C>(p);
        state_dtype = p.dtype();
      }
      std::vector<C> G, Be, Er;
      int64_t g_last = 0, b_last = 0;
      if (gated_) {
        const Tensor& g = input_tensor(in, 4);
        g_last = g.rank() == 3 ? g.dim(2) : -1;
        if (g.rank() != 3 || g.dim(0) != B || g.dim(1) != T || (g_last != Hk && g_last != Hk * Dk))
          ctx.fail(fmt::format("decay has shape {}, expected ({}, {}, {} or {})", shape_to_string(g.shape()), B, T, Hk, Hk * Dk));
        G = to_compute<C>(g);
      }
      if (delta_) {
        const Tensor& be = input_tensor(in, 5);
        b_last = be.rank() == 3 ? be.dim(2) : -1;
        if (be.rank() != 3 || be.dim(0) != B || be.dim(1) != T || (b_last != Hk && b_last != 1))
          ctx.fail(fmt::format("beta has shape {}, expected ({}, {}, {} or 1)", shape_to_string(be.shape()), B, T, Hk));
        Be = to_compute<C>(be);
        if (has_value(in, 6)) {
          const Tensor& e = input_tensor(in, 6);
          if (e.shape() != k.shape()) ctx.fail("erase_gate must have the shape of key");
          Er = to_compute<C>(e);
        }
      }
      const C scale = scale_ != 0.0f ? C(scale_) : C(1) / std::sqrt(C(Dk));
      const Packed pq{T, Hq, Dk}, pk{T, Hk, Dk}, pv{T, Hk, Dv};
      std::vector<C> out(size_t(B * T * Hq * Dv));
      std::vector<C> vt(static_cast<size_t>(Dv));
      const int64_t group = Hq / Hk;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t h = 0; h < Hk; ++h) {
            C* s = S.data() + (b * Hk + h) * Dk * Dv;
            if (gated_)
              for (int64_t d = 0; d < Dk; ++d) {
                const C e = std::exp(G[size_t(g_last == Hk ? (b * T + t) * Hk + h : pk.at(b, h, t, d))]);
                for (int64_t m = 0; m < Dv; ++m) s[d * Dv + m] *= e;
              }
            for (int64_t m = 0; m < Dv; ++m) vt[size_t(m)] = V[size_t(pv.at(b, h, t, m))];
            if (delta_) {
              const C beta = Be[size_t((b * T + t) * b_last + (b_last == 1 ? 0 : h))];
              for (int64_t m = 0; m < Dv; ++m) {
                C r = 0;
                for (int64_t d = 0; d < Dk; ++d) {
                  const C kd = K[size_t(pk.at(b, h, t, d))] * (Er.empty() ? C(1) : Er[size_t(pk.at(b, h, t, d))]);
                  r += s[d * Dv + m] * kd;
                }
                vt[size_t(m)] = beta * (vt[size_t(m)] - r);
              }
            }
            for (int64_t d = 0; d < Dk; ++d) {
              const C kd = K[size_t(pk.at(b, h, t, d))];
              for (int64_t m = 0; m < Dv; ++m) s[d * Dv + m] += kd * vt[size_t(m)];
            }
          }
          for (int64_t h = 0; h < Hq; ++h) {
            const C* s = S.data() + (b * Hk + h / group) * Dk * Dv;
            for (int64_t m = 0; m < Dv; ++m) {
              C acc = 0;
              for (int64_t d = 0; d < Dk; ++d) acc += Q[size_t(pq.at(b, h, t, d))] * s[d * Dv + m];
              out[size_t(((b * T + t) * Hq + h) * Dv + m)] = scale * acc;
            }
          }
        }
      return {tensor_from_compute<C>(q.dtype(), {B, T, Hq * Dv}, out), tensor_from_compute<C>(state_dtype, state_shape, S)};
    });
  }

 private:
  int64_t q_heads_, kv_heads_;
  float scale_;
  std::string rule_;
  bool gated_ = false, delta_ = false;
};

}  // namespace

void register_linear_attention(Registry& reg) { reg.add("", "LinearAttention", {27}, make<LinearAttention>); }

}  // namespace refeval::ops
