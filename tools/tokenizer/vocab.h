// A model's vocabulary: token -> id from tokenizer.json's "vocab" object, and id -> token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "components.h"

namespace refeval::tokenizer {

class Vocab {
 public:
  // From {"token": id, ...}; ids must be integers in [0, 2^24) (16.7 million; the largest
  // vocabularies in use hold about 256 thousand).
  static Vocab from_json(const json& j, const std::string& where);
  std::optional<int64_t> find(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  const std::string* token(int64_t id) const {
    return id >= 0 && size_t(id) < tokens_.size() && has_[size_t(id)] ? &tokens_[size_t(id)] : nullptr;
  }
  int64_t id_end() const { return int64_t(tokens_.size()); }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> tokens_;
  std::vector<bool> has_;
};

}  // namespace refeval::tokenizer
