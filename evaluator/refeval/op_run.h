// OpRun: the base class of every operator, built-in or custom. An operator is a small class:
// its constructor reads and checks attributes once (from a NodeContext, at plan time), and
// `run` maps input values to output values (through a RunContext, at run time).
//
//   class Relu : public refeval::OpRun {
//    public:
//     explicit Relu(const refeval::NodeContext&) {}
//     refeval::Values run(const refeval::Values& in, refeval::RunContext&) override;
//   };
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval {

// Whether an operator's outputs depend on its inputs and attributes alone. The planner folds a
// Deterministic node whose inputs are all constant (it runs once and its outputs are reused);
// Random and Unknown nodes run every time. An operator declares it in its class:
//   static constexpr refeval::Determinism determinism = refeval::Determinism::Deterministic;
// Built-in operators are Deterministic unless they declare Random; a user or plugin operator that
// declares nothing is Unknown, so it opts in to folding by declaring Deterministic.
enum class Determinism { Unknown, Deterministic, Random };

class Plan;  // a planned graph (a subgraph body or a function body); opaque to operators

class OpRun {
 public:
  virtual ~OpRun() = default;
  // `inputs` has one entry per node input; an omitted optional input is an Absent value.
  // The result may be shorter than the node's outputs: the remaining outputs are not produced.
  virtual Values run(const Values& inputs, class RunContext& ctx) = 0;
};

// What an operator sees while it is being constructed.
class NodeContext {
 public:
  virtual ~NodeContext() = default;

  virtual const Node& node() const = 0;
  virtual int64_t opset() const = 0;         // the model's opset version for this node's domain
  virtual int since_version() const = 0;     // the since-version this implementation resolved to
  virtual Determinism determinism() const = 0;  // as registered (OpRegistration::determinism)
  // The graph holding the node and the opsets in force, for the rare operator that looks beyond
  // its inputs (Gradient differentiates the nodes that lead to its `y`).
  virtual const Graph& graph() const = 0;
  virtual const OpsetMap& opsets() const = 0;
  size_t num_inputs() const { return node().inputs.size(); }
  size_t num_outputs() const { return node().outputs.size(); }
  bool has_input(size_t i) const { return i < num_inputs() && !node().inputs[i].empty(); }
  bool has_output(size_t i) const { return i < num_outputs() && !node().outputs[i].empty(); }
  // The initializer input i names when no graph input of that name can replace it: a weight fixed
  // for the session, which an operator may prepare (pack) as it is made. Null otherwise.
  const Initializer* constant_input(size_t i) const;
  // Whether input i is the output of a node folded at plan time (a node whose inputs are all
  // constant: a float16 weight's Cast, a DequantizeLinear or Transpose of a weight): the same
  // tensor on every run, known only once the first run has made it.
  virtual bool folded_input(size_t) const { return false; }
  // Graph::transposed_initializer of input i: W when it is Transpose(W) of a 2-D constant W.
  const Initializer* transposed_constant_input(size_t i) const;
  // Declares that this operator prepared input i from elsewhere (a weight packed from the W of
  // transposed_constant_input) and runs without it: when nothing else reads the value, the planner
  // skips the folded node that makes it (W^T is never made) and this input comes Absent.
  virtual void absorb_input(size_t) const {}

  bool has_attr(const std::string& name) const;
  // Typed attribute access. T is one of: float, double, int64_t, int, bool, std::string,
  // std::vector<float>, std::vector<int64_t>, std::vector<std::string>, Tensor,
  // std::vector<Tensor>, ValueType. A wrong attribute type is an error naming the node.
  template <class T> T attr(const std::string& name, const T& default_value) const;
  template <class T> T required(const std::string& name) const;
  template <class T> std::optional<T> optional_attr(const std::string& name) const;
  // Marks an attribute as known but unused (e.g. legacy ones), so it is not reported as unknown.
  void ignore(const std::string& name) const { read_.insert(name); }

  // Plans a GRAPH attribute as a body that can see this graph's values (outer scope).
  virtual std::shared_ptr<const Plan> subgraph(const std::string& attr_name) const = 0;

  // A model error (exit 2) naming the node.
  [[noreturn]] void fail(const std::string& message) const;

  // Attributes present on the node but never read: reported as unknown by the planner.
  std::vector<std::string> unread_attributes() const;

 private:
  const Attribute& get(const std::string& name) const;
  mutable std::set<std::string> read_;
};

// What an operator sees while it runs.
class RunContext {
 public:
  virtual ~RunContext() = default;
  virtual const Node& node() const = 0;
  // Runs a body planned by NodeContext::subgraph with these inputs; returns its outputs.
  // `label` names the execution in traces: "then_branch", "body iteration 3".
  virtual Values run_body(const Plan& body, const Values& inputs, const std::string& label) = 0;
  // A run-time error (exit 1); the engine adds the node's name and op type.
  [[noreturn]] void fail(const std::string& message) const { fail_runtime(message); }
};

// Names of a plan's formal inputs and outputs, for operators that run bodies.
const std::vector<std::string>& plan_input_names(const Plan& p);
const std::vector<std::string>& plan_output_names(const Plan& p);

// Input helpers for `run`: the tensor at position i, checked to be present.
const Tensor& input_tensor(const Values& inputs, size_t i);
inline bool has_value(const Values& inputs, size_t i) { return i < inputs.size() && !inputs[i].is_absent(); }

}  // namespace refeval
