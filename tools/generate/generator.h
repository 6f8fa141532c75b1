// A generation loop over a decoder (decoder_signature.h): one prefill run over the prompt, then
// one decode run per new token, each step's present.* fed back as the next step's past.*, greedy
// decoding (argmax of the last valid position's logits, the first of equal maxima, as torch's
// argmax). The attention mask grows by a 1 per step; position ids follow it as Hugging Face's
// generate does (cumsum(mask) - 1, 1 on padding); a static cache (declared fixed length or
// max_length) is fed back whole, its write position given by cache_position when the model has it.
//
//   Generator gen(ev, find_signature(ev.model().graph));
//   GenerateResult r = gen.run({.prompt = ids, .new_tokens = 16});
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoder_signature.h"
#include "refeval/evaluator.h"

namespace refeval::generate {

struct GenerateOptions {
  Tensor prompt;       // int64 (B, L) token ids
  Tensor prompt_mask;  // int64 (B, L), 0 on padding (left or right); undefined: all ones
  int new_tokens = 16;
  std::optional<int64_t> eos;         // a row that produced it is finished (and padded with it)
  std::optional<int64_t> max_length;  // a static / shared-buffer cache of this length
  int64_t tokenizer_vocab = 0;        // > 0: a tokenizer's ids (largest + 1), checked against the logits' vocabulary
};

// What is told before and after each run of the loop (the profiler tags runs with the phase).
struct StepHooks {
  std::function<void(int step, const std::map<std::string, Value>& feeds)> before;
  std::function<void(int step, int64_t kv_cache_bytes)> after;  // the cache's bytes after the step
  std::function<void(int step, const Tensor& logits)> logits;   // the step's logits output, as the model gave it
};
inline const char* phase_of(int step) { return step == 0 ? "prefill" : "decode"; }

struct GenerateResult {
  std::vector<std::vector<int64_t>> tokens;  // per row, the generated ids (no prompt)
  double prefill_ms = 0;                     // time to first token
  std::vector<double> decode_ms;             // one per decode step
  std::vector<int64_t> kv_cache_bytes;       // after each step
  int64_t weight_bytes = 0;                  // the initializers
  int64_t peak_rss_bytes = 0;                // the process's, at the end
  int64_t batch = 0, prompt_length = 0;

  double decode_median_ms() const;
  double decode_p90_ms() const;
  double tokens_per_s() const;  // decode throughput: batch tokens per decode step
  nlohmann::ordered_json to_json() const;
  std::string summary() const;  // the lines `refeval generate` prints after the ids
};

class Generator {
 public:
  Generator(ReferenceEvaluator& ev, DecoderSignature signature);
  GenerateResult run(const GenerateOptions& options, const StepHooks& hooks = {});
  const DecoderSignature& signature() const { return sig_; }

 private:
  std::map<std::string, Value> empty_cache(int64_t batch, const std::optional<int64_t>& length) const;
  ReferenceEvaluator& ev_;
  DecoderSignature sig_;
};

// ErrorKind::Usage when a tokenizer's vocabulary (largest id + 1) is larger than the model's (the
// last dimension of `logits`): its ids would reach past the embedding table.
void check_tokenizer_vocab(int64_t tokenizer_vocab, int64_t model_vocab, const std::string& logits);

// An (B, n) or (n,) integer tensor of the type the model declares for `name` (int64 or int32).
Tensor ids_tensor(const ReferenceEvaluator& ev, const std::string& name, Shape shape, const std::vector<int64_t>& v);
// Token ids or a mask, int64 or int32, as int64.
std::vector<int64_t> ints_of(const Tensor& t, const char* what);
// Greedy decoding of one row's logits: the first of equal maxima (torch's argmax), or `eos` again
// for a row already finished; a row that produces `eos` is finished from then on.
int64_t greedy_token(const double* row, int64_t vocab, const std::optional<int64_t>& eos, std::vector<bool>::reference finished);
// The bytes of a model's initializers.
int64_t initializer_bytes(const ReferenceEvaluator& ev);
// The process's peak resident memory so far, in bytes.
int64_t process_peak_rss_bytes();

// Token ids from "1 2 3" (one row) or "1 2 3; 4 5 6" (rows of equal length), as int64 (B, L).
Tensor parse_prompt(const std::string& text);
// Random ids in [0, vocab) from a seeded std::mt19937_64 (x % vocab), as int64 (B, L).
Tensor random_prompt(int64_t batch, int64_t length, int64_t vocab, uint64_t seed);

}  // namespace refeval::generate
