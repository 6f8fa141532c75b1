#include "vocab.h"

#include <algorithm>

#include <fmt/format.h>

namespace refeval::tokenizer {

Vocab Vocab::from_json(const json& j, const std::string& where) {
  Vocab v;
  v.ids_.reserve(j.size());
  v.tokens_.reserve(j.size());
  int64_t end = 0;
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t(1) << 31))
      fail_at(where, fmt::format("vocab: token '{}' has id {}, not an integer in [0, 2^31)", token, id.dump()));
    v.ids_[token] = id.get<int64_t>();
    v.tokens_.emplace(id.get<int64_t>(), token);  // an id given twice decodes as its first token in key order
    end = std::max(end, id.get<int64_t>() + 1);
  }
  v.id_end_ = end;
  return v;
}

}  // namespace refeval::tokenizer
