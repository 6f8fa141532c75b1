// The text between the steps of a tokenizer: a list of pieces, some of them added tokens found
// before the model (left alone by every later step), and how a piece splits around the matches of
// a pattern (Hugging Face's SplitDelimiterBehavior).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "regex.h"

namespace refeval::tokenizer {

struct Piece {
  std::string text;
  int64_t added_id = -1;   // >= 0: an added token, passed to the output as this id
  bool at_origin = false;  // starts where the input starts (Metaspace's prepend_scheme "first")
};

//  "the-final--countdown" split on '-':
//   Removed            the | final | countdown
//   Isolated           the | - | final | - | - | countdown
//   MergedWithPrevious the- | final- | - | countdown
//   MergedWithNext     the | -final | - | -countdown
//   Contiguous         the | - | final | -- | countdown
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
// From tokenizer.json's spelling ("Removed", ..., also lower case); nullopt when unknown.
std::optional<SplitBehavior> parse_split_behavior(const std::string& name);

// A span of a string, a match of the pattern or the text between two.
struct Span {
  size_t begin, end;
  bool match;
};
// The spans covering `s`, from non-overlapping matches (byte offsets, ascending).
std::vector<Span> spans_of(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches);
// Each code point for which `pred` holds is a match of its own.
std::vector<Span> spans_of_chars(std::string_view s, const std::function<bool(int32_t)>& pred);
// Non-overlapping occurrences of `literal`, left to right; an empty literal matches (empty)
// before every character and at the end, as Rust's str::replace and JavaScript's replaceAll.
std::vector<std::pair<size_t, size_t>> find_literal(std::string_view s, std::string_view literal);
// A string replaced at each of `matches` by `with`.
std::string replace_matches(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches, std::string_view with);

// The parts of `s` as `behavior` groups the spans: (byte offset in s, text), empty parts dropped.
std::vector<std::pair<size_t, std::string>> split_spans(std::string_view s, const std::vector<Span>& spans,
                                                        SplitBehavior behavior);

// Replaces every piece that is not an added token by the parts `split` makes of its text (each
// part's offset in it); a part at offset 0 keeps the piece's at_origin. Empty parts are dropped.
void split_pieces(std::vector<Piece>& pieces,
                  const std::function<std::vector<std::pair<size_t, std::string>>(const std::string&)>& split);

}  // namespace refeval::tokenizer
