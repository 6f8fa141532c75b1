// StringConcat, RegexFullMatch, StringSplit, StringNormalizer: cases the backend tests miss.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor strings(Shape shape, std::vector<std::string> v) { return tensor<std::string>(std::move(shape), std::move(v)); }
}  // namespace

TEST_CASE("StringConcat broadcasts") {
  // a [2, 1] column against a [3] row
  check_equal(run_node(node("StringConcat", {"a", "b"}, {"c"}), {strings({2, 1}, {"x", "y"}), strings({3}, {"1", "", "é"})}, 20)[0],
              strings({2, 3}, {"x1", "x", "xé", "y1", "y", "yé"}));
}

TEST_CASE("RegexFullMatch matches the whole string with RE2 syntax") {
  struct Case { const char* pattern; std::vector<std::string> in; std::vector<bool> expected; };
  const Case cases[] = {
      {"a+b", {"aab", "aabx", "b", ""}, {true, false, false, false}},  // full, not partial, match
      {"(?i)hello", {"HeLLo", "hello!"}, {true, false}},                 // RE2 inline flags
      {"\\d{3}-\\d{4}", {"555-1234", "55-1234"}, {true, false}},
      {"", {"", "a"}, {true, false}},                                     // the empty pattern
  };
  for (const auto& c : cases) {
    CAPTURE(c.pattern);
    const Shape s{int64_t(c.in.size())};
    check_equal(run_node(node("RegexFullMatch", {"x"}, {"y"}, {attr("pattern", c.pattern)}), {strings(s, c.in)}, 20)[0],
                tensor<bool>(s, c.expected));
  }
  // an invalid pattern is a model error
  CHECK_THROWS_WITH_AS(run_node(node("RegexFullMatch", {"x"}, {"y"}, {attr("pattern", "(a")}), {strings({1}, {"a"})}, 20),
                       doctest::Contains("invalid RE2 pattern"), Error);
}

TEST_CASE("StringSplit follows Python's str.split") {
  struct Case { const char* what; std::vector<Attribute> attrs; std::vector<std::string> in; Tensor y, z; };
  const Case cases[] = {
      {"whitespace runs, leading and trailing ignored", {}, {"  a \t b  ", "", "c"},
       strings({3, 2}, {"a", "b", "", "", "c", ""}), tensor<int64_t>({3}, {2, 0, 1})},
      {"a delimiter keeps empty pieces", {attr("delimiter", ",")}, {"a,,b", ",", ""},
       strings({3, 3}, {"a", "", "b", "", "", "", "", "", ""}), tensor<int64_t>({3}, {3, 2, 1})},
      {"multi-character delimiter with maxsplit", {attr("delimiter", "--"), attr("maxsplit", int64_t(1))}, {"a--b--c"},
       strings({1, 2}, {"a", "b--c"}), tensor<int64_t>({1}, {2})},
      {"whitespace with maxsplit keeps the rest, trimmed at the end", {attr("maxsplit", int64_t(1))}, {" a b  c "},
       strings({1, 2}, {"a", "b  c"}), tensor<int64_t>({1}, {2})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_node(node("StringSplit", {"x"}, {"y", "z"}, c.attrs), {strings({int64_t(c.in.size())}, c.in)}, 20);
    check_equal(out[0], c.y);
    check_equal(out[1], c.z);
  }
}

TEST_CASE("StringNormalizer removes stopwords and changes case without system locales") {
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor in, expected; };
  const Case cases[] = {
      {"case-insensitive stopwords, upper", {attr("stopwords", std::vector<std::string>{"the"}), attr("case_change_action", "UPPER")},
       strings({4}, {"The", "straße", "élan", "THE"}), strings({2}, {"STRAßE", "ÉLAN"})},
      {"case-sensitive stopwords keep other cases", {attr("stopwords", std::vector<std::string>{"the"}), attr("is_case_sensitive", int64_t(1))},
       strings({1, 3}, {"The", "the", "x"}), strings({1, 2}, {"The", "x"})},
      {"lower-casing Greek and Cyrillic", {attr("case_change_action", "LOWER"), attr("locale", "de_DE")},
       strings({2}, {"ΑΒΓ", "ПРИВЕТ"}), strings({2}, {"αβγ", "привет"})},
      {"everything removed from [1, C] gives [1, 1]", {attr("stopwords", std::vector<std::string>{"a"})},
       strings({1, 2}, {"a", "A"}), strings({1, 1}, {""})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("StringNormalizer", {"x"}, {"y"}, c.attrs), {c.in}, 10)[0], c.expected);
  }
  CHECK_THROWS_AS(run_node(node("StringNormalizer", {"x"}, {"y"}, {attr("case_change_action", "TITLE")}), {strings({1}, {"a"})}, 10), Error);
}
