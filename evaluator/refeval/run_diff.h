// Comparing two runs value by value (`refeval compare`): the values both hold, paired by name in
// A's execution order, initializers apart (they are causes, not effects), and the first node
// output beyond tolerance: where two models or two runtimes start to disagree.
#pragma once

#include <string>
#include <vector>

#include "refeval/compare.h"
#include "refeval/dump.h"

namespace refeval {

struct ValueDiff {
  const ValueRecord* a = nullptr;  // point into the records given to diff_runs
  const ValueRecord* b = nullptr;
  Comparison c;                    // a as actual, b as expected
};

struct RunDiff {
  std::vector<ValueDiff> initializers;  // initializers of A that B holds too
  std::vector<ValueDiff> values;        // every other shared value (inputs and node outputs)
  size_t only_in_a = 0, only_in_b = 0;
  // The first node output beyond tolerance, in A's execution order; null if none.
  const ValueDiff* first_difference() const;
};

RunDiff diff_runs(const std::vector<ValueRecord>& a, const std::vector<ValueRecord>& b, Tolerance tol);

}  // namespace refeval
