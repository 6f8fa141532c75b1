// `refeval generate MODEL`: a greedy generation loop over a decoder-only LLM with a KV cache
// (tools/generate): the prefill over the prompt, then one decode step per new token, each step's
// present.* fed back as past.*. Prints the generated ids and the phase summary (time to first
// token, ms per token, tokens/s, KV-cache, weight and peak memory); --profile writes ORT's profile
// JSON with each model_run tagged by phase and step (`refeval report --by phase` reads it). With
// --tokenizer (a Hugging Face tokenizer.json, tools/tokenizer) the prompt can be text
// (--prompt-text) and each row's generated ids are also printed as text.
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "generate/generator.h"
#include "generate/seq2seq.h"
#include "profile/profile_file.h"
#include "profile/profiled_model.h"
#include "refeval/dump.h"
#include "refeval/model_io.h"
#include "tokenizer/tokenizer.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

using namespace refeval::generate;

class GenerateVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the decoder .onnx model (input_ids, past_* -> logits, present*)")->required();
    auto* prompt = sub->add_option("--prompt", prompt_, "IDS: token ids, \"1 2 3\" (rows separated by ';')");
    auto* file = sub->add_option("--prompt-file", prompt_file_, "FILE.npy: int64 token ids (batch, length)");
    sub->add_option("--prompt-mask", prompt_mask_, "FILE.npy: the tokenizer's attention mask (batch, length), 0 on padding");
    auto* len = sub->add_option("--prompt-len", prompt_len_, "N: a random prompt of N tokens (with --batch, --seed)");
    auto* text = prompt_text_opt_ = sub->add_option("--prompt-text", prompt_text_, "TEXT: the prompt as text, encoded by --tokenizer (special tokens added)");
    prompt->excludes(file)->excludes(len)->excludes(text);
    file->excludes(len)->excludes(text);
    len->excludes(text);
    sub->add_option("--tokenizer", tokenizer_, "TOKENIZER.json: a Hugging Face tokenizer; the generated ids are printed as text too");
    sub->add_option("--batch", batch_, "B: rows of the random prompt (default 1)")->check(CLI::Range(1, 1 << 30));
    sub->add_option("--seed", seed_, "S: seed of the random prompt (default 0)");
    sub->add_option("--vocab", vocab_, "V: the random ids' range (default: the logits' declared vocabulary size)");
    sub->add_option("--new-tokens", new_tokens_, "M: tokens to generate per row (default 16): 1 prefill + M-1 decode steps")->check(CLI::Range(1, 1 << 30));
    sub->add_option("--eos", eos_, "ID: a row that produces it stops (padded with it while others go on)");
    sub->add_option("--max-length", max_length_, "L: a static / shared-buffer KV cache of L positions, fed back whole");
    sub->add_option("--json", json_, "FILE: the ids and the summary as JSON");
    sub->add_option("--profile", profile_, "FILE.json: ORT's profile format, one model_run per step tagged with args.phase and args.step");
    sub->add_flag("--memory", memory_, "with --profile: live activation bytes per node and each step's peak beside the KV cache "
                  "(`refeval report --by memory`)");
    sub->add_option("--dump-step", dump_step_, "K: with --dump, dump every value of step K (0 = prefill)");
    sub->add_option("--dump", dump_dir_, "DIR: the dump folder of --dump-step (refeval compare reads it)");
    sub->add_option("--encoder", encoder_, "ENCODER.onnx: MODEL is an encoder-decoder's decoder (Optimum's split): the encoder runs once");
    sub->add_option("--decoder-with-past", decoder_with_past_, "DECODER.onnx: with --encoder, the decoder with past for the steps after the first");
    sub->add_option("--decoder-start", decoder_start_, "ID: with --encoder, the decoder's first input id (default 0)");
    sub->add_option("--features", features_, "FILE.npy: with --encoder, an audio encoder's input_features (batch, mels, frames)");
  }

  int execute(const GlobalOptions& g) override {
    if (!encoder_.empty()) return seq2seq(g);
    for (const auto& [given, name] : {std::pair{!decoder_with_past_.empty(), "--decoder-with-past"}, {decoder_start_.has_value(), "--decoder-start"},
                                      {!features_.empty(), "--features"}})
      if (given) fail_usage(fmt::format("{} needs --encoder ENCODER.onnx", name));
    if (dump_step_ && dump_dir_.empty()) fail_usage("--dump-step needs --dump DIR");
    if (prompt_text_opt_->count() && tokenizer_.empty()) fail_usage("--prompt-text needs --tokenizer TOKENIZER.json");
    std::optional<tokenizer::Tokenizer> tok;
    if (!tokenizer_.empty()) tok = tokenizer::Tokenizer::load(tokenizer_);
    // Without --profile, nothing reads a weight after MatMul has packed it: each is held once.
    profile::ProfiledModel profiled([&] { return open_model(model_); }, registry(g), profile_.empty());
    ReferenceEvaluator& ev = profiled.evaluator();
    if (profile_.empty()) ev.remove_observer(profiled.profiler());
    if (memory_ && profile_.empty()) fail_usage("--memory needs --profile FILE.json");
    if (memory_) profiled.profiler()->record_memory();
    Generator gen(ev, find_signature(ev.model().graph));
    spdlog::info("{}", gen.signature().describe());

    if (tok) {
      const ValueType* t = ev.declared_type(gen.signature().logits);  // a fixed vocabulary is checked now, else after the prefill
      if (t && t->has_shape && !t->dims.empty() && t->dims.back().fixed())
        check_tokenizer_vocab(tok->vocab_size(), t->dims.back().value, gen.signature().logits);
    }

    GenerateOptions opt;
    opt.prompt = prompt_text_opt_->count() ? encode_prompt(*tok) : make_prompt(ev, gen.signature());
    if (tok) opt.tokenizer_vocab = tok->vocab_size();
    if (!prompt_mask_.empty()) opt.prompt_mask = read_npy(prompt_mask_);
    opt.new_tokens = new_tokens_, opt.eos = eos_, opt.max_length = max_length_;

    std::optional<DumpObserver> dump;
    StepHooks hooks;
    hooks.before = [&](int step, const std::map<std::string, Value>&) {
      if (dump_step_ && step == *dump_step_) ev.add_observer(&dump.emplace(dump_dir_));
      if (!profile_.empty()) profiled.profiler()->begin_run();
    };
    hooks.after = [&](int step, int64_t kv_bytes) {
      if (!profile_.empty())
        profiled.profiler()->end_run({{"phase", phase_of(step)}, {"step", step}, {"kv_cache_bytes", kv_bytes}});
      if (dump && step == *dump_step_) {
        ev.remove_observer(&*dump);
        dump->finish();
      }
    };
    const GenerateResult r = gen.run(opt, hooks);

    std::vector<std::string> texts;
    for (size_t b = 0; b < r.tokens.size(); ++b) {
      fmt::print("row {}: {}\n", b, fmt::join(r.tokens[b], " "));
      if (!tok) continue;
      texts.push_back(generated_text(*tok, r.tokens[b]));
      fmt::print("text {}: {}\n", b, nlohmann::json(texts.back()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    fmt::print("{}", r.summary());
    if (dump_step_ && !dump) spdlog::warn("--dump-step {}: generation stopped before that step; nothing dumped", *dump_step_);
    if (dump) fmt::print("dump: step {} ({}), {} values in {}\n", *dump_step_, phase_of(*dump_step_), dump->size(), dump_dir_);
    if (!profile_.empty()) {
      profile::write_profile(profile_, profiled.events());
      fmt::print("profile: {} (1 prefill + {} decode runs)\n", profile_, r.decode_ms.size());
    }
    if (!json_.empty()) {
      nlohmann::ordered_json j = r.to_json();
      if (tok) j["text"] = texts;
      write_output(json_, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "generate JSON");
    }
    std::fflush(stdout);
    return kOk;
  }

 private:
  // An encoder-decoder (tools/generate/seq2seq.h): the encoder once, then the decoder per step.
  int seq2seq(const GlobalOptions& g) {
    if (!profile_.empty() || dump_step_ || memory_ || max_length_ || !tokenizer_.empty())
      fail_usage("--encoder: --profile, --memory, --dump-step, --max-length and --tokenizer are for decoder-only models");
    ReferenceEvaluator encoder(open_model(encoder_), {&registry(g)});
    ReferenceEvaluator decoder(open_model(model_), {&registry(g)});
    std::optional<ReferenceEvaluator> with_past;
    if (!decoder_with_past_.empty()) with_past.emplace(open_model(decoder_with_past_), EvaluatorOptions{&registry(g)});
    Seq2SeqModels models{encoder, decoder, with_past ? &*with_past : nullptr};
    spdlog::info("{}", describe(models));
    Seq2SeqOptions opt;
    if (!features_.empty()) opt.features = read_npy(features_);
    else if (!prompt_.empty()) opt.prompt = parse_prompt(prompt_);
    else if (!prompt_file_.empty()) opt.prompt = read_npy(prompt_file_);
    else fail_usage("--encoder: give the encoder's input: --prompt \"1 2 3\", --prompt-file ids.npy or --features features.npy");
    if (opt.prompt.defined() && opt.prompt.dtype() != DType::Int64 && opt.prompt.dtype() != DType::Int32)
      fail_usage(fmt::format("--prompt-file {}: token ids must be int64 or int32, got {}", prompt_file_, dtype_short_name(opt.prompt.dtype())));
    if (opt.prompt.defined() && opt.prompt.rank() == 1) opt.prompt = opt.prompt.reshaped({1, opt.prompt.dim(0)});
    if (!prompt_mask_.empty()) opt.prompt_mask = read_npy(prompt_mask_);
    opt.start_token = decoder_start_.value_or(0);
    opt.new_tokens = new_tokens_, opt.eos = eos_;
    const GenerateResult r = run_seq2seq(models, opt);
    for (size_t b = 0; b < r.tokens.size(); ++b) fmt::print("row {}: {}\n", b, fmt::join(r.tokens[b], " "));
    fmt::print("{}", r.summary());
    if (!json_.empty()) write_output(json_, r.to_json().dump(2) + "\n", "generate JSON");
    std::fflush(stdout);
    return kOk;
  }

  Tensor encode_prompt(const tokenizer::Tokenizer& tok) const {
    const std::vector<int64_t> ids = tok.encode(prompt_text_);
    if (ids.empty()) fail_usage(fmt::format("--prompt-text '{}' encodes to no token", prompt_text_));
    spdlog::info("--prompt-text: {} tokens ({})", ids.size(), fmt::join(ids, " "));
    return Tensor::from_vector<int64_t>({1, int64_t(ids.size())}, ids);
  }

  // A row's ids up to its first --eos (included), decoded with the special tokens left out.
  std::string generated_text(const tokenizer::Tokenizer& tok, std::vector<int64_t> ids) const {
    if (eos_)
      if (const auto it = std::find(ids.begin(), ids.end(), *eos_); it != ids.end()) ids.erase(it + 1, ids.end());
    return tok.decode(ids, /*skip_special_tokens=*/true);
  }

  Tensor make_prompt(const ReferenceEvaluator& ev, const DecoderSignature& sig) const {
    if (!prompt_.empty()) return parse_prompt(prompt_);
    if (!prompt_file_.empty()) {
      Tensor t = read_npy(prompt_file_);
      if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
        fail_usage(fmt::format("--prompt-file {}: token ids must be int64 or int32, got {}", prompt_file_, dtype_short_name(t.dtype())));
      if (t.rank() == 1) t = t.reshaped({1, t.dim(0)});
      return t;
    }
    if (prompt_len_ == 0) fail_usage("give the prompt: --prompt \"1 2 3\", --prompt-file ids.npy or --prompt-len N");
    int64_t vocab = vocab_;
    if (vocab == 0) {
      const ValueType* t = ev.declared_type(sig.logits);
      if (t && t->has_shape && !t->dims.empty() && t->dims.back().fixed()) vocab = t->dims.back().value;
      else fail_usage(fmt::format("output '{}' declares no fixed vocabulary size: give --vocab V for --prompt-len", sig.logits));
    }
    return random_prompt(batch_, prompt_len_, vocab, seed_);
  }

  std::string model_, prompt_, prompt_file_, prompt_mask_, json_, profile_, dump_dir_, prompt_text_, tokenizer_;
  std::string encoder_, decoder_with_past_, features_;
  std::optional<int64_t> decoder_start_;
  CLI::Option* prompt_text_opt_ = nullptr;
  int64_t prompt_len_ = 0, batch_ = 1, vocab_ = 0;
  uint64_t seed_ = 0;
  int new_tokens_ = 16;
  std::optional<int64_t> eos_, max_length_;
  std::optional<int> dump_step_;
  bool memory_ = false;
};

}  // namespace

std::unique_ptr<Verb> make_generate_verb() { return std::make_unique<GenerateVerb>(); }

}  // namespace refeval::cli
