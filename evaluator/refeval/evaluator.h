// ReferenceEvaluator: load -> plan -> run, in the spirit of onnx.reference.ReferenceEvaluator.
//
//   refeval::ReferenceEvaluator ev(refeval::load_model("model.onnx"));
//   refeval::Values out = ev.run({}, {{"X", refeval::Value(x)}});
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "refeval/ir.h"
#include "refeval/observer.h"
#include "refeval/registry.h"
#include "refeval/value.h"

namespace refeval {

// The highest ai.onnx opset the built-in registry implements; used for a bare node.
inline constexpr int64_t kLatestOnnxOpset = 28;

struct EvaluatorOptions {
  const Registry* registry = nullptr;  // null: the built-in registry
  // Weights held once: an initializer that every node reading it took in a form of its own as the
  // session was made (MatMul's packed strips) is let go, in the evaluator's model() too, whose
  // copy keeps its type and shape but no values. For a caller that reads no weights through
  // model() nor asks run() for them (refeval generate and run); observers see such inputs absent.
  bool release_packed_weights = false;
};

class ReferenceEvaluator {
 public:
  explicit ReferenceEvaluator(Model model, EvaluatorOptions options = {});
  static ReferenceEvaluator from_graph(Graph graph, OpsetMap opsets, std::vector<Function> functions = {},
                                       EvaluatorOptions options = {});
  // A function body, with the call's attribute values bound (defaults fill the rest).
  static ReferenceEvaluator from_function(const Function& function, const std::vector<Attribute>& attributes = {},
                                          EvaluatorOptions options = {});
  // One node; its inputs and outputs are the node's own names. Default opset: the latest
  // ai.onnx for domain "", 1 for any other domain.
  static ReferenceEvaluator from_node(const Node& node, OpsetMap opsets = {}, EvaluatorOptions options = {});

  ReferenceEvaluator(ReferenceEvaluator&&) noexcept;
  ReferenceEvaluator& operator=(ReferenceEvaluator&&) noexcept;
  ~ReferenceEvaluator();

  const Model& model() const;
  std::vector<std::string> input_names() const;   // what must be fed (initializers excluded)
  std::vector<std::string> output_names() const;
  const ValueType* declared_type(const std::string& name) const;  // graph input/output/value_info

  void add_observer(Observer* observer);  // not owned; observed in the order added
  void remove_observer(Observer* observer);

  // Runs the graph. `outputs` empty means the graph outputs; any value name may be asked for.
  // Feeds are checked against the declared input types (ErrorKind::Input on a mismatch).
  Values run(const std::vector<std::string>& outputs, const std::map<std::string, Value>& feeds);
  // Every value, in execution order: initializers, feeds, then each node's outputs.
  NamedValues run_all(const std::map<std::string, Value>& feeds);

  struct Impl;  // opaque

 private:
  explicit ReferenceEvaluator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace refeval
