// The computation of Attention (opsets 23, 24, 25), kept apart from the op class (attention.cc).
#pragma once

#include <cstdint>
#include <optional>

#include "refeval/value.h"

namespace refeval::ops {

struct AttentionAttrs {
  int64_t q_num_heads = 0, kv_num_heads = 0;  // 0: not given (required for 3-D inputs)
  bool heads_forbidden_for_4d = false;        // opset 25: a head-count attribute with 4-D inputs is an error
  bool is_causal = false;
  std::optional<double> scale;
  double softcap = 0.0;
  int64_t qk_matmul_output_mode = 0;
  int64_t left_window = -1, right_window = -1;  // opset 25; -1: unbounded on that side
  bool softmax_in_double = false;               // softmax_precision = DOUBLE
  bool wants_qk = true;                         // whether the node names output qk_matmul_output
  bool wants_present = true;                    // whether it names present_key or present_value
};

// Inputs Q, K, V, attn_mask, past_key, past_value (, nonpad_kv_seqlen); outputs Y, present_key,
// present_value, qk_matmul_output.
Values attention_compute(const AttentionAttrs& a, const Values& in);

}  // namespace refeval::ops
