// tokenizer.json's regular expressions (tools/tokenizer/regex.cc): general categories follow
// tools/tokenizer/unicode.h's Unicode 17 tables, not PCRE2 10.42's own Unicode 14 ones, outside
// and inside [...] classes, negated or not; other properties stay PCRE2's. And the tables' lowercase.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

using namespace refeval::tokenizer;

namespace {

using Matches = std::vector<std::pair<size_t, size_t>>;
Matches find_all(const std::string& pattern, const std::string& text) { return Regex::oniguruma(pattern).find_all(text); }
// The matched texts.
std::vector<std::string> pieces(const std::string& pattern, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& [b, e] : find_all(pattern, text)) out.push_back(text.substr(b, e - b));
  return out;
}
using Pieces = std::vector<std::string>;

// Characters new in Unicode 15 (unassigned in PCRE2 10.42's tables)
const std::string kPinkHeart = utf8(0x1FA77);             // So
const std::string kKawi = utf8(0x11F04) + utf8(0x11F05);  // Lo Lo
const std::string kKawiDigits = utf8(0x11F50) + utf8(0x11F51) + utf8(0x11F52) + utf8(0x11F53) + utf8(0x11F54);  // Nd
const std::string kKawiDanda = utf8(0x11F43);             // Po
const std::string kKawiSign = utf8(0x11F00);              // Mn
const std::string kKaktovik = utf8(0x1D2C0);              // No
const std::string kCyrillicModifier = utf8(0x1E030);      // Lm
const std::string kLatinSmall = utf8(0x1DF25);            // Ll
// Characters new in Unicode 16 and 17 (unassigned in utf8proc 2.8's Unicode 15)
const std::string kGarayCapital = utf8(0x10D50);  // Lu, GARAY CAPITAL LETTER A (16)
const std::string kGaraySmall = utf8(0x10D70);    // Ll, its lowercase
const std::string kGarayDigits = utf8(0x10D40) + utf8(0x10D41) + utf8(0x10D42) + utf8(0x10D43);  // Nd
const std::string kBeriaCapital = utf8(0x16EA0);  // Lu, BERIA ERFE CAPITAL LETTER ARKAB (17)
const std::string kBeriaSmall = utf8(0x16EBB);    // Ll, its lowercase
const std::string kFingerprint = utf8(0x1FAC6);   // So (16)
const std::string kRiyal = utf8(0x20C1);          // Sc, SAUDI RIYAL SIGN (17)
const std::string kPharyngeal = utf8(0x295);      // ʕ: Ll in PCRE2's Unicode 14, Lo since Unicode 16

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("tokenizer regex: \\p{X} outside a class follows Unicode 15") {
  CHECK(pieces(R"(\p{So})", "a" + kPinkHeart + "b") == Pieces{kPinkHeart});
  CHECK(pieces(R"(\p{S}+)", "you " + kPinkHeart) == Pieces{kPinkHeart});
  CHECK(pieces(R"(\p{L}+)", "x" + kKawi + " y") == Pieces{"x" + kKawi, "y"});
  CHECK(pieces(R"(\p{Lo}+)", "x" + kKawi) == Pieces{kKawi});
  CHECK(pieces(R"(\p{Lm})", "a" + kCyrillicModifier) == Pieces{kCyrillicModifier});
  CHECK(pieces(R"(\p{Ll}+)", "A" + kLatinSmall + "b") == Pieces{kLatinSmall + "b"});
  CHECK(pieces(R"(\p{Mn})", kKawi + kKawiSign) == Pieces{kKawiSign});
  CHECK(pieces(R"(\p{Po})", kKawi + kKawiDanda) == Pieces{kKawiDanda});
  CHECK(pieces(R"(\p{No})", "1" + kKaktovik) == Pieces{kKaktovik});
  // Llama-3's \p{N}{1,3} groups Kawi digits by three; \d is \p{Nd}
  CHECK(find_all(R"(\p{N}{1,3})", kKawiDigits) == Matches{{0, 12}, {12, 20}});
  CHECK(pieces(R"(\d+)", "x" + kKawiDigits) == Pieces{kKawiDigits});
  // Oniguruma's long names, case and separators aside, and \p{^X}
  CHECK(pieces(R"(\p{Letter}+)", "1" + kKawi) == Pieces{kKawi});
  CHECK(pieces(R"(\p{other_symbol})", kPinkHeart) == Pieces{kPinkHeart});
  CHECK(pieces(R"(\p{Decimal Number}+)", kKawiDigits) == Pieces{kKawiDigits});
  CHECK(pieces(R"(\p{^L}+)", "ab" + kPinkHeart + kKawi + ".") == Pieces{kPinkHeart, "."});
}

TEST_CASE("tokenizer regex: \\p{X} follows Unicode 16 and 17") {
  CHECK(pieces(R"(\p{Lu})", kGaraySmall + kGarayCapital) == Pieces{kGarayCapital});
  CHECK(pieces(R"(\p{Ll})", kGarayCapital + kGaraySmall) == Pieces{kGaraySmall});
  CHECK(pieces(R"(\p{Lu}\p{Ll}+)", "." + kBeriaCapital + kBeriaSmall + kBeriaSmall) == Pieces{kBeriaCapital + kBeriaSmall + kBeriaSmall});
  CHECK(pieces(R"(\p{L}+)", kGarayDigits + kGarayCapital + kGaraySmall) == Pieces{kGarayCapital + kGaraySmall});
  CHECK(find_all(R"(\p{N}{1,3})", kGarayDigits) == Matches{{0, 12}, {12, 16}});
  CHECK(pieces(R"(\d+)", "x" + kGarayDigits) == Pieces{kGarayDigits});
  CHECK(pieces(R"( ?[\p{P}\p{S}]+)", "x " + kFingerprint + kRiyal) == Pieces{" " + kFingerprint + kRiyal});
  CHECK(pieces(R"(\w+)", "." + kGarayCapital + kGarayDigits + ".") == Pieces{kGarayCapital + kGarayDigits});
  // a category that lost a code point: PCRE2's \p{Ll} has ʕ, so the class is written out in full
  CHECK(pieces(R"(\p{Ll})", kPharyngeal) == Pieces{});
  CHECK(pieces(R"(\p{Lo})", kPharyngeal) == Pieces{kPharyngeal});
  CHECK(pieces(R"([\p{Ll}]+)", "a" + kPharyngeal + "b") == Pieces{"a", "b"});
  CHECK(oniguruma_to_pcre2(R"(\p{Ll})").find(R"(\p{)") == std::string::npos);
}

TEST_CASE("tokenizer unicode: categories, White_Space and lowercase follow Unicode 17") {
  CHECK(general_category(0x10D50) == Category::Lu);
  CHECK(general_category(0x10D70) == Category::Ll);
  CHECK(general_category(0x295) == Category::Lo);
  CHECK(general_category(0x10D8A) == Category::Cn);  // unassigned in Garay's block
  CHECK(is_numeric(0x10D40));
  CHECK(is_bert_punctuation(0x16D6D));  // KIRAT RAI SIGN YUPI (Po, 16)
  CHECK(!is_other(0x1FAC6));
  CHECK(is_mark_nonspacing(0x11F5A));  // KAWI SIGN NUKTA (Mn, 16)
  CHECK(lowercase(kGarayCapital) == kGaraySmall);
  CHECK(lowercase(kBeriaCapital + "A" + kGaraySmall) == kBeriaSmall + "a" + kGaraySmall);
  CHECK(lowercase(utf8(0xA7CB)) == utf8(0x264));  // LATIN CAPITAL LETTER RAMS HORN (16)
  CHECK(lowercase(utf8(0x130)) == "i\xCC\x87");  // SpecialCasing.txt: i and U+0307
  CHECK(lowercase(utf8(0x1E9E) + utf8(0x3A3) + utf8(0x1F88)) == utf8(0xDF) + utf8(0x3C3) + utf8(0x1F80));  // ẞ Σ ᾈ: ß σ ᾀ
  CHECK(lowercase(utf8(0x100) + utf8(0x101) + utf8(0x102)) == utf8(0x101) + utf8(0x101) + utf8(0x103));  // a run of step 2
  // \s stays PCRE2's White_Space (unchanged since Unicode 6.3): the same code points as the table's
  const Regex space = Regex::oniguruma(R"(\A\s\z)");
  int wrong = 0;
  for (int32_t cp = 0; cp <= 0x10FFFF; ++cp)
    if ((cp < 0xD800 || cp > 0xDFFF) && space.find_all(utf8(cp)).empty() == is_white_space(cp)) ++wrong;
  CHECK(wrong == 0);
}

TEST_CASE("tokenizer regex: \\P{X} and [^...] follow Unicode 15") {
  CHECK(pieces(R"(\P{L}+)", "ab" + kKawi + ".!") == Pieces{".!"});
  CHECK(pieces(R"(\P{So})", kPinkHeart + "x") == Pieces{"x"});
  CHECK(pieces(R"(\D+)", kKawiDigits + "x") == Pieces{"x"});
  // Llama-3's ` ?[^\s\p{L}\p{N}]+` takes neither a Kawi letter nor a Kawi digit
  CHECK(pieces(R"( ?[^\s\p{L}\p{N}]+)", " " + kKawi + " " + kKawiDigits + " !") == Pieces{" !"});
  CHECK(pieces(R"([^\r\n\p{L}\p{N}]?\p{L}+)", " " + kKawi + "'s") == Pieces{" " + kKawi, "'s"});
}

TEST_CASE("tokenizer regex: categories inside [...] follow Unicode 15") {
  // DeepSeek-V3's ` ?[\p{P}\p{S}]+`: "I love you 🩷" ends in one piece " 🩷"
  CHECK(pieces(R"( ?[\p{P}\p{S}]+)", "I love you " + kPinkHeart) == Pieces{" " + kPinkHeart});
  CHECK(pieces(R"([\p{L}\p{M}]+)", "." + kKawi + kKawiSign + ".") == Pieces{kKawi + kKawiSign});
  CHECK(pieces(R"([\p{Nd}x]+)", "y" + kKawiDigits + "x") == Pieces{kKawiDigits + "x"});
  // \P{X} inside a class is the complement's ranges; [^\P{L}] is \p{L}
  CHECK(pieces(R"([\P{L}]+)", "x" + kKawi + ".!" + kPinkHeart) == Pieces{".!" + kPinkHeart});
  CHECK(pieces(R"([^\P{L}]+)", ".x" + kKawi + "!") == Pieces{"x" + kKawi});
  CHECK(pieces(R"([\P{L}\p{Lo}]+)", "x" + kKawi + "." + kPinkHeart + "y") == Pieces{kKawi + "." + kPinkHeart});
  CHECK(pieces(R"([\p{^N}]+)", kKawiDigits + "a" + kKawi) == Pieces{"a" + kKawi});
  // \w takes Unicode 15 letters and digits (Oniguruma's word characters)
  CHECK(pieces(R"(\w+)", "." + kKawi + kKawiDigits + ".") == Pieces{kKawi + kKawiDigits});
  CHECK(pieces(R"([^\w\s]+)", kKawi + " " + kPinkHeart) == Pieces{kPinkHeart});
}

TEST_CASE("tokenizer regex: the explicit classes agree with the tables, other properties stay PCRE2's") {
  // A sample of all code points (surrogates aside) against each category, and its negation in and
  // out of a class
  using enum Category;
  const std::vector<std::pair<const char*, std::vector<Category>>> categories = {
      {"L", {Lu, Ll, Lt, Lm, Lo}}, {"N", {Nd, Nl, No}}, {"So", {So}}, {"Lu", {Lu}}, {"Ll", {Ll}}, {"Lt", {Lt}}, {"Lm", {Lm}},
      {"M", {Mn, Mc, Me}}, {"Mn", {Mn}}, {"Nl", {Nl}}, {"Pd", {Pd}}, {"Sk", {Sk}}, {"Z", {Zs, Zl, Zp}},
      {"C", {Cc, Cf, Co, Cn}}, {"Cn", {Cn}}, {"Co", {Co}}};
  for (const auto& [name, cats] : categories) {
    const Regex in = Regex::oniguruma(std::string(R"(\A\p{)") + name + R"(}\z)");
    const Regex out = Regex::oniguruma(std::string(R"(\A\P{)") + name + R"(}\z)");
    const Regex out_in_class = Regex::oniguruma(std::string(R"(\A[a\P{)") + name + R"(}]\z)");
    int wrong = 0;
    for (int32_t cp = 0; cp <= 0x10FFFF; cp += cp < 0x30000 ? 7 : 997) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      bool want = false;
      for (const auto c : cats) want = want || general_category(cp) == c;
      const std::string s = utf8(cp);
      if (!in.find_all(s).empty() != want || out.find_all(s).empty() != want ||
          out_in_class.find_all(s).empty() != (want && cp != 'a'))
        ++wrong;
    }
    const std::string category = name;  // a copy: clang 14 cannot capture a structured binding
    CHECK_MESSAGE(wrong == 0, category);
  }
  // every name compiles; Cs (no surrogates in UTF-8), scripts and binary properties are PCRE2's
  for (const char* name : {"L", "LC", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc",
                           "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C", "Cc",
                           "Cf", "Co", "Cn", "Cs", "Letter", "Uppercase_Letter", "Mark", "Number", "Punctuation", "Symbol",
                           "Separator", "Other", "Unassigned", "Private_Use"}) {
    for (const char* form : {R"(\p{%})", R"(\P{%})", R"([x\p{%}])", R"([^x\P{%}])"}) {
      std::string pattern = form;
      pattern.replace(pattern.find('%'), 1, name);
      CHECK_NOTHROW(Regex::oniguruma(pattern));
    }
  }
  CHECK(oniguruma_to_pcre2(R"(\p{Han}\p{Alphabetic}\P{Greek}\p{Cs}\\p{L})") == R"(\p{Han}\p{Alphabetic}\P{Greek}\p{Cs}\\p{L})");
  // PCRE2's property and the code points its tables lack; \P inside a class written out in full
  const std::string letters = oniguruma_to_pcre2(R"(\p{L})");
  CHECK(letters.rfind(R"([\p{L}\x{)", 0) == 0);
  CHECK(letters.find(R"(\x{11f04}-\x{11f10})") != std::string::npos);
  CHECK(oniguruma_to_pcre2(R"(\P{L})").rfind(R"([^\p{L}\x{)", 0) == 0);
  CHECK(oniguruma_to_pcre2(R"([\P{L}])").rfind(R"([\x{0}-\x{40}\x{5b}-\x{60})", 0) == 0);
  CHECK(oniguruma_to_pcre2(R"(\p{Lu})").rfind(R"([\p{Lu})", 0) == 0);
  CHECK(oniguruma_to_pcre2(R"(\p{Cn})").find(R"(\p{)") == std::string::npos);  // PCRE2's Cn has the characters new in Unicode 15 to 17

}

TEST_CASE("tokenizer regex: a match PCRE2 gives up on names the pattern as written") {
  const std::string text = std::string(40, 'x') + "!";
  for (const char* pattern : {R"(^(\w+\s?)*$)", R"(^(\p{L}+)+$)"}) {
    try {
      Regex::oniguruma(pattern).find_all(text);
      FAIL("no error for ", pattern);
    } catch (const RegexMatchError& e) {
      CHECK(std::string(e.what()) == std::string("regular expression '") + pattern + "': match limit exceeded");
    }
  }
  CHECK(pieces(R"(\p{Han}+)", "a北京b") == Pieces{"北京"});
}

}  // TEST_SUITE
