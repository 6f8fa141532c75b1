#include "lm_compare.h"

#include <fmt/format.h>

#include "refeval/compute_vector.h"
#include "refeval/error.h"
#include "refeval/numerics.h"

namespace refeval::quality {
namespace {

using generate::Generator;

struct Side {
  const std::string& name;
  Generator gen;
  bool emulate;  // the accuracy_level arithmetic while this side runs
  Side(ReferenceEvaluator& ev, const std::string& n, bool e) : name(n), gen(ev, signature(ev, n)), emulate(e) {}
  generate::GenerateResult run(const generate::GenerateOptions& options, const generate::StepHooks& hooks = {}) {
    struct Arithmetic {  // this side's, put back however the run ends
      bool before = emulate_accuracy_level();
      explicit Arithmetic(bool on) { set_emulate_accuracy_level(on); }
      ~Arithmetic() { set_emulate_accuracy_level(before); }
    } arithmetic(emulate);
    return gen.run(options, hooks);
  }
  static generate::DecoderSignature signature(ReferenceEvaluator& ev, const std::string& name) {
    try {
      return generate::find_signature(ev.model().graph);
    } catch (const Error& e) {
      fail_usage(fmt::format("{}: {} (the language-model comparison runs decoders: input_ids in, logits out)", name, e.what()));
    }
  }
};

Tensor row_tensor(const std::vector<int64_t>& ids) { return Tensor::from_vector<int64_t>({1, int64_t(ids.size())}, ids); }

// The logits of every position of one window, as N rows of V floats.
std::vector<float> window_logits(Side& s, const std::vector<int64_t>& window, int64_t& vocab) {
  std::vector<float> rows;
  generate::StepHooks hooks;
  hooks.logits = [&](int, const Tensor& logits) {
    const int64_t n = int64_t(window.size());
    if (logits.rank() != 3 || logits.dim(1) != n)
      fail_usage(fmt::format("{}: logits of shape {} for a window of {} tokens: the comparison needs the logits of every "
                             "position (batch, sequence, vocabulary), not the last one's only",
                             s.name, shape_to_string(logits.shape()), n));
    vocab = logits.dim(2);
    if (logits.dtype() == DType::Float) {
      rows.assign(logits.data<float>(), logits.data<float>() + logits.size());
    } else {
      const std::vector<double> d = to_doubles(logits);
      rows.assign(d.begin(), d.end());
    }
  };
  s.run({.prompt = row_tensor(window), .new_tokens = 1}, hooks);
  return rows;
}

void check_ids(const std::vector<int64_t>& window, int w, int64_t vocab, const std::string& name) {
  for (size_t i = 0; i < window.size(); ++i)
    if (window[i] < 0 || window[i] >= vocab)
      fail_usage(fmt::format("token {} at window {} position {} is outside {}'s vocabulary of {}", window[i], w, i, name, vocab));
}

// The vocabulary a model declares (the logits' last dimension), or -1 when symbolic.
int64_t declared_vocab(const ReferenceEvaluator& ev, const std::string& logits) {
  const ValueType* t = ev.declared_type(logits);
  return t && !t->dims.empty() && t->dims.back().fixed() ? t->dims.back().value : -1;
}

}  // namespace

std::vector<std::vector<int64_t>> token_windows(const Tensor& tokens, int64_t context) {
  if (tokens.rank() != 2 || (tokens.dtype() != DType::Int64 && tokens.dtype() != DType::Int32))
    fail_usage(fmt::format("--tokens: expected int64 or int32 ids of shape (rows, length), got {}{}", dtype_short_name(tokens.dtype()),
                           shape_to_string(tokens.shape())));
  const int64_t rows = tokens.dim(0), length = tokens.dim(1), n = context > 0 ? context : length;
  if (n < 2 || n > length)
    fail_usage(fmt::format("--context {}: a window needs at least 2 tokens and at most the rows' {}", n, length));
  std::vector<int64_t> ids;
  if (tokens.dtype() == DType::Int64) ids = tokens.to_vector<int64_t>();
  else for (int32_t v : tokens.to_vector<int32_t>()) ids.push_back(v);
  std::vector<std::vector<int64_t>> windows;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t start = 0; start + n <= length; start += n)
      windows.emplace_back(ids.begin() + r * length + start, ids.begin() + r * length + start + n);
  return windows;
}

LmFigures compare_language_models(ReferenceEvaluator& a, const std::string& name_a, ReferenceEvaluator& b,
                                  const std::string& name_b, const LmOptions& options) {
  Side sa(a, name_a, emulate_accuracy_level()), sb(b, name_b, emulate_accuracy_level() || options.emulate_b);
  const std::vector<std::vector<int64_t>> windows = token_windows(options.tokens, options.context);
  for (Side* s : {&sa, &sb}) {
    const int64_t v = declared_vocab(s == &sa ? a : b, s->gen.signature().logits);
    if (v > 0)
      for (size_t w = 0; w < windows.size(); ++w) check_ids(windows[w], int(w), v, s->name);
  }
  std::vector<TokenFigures> per_token;
  for (size_t w = 0; w < windows.size(); ++w) {
    int64_t va = 0, vb = 0;
    const std::vector<float> la = window_logits(sa, windows[w], va);
    const std::vector<float> lb = window_logits(sb, windows[w], vb);
    if (va != vb) fail_usage(fmt::format("{} has a vocabulary of {}, {} of {}: their predictions cannot be compared", name_a, va, name_b, vb));
    check_ids(windows[w], int(w), va, name_a);
    std::vector<TokenFigures> f = window_figures(int(w), windows[w], la.data(), lb.data(), va);
    per_token.insert(per_token.end(), f.begin(), f.end());
  }
  LmFigures figures = summarize(std::move(per_token), int(windows.size()), int64_t(windows.front().size()));
  if (options.generate > 0) {
    figures.generate_steps = options.generate;
    for (const std::vector<int64_t>& window : windows) {
      const std::vector<int64_t> half(window.begin(), window.begin() + std::max<ptrdiff_t>(1, ptrdiff_t(window.size() / 2)));
      const auto ta = sa.run({.prompt = row_tensor(half), .new_tokens = options.generate}).tokens.front();
      const auto tb = sb.run({.prompt = row_tensor(half), .new_tokens = options.generate}).tokens.front();
      std::optional<int> first;
      for (size_t i = 0; i < std::min(ta.size(), tb.size()) && !first; ++i)
        if (ta[i] != tb[i]) first = int(i);
      figures.first_divergence.push_back(first);
    }
  }
  return figures;
}

}  // namespace refeval::quality
