// CausalConvWithState (opset 27): depthwise causal 1-D convolution with a carried state.
// For each (batch, channel) the row past_state (zeros when absent, k - 1 values) followed by
// the input is convolved with the channel's kernel (channels, 1, k) without padding, plus the
// optional bias, then optionally passed through SiLU (alias swish). present_state is the last
// k - 1 values of that concatenated row. The convolution result is rounded to the element type
// before the activation, as the spec's function body does.
#include <cmath>

#include <fmt/format.h>

#include "attention_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class CausalConvWithState : public OpRun {
 public:
  using Types = Floats;
  explicit CausalConvWithState(const NodeContext& ctx) : activation_(ctx.attr<std::string>("activation", "none")) {
    if (activation_ != "none" && activation_ != "silu" && activation_ != "swish")
      ctx.fail(fmt::format("activation must be none, silu or swish, not '{}'", activation_));
  }

  Values run(const Values& in, RunContext& ctx) override {
    const Tensor &x = input_tensor(in, 0), &w = input_tensor(in, 1);
    if (x.rank() != 3) ctx.fail(fmt::format("input must be rank 3 (batch, channels, length), got {}", shape_to_string(x.shape())));
    const int64_t B = x.dim(0), Ch = x.dim(1), L = x.dim(2);
    if (w.rank() != 3 || w.dim(0) != Ch || w.dim(1) != 1 || w.dim(2) < 1)
      ctx.fail(fmt::format("weight must have shape ({}, 1, k), got {}", Ch, shape_to_string(w.shape())));
    const int64_t K = w.dim(2), P = K - 1;
    for (size_t i = 1; i < 4; ++i)
      if (has_value(in, i) && input_tensor(in, i).dtype() != x.dtype()) ctx.fail("all inputs must have the input's element type");
    if (has_value(in, 2) && input_tensor(in, 2).shape() != Shape{Ch}) ctx.fail(fmt::format("bias must have shape ({})", Ch));
    if (has_value(in, 3) && input_tensor(in, 3).shape() != Shape{B, Ch, P})
      ctx.fail(fmt::format("past_state must have shape ({}, {}, {}), got {}", B, Ch, P, shape_to_string(input_tensor(in, 3).shape())));
    Tensor y(x.dtype(), x.shape()), state(x.dtype(), {B, Ch, P});
    const bool silu = activation_ != "none";
    visit<Types>(x.dtype(), [&]<class T>() {
      using C = compute_t<T>;
      const T *px = x.data<T>(), *pw = w.data<T>();
      const T* pb = has_value(in, 2) ? input_tensor(in, 2).data<T>() : nullptr;
      const T* ps = has_value(in, 3) ? input_tensor(in, 3).data<T>() : nullptr;
      T *py = y.data<T>(), *pst = state.data<T>();
      std::vector<T> row(size_t(P + L));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < Ch; ++c) {
          const int64_t bc = b * Ch + c;
          for (int64_t i = 0; i < P; ++i) row[size_t(i)] = ps ? ps[bc * P + i] : from_compute<T>(C(0));
          std::copy_n(px + bc * L, L, row.begin() + P);
          for (int64_t t = 0; t < L; ++t) {
            C acc = pb ? C(pb[c]) : C(0);
            for (int64_t j = 0; j < K; ++j) acc += C(pw[c * K + j]) * C(row[size_t(t + j)]);
            T out = from_compute<T>(acc);
            if (silu) {
              const C v = C(out);
              out = from_compute<T>(v * (C(1) / (C(1) + std::exp(-v))));
            }
            py[bc * L + t] = out;
          }
          std::copy_n(row.begin() + L, P, pst + bc * P);
        }
    });
    return {y, state};
  }

 private:
  std::string activation_;
};

}  // namespace

void register_causal_conv_with_state(Registry& reg) { reg.add("", "CausalConvWithState", {27}, make<CausalConvWithState>); }

}  // namespace refeval::ops
