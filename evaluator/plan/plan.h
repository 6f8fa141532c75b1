// Private to the evaluator: the planned form of a graph (stage 2). plan.cc builds Plans from a
// loaded Graph; run/engine.cc executes them.
#pragma once

#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "refeval/ir.h"
#include "refeval/op_run.h"
#include "refeval/registry.h"

namespace refeval {

struct Step {
  const Node* node = nullptr;
  std::unique_ptr<OpRun> op;
  std::vector<int> inputs;    // slot per node input; -1 for an omitted one
  std::vector<int> outputs;   // slot per node output; -1 for an unwanted one
  std::vector<int> implicit;  // outer-scope slots its bodies read (kept alive until this step)
  std::vector<int> release;   // slots whose last use is this step
  // Per input: its slot is released at this step, no body of the step reads it and no later
  // input of the step names it, so the run loop moves the value out of the frame instead of
  // copying it (when no observer keeps values and the caller did not ask for it).
  std::vector<bool> last_read;
  std::string id;             // qualified id (CLI.md node addressing)
  int index = 0;
  // A deterministic built-in op whose inputs are all initializers or other folded outputs gives
  // the same outputs on every run: they are computed once and reused (observers still see the
  // node run, so traces do not change). A plan is run by one thread at a time.
  bool fold = false;
  mutable std::optional<Values> folded;
  // Per input: the op prepared it from elsewhere at plan time and runs when it comes Absent
  // (NodeContext::absorb_input).
  std::vector<bool> absorbed;
  // A folded step whose every output only absorbing readers read: not run unless an observer
  // asks to see every node (Observer::sees_every_node), its readers then given Absent inputs.
  bool skippable = false;
};

class Plan {
 public:
  std::shared_ptr<const Graph> graph;  // owns the nodes the steps point to
  std::vector<std::string> slot_names;
  std::vector<Step> steps;
  std::vector<std::string> input_names, output_names;
  std::vector<int> input_slots, output_slots;
  std::vector<std::pair<int, Tensor>> initializer_slots;
  std::vector<std::pair<int, int>> captures;  // (own slot, slot in the enclosing graph's frame)
  std::string path;                            // id prefix of this graph's nodes
  size_t num_slots() const { return slot_names.size(); }
};

// Everything planning needs besides the graph itself.
struct PlanEnv {
  const Registry* registry = nullptr;
  const Model* model = nullptr;  // source of model-local functions; may be null
  OpsetMap opsets;
  int function_depth = 0;  // guards against functions that call themselves
  // When set (EvaluatorOptions::release_packed_weights): called with the name of each initializer
  // of the main graph as soon as every node reading it has been made and absorbed it
  // (NodeContext::absorb_input); the plan then holds it no more, and runs come without it.
  std::function<void(const std::string&)> release_initializer;
};

// Names visible while planning one graph; a body's scope reaches into its parent's.
class Scope {
 public:
  Scope(Plan& plan, Scope* parent) : plan_(plan), parent_(parent) {}
  int define(const std::string& name);  // a new slot for a value defined in this graph
  // The slot of `name`, capturing it from enclosing graphs if needed; -1 if nowhere defined.
  int lookup(const std::string& name);
  std::vector<int>& captured_by_current_node() { return current_implicit_; }

 private:
  Plan& plan_;
  Scope* parent_;
  std::unordered_map<std::string, int> slots_;
  std::vector<int> current_implicit_;
};

std::shared_ptr<Plan> plan_graph(std::shared_ptr<const Graph> graph, const PlanEnv& env, Scope* parent,
                                 const std::string& path);

// Substitutes attributes that refer to a function call's attributes (ref_attr_name), in `nodes`
// and every nested body.
void bind_attribute_refs(std::vector<Node>& nodes, const std::map<std::string, Attribute>& values);

}  // namespace refeval
