// Runs a fused and an unfused computation on the same input sets and compares every named
// output (refeval/compare.h tolerances), then times both. The node form and the model form of
// `refeval check-fusion` differ only in how they build the two runners.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "input_sets.h"
#include "refeval/compare.h"

namespace refeval::fusion {

// Computes the compared values, in the order of FusionCheck::outputs, from a set's feeds.
using Runner = std::function<Values(const std::map<std::string, Value>& feeds)>;

struct CheckOptions {
  Tolerance tolerance;
  int repeat = 5;  // timed runs of each side; the median is reported
  InputSetOptions sets;
};

struct SetResult {
  std::string set;
  std::vector<Comparison> outputs;  // one per compared name
  bool equal() const;
};

struct FusionReport {
  std::string subject;             // "node 'ln' (SkipLayerNormalization)", "a.onnx vs b.onnx"
  std::string fused, unfused;      // what each side is: "kernel", "model-local function", ...
  std::vector<std::string> outputs;
  std::vector<SetResult> sets;
  double fused_ms = 0, unfused_ms = 0;  // medians over `runs`
  int runs = 0;
  Tolerance tolerance;

  bool equivalent() const { return first_failure() == nullptr; }
  const SetResult* first_failure() const;
};

FusionReport check_equivalence(const Runner& fused, const Runner& unfused, const std::vector<InputSet>& sets,
                               const CheckOptions& options);

}  // namespace refeval::fusion
