// The Unicode a tokenizer needs: code points in and out of UTF-8, the character classes Hugging
// Face's tokenizers test with Rust's char methods, case, normalization forms, and a lossy UTF-8
// repair for decoded bytes. Categories, White_Space and lowercase follow Unicode 17.0, the tables
// unicode_tables.inc generated from the Unicode Character Database (scripts/unicode), as the node
// that runs the tokenizers.js oracle does. Normalization forms stay Debian's utf8proc (Unicode
// 15.0): the few decompositions and compositions new in Unicode 16 and 17 (Tulu-Tigalari, Kirat
// Rai and Gurung Khema vowels, outlined Latin letters and digits) are not applied.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace refeval::tokenizer {

// The code point at `s[i]` and its length in bytes; -1 and length 1 on an invalid sequence.
int32_t next_code_point(std::string_view s, size_t i, size_t* length);
// The code points of valid UTF-8 (an invalid byte yields U+FFFD).
std::vector<int32_t> code_points(std::string_view s);
void append_utf8(std::string& out, int32_t cp);
std::string utf8(int32_t cp);
// The offset of the first byte that is not part of valid UTF-8, or npos.
size_t invalid_utf8_at(std::string_view s);
// Bytes as UTF-8, each maximal invalid subpart replaced by U+FFFD (Rust's from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);

// The general categories, in utf8proc's order (Cn, unassigned, first).
enum class Category : uint8_t { Cn, Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po, Sm, Sc, Sk, So,
                                Zs, Zl, Zp, Cc, Cf, Cs, Co };
constexpr int kCategories = 30;
Category general_category(int32_t cp);
// The assigned code points as sorted runs of one category; a code point in none is Cn.
struct CategoryRange {
  int32_t first, last;
  Category category;
};
std::span<const CategoryRange> category_ranges();

// Rust's char::is_whitespace (the White_Space property: Zs, Zl, Zp, \t-\r and U+0085).
bool is_white_space(int32_t cp);
// Rust's char::is_numeric (general category N*).
bool is_numeric(int32_t cp);
// Hugging Face's punctuation: ASCII punctuation or general category P*.
bool is_bert_punctuation(int32_t cp);
// General category C other (Cc, Cf, Cn, Co, Cs): BertNormalizer's control characters.
bool is_other(int32_t cp);
bool is_mark(int32_t cp);              // Mn, Mc, Me
bool is_mark_nonspacing(int32_t cp);   // Mn

enum class NormalForm { NFC, NFD, NFKC, NFKD };
// utf8proc's (Unicode 15.0), as said above.
std::string normalize(std::string_view s, NormalForm form);
// Each code point's full lowercase mapping (U+0130 gives "i̇": SpecialCasing.txt's unconditional
// entries over the simple mapping), without context (no final sigma), as Hugging Face's
// NormalizedString::lowercase (Rust's char::to_lowercase).
std::string lowercase(std::string_view s);

}  // namespace refeval::tokenizer
