#define PCRE2_CODE_UNIT_WIDTH 8
#include "regex.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <pcre2.h>

#include "unicode.h"

namespace refeval::tokenizer {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// General categories from unicode.h's tables (Unicode 17) rather than PCRE2's own (Unicode 14 in
// Debian's 10.42): \p{X} for a general category X becomes a class with the same code points as
// the table's X (category_class below). Other properties (Alphabetic, White_Space, Join_Control,
// scripts such as \p{Han}) are not in the tables and stay PCRE2's.
using enum Category;
// A mask has bit c set for each Category c it takes.
using CategoryMask = uint32_t;
constexpr CategoryMask bit(Category c) { return CategoryMask(1) << int(c); }
constexpr CategoryMask kLetter = bit(Lu) | bit(Ll) | bit(Lt) | bit(Lm) | bit(Lo);
constexpr CategoryMask kCased = bit(Lu) | bit(Ll) | bit(Lt);
constexpr CategoryMask kMark = bit(Mn) | bit(Mc) | bit(Me);
constexpr CategoryMask kNumber = bit(Nd) | bit(Nl) | bit(No);
constexpr CategoryMask kPunctuation = bit(Pc) | bit(Pd) | bit(Ps) | bit(Pe) | bit(Pi) | bit(Pf) | bit(Po);
constexpr CategoryMask kSymbol = bit(Sm) | bit(Sc) | bit(Sk) | bit(So);
constexpr CategoryMask kSeparator = bit(Zs) | bit(Zl) | bit(Zp);
constexpr CategoryMask kOther = bit(Cc) | bit(Cf) | bit(Co) | bit(Cn) | bit(Cs);

// The names Oniguruma gives the general categories, short and long, as normalized below. Cs alone
// is left to PCRE2: UTF-8 has no surrogates, and PCRE2 refuses them in a class (they are left out
// of every class written here, so \p{C} and the negations mean the same without them).
struct CategoryName {
  const char* name;
  CategoryMask mask;
};
const CategoryName kCategoryNames[] = {
    {"l", kLetter}, {"letter", kLetter}, {"lc", kCased}, {"l&", kCased}, {"casedletter", kCased},
    {"lu", bit(Lu)}, {"uppercaseletter", bit(Lu)},
    {"ll", bit(Ll)}, {"lowercaseletter", bit(Ll)},
    {"lt", bit(Lt)}, {"titlecaseletter", bit(Lt)},
    {"lm", bit(Lm)}, {"modifierletter", bit(Lm)},
    {"lo", bit(Lo)}, {"otherletter", bit(Lo)},
    {"m", kMark}, {"mark", kMark}, {"combiningmark", kMark},
    {"mn", bit(Mn)}, {"nonspacingmark", bit(Mn)},
    {"mc", bit(Mc)}, {"spacingmark", bit(Mc)},
    {"me", bit(Me)}, {"enclosingmark", bit(Me)},
    {"n", kNumber}, {"number", kNumber},
    {"nd", bit(Nd)}, {"decimalnumber", bit(Nd)},
    {"nl", bit(Nl)}, {"letternumber", bit(Nl)},
    {"no", bit(No)}, {"othernumber", bit(No)},
    {"p", kPunctuation}, {"punctuation", kPunctuation},
    {"pc", bit(Pc)}, {"connectorpunctuation", bit(Pc)},
    {"pd", bit(Pd)}, {"dashpunctuation", bit(Pd)},
    {"ps", bit(Ps)}, {"openpunctuation", bit(Ps)},
    {"pe", bit(Pe)}, {"closepunctuation", bit(Pe)},
    {"pi", bit(Pi)}, {"initialpunctuation", bit(Pi)},
    {"pf", bit(Pf)}, {"finalpunctuation", bit(Pf)},
    {"po", bit(Po)}, {"otherpunctuation", bit(Po)},
    {"s", kSymbol}, {"symbol", kSymbol},
    {"sm", bit(Sm)}, {"mathsymbol", bit(Sm)},
    {"sc", bit(Sc)}, {"currencysymbol", bit(Sc)},
    {"sk", bit(Sk)}, {"modifiersymbol", bit(Sk)},
    {"so", bit(So)}, {"othersymbol", bit(So)},
    {"z", kSeparator}, {"separator", kSeparator},
    {"zs", bit(Zs)}, {"spaceseparator", bit(Zs)},
    {"zl", bit(Zl)}, {"lineseparator", bit(Zl)},
    {"zp", bit(Zp)}, {"paragraphseparator", bit(Zp)},
    {"c", kOther}, {"other", kOther},
    {"cc", bit(Cc)}, {"control", bit(Cc)},
    {"cf", bit(Cf)}, {"format", bit(Cf)},
    {"co", bit(Co)}, {"privateuse", bit(Co)},
    {"cn", bit(Cn)}, {"unassigned", bit(Cn)},
};

// A property name as Oniguruma compares them: case aside, spaces, '-' and '_' ignored.
std::string normalized_property(std::string_view name) {
  std::string out;
  for (const char c : name)
    if (c != ' ' && c != '-' && c != '_') out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The general category's mask, or 0 for a name left to PCRE2.
CategoryMask category_mask(std::string_view name) {
  const std::string n = normalized_property(name);
  for (const auto& c : kCategoryNames)
    if (n == c.name) return c.mask;
  return 0;
}

// The code points 0..0x10FFFF as runs of one category: the table's ranges, Cn between them.
struct CategoryRun {
  int32_t first;
  Category category;
};
const std::vector<CategoryRun>& category_runs() {
  static const std::vector<CategoryRun> runs = [] {
    std::vector<CategoryRun> r;
    int32_t next = 0;  // the first code point no run has yet
    for (const auto& range : category_ranges()) {
      if (range.first > next) r.push_back({next, Cn});
      r.push_back({range.first, range.category});
      next = range.last + 1;
    }
    if (next <= 0x10FFFF) r.push_back({next, Cn});
    return r;
  }();
  return runs;
}

// The ranges of code points whose category is in `mask` (or, `complement`, is not), surrogates
// left out, as the inside of a PCRE2 class: \x{41}-\x{5a}\x{61}-\x{7a}... Made once per mask.
const std::string& explicit_class(CategoryMask mask, bool complement) {
  static std::mutex mutex;
  static std::map<std::pair<CategoryMask, bool>, std::string> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = made.try_emplace({mask, complement});
  if (!inserted) return it->second;
  const auto& runs = category_runs();
  std::string& out = it->second;
  int32_t open = -1;  // the first code point of the range being gathered
  auto close = [&](int32_t last) {
    if (open < 0) return;
    out += open == last ? fmt::format("\\x{{{:x}}}", open) : fmt::format("\\x{{{:x}}}-\\x{{{:x}}}", open, last);
    open = -1;
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    const int32_t first = runs[i].first, last = i + 1 < runs.size() ? runs[i + 1].first - 1 : 0x10FFFF;
    const bool in = runs[i].category != Cs && (((mask >> int(runs[i].category)) & 1) != 0) != complement;
    if (in && open < 0) open = first;
    if (!in) close(first - 1);
    if (i + 1 == runs.size()) close(last);
  }
  return out;
}

// PCRE2's names of the categories (Category order), and of their groups.
const char* const kPcre2Names[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
                                   "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
const CategoryName kPcre2Groups[] = {{"L", kLetter}, {"L&", kCased}, {"M", kMark}, {"N", kNumber}, {"P", kPunctuation},
                                     {"S", kSymbol},  {"Z", kSeparator}, {"C", kOther}};

// The code points PCRE2's tables put in another general category than unicode.h's (Unicode 17)
// do, with PCRE2's category: those new since PCRE2's Unicode (Cn there; 15,104 from 14 to 17)
// and any whose category changed (U+0295 Ll to Lo, U+1171E Mn to Mc). Found once per process by
// PCRE2 itself: each category's code points, as one text, searched for those PCRE2 gives another
// category. Only assigned code points outside private use are looked at (Unicode never unassigns
// one, and private use is fixed).
const std::vector<std::pair<int32_t, Category>>& pcre2_disagreements() {
  static const std::vector<std::pair<int32_t, Category>> found = [] {
    auto compile = [](const std::string& pattern) {
      int error = 0;
      PCRE2_SIZE offset = 0;
      pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                       &error, &offset, nullptr);
      if (!code) throw std::logic_error("PCRE2 refuses " + pattern);
      pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
      return std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)>(code, &pcre2_code_free);
    };
    std::string which = R"(\A(?:)";  // PCRE2's category of one code point: the group that matches
    for (int c = 0; c < kCategories; ++c) which += fmt::format("{}(\\p{{{}}})", c ? "|" : "", kPcre2Names[c]);
    const auto category_of = compile(which + ")");
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(pcre2_match_data_create(kCategories + 1, nullptr),
                                                                           &pcre2_match_data_free);
    std::vector<std::string> texts(kCategories);
    const auto& runs = category_runs();
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto c = runs[i].category;
      // unassigned, surrogates, and private use (its code points are fixed by Unicode) left out
      if (c == Cn || c == Cs || c == Co) continue;
      const int32_t last = i + 1 < runs.size() ? runs[i + 1].first - 1 : 0x10FFFF;
      for (int32_t cp = runs[i].first; cp <= last; ++cp) append_utf8(texts[int(c)], cp);
    }
    std::vector<std::pair<int32_t, Category>> out;
    for (int c = 0; c < kCategories; ++c) {
      if (texts[c].empty()) continue;
      const auto other = compile(fmt::format("\\P{{{}}}", kPcre2Names[c]));
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(texts[c].data());
      for (size_t start = 0; start < texts[c].size();) {
        if (pcre2_match(other.get(), subject, texts[c].size(), start, PCRE2_NO_UTF_CHECK, md.get(), nullptr) < 0) break;
        const size_t at = pcre2_get_ovector_pointer(md.get())[0];
        size_t length = 1;
        const int32_t cp = next_code_point(texts[c], at, &length);
        const int rc = pcre2_match(category_of.get(), subject + at, length, 0, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
        if (rc < 2) throw std::logic_error(fmt::format("PCRE2 gives U+{:04X} no general category", cp));
        out.emplace_back(cp, Category(rc - 2));  // group k + 1 is category k
        start = at + length;
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return found;
}

// The inside of a PCRE2 class taking the code points of the table's categories in `mask`. Where
// PCRE2's tables only lack code points (new since Unicode 14), PCRE2's own properties plus those
// code points: \p{L}\x{11f04}-\x{11f10}... (a property is one table look-up, where a long list of
// ranges is tried one by one). Where PCRE2 has code points of the mask that the table does not
// (a changed category, or Cn in the mask), the explicit ranges. Made once per mask.
const std::string& category_class(CategoryMask mask) {
  static std::mutex mutex;
  static std::map<CategoryMask, std::string> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = made.try_emplace(mask);
  if (!inserted) return it->second;
  std::string& out = it->second;
  std::vector<int32_t> added;
  for (const auto& [cp, pcre2_category] : pcre2_disagreements()) {
    const bool in_pcre2 = (mask >> int(pcre2_category)) & 1, in_table = (mask >> int(general_category(cp))) & 1;
    if (in_pcre2 && !in_table) return out = explicit_class(mask, false);
    if (in_table && !in_pcre2) added.push_back(cp);
  }
  CategoryMask left = mask & ~bit(Cs);
  for (const auto& g : kPcre2Groups)
    if ((left & g.mask & ~bit(Cs)) == (g.mask & ~bit(Cs))) {
      out += fmt::format("\\p{{{}}}", g.name);
      left &= ~g.mask;
    }
  for (int c = 0; c < kCategories; ++c)
    if ((left >> c) & 1) out += fmt::format("\\p{{{}}}", kPcre2Names[c]);
  for (size_t i = 0; i < added.size();) {
    size_t j = i;
    while (j + 1 < added.size() && added[j + 1] == added[j] + 1) ++j;
    out += i == j ? fmt::format("\\x{{{:x}}}", added[i]) : fmt::format("\\x{{{:x}}}-\\x{{{:x}}}", added[i], added[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string oniguruma_to_pcre2(const std::string& p) {
  // Oniguruma's \w: Alphabetic (PCRE2's table: unicode.h has no such property; its letters and
  // letter numbers, which Alphabetic takes, are added so a Unicode 17 letter is a word character
  // too), marks, decimal digits, connector punctuation, Join_Control.
  static const std::string kWord =
      R"(\p{Alphabetic})" +
      category_class(kLetter | bit(Nl) | kMark | bit(Nd) | bit(Pc)) +
      R"(\p{Join_Control})";
  std::string out;
  bool in_class = false;
  // A general category (negated or not): its ranges inside a class, a class of its own outside one.
  auto category = [&](CategoryMask mask, bool negated) {
    if (in_class) out += negated ? explicit_class(mask, true) : category_class(mask);
    else out += (negated ? "[^" : "[") + category_class(mask) + "]";
  };
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
        case 'd': category(bit(Nd), false); break;  // Unicode's decimal digits, as PCRE2's \d with UCP
        case 'D': category(bit(Nd), true); break;
        case 'p':
        case 'P': {
          // \p{Name}, \p{^Name} (Oniguruma's negation), \pL (PCRE2's one-letter form)
          std::string_view name;
          size_t end = i;  // the last character of the escape
          if (i + 1 < p.size() && p[i + 1] == '{') {
            const size_t close = p.find('}', i + 2);
            if (close != std::string::npos) name = std::string_view(p).substr(i + 2, close - i - 2), end = close;
          } else if (i + 1 < p.size()) {
            name = std::string_view(p).substr(i + 1, 1), end = i + 1;
          }
          bool negated = e == 'P';
          if (!name.empty() && name[0] == '^') name.remove_prefix(1), negated = !negated;
          const CategoryMask mask = name.empty() ? 0 : category_mask(name);
          if (!mask) {  // any other property (Alphabetic, White_Space, scripts): PCRE2's own
            out += c, out += e;
            break;
          }
          category(mask, negated);
          i = end;
          break;
        }
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
  r.pattern_ = pattern;
  r.translated_ = oniguruma_to_pcre2(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  // \C is one byte to PCRE2 (it can split a character), a control-character escape (\C-x) to
  // Oniguruma, which refuses a bare \C: refused here too
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(r.translated_.data()), r.translated_.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_NEVER_BACKSLASH_C, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    // the PCRE2 form is shown when it is short: written-out general categories make it long
    throw std::invalid_argument(
        r.translated_.size() <= 400
            ? fmt::format("{} at offset {} of the PCRE2 form '{}'", reinterpret_cast<const char*>(message), offset, r.translated_)
            : fmt::format("{} at offset {} of the PCRE2 form ({} bytes, general categories written out as code point ranges)",
                          reinterpret_cast<const char*>(message), offset, r.translated_.size()));
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
      throw RegexMatchError(fmt::format("regular expression '{}': {}", pattern_, reinterpret_cast<const char*>(message)));
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
