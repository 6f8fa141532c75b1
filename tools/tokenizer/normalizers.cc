// Normalizers: text to text before the pre-tokenizer, as Hugging Face's tokenizers define them.
#include <fmt/format.h>

#include "components.h"
#include "unicode.h"

namespace refeval::tokenizer {
namespace {

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string s) const override {
    for (const auto& n : steps_) s = n->normalize(std::move(s));
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm form) : form_(form) {}
  std::string normalize(std::string s) const override { return tokenizer::normalize(s, form_); }

 private:
  NormalForm form_;
};

class Lowercase : public Normalizer {
 public:
  std::string normalize(std::string s) const override { return lowercase(s); }
};

// Removes every combining mark (Mn, Mc, Me), without decomposing first (use NFD before it).
class StripAccents : public Normalizer {
 public:
  std::string normalize(std::string s) const override {
    std::string out;
    for (size_t i = 0, n = 0; i < s.size(); i += n)
      if (!is_mark(next_code_point(s, i, &n))) out.append(s, i, n);
    return out;
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string s) const override {
    const std::vector<int32_t> cps = code_points(s);
    size_t b = 0, e = cps.size();
    if (left_)
      while (b < e && is_white_space(cps[b])) ++b;
    if (right_)
      while (e > b && is_white_space(cps[e - 1])) --e;
    std::string out;
    for (size_t i = b; i < e; ++i) append_utf8(out, cps[i]);
    return out;
  }

 private:
  bool left_, right_;
};

class Replace : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string s) const override { return replace_matches(s, pattern_.find_all(s), content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string s) const override { return s.empty() ? s : prefix_ + s; }

 private:
  std::string prefix_;
};

// Each byte of the text as GPT-2's printable stand-in.
class ByteLevel : public Normalizer {
 public:
  std::string normalize(std::string s) const override {
    std::string out;
    for (const unsigned char c : s) out += byte_to_unicode(c);
    return out;
  }
};

// BERT's basic cleaning: control characters dropped, white space made ' ', spaces around CJK
// ideographs, accents stripped (NFD, nonspacing marks dropped), lowercase; in that order.
class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}

  std::string normalize(std::string s) const override {
    if (clean_text_ || chinese_) {
      std::string out;
      for (const int32_t c : code_points(s)) {
        if (clean_text_) {
          const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
          if (c == 0 || c == 0xFFFD || (!tab_or_newline && is_other(c))) continue;
          if (tab_or_newline || is_white_space(c)) {
            out += ' ';
            continue;
          }
        }
        if (chinese_ && is_chinese(c)) {
          out += ' ';
          append_utf8(out, c);
          out += ' ';
        } else {
          append_utf8(out, c);
        }
      }
      s = std::move(out);
    }
    if (strip_accents_) {
      const std::string nfd = tokenizer::normalize(s, NormalForm::NFD);
      s.clear();
      for (size_t i = 0, n = 0; i < nfd.size(); i += n)
        if (!is_mark_nonspacing(next_code_point(nfd, i, &n))) s.append(nfd, i, n);
    }
    if (lowercase_) s = lowercase(s);
    return s;
  }

 private:
  // The CJK ideograph blocks BERT pads with spaces (not kana or hangul, which are space-separated).
  static bool is_chinese(int32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
  }
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  const std::string at = fmt::format("{} ({})", where, type);
  if (type == "Sequence") return std::make_unique<Sequence>(sequence_steps<Normalizer>(j, "normalizers", where, at, make_normalizer));
  if (type == "NFC") return std::make_unique<UnicodeForm>(NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip") return std::make_unique<Strip>(bool_field(j, "strip_left", at, true), bool_field(j, "strip_right", at, true));
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(container_field(j, "pattern", at, true), at), string_field(j, "content", at));
  if (type == "Prepend") return std::make_unique<Prepend>(string_field(j, "prepend", at));
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "BertNormalizer") {
    const bool lower = bool_field(j, "lowercase", at, true);
    const json* sa = j.contains("strip_accents") && !j["strip_accents"].is_null() ? &j["strip_accents"] : nullptr;
    if (sa && !sa->is_boolean()) fail_at(at, "\"strip_accents\" must be true, false or null");
    return std::make_unique<BertNormalizer>(bool_field(j, "clean_text", at, true), bool_field(j, "handle_chinese_chars", at, true),
                                            sa ? sa->get<bool>() : lower, lower);
  }
  fail_at(where, fmt::format("normalizer type '{}' is not supported (supported: BertNormalizer, Sequence, NFC, NFD, NFKC, NFKD, "
                             "Lowercase, StripAccents, Strip, Replace, Prepend, ByteLevel)",
                             type));
}

}  // namespace refeval::tokenizer
