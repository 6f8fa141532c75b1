// A model's vocabulary: token -> id from tokenizer.json's "vocab" object, and id -> token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "components.h"

namespace refeval::tokenizer {

class Vocab {
 public:
  // From {"token": id, ...}; ids must be integers in [0, 2^31).
  static Vocab from_json(const json& j, const std::string& where);
  std::optional<int64_t> find(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  const std::string* token(int64_t id) const {
    const auto it = tokens_.find(id);
    return it == tokens_.end() ? nullptr : &it->second;
  }
  int64_t id_end() const { return id_end_; }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::unordered_map<int64_t, std::string> tokens_;
  int64_t id_end_ = 0;
};

}  // namespace refeval::tokenizer
