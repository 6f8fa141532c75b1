// The accuracy profile (`refeval accuracy`, issue 28): a float64 oracle of a model, and each node's
// error against it.
//
// - The oracle is the same graph with every float32/float16/bfloat16 tensor held in float64:
//   initializers, Constant and ConstantOfShape tensors widened exactly, graph I/O and value_info
//   types widened, Cast/EyeLike/Random* targets of those types retargeted to double, in bodies and
//   model-local functions too. Float8/float4 stay as they are: they are quantized storage, not a
//   compute precision. It runs through the normal evaluator, i.e. the kernels' double paths.
// - Accumulated error of a value: the model-precision run against the oracle.
// - Local error of a node: its model-precision kernel fed the oracle's inputs rounded to the types
//   the model run saw, against the oracle's output: the error the node itself adds.
// - Contribution of a node: the graph outputs' error when this node alone runs in the model's
//   precision (its local outputs, widened back) and every other node in float64. Computed for the
//   `top_k` nodes with the largest local RMS error, one oracle run each.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "refeval/ir.h"
#include "refeval/registry.h"
#include "refeval/value.h"

namespace refeval::accuracy {

// Error of values against the oracle over every element compared. sqnr_db = 10·log10(Σo² / Σd²)
// (qdq_loss_debug's 20·log10(‖o‖/‖d‖)); +inf when there is no error. ulps: the largest error in
// units in the last place of the model's type at the oracle value. Elements where model and
// oracle disagree about being finite (NaN against a number, Inf against a finite value) are
// counted in `nonfinite` and left out of the other figures.
struct Error {
  double max_abs = 0, max_rel = 0, rms = 0;
  double sqnr_db = std::numeric_limits<double>::infinity();
  double ulps = 0;
  double rel_rms = 0;  // rms / rms of the oracle (0 when both are 0)
  int64_t count = 0, nonfinite = 0;
};

// Gathers elements of one or several tensors (a node's error over all its outputs, the graph
// outputs' error over all outputs).
class ErrorAccumulator {
 public:
  // `model` is any floating tensor, `oracle` the same shape in any floating type. The ulps use
  // `ulp_type`, by default `model`'s type. Shapes that differ are an error naming `what`.
  void add(const Tensor& model, const Tensor& oracle, const std::string& what, DType ulp_type = DType::Undefined);
  Error result() const;
  bool empty() const { return count_ == 0 && nonfinite_ == 0; }

 private:
  double max_abs_ = 0, max_rel_ = 0, ulps_ = 0, sum_d2_ = 0, sum_o2_ = 0;
  int64_t count_ = 0, nonfinite_ = 0;
};

// The element types the oracle holds in float64.
bool is_widened(DType t);
// A copy of `model` with every widened type held in float64 (see the header comment).
Model widen_model(const Model& model);
// Tensors (and sequence items) of a widened type converted to float64; other values unchanged.
Value widen_value(const Value& v);

struct OutputError {
  std::string name;
  DType dtype = DType::Undefined;           // in the model-precision run
  Error accumulated;
  std::optional<Error> local;               // unset: not computed (see NodeError::local_note)
  std::optional<double> amplification;      // accumulated rel_rms out / largest rel_rms of the inputs
};

struct NodeError {
  std::string node;     // qualified id, as in dumps: the name, or "#I"
  std::string op_type;
  int index = 0;        // execution order
  std::vector<OutputError> outputs;  // floating tensor outputs only
  std::string local_note;            // why there is no local error, when there is none
  std::optional<Error> contribution;
  // What the node is ranked by: contribution RMS when computed, else the accumulated RMS of its
  // worst output (ranked after every node with a contribution).
  double rank_key() const;
};

struct Report {
  std::vector<NodeError> nodes;          // sorted, worst first
  std::vector<OutputError> outputs;      // graph outputs, accumulated error only
  Error outputs_total;                   // over every floating graph output
  std::vector<std::string> refused;      // nodes whose operator declares no double type
  size_t contributions = 0;              // how many nodes got a contribution
  size_t nodes_run = 0;                  // main-graph nodes executed
};

struct Options {
  const Registry* registry = nullptr;  // null: the built-ins
  bool local = true;                   // compute local errors
  size_t top_k = 10;                   // contributions for this many nodes (0: none)
};

// Runs the model on `feeds` (model precision) and its float64 oracle on the same feeds widened.
// Fails with ErrorKind::Runtime naming the node if the oracle cannot run, and listing the
// operators that declare no double type.
Report profile(const Model& model, const std::map<std::string, Value>& feeds, const Options& options);

}  // namespace refeval::accuracy
