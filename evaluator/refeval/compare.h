// Comparing values the way the ONNX backend test runner does (CLI.md, Comparison): floating
// types within |a - e| <= atol + rtol * |e| with NaN equal to NaN and infinities matching;
// integers, bools and strings exactly; element type and shape must match exactly.
#pragma once

#include <string>

#include "refeval/value.h"

namespace refeval {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

struct Comparison {
  bool equal = true;
  std::string reason;      // first difference, e.g. "element [1, 2]: 0.5 vs 0.25" (empty if equal)
  double max_abs = 0;      // over floating elements
  double max_rel = 0;
  int64_t mismatches = 0;  // elements beyond tolerance
};

Comparison compare_values(const Value& actual, const Value& expected, Tolerance tol = {});

}  // namespace refeval
