// Attention (opsets 23, 24, 25): scaled dot-product attention with multi-head, grouped-query and
// multi-query variants, KV cache, masks, causality and soft-capping. 24 adds the nonpad_kv_seqlen
// input (external cache); 25 adds left_window_size / right_window_size (sliding window, -1 =
// unbounded) and rejects q_num_heads / kv_num_heads with 4-D inputs, an unpaired present output
// and nonpad_kv_seqlen together with a present output. The math is in attention_impl.cc.
#include <fmt/format.h>

#include "attention_impl.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Attention : public OpRun {
 public:
  using Types = Floats;
  explicit Attention(const NodeContext& ctx) {
    a_.is_causal = ctx.attr<int64_t>("is_causal", 0) != 0;
    a_.q_num_heads = ctx.attr<int64_t>("q_num_heads", 0);
    a_.kv_num_heads = ctx.attr<int64_t>("kv_num_heads", 0);
    a_.qk_matmul_output_mode = ctx.attr<int64_t>("qk_matmul_output_mode", 0);
    if (auto s = ctx.optional_attr<float>("scale")) a_.scale = double(*s);
    a_.softcap = ctx.attr<float>("softcap", 0.0f);
    a_.wants_qk = ctx.has_output(3);
    a_.wants_present = ctx.has_output(1) || ctx.has_output(2);
    // Softmax runs in float (double for double inputs or when DOUBLE is asked for), at least the
    // precision asked for.
    if (auto p = ctx.optional_attr<int64_t>("softmax_precision")) {
      if (*p != 1 && *p != 10 && *p != 11 && *p != 16)
        ctx.fail("softmax_precision must be a floating type (FLOAT, FLOAT16, DOUBLE or BFLOAT16)");
      a_.softmax_in_double = *p == 11;
    }
    if (a_.qk_matmul_output_mode < 0 || a_.qk_matmul_output_mode > 3) ctx.fail("qk_matmul_output_mode must be 0, 1, 2 or 3");
    if (a_.q_num_heads < 0 || a_.kv_num_heads < 0) ctx.fail("head counts must be positive");
    if (ctx.has_input(6) && ctx.since_version() < 24) ctx.fail("nonpad_kv_seqlen needs opset 24");
    if (ctx.since_version() >= 25) {
      a_.left_window = ctx.attr<int64_t>("left_window_size", -1);
      a_.right_window = ctx.attr<int64_t>("right_window_size", -1);
      if (a_.left_window < -1) ctx.fail(fmt::format("left_window_size must be -1 or nonnegative, got {}", a_.left_window));
      if (a_.right_window < -1) ctx.fail(fmt::format("right_window_size must be -1 or nonnegative, got {}", a_.right_window));
      a_.heads_forbidden_for_4d = ctx.has_attr("q_num_heads") || ctx.has_attr("kv_num_heads");
      if (ctx.has_output(1) != ctx.has_output(2)) ctx.fail("present_key and present_value must be requested together");
      if (ctx.has_input(6) && ctx.has_output(1)) ctx.fail("nonpad_kv_seqlen cannot be combined with present_key / present_value");
    }
  }

  Values run(const Values& in, RunContext&) override { return attention_compute(a_, in); }

 private:
  AttentionAttrs a_;
};

}  // namespace

void register_attention_op(Registry& reg) { reg.add("", "Attention", {23, 24, 25}, make<Attention>); }

}  // namespace refeval::ops
