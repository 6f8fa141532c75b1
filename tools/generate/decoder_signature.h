// How a decoder-only LLM exported to ONNX takes its inputs and gives its outputs, found from the
// names and declared shapes of its graph inputs and outputs, so `refeval generate` can drive a
// generation loop without being told (llm-decoders.md §1.1):
//   input_ids (B, S) -> logits (B, S, V) or (B, V)
//   attention_mask (B, P + S), position_ids (B, S), cache_position: optional
//   one past input per layer and kind, each paired with the present output of the same name with
//   "past_key_values" / "past" read as "present":
//     past_key_values.N.key/.value -> present.N.key/.value   (Optimum, ONNX Runtime GenAI)
//     past.N.key, past_key.N, past_key_N, past_value_N       (other exporters)
//     past_N (2, B, H, P, D) stacked key and value            (ORT's GPT-2 helper)
//   use_cache_branch (bool (1,)): a merged decoder's If (false for the prefill)
// The cache layout (BNSH or BSNH) is the position of its length axis, read from the declared
// shape; a past of fixed length or the --max-length option makes a static cache, fed back whole.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "refeval/ir.h"

namespace refeval::generate {

struct KvInput {
  std::string past, present;
  int length_axis = 2;  // the sequence axis of the past tensor: 2 for BNSH, 1 for BSNH, 3 stacked
  bool stacked = false;  // (2, B, N, P, H): key and value in one tensor
  ValueType type;        // the past input's declared type
};

struct DecoderSignature {
  std::string input_ids, logits;
  std::string attention_mask, position_ids, cache_position, use_cache_branch;  // "" when absent
  std::vector<KvInput> kv;
  bool cache_position_per_row = false;  // (B,) write positions; else (S,) positions of the new tokens
  bool static_cache = false;             // past and present declare the same length: the cache is fed back whole
  std::optional<int64_t> static_length;  // the past's fixed length, when the model declares one
  // One line for the info message: what was found.
  std::string describe() const;
};

// The signature of a decoder, or ErrorKind::Usage naming what is missing or not understood.
DecoderSignature find_signature(const Graph& graph);

}  // namespace refeval::generate
