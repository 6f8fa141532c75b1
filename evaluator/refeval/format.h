// Text forms of values, matching what ONNX's Python ReferenceEvaluator prints (CLI.md, Trace).
#pragma once

#include <string>

#include "refeval/value.h"

namespace refeval {

// A double as Python's repr prints it: shortest round-trip digits, "2.0", "1e-05", "inf", "nan".
std::string python_float(double v);
// One element of a tensor as a Python scalar (floats widened to double): "1.5", "3", "True".
// `quote_strings` gives repr ('abc') instead of str (abc).
std::string python_scalar(const Tensor& t, int64_t index, bool quote_strings = false);
// "float32:(3, 10) in [-1.0, 1.9]" (level < 4) or the first values (level >= 4); sequences are
// their items' descriptions joined by ", "; an empty optional or absent value is "None".
std::string describe(const Value& v, int level);

}  // namespace refeval
