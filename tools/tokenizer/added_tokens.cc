#include "added_tokens.h"

#include <algorithm>

#include <fmt/format.h>

#include "unicode.h"

namespace refeval::tokenizer {
namespace {

// A word character as Rust's regex \w: alphabetic, marks, decimal digits, connector punctuation.
bool is_word_char(int32_t cp) {
  static const Regex word = Regex::oniguruma(R"(\A\w\z)");
  return cp >= 0 && !word.find_all(utf8(cp)).empty();
}

int32_t last_code_point(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i;
  if (i > 0) --i;
  size_t n = 0;
  return s.empty() ? -1 : next_code_point(s, i, &n);
}

}  // namespace

AddedVocabulary::AddedVocabulary(const json& list, const std::string& where, const Normalizer* normalizer) {
  if (list.is_null()) return;
  if (!list.is_array()) fail_at(where, fmt::format("must be an array, got {}", list.type_name()));
  for (size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!j.is_object()) fail_at(at, fmt::format("must be an object, got {}", j.type_name()));
    AddedToken t;
    t.content = string_field(j, "content", at);
    t.id = int_field(j, "id", at);
    if (t.id < 0 || t.id >= (int64_t(1) << 31)) fail_at(at, fmt::format("id {} is not in [0, 2^31)", t.id));
    t.special = bool_field(j, "special", at, false);
    t.single_word = bool_field(j, "single_word", at, false);
    t.lstrip = bool_field(j, "lstrip", at, false);
    t.rstrip = bool_field(j, "rstrip", at, false);
    t.normalized = bool_field(j, "normalized", at, !t.special);
    if (t.content.empty()) continue;
    t.match_form = t.normalized && normalizer ? normalizer->normalize(t.content) : t.content;
    id_end_ = std::max(id_end_, t.id + 1);
    by_id_[t.id] = tokens_.size();
    tokens_.push_back(std::move(t));
  }
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].match_form.empty())
      first_byte_[tokens_[i].normalized][static_cast<unsigned char>(tokens_[i].match_form[0])].push_back(i);
  for (auto& kind : first_byte_)
    for (auto& list : kind)
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) { return tokens_[a].match_form.size() > tokens_[b].match_form.size(); });
}

std::vector<std::tuple<size_t, size_t, size_t>> AddedVocabulary::find_matches(const std::string& s, bool normalized) const {
  std::vector<std::tuple<size_t, size_t, size_t>> out;
  size_t pos = 0, start_offset = 0;
  while (pos < s.size()) {
    // the leftmost match, the longest there
    size_t start = s.size(), index = 0;
    for (size_t i = pos; i < s.size() && start == s.size(); ++i)
      for (size_t k : first_byte_[normalized][static_cast<unsigned char>(s[i])])
        if (s.compare(i, tokens_[k].match_form.size(), tokens_[k].match_form) == 0) {
          start = i, index = k;
          break;
        }
    if (start == s.size()) break;
    const AddedToken& t = tokens_[index];
    size_t stop = start + t.match_form.size();
    pos = stop;
    if (t.single_word) {
      const bool space_before = start == 0 || !is_word_char(last_code_point(std::string_view(s).substr(0, start)));
      size_t n = 0;
      const bool space_after = stop == s.size() || !is_word_char(next_code_point(s, stop, &n));
      if (!space_before || !space_after) continue;
    }
    if (t.lstrip) {
      size_t b = start;
      while (b > start_offset) {
        size_t i = b - 1;
        while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
        size_t n = 0;
        if (!is_white_space(next_code_point(s, i, &n))) break;
        b = i;
      }
      start = b;
    }
    if (t.rstrip) {
      size_t n = 0;
      while (stop < s.size() && is_white_space(next_code_point(s, stop, &n))) stop += n;
    }
    start = std::max(start, start_offset);
    out.emplace_back(start, stop, index);
    start_offset = stop;
  }
  return out;
}

void AddedVocabulary::split(std::vector<Piece>& pieces, bool normalized) const {
  if (tokens_.empty()) return;
  std::vector<Piece> out;
  for (Piece& p : pieces) {
    if (p.added_id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    size_t prev = 0;
    for (const auto& [b, e, k] : find_matches(p.text, normalized)) {
      if (b > prev) out.push_back({p.text.substr(prev, b - prev), -1, p.at_origin && prev == 0});
      out.push_back({p.text.substr(b, e - b), tokens_[k].id, false});
      prev = e;
    }
    if (prev < p.text.size()) out.push_back({p.text.substr(prev), -1, p.at_origin && prev == 0});
  }
  pieces = std::move(out);
}

}  // namespace refeval::tokenizer
