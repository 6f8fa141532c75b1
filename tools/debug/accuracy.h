// The accuracy profile (`refeval accuracy`, issue 28): a float64 oracle of a model, and each node's
// error against it.
//
// - The oracle is the same graph with every float32/float16/bfloat16 tensor held in float64
//   (fusion/oracle.h), run through the normal evaluator, i.e. the kernels' double paths. A
//   main-graph node whose operator declares no double type runs in the oracle on its inputs
//   rounded to the types the model run saw, and its outputs are widened back: it is named in
//   Report::fallback and marked NodeError::fallback.
// - Accumulated error of a value: the model-precision run against the oracle.
// - Local error of a node: its model-precision kernel fed the oracle's inputs rounded to the types
//   the model run saw, against the oracle's output: the error the node itself adds.
// - Contribution of a node: the graph outputs' error when this node alone runs in the model's
//   precision (its local outputs, widened back) and every other node in float64. Computed for the
//   `top_k` nodes with the largest local RMS error, worst first (within Options::budgeted);
//   each re-runs only the node's downstream cone.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusion/oracle.h"
#include "refeval/ir.h"
#include "refeval/registry.h"
#include "refeval/value.h"

namespace refeval::accuracy {

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
  bool fallback = false;             // no double path: the oracle ran its model-precision kernel
  std::optional<Error> contribution;
  // What the node is ranked by: contribution RMS when computed, else the accumulated RMS of its
  // worst output (ranked after every node with a contribution).
  double rank_key() const;
};

// Where the profile's time went (wall clock, milliseconds): the model run, the oracle run, the
// local errors (two more runs of the graph) and the contributions (each re-runs one node's
// downstream cone in the oracle; cone_nodes and cone_elements sum the nodes they ran and the
// tensor elements those made; graph_elements: one run's).
struct Timing {
  double model_ms = 0, oracle_ms = 0, local_ms = 0, contributions_ms = 0;
  size_t cone_nodes = 0, cone_elements = 0, graph_elements = 0;
};

struct Report {
  std::vector<NodeError> nodes;          // sorted, worst first
  std::vector<OutputError> outputs;      // graph outputs, accumulated error only
  Error outputs_total;                   // over every floating graph output
  std::vector<std::string> fallback;     // "id (op)" of nodes whose operator declares no double type
  size_t contributions = 0;              // how many nodes got a contribution
  size_t candidates = 0;                 // of how many (the top_k largest local errors)
  size_t nodes_run = 0;                  // main-graph nodes executed
  Timing timing;
};

struct Options {
  const Registry* registry = nullptr;  // null: the built-ins
  bool local = true;                   // compute local errors
  size_t top_k = 10;                   // contributions for this many nodes (0: none)
  // The contributions stop once their re-runs have made as many tensor elements as one run of
  // the graph, or 2^20 if that is more (the first is always computed): they cost about one
  // oracle run on a large graph, nothing to speak of on a small one. False: all top_k.
  bool budgeted = false;
};

// Runs the model on `feeds` (model precision) and its float64 oracle on the same feeds widened.
// Fails with ErrorKind::Runtime naming the node if the oracle cannot run.
Report profile(const Model& model, const std::map<std::string, Value>& feeds, const Options& options);

// `--reference OTHER.onnx`: the model (float16, QDQ-quantized, MatMulNBits, optimized) against a
// second model, its float original, on the same inputs. A value of the model is matched to a
// value of the reference (node output, initializer or graph input) by
//   1. the same name;
//   2. ONNX Runtime's QDQ names: "X_DequantizeLinear_Output" (optionally "_N"), the value after
//      its QuantizeLinear/DequantizeLinear pair, and "X_QuantizeLinear_Input", matched to "X";
//   3. the optimizer's provenance (metadata "refeval.fused_from:NODE" = the replaced nodes): the
//      fused node's floating outputs matched, in order, to the replaced nodes' outputs that are
//      read outside them in the reference, when the counts agree.
struct TensorMatch {
  std::string name, reference;
  std::string how;        // "name", "qdq", "fused_from"
  std::string producer;   // the model node that made it ("" for an initializer or input)
  DType dtype = DType::Undefined;
  Error error;            // the model's value against the reference's
};

struct ReferenceReport {
  std::vector<TensorMatch> tensors;    // in the model's execution order
  std::vector<OutputError> outputs;    // graph outputs matched by name, accumulated = against the reference
  Error outputs_total;
  std::vector<std::string> unmatched;  // floating node outputs of the model with no counterpart
  size_t nodes_run = 0;
};

// `feeds` are the model's; the reference is fed the values of the same names, converted to its
// declared input types (float16 <-> float32), and `reference_feeds` for names the model lacks.
ReferenceReport against_reference(const Model& model, const Model& reference, const std::map<std::string, Value>& feeds,
                                  const std::map<std::string, Value>& reference_feeds, const Registry* registry);

// The JSON documents of `refeval accuracy --json` (and refeval.accuracy() in Python):
//   {"oracle": "float64", "model", "contributions_computed", "fallback": [...], "timing_ms": {"model",
//    "oracle", "local", "contributions", "cone_nodes", "cone_elements", "graph_elements"},
//    "nodes": [{"node", "op_type", "index", "contribution": ERR|null, "fallback"?, "local_note"?,
//               "outputs": [{"name", "dtype", "local": ERR|null, "accumulated": ERR, "amplification"}]}],
//    "outputs": [{"name", "dtype", "accumulated": ERR}]}
// with nodes in the report's order (by contribution, then accumulated RMS), and
//   {"oracle": "reference", "reference", "model", "nodes": [], "outputs": [...], "unmatched": [...],
//    "tensors": [{"name", "reference", "match", "producer", "dtype", ...ERR}]}
// where ERR is {"max_abs", "max_rel", "rms", "sqnr_db", "ulps", "count", "nonfinite"?}; JSON has
// no infinity, so an infinite figure is null.
nlohmann::json error_json(const Error& e);
nlohmann::json to_json(const Report& r, const std::string& model);
nlohmann::json to_json(const ReferenceReport& r, const std::string& model, const std::string& reference);

}  // namespace refeval::accuracy
