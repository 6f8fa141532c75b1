// tokenizer.json's regular expressions, written for Oniguruma (Hugging Face's engine), run by
// PCRE2 in UTF and Unicode-property mode: \p{L}, \p{N}, lookaheads and (?i:...) mean the same in
// both. The few escapes whose Unicode meaning differs are rewritten before compiling: \s and \S
// as the White_Space property (PCRE2's \s also takes U+180E), \w as Oniguruma's word characters
// (Alphabetic, marks, decimal digits, connector punctuation), \h and \H as hex digits (PCRE2's
// horizontal space). ^ and $ are line anchors, as in Oniguruma's Ruby syntax.
// General categories follow utf8proc (Unicode 15, as the rest of the tokenizer) rather than PCRE2's
// tables (Unicode 14 in 10.42): \p{L}, \p{Lu}, \p{Letter}, \P{N}, \p{^S}, \d and the like become
// classes of PCRE2's property plus the code points its tables lack ([\p{L}\x{11f04}-...]), or of
// the category's code point ranges written out where PCRE2 has code points utf8proc does not
// (\p{Cn}; \P{X} inside a class, as the complement's ranges). Other properties utf8proc lacks
// (Alphabetic, White_Space, Join_Control, scripts such as \p{Han}) stay PCRE2's.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace refeval::tokenizer {

// A match PCRE2 gave up on (its backtracking or depth limit: a catastrophic pattern on this text).
struct RegexMatchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Regex {
 public:
  // Throws std::invalid_argument with PCRE2's message and offset when the pattern does not compile.
  static Regex oniguruma(const std::string& pattern);
  // Non-overlapping matches, left to right, as byte offsets [start, end). An empty match right
  // where the previous match ended is skipped (Oniguruma's and Rust's find_iter). `s` must be
  // valid UTF-8. Throws RegexMatchError, naming the pattern as given, when PCRE2 gives up.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const;

 private:
  struct Code;
  std::shared_ptr<Code> code_;
  std::string pattern_;     // as given (named in a match error)
  std::string translated_;
};

// Oniguruma's escapes rewritten for PCRE2, as described above (exposed for tests).
std::string oniguruma_to_pcre2(const std::string& pattern);

}  // namespace refeval::tokenizer
