#include "generator.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/error.h"

namespace refeval::generate {

Tensor ids_tensor(const ReferenceEvaluator& ev, const std::string& name, Shape shape, const std::vector<int64_t>& v) {
  const ValueType* t = ev.declared_type(name);
  if (t && t->dtype == DType::Int32) {
    std::vector<int32_t> narrow(v.begin(), v.end());
    return Tensor::from_vector<int32_t>(std::move(shape), narrow);
  }
  return Tensor::from_vector<int64_t>(std::move(shape), v);
}

std::vector<int64_t> ints_of(const Tensor& t, const char* what) {
  if (t.dtype() == DType::Int64) return t.to_vector<int64_t>();
  if (t.dtype() == DType::Int32) {
    const std::vector<int32_t> v = t.to_vector<int32_t>();
    return {v.begin(), v.end()};
  }
  fail_usage(fmt::format("the {} must be int64 or int32, got {}", what, dtype_short_name(t.dtype())));
}

int64_t greedy_token(const double* row, int64_t vocab, const std::optional<int64_t>& eos, std::vector<bool>::reference finished) {
  int64_t best = int64_t(std::max_element(row, row + vocab) - row);
  if (finished) best = *eos;
  if (eos && best == *eos) finished = true;
  return best;
}

int64_t initializer_bytes(const ReferenceEvaluator& ev) {
  int64_t bytes = 0;
  for (const Initializer& init : ev.model().graph.initializers) bytes += int64_t(init.value.nbytes());
  return bytes;
}

int64_t process_peak_rss_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return int64_t(usage.ru_maxrss) * 1024;
}

namespace {

int64_t value_bytes(const Value& v) { return v.is_tensor() ? int64_t(v.tensor().nbytes()) : 0; }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

}  // namespace

Generator::Generator(ReferenceEvaluator& ev, DecoderSignature signature) : ev_(ev), sig_(std::move(signature)) {}

// Zero caches for the prefill: length 0 (a dynamic cache), or the static length.
std::map<std::string, Value> Generator::empty_cache(int64_t batch, const std::optional<int64_t>& length) const {
  std::map<std::string, Value> feeds;
  for (const KvInput& kv : sig_.kv) {
    Shape shape;
    for (size_t a = 0; a < kv.type.dims.size(); ++a) {
      const Dim& d = kv.type.dims[a];
      const bool batch_axis = a == (kv.stacked ? 1u : 0u);
      if (int(a) == kv.length_axis) shape.push_back(length.value_or(0));
      else if (batch_axis) shape.push_back(batch);
      else if (d.fixed()) shape.push_back(d.value);
      else if (kv.stacked && a == 0) shape.push_back(2);
      else fail_usage(fmt::format("past input '{}' declares dimension {} as '{}': the number of heads and the head size "
                                  "must be fixed to make an empty cache", kv.past, a, d.param));
    }
    feeds[kv.past] = Tensor(kv.type.dtype, shape);
  }
  return feeds;
}

GenerateResult Generator::run(const GenerateOptions& opt, const StepHooks& hooks) {
  const Tensor& prompt = opt.prompt;
  if (prompt.rank() != 2 || prompt.dim(1) == 0) fail_usage("the prompt must hold (batch, length) token ids, length >= 1");
  if (opt.new_tokens < 1) fail_usage("--new-tokens must be at least 1");
  const int64_t B = prompt.dim(0), L = prompt.dim(1);
  const std::vector<int64_t> prompt_ids = ints_of(prompt, "prompt");
  std::vector<int64_t> mask(size_t(B * L), 1);  // the running attention mask, row-major (B, T)
  if (opt.prompt_mask.defined()) {
    if (opt.prompt_mask.shape() != prompt.shape())
      fail_usage(fmt::format("the prompt mask has shape {}, the prompt {}", shape_to_string(opt.prompt_mask.shape()),
                             shape_to_string(prompt.shape())));
    mask = ints_of(opt.prompt_mask, "prompt mask");
  }
  std::vector<int64_t> last_valid(size_t(B), -1);  // the prompt position whose logits pick the first token
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < L; ++t)
      if (mask[size_t(b * L + t)] != 0) last_valid[size_t(b)] = t;
    if (last_valid[size_t(b)] < 0) fail_usage(fmt::format("prompt row {} is all padding", b));
  }

  std::optional<int64_t> static_length = opt.max_length ? opt.max_length : sig_.static_length;
  if (sig_.static_cache && !static_length)
    fail_usage(fmt::format("past input '{}' and output '{}' declare the same length: a static cache; give its length with "
                           "--max-length L", sig_.kv.front().past, sig_.kv.front().present));
  if (static_length && *static_length < L + opt.new_tokens - 1)
    fail_usage(fmt::format("the cache holds {} positions, fewer than the prompt's {} plus {} new tokens", *static_length, L,
                           opt.new_tokens - 1));
  std::map<std::string, Value> cache = empty_cache(B, static_length);

  GenerateResult r;
  r.batch = B, r.prompt_length = L;
  r.tokens.assign(size_t(B), {});
  r.weight_bytes = initializer_bytes(ev_);
  std::vector<bool> finished(size_t(B), false);
  std::vector<int64_t> step_ids = prompt_ids;
  int64_t T = L, past = 0;

  for (int step = 0; step < opt.new_tokens; ++step) {
    const int64_t S = step == 0 ? L : 1;
    std::map<std::string, Value> feeds = cache;
    feeds[sig_.input_ids] = ids_tensor(ev_, sig_.input_ids, {B, S}, step_ids);
    if (!sig_.attention_mask.empty()) feeds[sig_.attention_mask] = ids_tensor(ev_, sig_.attention_mask, {B, T}, mask);
    if (!sig_.position_ids.empty()) {
      std::vector<int64_t> pos(size_t(B * S));
      for (int64_t b = 0; b < B; ++b) {
        int64_t count = 0;
        for (int64_t t = 0; t < T; ++t) {
          const bool valid = mask[size_t(b * T + t)] != 0;
          count += valid;
          if (t >= T - S) pos[size_t(b * S + t - (T - S))] = valid ? count - 1 : 1;
        }
      }
      feeds[sig_.position_ids] = ids_tensor(ev_, sig_.position_ids, {B, S}, pos);
    }
    if (!sig_.cache_position.empty()) {
      std::vector<int64_t> cp;
      if (sig_.cache_position_per_row) cp.assign(size_t(B), past);
      else
        for (int64_t s = 0; s < S; ++s) cp.push_back(past + s);
      feeds[sig_.cache_position] = ids_tensor(ev_, sig_.cache_position, {int64_t(cp.size())}, cp);
    }
    if (!sig_.use_cache_branch.empty()) feeds[sig_.use_cache_branch] = Tensor::from_vector<bool>({1}, {step > 0});

    if (hooks.before) hooks.before(step, feeds);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> wanted{sig_.logits};
    for (const KvInput& kv : sig_.kv) wanted.push_back(kv.present);
    Values out = ev_.run(wanted, feeds);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    int64_t kv_bytes = 0;
    for (size_t i = 1; i < out.size(); ++i) kv_bytes += value_bytes(out[i]);
    if (hooks.after) hooks.after(step, kv_bytes);
    (step == 0 ? r.prefill_ms : r.decode_ms.emplace_back()) = ms;

    // greedy: the logits of each row's last valid position (the last one after the prefill)
    const Tensor& logits = out[0].tensor();
    if (logits.rank() < 2 || logits.dim(0) != B)
      fail_runtime(fmt::format("output '{}' has shape {}, expected (batch {}, ..., vocab)", sig_.logits,
                               shape_to_string(logits.shape()), B));
    if (hooks.logits) hooks.logits(step, logits);
    const int64_t V = logits.dim(logits.rank() - 1), rows = logits.rank() == 3 ? logits.dim(1) : 1;
    if (step == 0 && opt.tokenizer_vocab > 0) check_tokenizer_vocab(opt.tokenizer_vocab, V, sig_.logits);
    const std::vector<double> lv = to_doubles(logits);
    step_ids.assign(size_t(B), 0);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t pos = logits.rank() == 3 ? (step == 0 ? std::min(last_valid[size_t(b)], rows - 1) : rows - 1) : 0;
      const int64_t best = greedy_token(lv.data() + (b * rows + pos) * V, V, opt.eos, finished[size_t(b)]);
      r.tokens[size_t(b)].push_back(best);
      step_ids[size_t(b)] = best;
    }

    for (size_t i = 0; i < sig_.kv.size(); ++i) cache[sig_.kv[i].past] = std::move(out[i + 1]);
    r.kv_cache_bytes.push_back(kv_bytes);
    if (std::all_of(finished.begin(), finished.end(), [](bool f) { return f; })) break;
    // the next step: the new token's column of the mask is 1
    std::vector<int64_t> grown(size_t(B * (T + 1)));
    for (int64_t b = 0; b < B; ++b) {
      std::copy_n(mask.begin() + b * T, T, grown.begin() + b * (T + 1));
      grown[size_t(b * (T + 1) + T)] = 1;
    }
    mask = std::move(grown);
    past = T, T += 1;
  }
  r.peak_rss_bytes = process_peak_rss_bytes();
  return r;
}

double GenerateResult::decode_median_ms() const { return percentile(decode_ms, 0.5); }
double GenerateResult::decode_p90_ms() const { return percentile(decode_ms, 0.9); }
double GenerateResult::tokens_per_s() const {
  double total = 0;
  for (double ms : decode_ms) total += ms;
  return total > 0 ? double(batch) * double(decode_ms.size()) / (total / 1000) : 0;
}

nlohmann::ordered_json GenerateResult::to_json() const {
  nlohmann::ordered_json j;
  j["tokens"] = tokens;
  j["batch"] = batch;
  j["prompt_length"] = prompt_length;
  j["prefill_ms"] = prefill_ms;
  j["decode_ms"] = decode_ms;
  j["decode_median_ms"] = decode_median_ms();
  j["decode_p90_ms"] = decode_p90_ms();
  j["tokens_per_s"] = tokens_per_s();
  j["kv_cache_bytes"] = kv_cache_bytes.empty() ? 0 : kv_cache_bytes.back();
  j["kv_cache_bytes_per_step"] = kv_cache_bytes;
  j["weight_bytes"] = weight_bytes;
  j["peak_rss_bytes"] = peak_rss_bytes;
  return j;
}

std::string GenerateResult::summary() const {
  const auto mb = [](int64_t bytes) { return double(bytes) / (1 << 20); };
  std::string s = fmt::format("prefill: {:.3f} ms ({} x {} tokens; time to first token)\n", prefill_ms, batch, prompt_length);
  if (!decode_ms.empty())
    s += fmt::format("decode: {} steps, median {:.3f} ms, p90 {:.3f} ms per step, {:.1f} tokens/s\n", decode_ms.size(),
                     decode_median_ms(), decode_p90_ms(), tokens_per_s());
  s += fmt::format("memory: KV cache {:.2f} MiB at the end, weights {:.2f} MiB, peak RSS {:.1f} MiB\n",
                   mb(kv_cache_bytes.empty() ? 0 : kv_cache_bytes.back()), mb(weight_bytes), mb(peak_rss_bytes));
  return s;
}

void check_tokenizer_vocab(int64_t tokenizer_vocab, int64_t model_vocab, const std::string& logits) {
  if (tokenizer_vocab > model_vocab)
    fail_usage(fmt::format("the tokenizer's vocabulary ({} ids) is larger than the model's ({}, the last dimension of '{}')",
                           tokenizer_vocab, model_vocab, logits));
}

Tensor parse_prompt(const std::string& text) {
  std::vector<std::vector<int64_t>> rows(1);
  std::string token;
  std::istringstream in(text);
  for (char c; in.get(c);) {
    if (c == ';' || c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!token.empty()) rows.back().push_back(std::stoll(token)), token.clear();
      if (c == ';') rows.emplace_back();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      token += c;
    } else {
      fail_usage(fmt::format("--prompt '{}': '{}' is not part of a token id (ids are separated by spaces, rows by ';')", text, c));
    }
  }
  if (!token.empty()) rows.back().push_back(std::stoll(token));
  if (rows.back().empty() && rows.size() > 1) rows.pop_back();
  std::vector<int64_t> flat;
  for (const auto& row : rows) {
    if (row.empty() || row.size() != rows.front().size())
      fail_usage(fmt::format("--prompt '{}': every row needs the same number (>= 1) of token ids", text));
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return Tensor::from_vector<int64_t>({int64_t(rows.size()), int64_t(rows.front().size())}, flat);
}

Tensor random_prompt(int64_t batch, int64_t length, int64_t vocab, uint64_t seed) {
  if (batch < 1 || length < 1 || vocab < 1) fail_usage("--batch, --prompt-len and the vocabulary size must be at least 1");
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(size_t(batch * length));
  for (int64_t& id : ids) id = int64_t(rng() % uint64_t(vocab));
  return Tensor::from_vector<int64_t>({batch, length}, ids);
}

}  // namespace refeval::generate
