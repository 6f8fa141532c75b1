// Comparing values the way the ONNX backend test runner does (CLI.md, Comparison): floating
// types within |a - e| <= atol + rtol * |e| (+ row_rtol * max |e| over e's last axis) with NaN
// equal to NaN and infinities matching;
// integers, bools and strings exactly; element type and shape must match exactly.
#pragma once

#include <string>

#include "refeval/value.h"

namespace refeval {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
  // Relative to the largest magnitude of the expected row (the last axis): a float sum over a
  // row's products, taken in another order, rounds by ulps of the terms' scale, which the row's
  // largest output bounds; an element near 0 in that row is held to that scale, not its own.
  double row_rtol = 0;
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
