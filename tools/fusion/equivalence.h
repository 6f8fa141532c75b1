// Runs a fused and an unfused computation on the same input sets and compares every named
// output (refeval/compare.h tolerances), then times both. The node form and the model form of
// `refeval check-fusion` differ only in how they build the two runners.
//
// The float64 oracle (oracle.h): when given, the unfused computation run in float64 is the
// reference both sides are measured against, as PyTorch's `torch._dynamo.utils.same` does with
// its fp64 reference. An output where the two sides differ beyond the tolerance still passes
// when the fused side is, element by element, no further from the oracle than the unfused side
// plus the tolerance:
//   |fused − oracle| ≤ |unfused − oracle| + atol + rtol·|oracle|,
// and has no NaN/Inf of its own (one the oracle or the unfused side also has is fine): a fusion
// more accurate than the graph it replaces is not a failure. A wrong fusion (another formula) is
// as far from the oracle as from the unfused side, and still fails.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "input_sets.h"
#include "oracle.h"
#include "refeval/compare.h"

namespace refeval::fusion {

// Computes the compared values, in the order of FusionCheck::outputs, from a set's feeds.
using Runner = std::function<Values(const std::map<std::string, Value>& feeds)>;

struct CheckOptions {
  Tolerance tolerance;
  int repeat = 5;  // timed runs of each side; the median is reported
  bool oracle = true;  // measure both sides against the unfused side in float64
  InputSetOptions sets;
};

// Both sides' error against the float64 oracle for one output.
struct OracleErrors {
  accuracy::Error fused, unfused;
  bool fused_as_accurate = false;  // the acceptance rule above
};

struct SetResult {
  std::string set;
  std::vector<Comparison> outputs;                 // one per compared name
  std::vector<std::optional<OracleErrors>> oracle;  // one per compared name, when the oracle ran
  std::string oracle_note;                          // why there is no oracle, when there is none
  // Output i passes: within tolerance, or different but the fused side is as accurate.
  bool passes(size_t i) const;
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
  // Outputs (over all sets) that differ beyond the tolerance but pass by the oracle.
  size_t accepted_by_oracle() const;
  const SetResult* first_failure() const;
};

// `unfused_oracle`, when set, runs the unfused computation in float64 on feeds already widened
// (accuracy::widen_value); an error from it leaves that set without an oracle (oracle_note).
FusionReport check_equivalence(const Runner& fused, const Runner& unfused, const std::vector<InputSet>& sets,
                               const CheckOptions& options, const Runner& unfused_oracle = {});

}  // namespace refeval::fusion
