#include "unicode.h"

#include <algorithm>
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

using enum Category;
struct CodePointRange {
  int32_t first, last;
};
struct LowercaseRun {
  int32_t first, last, step, delta;
};
struct LowercaseExpansion {
  int32_t first;  // the code point
  int32_t to[3];  // 0 past the end
};
#include "unicode_tables.inc"

// The entry of a table sorted by `first` whose first <= cp, or nullptr.
template <typename T, size_t N>
const T* entry_at_or_before(const T (&table)[N], int32_t cp) {
  const T* it = std::upper_bound(table, table + N, cp, [](int32_t c, const T& e) { return c < e.first; });
  return it == table ? nullptr : it - 1;
}

}  // namespace

Category general_category(int32_t cp) {
  const CategoryRange* r = entry_at_or_before(kCategoryRanges, cp);
  return r && cp <= r->last ? r->category : Cn;
}

std::span<const CategoryRange> category_ranges() { return kCategoryRanges; }

bool is_white_space(int32_t cp) {
  const CodePointRange* r = entry_at_or_before(kWhiteSpace, cp);
  return r && cp <= r->last;
}

bool is_numeric(int32_t cp) {
  const auto c = general_category(cp);
  return c == Nd || c == Nl || c == No;
}

bool is_bert_punctuation(int32_t cp) {
  if ((cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) || (cp >= 0x7B && cp <= 0x7E))
    return true;
  const auto c = general_category(cp);
  return c >= Pc && c <= Po;
}

bool is_other(int32_t cp) {
  const auto c = general_category(cp);
  return c == Cc || c == Cf || c == Cn || c == Co || c == Cs;
}

bool is_mark(int32_t cp) {
  const auto c = general_category(cp);
  return c == Mn || c == Mc || c == Me;
}

bool is_mark_nonspacing(int32_t cp) { return general_category(cp) == Mn; }

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
    int32_t cp = next_code_point(s, i, &n);
    if (cp < 0) cp = 0xFFFD;
    if (const LowercaseExpansion* e = entry_at_or_before(kLowercaseExpansions, cp); e && e->first == cp) {
      for (const int32_t to : e->to)
        if (to) append_utf8(out, to);
      continue;
    }
    const LowercaseRun* r = entry_at_or_before(kLowercaseRuns, cp);
    append_utf8(out, r && cp <= r->last && (cp - r->first) % r->step == 0 ? cp + r->delta : cp);
  }
  return out;
}

}  // namespace refeval::tokenizer
