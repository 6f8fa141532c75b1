#include "vocab.h"

#include <algorithm>

#include <fmt/format.h>

namespace refeval::tokenizer {

Vocab Vocab::from_json(const json& j, const std::string& where) {
  Vocab v;
  v.ids_.reserve(j.size());
  int64_t end = 0;
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t(1) << 24))
      fail_at(where, fmt::format("vocab: token '{}' has id {}, not an integer in [0, 2^24)", token, id.dump()));
    v.ids_[token] = id.get<int64_t>();
    end = std::max(end, id.get<int64_t>() + 1);
  }
  v.tokens_.resize(size_t(end));
  v.has_.assign(size_t(end), false);
  for (const auto& [token, id] : v.ids_) v.tokens_[size_t(id)] = token, v.has_[size_t(id)] = true;
  return v;
}

}  // namespace refeval::tokenizer
