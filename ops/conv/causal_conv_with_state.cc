// CausalConvWithState (27): stateful causal depthwise 1-D convolution. Per (b, c), with
// seq = concat(past_state[b, c, :] (zeros when absent), input[b, c, :]) of length K - 1 + L:
//   output[b, c, t] = act(bias[c] + sum over k < K of weight[c, 0, k] * seq[t + k])
//   present_state[b, c, :] = the last K - 1 values of seq
// act is none, or silu / swish (x * sigmoid(x)). Computed in double.
#include <cmath>

#include <fmt/format.h>

#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class CausalConvWithState : public OpRun {
 public:
  using Types = Floats;
  explicit CausalConvWithState(const NodeContext& ctx) : activation_(ctx.attr<std::string>("activation", "none")) {
    if (activation_ != "none" && activation_ != "silu" && activation_ != "swish")
      ctx.fail("activation must be 'none', 'silu' or 'swish', got '" + activation_ + "'");
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &x = input_tensor(in, 0), &w = input_tensor(in, 1);
    if (x.rank() != 3) ctx.fail(fmt::format("input must be (batch, channels, length), got {}", shape_to_string(x.shape())));
    const int64_t B = x.dim(0), C = x.dim(1), L = x.dim(2);
    if (w.dtype() != x.dtype() || w.rank() != 3 || w.dim(0) != C || w.dim(1) != 1 || w.dim(2) < 1)
      ctx.fail(fmt::format("weight must be ({}, 1, k) of input's type, got {}", C, shape_to_string(w.shape())));
    const int64_t K = w.dim(2), S = K - 1;
    const Tensor* bias = has_value(in, 2) ? &input_tensor(in, 2) : nullptr;
    const Tensor* past = has_value(in, 3) ? &input_tensor(in, 3) : nullptr;
    if (bias && (bias->dtype() != x.dtype() || bias->shape() != Shape{C})) ctx.fail(fmt::format("bias must be ({},)", C));
    if (past && (past->dtype() != x.dtype() || past->shape() != Shape{B, C, S}))
      ctx.fail(fmt::format("past_state must be {}", shape_to_string({B, C, S})));
    Tensor y(x.dtype(), x.shape()), state(x.dtype(), {B, C, S});
    const bool silu = activation_ != "none";
    visit<Types>(x.dtype(), [&]<class T>() {
      const T *px = x.data<T>(), *pw = w.data<T>();
      std::vector<double> seq(size_t(S + L));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t row = b * C + c;
          for (int64_t i = 0; i < S; ++i) seq[size_t(i)] = past ? double(past->data<T>()[row * S + i]) : 0.0;
          for (int64_t i = 0; i < L; ++i) seq[size_t(S + i)] = double(px[row * L + i]);
          for (int64_t t = 0; t < L; ++t) {
            double v = bias ? double(bias->data<T>()[c]) : 0.0;
            for (int64_t k = 0; k < K; ++k) v += double(pw[c * K + k]) * seq[size_t(t + k)];
            if (silu) v = v / (1.0 + std::exp(-v));
            y.data<T>()[row * L + t] = from_compute<T>(compute_t<T>(v));
          }
          for (int64_t i = 0; i < S; ++i) state.data<T>()[row * S + i] = from_compute<T>(compute_t<T>(seq[size_t(L + i)]));
        }
    });
    return {y, state};
  }

 private:
  std::string activation_;
};

}  // namespace

void register_causal_conv_with_state(Registry& reg) {
  reg.add("", "CausalConvWithState", {27}, make<CausalConvWithState>);
}

}  // namespace refeval::ops
