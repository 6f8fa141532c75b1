// The optimizer: passes (pass.h) in levels and orders, as ONNX Runtime's session optimizer
// (basic: ONNX operators only) and its Python transformer optimizer (extended: com.microsoft
// fusions, ordered by model type) do, with per-pass statistics and an optional check after
// every pass that changed the model.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model_type.h"
#include "pass.h"

namespace refeval::optimize {

struct OptimizeOptions {
  Level level = Level::Extended;  // "all" is extended: there is no layout level
  std::string model_type;         // "" or one of model_types() (model_type.h): a label, checked against the graph
  std::string target = "ort";     // "ort": com.microsoft fused operators; "onnx": standard operators of opset 23
  // --target ort: "cpu" writes the forms ONNX Runtime's CPU kernels run fastest (ort_cpu_forms.h);
  // "all" every fusion, as ORT's transformer optimizer writes them (for its GPU providers).
  std::string forms = "cpu";
  bool explain = false;           // collect OptimizeResult::explain
  std::set<std::string> only, disable;
  std::optional<int64_t> opset;   // the output's ai.onnx opset
  // Runs each stage's passes (basic; canonical forms; fusions) in an order drawn from this seed
  // (--shuffle-passes): the passes run in rounds until nothing changes, so the order within a
  // stage must not decide what fuses.
  std::optional<uint64_t> shuffle_seed;
  // Called after each pass that changed the model with the model before and after it; false
  // stops the optimizer there (--verify-each).
  std::function<bool(const Model& before, const Model& after, const std::string& pass)> check_each;
};

struct PassStats {
  std::string pass, counter;
  int count = 0;
  double ms = 0;
  size_t nodes_after = 0;
};

struct OptimizeResult {
  Model model;
  std::vector<PassStats> passes;  // in the order run (a pass may run in several rounds)
  std::string broken_by;          // the pass check_each refused, if any
  std::string model_type;         // given, or detected
  ModelKind kind;                 // what the graph shows, with the reason
  std::string type_warning;       // a given type that does not fit the graph, said why
  Explain explain;                // with OptimizeOptions::explain
  // --target onnx: fusions left out because a node they wrote has no standard form, each said why.
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> unconverted;  // what the standard-ops pass refused
};

// Names of every pass, in their default order, for --only / --disable and `--list-passes`.
std::vector<std::string> pass_names();
// ErrorKind::Usage for an unknown pass, level or model type.
Level parse_level(const std::string& s);
void check_pass_names(const std::set<std::string>& names);

OptimizeResult optimize(Model model, const Registry& registry, const OptimizeOptions& options);
// One run of the passes, with no --target onnx fallback (optimize() calls it).
OptimizeResult optimize_once(Model model, const Registry& registry, const OptimizeOptions& options);

// Operator counts ("Attention" -> 12), by op type, for the statistics.
std::map<std::string, int> op_counts(const Graph& g);
// Bytes of the initializers.
uint64_t weight_bytes(const Graph& g);

}  // namespace refeval::optimize
