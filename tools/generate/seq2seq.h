// Greedy generation over an encoder-decoder exported as Hugging Face Optimum splits it:
//
//   encoder_model:           input_ids, attention_mask (or input_features) -> last_hidden_state
//   decoder_model:           input_ids, encoder_hidden_states, encoder_attention_mask
//                            -> logits, present.N.decoder.key/value, present.N.encoder.key/value
//   decoder_with_past_model: input_ids (B, 1), encoder_attention_mask,
//                            past_key_values.N.decoder.key/value, past_key_values.N.encoder.key/value
//                            -> logits, present.N.decoder.key/value
//
// The encoder runs once; the first step runs the decoder on the start token, and each later step
// the decoder with past on the last token, its decoder pasts the previous step's presents and its
// encoder pasts the first step's (cross-attention keys and values computed once). Without a
// decoder with past, every step runs the decoder on all the tokens so far. Inputs are found by
// name; a graph that has none of them is one clear error.
#pragma once

#include <optional>
#include <string>

#include "generator.h"
#include "refeval/evaluator.h"

namespace refeval::generate {

struct Seq2SeqOptions {
  Tensor prompt;       // int64 (B, L) token ids for the encoder
  Tensor prompt_mask;  // int64 (B, L), 0 on padding; undefined: all ones
  Tensor features;     // float (B, n_mels, frames) for an audio encoder (input_features) instead
  int64_t start_token = 0;  // the decoder's first input id
  int new_tokens = 16;
  std::optional<int64_t> eos;
};

struct Seq2SeqModels {
  ReferenceEvaluator& encoder;
  ReferenceEvaluator& decoder;
  ReferenceEvaluator* decoder_with_past = nullptr;
};

// A one-line description of the three models' roles, for the info message.
std::string describe(const Seq2SeqModels& models);

GenerateResult run_seq2seq(Seq2SeqModels models, const Seq2SeqOptions& options, const StepHooks& hooks = {});

}  // namespace refeval::generate
