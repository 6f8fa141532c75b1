#include "seq2seq.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/error.h"

namespace refeval::generate {
namespace {

bool has_input(const ReferenceEvaluator& ev, const std::string& name) {
  for (const ValueInfo* in : ev.model().graph.feed_inputs())
    if (in->name == name) return true;
  return false;
}

// The decoder's present output for a past input: "past_key_values" read as "present".
std::string present_of(const std::string& past) {
  const std::string prefix = "past_key_values";
  return past.rfind(prefix, 0) == 0 ? "present" + past.substr(prefix.size()) : "";
}

void require(const ReferenceEvaluator& ev, const std::string& input, const char* role) {
  if (!has_input(ev, input))
    fail_usage(fmt::format("the {} has no input '{}' (Optimum's names: encoder input_ids/attention_mask or input_features; decoder "
                           "input_ids, encoder_hidden_states, encoder_attention_mask; decoder with past past_key_values.N.*)",
                           role, input));
}

}  // namespace

std::string describe(const Seq2SeqModels& m) {
  const bool audio = has_input(m.encoder, "input_features");
  return fmt::format("encoder-decoder: encoder over {}, decoder {}", audio ? "input_features" : "input_ids",
                     m.decoder_with_past ? "for the first step, decoder with past (cross-attention keys and values fed back) for the next"
                                         : "over every token so far at each step (no decoder with past)");
}

GenerateResult run_seq2seq(Seq2SeqModels m, const Seq2SeqOptions& opt, const StepHooks& hooks) {
  if (opt.new_tokens < 1) fail_usage("--new-tokens must be at least 1");
  const bool audio = has_input(m.encoder, "input_features");
  std::map<std::string, Value> enc_feeds;
  int64_t B = 0, L = 0;
  std::vector<int64_t> mask;
  if (audio) {
    if (!opt.features.defined() || opt.features.rank() != 3) fail_usage("the encoder reads input_features: give them (batch, mels, frames) with --features");
    B = opt.features.dim(0), L = opt.features.dim(2);
    enc_feeds["input_features"] = opt.features;
  } else {
    require(m.encoder, "input_ids", "encoder");
    if (opt.prompt.rank() != 2 || opt.prompt.dim(1) == 0) fail_usage("the prompt must hold (batch, length) token ids, length >= 1");
    B = opt.prompt.dim(0), L = opt.prompt.dim(1);
    mask.assign(size_t(B * L), 1);
    if (opt.prompt_mask.defined()) {
      if (opt.prompt_mask.shape() != opt.prompt.shape())
        fail_usage(fmt::format("the prompt mask has shape {}, the prompt {}", shape_to_string(opt.prompt_mask.shape()), shape_to_string(opt.prompt.shape())));
      mask = ints_of(opt.prompt_mask, "prompt mask");
    }
    enc_feeds["input_ids"] = ids_tensor(m.encoder, "input_ids", {B, L}, ints_of(opt.prompt, "prompt"));
    if (has_input(m.encoder, "attention_mask")) enc_feeds["attention_mask"] = ids_tensor(m.encoder, "attention_mask", {B, L}, mask);
  }
  require(m.decoder, "input_ids", "decoder");
  require(m.decoder, "encoder_hidden_states", "decoder");
  const std::string hidden_name = m.encoder.output_names().at(0);

  GenerateResult r;
  r.batch = B, r.prompt_length = L;
  r.tokens.assign(size_t(B), {});
  r.weight_bytes = initializer_bytes(m.encoder) + initializer_bytes(m.decoder) + (m.decoder_with_past ? initializer_bytes(*m.decoder_with_past) : 0);
  const auto start = std::chrono::steady_clock::now();
  Value hidden = m.encoder.run({hidden_name}, enc_feeds).at(0);

  // The decoder's past inputs and the presents that feed them.
  std::vector<std::string> pasts;
  if (m.decoder_with_past) {
    require(*m.decoder_with_past, "input_ids", "decoder with past");
    for (const ValueInfo* in : m.decoder_with_past->model().graph.feed_inputs())
      if (!present_of(in->name).empty()) pasts.push_back(in->name);
    if (pasts.empty()) fail_usage("the decoder with past has no past_key_values.* input");
  }
  std::map<std::string, Value> cache;  // past input name -> value
  std::vector<bool> finished(size_t(B), false);
  std::vector<int64_t> history(size_t(B), opt.start_token);  // (B, steps so far) row-major, the decoder's input ids
  int64_t T = 1;
  for (int step = 0; step < opt.new_tokens; ++step) {
    const bool with_past = step > 0 && m.decoder_with_past;
    ReferenceEvaluator& ev = with_past ? *m.decoder_with_past : m.decoder;
    std::map<std::string, Value> feeds;
    if (with_past) {
      std::vector<int64_t> last(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) last[size_t(b)] = history[size_t(b * T + T - 1)];
      feeds["input_ids"] = ids_tensor(ev, "input_ids", {B, 1}, last);
      for (const std::string& p : pasts) {
        auto it = cache.find(p);
        if (it == cache.end()) fail_usage(fmt::format("the decoder gives no '{}' for the decoder with past's '{}'", present_of(p), p));
        feeds[p] = it->second;
      }
    } else {
      feeds["input_ids"] = ids_tensor(ev, "input_ids", {B, T}, history);
      feeds["encoder_hidden_states"] = hidden;
    }
    if (!audio && has_input(ev, "encoder_attention_mask")) feeds["encoder_attention_mask"] = ids_tensor(ev, "encoder_attention_mask", {B, L}, mask);
    std::vector<std::string> wanted{"logits"};
    std::vector<std::string> presents;
    for (const std::string& out : ev.output_names())
      if (out.rfind("present", 0) == 0) presents.push_back(out), wanted.push_back(out);
    if (hooks.before) hooks.before(step, feeds);
    const auto t0 = std::chrono::steady_clock::now();
    Values out = ev.run(wanted, feeds);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int64_t kv_bytes = 0;
    for (size_t i = 1; i < out.size(); ++i) {
      const std::string past = "past_key_values" + presents[i - 1].substr(std::string("present").size());
      cache[past] = std::move(out[i]);
    }
    for (const auto& [name, v] : cache) kv_bytes += v.is_tensor() ? int64_t(v.tensor().nbytes()) : 0;
    if (hooks.after) hooks.after(step, kv_bytes);
    // The time to the first token counts the encoder.
    if (step == 0) r.prefill_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    else r.decode_ms.push_back(ms);

    const Tensor& logits = out[0].tensor();
    if (logits.rank() != 3 || logits.dim(0) != B)
      fail_runtime(fmt::format("output 'logits' has shape {}, expected (batch {}, tokens, vocab)", shape_to_string(logits.shape()), B));
    if (hooks.logits) hooks.logits(step, logits);
    const int64_t rows = logits.dim(1), V = logits.dim(2);
    const std::vector<double> lv = to_doubles(logits);
    std::vector<int64_t> grown(size_t(B * (T + 1)));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t best = greedy_token(lv.data() + (b * rows + rows - 1) * V, V, opt.eos, finished[size_t(b)]);
      r.tokens[size_t(b)].push_back(best);
      std::copy_n(history.begin() + b * T, T, grown.begin() + b * (T + 1));
      grown[size_t(b * (T + 1) + T)] = best;
    }
    history = std::move(grown);
    T += 1;
    r.kv_cache_bytes.push_back(kv_bytes);
    if (std::all_of(finished.begin(), finished.end(), [](bool f) { return f; })) break;
  }
  r.peak_rss_bytes = process_peak_rss_bytes();
  return r;
}

}  // namespace refeval::generate
