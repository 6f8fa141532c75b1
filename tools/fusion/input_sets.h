// The input sets a fusion is checked on: the given (or model-derived) feeds, seeded random
// variants, then edge cases where approximations and misplaced constants show: zeros, negative
// values, large and tiny magnitudes. Only floating tensors are varied; integer, bool and string
// inputs (ids, masks, shapes), floating ones whose every value is 0 or 1 (a float attention mask:
// other values are inputs the model is not written for, which fused attention reads as 0/1) and
// the names listed as fixed (weights) keep their given values, and every shape stays the same.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "refeval/value.h"

namespace refeval::fusion {

struct InputSet {
  std::string name;  // "given", "random 1", "zeros", "negative", "large", "tiny"
  std::map<std::string, Value> feeds;
};

struct InputSetOptions {
  uint64_t seed = 0;
  int random_sets = 2;
  bool edge_cases = true;
};

std::vector<InputSet> make_input_sets(const std::map<std::string, Value>& given, const std::set<std::string>& fixed,
                                      const InputSetOptions& options);

}  // namespace refeval::fusion
