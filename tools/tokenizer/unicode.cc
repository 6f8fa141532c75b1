#include "unicode.h"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

#include "refeval/error.h"

namespace refeval::tokenizer {

int32_t next_code_point(std::string_view s, size_t i, size_t* length) {
  utf8proc_int32_t cp = -1;
  const utf8proc_ssize_t n =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), utf8proc_ssize_t(s.size() - i), &cp);
  if (n <= 0) {
    *length = 1;
    return -1;
  }
  *length = size_t(n);
  return cp;
}

std::vector<int32_t> code_points(std::string_view s) {
  std::vector<int32_t> out;
  out.reserve(s.size());
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    const int32_t cp = next_code_point(s, i, &n);
    out.push_back(cp < 0 ? 0xFFFD : cp);
  }
  return out;
}

void append_utf8(std::string& out, int32_t cp) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(cp, buf);
  out.append(reinterpret_cast<const char*>(buf), size_t(n));
}

std::string utf8(int32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0, n = 0; i < s.size(); i += n)
    if (next_code_point(s, i, &n) < 0) return i;
  return std::string_view::npos;
}

// The WHATWG / Unicode "maximal subpart" rule: a lead byte and the continuation bytes that can
// still complete it become one U+FFFD; the byte that breaks the sequence starts the next one.
std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char c = b[i];
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      out.push_back(char(c));
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    size_t j = i + 1, got = 0;
    while (got < need && j < bytes.size()) {
      const unsigned char d = b[j];
      if (got == 0 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) break;
      ++j, ++got;
    }
    if (got == need) out.append(bytes.substr(i, j - i));
    else out += "\xEF\xBF\xBD";
    i = j;
  }
  return out;
}

namespace {
utf8proc_category_t category(int32_t cp) { return utf8proc_category(cp); }
}  // namespace

bool is_white_space(int32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85) return true;
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool is_numeric(int32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_bert_punctuation(int32_t cp) {
  if ((cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) || (cp >= 0x7B && cp <= 0x7E))
    return true;
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool is_other(int32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CN || c == UTF8PROC_CATEGORY_CO ||
         c == UTF8PROC_CATEGORY_CS;
}

bool is_mark(int32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

bool is_mark_nonspacing(int32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

std::string normalize(std::string_view s, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), utf8proc_ssize_t(s.size()), &out,
                                          utf8proc_option_t(options));
  if (n < 0) fail_input(std::string("unicode normalization failed: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    const int32_t cp = next_code_point(s, i, &n);
    if (cp == 0x130) out += "i\xCC\x87";  // the one code point whose full lowercase is two (SpecialCasing.txt)
    else append_utf8(out, cp < 0 ? 0xFFFD : utf8proc_tolower(cp));
  }
  return out;
}

}  // namespace refeval::tokenizer
