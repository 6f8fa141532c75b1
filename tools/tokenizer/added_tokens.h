// tokenizer.json's "added_tokens": strings found in the text before the model runs, each one
// becoming its id. Tokens with "normalized": false are found in the raw text, the others in the
// normalized text (their own content normalized the same way). Matching is leftmost-longest, as
// Hugging Face's Aho-Corasick; "single_word" rejects a match that touches a word character,
// "lstrip"/"rstrip" take the white space beside the match into it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "components.h"

namespace refeval::tokenizer {

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
  std::string match_form;  // what is looked for: the content, normalized when `normalized`
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  AddedVocabulary(const json& list, const std::string& where, const Normalizer* normalizer);
  // Splits the pieces that are not added tokens yet around the tokens of one kind (normalized or not).
  void split(std::vector<Piece>& pieces, bool normalized) const;
  const AddedToken* find(int64_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
  }
  int64_t id_end() const { return id_end_; }
  bool empty() const { return tokens_.empty(); }

 private:
  // (start, stop, token index) of the kept matches, in order.
  std::vector<std::tuple<size_t, size_t, size_t>> find_matches(const std::string& s, bool normalized) const;
  std::vector<AddedToken> tokens_;
  std::unordered_map<int64_t, size_t> by_id_;
  // per kind (0 raw, 1 normalized) and first byte: the token indices, longest match form first
  std::vector<size_t> first_byte_[2][256];
  int64_t id_end_ = 0;
};

}  // namespace refeval::tokenizer
