// The computation of Attention (opsets 23, 24), kept apart from the op class (attention.cc).
#pragma once

#include <cstdint>
#include <optional>

#include "refeval/value.h"

namespace refeval::ops {

struct AttentionAttrs {
  int64_t q_num_heads = 0, kv_num_heads = 0;  // 0: not given (required for 3-D inputs)
  bool is_causal = false;
  std::optional<double> scale;
  double softcap = 0.0;
  int64_t qk_matmul_output_mode = 0;
};

// Inputs Q, K, V, attn_mask, past_key, past_value (, nonpad_kv_seqlen); outputs Y, present_key,
// present_value, qk_matmul_output.
Values attention_compute(const AttentionAttrs& a, const Values& in);

}  // namespace refeval::ops
