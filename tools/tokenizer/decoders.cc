// Decoders: token strings back to text, as Hugging Face's tokenizers rewrite the list before
// joining it.
#include <fmt/format.h>

#include "components.h"
#include "unicode.h"

namespace refeval::tokenizer {
namespace {

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : steps_) d->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

// GPT-2's byte stand-ins back to bytes, all tokens at once, then UTF-8 with invalid bytes as
// U+FFFD; a token with a character that stands for no byte (an added token) keeps its own bytes.
class ByteLevel : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string mine;
      bool all = true;
      for (const int32_t cp : code_points(t)) {
        const int b = byte_of_unicode(cp);
        if (b < 0) {
          all = false;
          break;
        }
        mine.push_back(char(b));
      }
      bytes += all ? mine : t;
    }
    tokens = {utf8_lossy(bytes)};
  }
};

// Runs of <0xNN> tokens become their bytes as UTF-8, or one U+FFFD per byte when not valid.
class ByteFallback : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t count = 0;
    const auto flush = [&] {
      if (count == 0) return;
      if (invalid_utf8_at(bytes) == std::string::npos) out.push_back(bytes);
      else
        for (size_t i = 0; i < count; ++i) out.push_back("\xEF\xBF\xBD");
      bytes.clear(), count = 0;
    };
    for (std::string& t : tokens) {
      const int b = byte_token(t);
      if (b >= 0) {
        bytes.push_back(char(b)), ++count;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static int byte_token(const std::string& t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class Fuse : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens = {all};
  }
};

class Replace : public Decoder {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) t = replace_matches(t, pattern_.find_all(t), content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// Up to `start` leading and `stop` trailing `content` characters removed from each token.
class Strip : public Decoder {
 public:
  Strip(int32_t content, int64_t start, int64_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      const std::vector<int32_t> cps = code_points(t);
      size_t b = 0, e = cps.size();
      while (int64_t(b) < start_ && b < e && cps[b] == content_) ++b;
      while (int64_t(cps.size() - e) < stop_ && e > b && cps[e - 1] == content_) --e;
      std::string out;
      for (size_t i = b; i < e; ++i) append_utf8(out, cps[i]);
      t = std::move(out);
    }
  }

 private:
  int32_t content_;
  int64_t start_, stop_;
};

// The replacement character (▁) back to a space; in the first token (prepend scheme not
// "never") it is dropped, as Hugging Face's Metaspace decoder does.
class Metaspace : public Decoder {
 public:
  Metaspace(std::string replacement, bool drop_first) : rep_(std::move(replacement)), drop_first_(drop_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_matches(tokens[i], find_literal(tokens[i], rep_), i == 0 && drop_first_ ? "" : " ");
  }

 private:
  std::string rep_;
  bool drop_first_;
};

// Tokens after the first: the continuing prefix removed, or a space in front; with cleanup,
// BERT's spaces before punctuation and contractions removed in each token.
class WordPiece : public Decoder {
 public:
  WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.starts_with(prefix_)) t.erase(0, prefix_.size());
        else t = " " + t;
      }
      if (cleanup_) t = cleanup(t);
    }
  }
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},   {" !", "!"},   {" ,", ","},          {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_matches(s, find_literal(s, from), to);
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

// The end-of-word suffix becomes a space, except in the last token where it is removed.
class BpeDecoder : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_matches(tokens[i], find_literal(tokens[i], suffix_), i + 1 == tokens.size() ? "" : " ");
  }

 private:
  std::string suffix_;
};

int32_t one_char(const json& j, const char* key, const std::string& at) {
  const std::string s = string_field(j, key, at);
  const std::vector<int32_t> cps = code_points(s);
  if (cps.size() != 1) fail_at(at, fmt::format("\"{}\" must be one character", key));
  return cps[0];
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  const std::string at = fmt::format("{} ({})", where, type);
  if (type == "Sequence") return std::make_unique<Sequence>(sequence_steps<Decoder>(j, "decoders", where, at, make_decoder));
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(container_field(j, "pattern", at, true), at), string_field(j, "content", at));
  if (type == "Strip") return std::make_unique<Strip>(one_char(j, "content", at), int_field(j, "start", at, 0), int_field(j, "stop", at, 0));
  if (type == "Metaspace") {
    const std::string scheme = string_field(j, "prepend_scheme", at, std::string("always"));
    if (scheme != "always" && scheme != "first" && scheme != "never")
      fail_at(at, fmt::format("prepend_scheme '{}' is not one of always, first, never", scheme));
    const bool drop_first = scheme != "never" && bool_field(j, "add_prefix_space", at, true);
    const std::string replacement = string_field(j, "replacement", at, std::string("\xE2\x96\x81"));
    if (code_points(replacement).size() != 1) fail_at(at, "\"replacement\" must be one character");  // a char in Rust
    return std::make_unique<Metaspace>(replacement, drop_first);
  }
  if (type == "WordPiece")
    return std::make_unique<WordPiece>(string_field(j, "prefix", at, std::string("##")), bool_field(j, "cleanup", at, true));
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(string_field(j, "suffix", at, std::string("</w>")));
  fail_at(where, fmt::format("decoder type '{}' is not supported (supported: ByteLevel, ByteFallback, Fuse, Replace, Strip, "
                             "Metaspace, WordPiece, BPEDecoder, Sequence)",
                             type));
}

}  // namespace refeval::tokenizer
