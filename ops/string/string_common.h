// Helpers shared by the string family: UTF-8 decoding and a locale-free case mapping.
//
// Case mapping follows the simple (one code point to one code point) Unicode mappings of the
// scripts en_US text uses: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic. It does not
// depend on the C library's locales, so results are the same on every machine. Code points
// outside those blocks, and bytes that are not valid UTF-8, are left as they are.
#pragma once

#include <cstdint>
#include <string>

namespace refeval::ops {

inline char32_t to_lower_cp(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 0x20;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_upper ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  return c;
}

inline char32_t to_upper_cp(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_upper ? (c % 2 == 0) : (c % 2 == 1)) return c - 1;
    return c;
  }
  if (c == 0x3C2) return 0x3A3;  // final sigma
  if (c >= 0x3B1 && c <= 0x3C9) return c - 0x20;
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}

// Applies a code point mapping to a UTF-8 string; invalid sequences are copied byte by byte.
template <class F>
std::string map_utf8(const std::string& s, F&& f) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const unsigned char cb = static_cast<unsigned char>(s[i + k]);
      ok = (cb >> 6) == 2;
      c = (c << 6) | (cb & 0x3F);
    }
    if (!ok) {
      out.push_back(s[i++]);
      continue;
    }
    if (len > 1) {  // only two-byte sequences hold the code points we map
      out.append(s, i, len);
      if (len == 2) {
        out.resize(out.size() - 2);
        const char32_t m = f(c);
        if (m < 0x80) out.push_back(char(m));
        else {
          out.push_back(char(0xC0 | (m >> 6)));
          out.push_back(char(0x80 | (m & 0x3F)));
        }
      }
    } else out.push_back(char(f(c)));
    i += len;
  }
  return out;
}

inline std::string utf8_lower(const std::string& s) { return map_utf8(s, to_lower_cp); }
inline std::string utf8_upper(const std::string& s) { return map_utf8(s, to_upper_cp); }

}  // namespace refeval::ops
