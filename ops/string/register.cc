// The string family: RegexFullMatch, StringConcat, StringNormalizer, StringSplit, TfIdfVectorizer.
#include "refeval/registry.h"

namespace refeval::ops {

void register_regex_full_match(Registry& reg);
void register_string_concat(Registry& reg);
void register_string_normalizer(Registry& reg);
void register_string_split(Registry& reg);
void register_tfidf_vectorizer(Registry& reg);

void register_string(Registry& reg) {
  register_regex_full_match(reg);
  register_string_concat(reg);
  register_string_normalizer(reg);
  register_string_split(reg);
  register_tfidf_vectorizer(reg);
}

}  // namespace refeval::ops
