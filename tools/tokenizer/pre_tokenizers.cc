// Pre-tokenizers: the pieces the model tokenizes one at a time, as Hugging Face's tokenizers
// split them. Added tokens found before are never touched.
#include <fmt/format.h>

#include "components.h"
#include "unicode.h"

namespace refeval::tokenizer {
namespace {

using Parts = std::vector<std::pair<size_t, std::string>>;

// GPT-2's pre-tokenizer pattern (contractions, letters, digits, other symbols, each with one
// leading space; runs of white space, the last space left for the next word).
const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& p : steps_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {
    if (use_regex) regex_ = Regex::oniguruma(kGpt2Pattern);
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](const std::string& text) {
      std::string s = add_prefix_space_ && !text.starts_with(' ') ? " " + text : text;
      if (!use_regex_) return Parts{{0, std::move(s)}};
      return split_spans(s, spans_of(s, regex_->find_all(s)), SplitBehavior::Isolated);
    });
    for (Piece& p : pieces) {
      if (p.added_id >= 0) continue;
      std::string mapped;
      for (const unsigned char c : p.text) mapped += byte_to_unicode(c);
      p.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::optional<Regex> regex_;
};

class Split : public PreTokenizer {
 public:
  Split(Pattern pattern, SplitBehavior behavior, bool invert) : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](const std::string& text) {
      std::vector<Span> spans = spans_of(text, pattern_.find_all(text));
      if (invert_)
        for (Span& s : spans) s.match = !s.match;
      return split_spans(text, spans, behavior_);
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// A predicate on code points splits each piece (Whitespace, BertPreTokenizer, Punctuation, Digits).
class CharSplit : public PreTokenizer {
 public:
  CharSplit(std::function<bool(int32_t)> pred, SplitBehavior behavior) : pred_(std::move(pred)), behavior_(behavior) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](const std::string& text) { return split_spans(text, spans_of_chars(text, pred_), behavior_); });
  }

 private:
  std::function<bool(int32_t)> pred_;
  SplitBehavior behavior_;
};

// Spaces become the replacement character (▁); the first piece of the text ("first") or every
// piece ("always") gets one in front unless it starts with one; then, with split, each ▁ starts
// a new piece.
class Metaspace : public PreTokenizer {
 public:
  enum class Prepend { Always, First, Never };
  Metaspace(std::string replacement, Prepend prepend, bool split) : rep_(std::move(replacement)), prepend_(prepend), split_(split) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (Piece& p : pieces) {
      if (p.added_id >= 0) continue;
      p.text = replace_matches(p.text, find_literal(p.text, " "), rep_);
      const bool prepend = prepend_ == Prepend::Always || (prepend_ == Prepend::First && p.at_origin);
      if (prepend && !p.text.starts_with(rep_)) p.text = rep_ + p.text;
    }
    if (split_)
      split_pieces(pieces, [&](const std::string& text) {
        return split_spans(text, spans_of(text, find_literal(text, rep_)), SplitBehavior::MergedWithNext);
      });
  }

 private:
  std::string rep_;
  Prepend prepend_;
  bool split_;
};

SplitBehavior behavior_field(const json& j, const std::string& at, const char* dflt) {
  const std::string name = string_field(j, "behavior", at, std::string(dflt));
  const auto b = parse_split_behavior(name);
  if (!b) fail_at(at, fmt::format("behavior '{}' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous", name));
  return *b;
}

std::string single_char(const json& j, const char* key, const std::string& at, const char* dflt) {
  const std::string s = string_field(j, key, at, std::string(dflt));
  size_t n = 0;
  if (s.empty() || next_code_point(s, 0, &n) < 0 || n != s.size()) fail_at(at, fmt::format("\"{}\" must be one character", key));
  return s;
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  const std::string at = fmt::format("{} ({})", where, type);
  if (type == "Sequence") return std::make_unique<Sequence>(sequence_steps<PreTokenizer>(j, "pretokenizers", where, at, make_pre_tokenizer));
  if (type == "ByteLevel") return std::make_unique<ByteLevel>(bool_field(j, "add_prefix_space", at, true), bool_field(j, "use_regex", at, true));
  if (type == "Split")
    return std::make_unique<Split>(Pattern::from_json(container_field(j, "pattern", at, true), at), behavior_field(j, at, "Isolated"),
                                   bool_field(j, "invert", at, false));
  if (type == "Metaspace") {
    const std::string scheme = string_field(j, "prepend_scheme", at, std::string("always"));
    Metaspace::Prepend prepend = Metaspace::Prepend::Always;
    if (scheme == "first") prepend = Metaspace::Prepend::First;
    else if (scheme == "never") prepend = Metaspace::Prepend::Never;
    else if (scheme != "always") fail_at(at, fmt::format("prepend_scheme '{}' is not one of always, first, never", scheme));
    if (!bool_field(j, "add_prefix_space", at, true)) prepend = Metaspace::Prepend::Never;  // the older spelling
    return std::make_unique<Metaspace>(single_char(j, "replacement", at, "\xE2\x96\x81"), prepend, bool_field(j, "split", at, true));
  }
  if (type == "WhitespaceSplit") return std::make_unique<CharSplit>(is_white_space, SplitBehavior::Removed);
  if (type == "Whitespace") {  // \w+|[^\w\s]+, the matches kept
    auto split = std::make_unique<Split>(Pattern::from_json({{"Regex", R"(\w+|[^\w\s]+)"}}, at), SplitBehavior::Removed, true);
    return split;
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(std::make_unique<CharSplit>(is_white_space, SplitBehavior::Removed));
    steps.push_back(std::make_unique<CharSplit>(is_bert_punctuation, SplitBehavior::Isolated));
    return std::make_unique<Sequence>(std::move(steps));
  }
  if (type == "Punctuation") return std::make_unique<CharSplit>(is_bert_punctuation, behavior_field(j, at, "Isolated"));
  if (type == "Digits")
    return std::make_unique<CharSplit>(is_numeric, bool_field(j, "individual_digits", at, false) ? SplitBehavior::Isolated
                                                                                                  : SplitBehavior::Contiguous);
  if (type == "CharDelimiterSplit") {
    const std::vector<int32_t> d = code_points(single_char(j, "delimiter", at, ""));
    return std::make_unique<CharSplit>([c = d[0]](int32_t x) { return x == c; }, SplitBehavior::Removed);
  }
  fail_at(where, fmt::format("pre_tokenizer type '{}' is not supported (supported: ByteLevel, Split, Sequence, Metaspace, "
                             "BertPreTokenizer, Whitespace, WhitespaceSplit, Punctuation, Digits, CharDelimiterSplit)",
                             type));
}

}  // namespace refeval::tokenizer
