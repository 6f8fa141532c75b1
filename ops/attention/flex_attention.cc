// FlexAttention (ai.onnx.preview, version 1): scaled dot-product attention over rank-4 inputs
// whose score tensor (B, Hq, L, S) and probability tensor can be rewritten by GRAPH attributes:
//   scores = (Q K^T) * scale;  scores = score_mod(scores);  probs = Softmax(scores, axis -1);
//   probs = prob_mod(probs);   Y = probs V
// Each body takes one tensor (of Q's element type) and returns one of the same shape. Query
// head h uses K/V head h / (Hq / Hkv). scale defaults to 1/sqrt(head_size).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "../linalg/linalg_common.h"
#include "attention_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class FlexAttention : public OpRun {
 public:
  using Types = Floats;
  explicit FlexAttention(const NodeContext& ctx) {
    if (auto s = ctx.optional_attr<float>("scale")) scale_ = double(*s);
    if (ctx.has_attr("score_mod")) score_mod_ = ctx.subgraph("score_mod");
    if (ctx.has_attr("prob_mod")) prob_mod_ = ctx.subgraph("prob_mod");
    for (const auto& body : {score_mod_, prob_mod_})
      if (body && (plan_input_names(*body).size() != 1 || plan_output_names(*body).size() != 1))
        ctx.fail("score_mod and prob_mod must take one input and return one output");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &q = input_tensor(in, 0), &k = input_tensor(in, 1), &v = input_tensor(in, 2);
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) ctx.fail("Q, K and V must be rank-4 tensors");
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) ctx.fail("Q, K and V must have the same element type");
    const int64_t B = q.dim(0), Hq = q.dim(1), L = q.dim(2), E = q.dim(3);
    const int64_t Hkv = k.dim(1), S = k.dim(2), Ev = v.dim(3);
    if (k.dim(0) != B || k.dim(3) != E || v.dim(0) != B || v.dim(1) != Hkv || v.dim(2) != S)
      ctx.fail(fmt::format("shapes do not agree: Q {}, K {}, V {}", shape_to_string(q.shape()), shape_to_string(k.shape()),
                           shape_to_string(v.shape())));
    if (Hkv <= 0 || Hq % Hkv) ctx.fail(fmt::format("q_num_heads {} is not a multiple of kv_num_heads {}", Hq, Hkv));
    const Shape score_shape{B, Hq, L, S};
    return with_compute_type(q.dtype(), [&]<class C>() -> Values {
      const std::vector<C> Q = to_compute<C>(q), K = to_compute<C>(k), V = to_compute<C>(v);
      const C scale = C(scale_ ? *scale_ : 1.0 / std::sqrt(double(E)));
      std::vector<C> scores(size_t(shape_size(score_shape)));
      const int64_t group = Hq / Hkv;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h) {
          C* sc = scores.data() + (b * Hq + h) * L * S;
          gemm(false, true, L, S, E, Q.data() + (b * Hq + h) * L * E, K.data() + (b * Hkv + h / group) * S * E, sc, false);
          for (int64_t i = 0; i < L * S; ++i) sc[i] *= scale;
        }
      auto apply = [&](const std::shared_ptr<const Plan>& body, std::vector<C>& data, const char* label) {
        if (!body) return;
        const Values out = ctx.run_body(*body, {tensor_from_compute<C>(q.dtype(), score_shape, data)}, label);
        if (out.empty() || !out[0].is_tensor()) ctx.fail(fmt::format("{} must return a tensor", label));
        const Tensor& t = out[0].tensor();
        if (t.shape() != score_shape)
          ctx.fail(fmt::format("{} returned shape {}, expected {}", label, shape_to_string(t.shape()), shape_to_string(score_shape)));
        data = to_compute<C>(t);
      };
      apply(score_mod_, scores, "score_mod");
      for (int64_t r = 0; r < B * Hq * L; ++r) {
        C* row = scores.data() + r * S;
        C m = -std::numeric_limits<C>::infinity();
        for (int64_t j = 0; j < S; ++j) m = std::max(m, row[j]);
        C sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += (row[j] = std::exp(row[j] - m));
        for (int64_t j = 0; j < S; ++j) row[j] /= sum;
      }
      apply(prob_mod_, scores, "prob_mod");
      std::vector<C> Y(size_t(B * Hq * L * Ev));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h)
          gemm(false, false, L, Ev, S, scores.data() + (b * Hq + h) * L * S, V.data() + (b * Hkv + h / group) * S * Ev,
               Y.data() + (b * Hq + h) * L * Ev, false);
      return {tensor_from_compute<C>(q.dtype(), {B, Hq, L, Ev}, Y)};
    });
  }

 private:
  std::optional<double> scale_;
  std::shared_ptr<const Plan> score_mod_, prob_mod_;
};

}  // namespace

void register_flex_attention(Registry& reg) { reg.add("ai.onnx.preview", "FlexAttention", {1}, make<FlexAttention>); }

}  // namespace refeval::ops
