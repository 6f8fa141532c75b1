// Attention (opset 23; 24 adds the nonpad_kv_seqlen input): scaled dot-product attention with
// multi-head, grouped-query and multi-query variants, KV cache, masks, causality and soft-capping.
// The math is in attention_impl.cc.
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
    // Softmax runs in float (double for double inputs), at least the precision asked for.
    if (auto p = ctx.optional_attr<int64_t>("softmax_precision")) {
      if (*p != 1 && *p != 10 && *p != 11 && *p != 16)
        ctx.fail("softmax_precision must be a floating type (FLOAT, FLOAT16, DOUBLE or BFLOAT16)");
    }
    if (a_.qk_matmul_output_mode < 0 || a_.qk_matmul_output_mode > 3) ctx.fail("qk_matmul_output_mode must be 0, 1, 2 or 3");
    if (a_.q_num_heads < 0 || a_.kv_num_heads < 0) ctx.fail("head counts must be positive");
    if (ctx.has_input(6) && ctx.since_version() < 24) ctx.fail("nonpad_kv_seqlen needs opset 24");
  }

  Values run(const Values& in, RunContext&) override { return attention_compute(a_, in); }

 private:
  AttentionAttrs a_;
};

}  // namespace

void register_attention_op(Registry& reg) { reg.add("", "Attention", {23, 24}, make<Attention>); }

}  // namespace refeval::ops
