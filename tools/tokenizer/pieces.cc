#include "pieces.h"

#include <algorithm>

#include "unicode.h"

namespace refeval::tokenizer {

std::optional<SplitBehavior> parse_split_behavior(const std::string& name) {
  if (name == "Removed" || name == "removed") return SplitBehavior::Removed;
  if (name == "Isolated" || name == "isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious" || name == "merged_with_previous") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext" || name == "merged_with_next") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous" || name == "contiguous") return SplitBehavior::Contiguous;
  return std::nullopt;
}

std::vector<Span> spans_of(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (prev != b) spans.push_back({prev, b, false});
    spans.push_back({b, e, true});
    prev = e;
  }
  if (prev != s.size()) spans.push_back({prev, s.size(), false});
  return spans;
}

std::vector<Span> spans_of_chars(std::string_view s, const std::function<bool(int32_t)>& pred) {
  std::vector<std::pair<size_t, size_t>> matches;
  for (size_t i = 0, n = 0; i < s.size(); i += n)
    if (pred(next_code_point(s, i, &n))) matches.emplace_back(i, i + n);
  return spans_of(s, matches);
}

std::vector<std::pair<size_t, size_t>> find_literal(std::string_view s, std::string_view literal) {
  std::vector<std::pair<size_t, size_t>> out;
  if (literal.empty()) {  // an empty match before each character and at the end, as Rust's str::replace
    for (size_t i = 0, n = 0; i < s.size(); i += n) next_code_point(s, i, &n), out.emplace_back(i, i);
    out.emplace_back(s.size(), s.size());
    return out;
  }
  for (size_t at = s.find(literal); at != std::string_view::npos; at = s.find(literal, at + literal.size()))
    out.emplace_back(at, at + literal.size());
  return out;
}

std::string replace_matches(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches, std::string_view with) {
  std::string out;
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    out.append(s.substr(prev, b - prev));
    out.append(with);
    prev = e;
  }
  out.append(s.substr(prev));
  return out;
}

std::vector<std::pair<size_t, std::string>> split_spans(std::string_view s, const std::vector<Span>& spans,
                                                        SplitBehavior behavior) {
  // (begin, end, keep) after grouping, as Hugging Face's NormalizedString::split
  struct Part {
    size_t begin, end;
    bool keep;
  };
  std::vector<Part> parts;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const Span& sp : spans) parts.push_back({sp.begin, sp.end, true});
      break;
    case SplitBehavior::Removed:
      for (const Span& sp : spans) parts.push_back({sp.begin, sp.end, !sp.match});
      break;
    case SplitBehavior::Contiguous:
      for (const Span& sp : spans) {
        if (sp.match == previous_match && !parts.empty()) parts.back().end = sp.end;
        else parts.push_back({sp.begin, sp.end, true});
        previous_match = sp.match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const Span& sp : spans) {
        if (sp.match && !previous_match && !parts.empty()) parts.back().end = sp.end;
        else parts.push_back({sp.begin, sp.end, true});
        previous_match = sp.match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !previous_match && !parts.empty()) parts.back().begin = it->begin;
        else parts.push_back({it->begin, it->end, true});
        previous_match = it->match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
  }
  std::vector<std::pair<size_t, std::string>> out;
  for (const Part& p : parts)
    if (p.keep && p.end > p.begin) out.emplace_back(p.begin, std::string(s.substr(p.begin, p.end - p.begin)));
  return out;
}

void split_pieces(std::vector<Piece>& pieces,
                  const std::function<std::vector<std::pair<size_t, std::string>>(const std::string&)>& split) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& p : pieces) {
    if (p.added_id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    for (auto& [offset, text] : split(p.text))
      if (!text.empty()) out.push_back({std::move(text), -1, p.at_origin && offset == 0});
  }
  pieces = std::move(out);
}

}  // namespace refeval::tokenizer
