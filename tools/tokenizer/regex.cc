#define PCRE2_CODE_UNIT_WIDTH 8
#include "regex.h"

#include <stdexcept>

#include <fmt/format.h>
#include <pcre2.h>

#include "unicode.h"

namespace refeval::tokenizer {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

std::string oniguruma_to_pcre2(const std::string& p) {
  static const std::string kWord = R"(\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control})";
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      switch (e) {
        case 's': out += R"(\p{White_Space})"; break;
        case 'S': out += R"(\P{White_Space})"; break;
        case 'w': out += in_class ? kWord : "[" + kWord + "]"; break;
        case 'W': out += in_class ? std::string(R"(\W)") : "[^" + kWord + "]"; break;
        case 'h': out += in_class ? "0-9A-Fa-f" : "[0-9A-Fa-f]"; break;
        case 'H': out += in_class ? std::string(R"(\H)") : "[^0-9A-Fa-f]"; break;
        default: out += c, out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a leading ] is a literal
      continue;
    }
    if (in_class && c == '[' && p.compare(i, 2, "[:") == 0) {  // a POSIX class inside a class
      const size_t close = p.find(":]", i + 2);
      if (close != std::string::npos) {
        out.append(p, i, close + 2 - i);
        i = close + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

Regex Regex::oniguruma(const std::string& pattern) {
  Regex r;
  r.translated_ = oniguruma_to_pcre2(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(r.translated_.data()), r.translated_.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw std::invalid_argument(fmt::format("{} at offset {} of the PCRE2 form '{}'", reinterpret_cast<const char*>(message),
                                            offset, r.translated_));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // a speed-up where the platform has it; matching is the same without
  r.code_ = std::make_shared<Code>();
  r.code_->code = code;
  return r;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view s) const {
  std::vector<std::pair<size_t, size_t>> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t start = 0, last_end = std::string_view::npos;
  while (start <= s.size()) {
    const int rc = pcre2_match(code_->code, subject, s.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) {
      if (rc == PCRE2_ERROR_NOMATCH) break;
      pcre2_match_data_free(md);
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw RegexMatchError(fmt::format("regular expression '{}': {}", translated_, reinterpret_cast<const char*>(message)));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (b == e && b == last_end) {  // an empty match where the last one ended: step one character on
      if (b >= s.size()) break;
      size_t n = 1;
      next_code_point(s, b, &n);
      start = b + n;
      continue;
    }
    out.emplace_back(b, e);
    last_end = e;
    start = e;
  }
  pcre2_match_data_free(md);
  return out;
}

}  // namespace refeval::tokenizer
