// Observers: the evaluator runs one loop and tells observers what happens around every node.
// The trace, the dumper, the NaN finder, the profiler and the debugger are all observers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval {

using NamedValues = std::vector<std::pair<std::string, Value>>;

// A graph starts or ends: the main graph (depth 0), or a body / function call (depth >= 1).
struct GraphEvent {
  int depth = 0;
  const Node* caller = nullptr;  // the If/Loop/Scan/function node running this body; null at depth 0
  std::string label;             // "then_branch", "body iteration 2", "function MyFn"
  std::string path;              // qualified id of the caller ("" at depth 0)
  const NamedValues* initializers = nullptr;
  const NamedValues* inputs = nullptr;   // feeds (depth 0) or the body's formal inputs
  const NamedValues* outputs = nullptr;  // only at graph_end
};

struct NodeEvent {
  int depth = 0;
  const Node& node;
  const std::string& id;  // qualified id: "name" or "#3", with "PARENT/ATTR/" prefixes in bodies
  int index = 0;          // position in its graph's execution order
  const Values& inputs;
};

// To abandon a run (a breakpoint that quits, a NaN found, the node the user asked for reached),
// an observer throws a type of its own that does not derive from std::exception: the engine turns
// std::exceptions from operators into refeval::Error naming the node, but lets such a type pass
// untouched, even out of bodies, to the caller of ReferenceEvaluator::run.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void graph_begin(const GraphEvent&) {}
  virtual void graph_end(const GraphEvent&) {}
  virtual void before_node(const NodeEvent&) {}
  // Called after every observer's before_node: the node's inputs may be replaced (the debugger's
  // `set` of a value computed earlier). The node runs on, and after_node sees, what is left here.
  virtual void replace_inputs(const NodeEvent&, Values& /*inputs*/) {}
  // Called after replace_inputs: returning true hands the node's outputs in `outputs` and its
  // kernel does not run (the accuracy profile re-runs only the nodes downstream of one node and
  // replays the values it recorded for the rest). The first observer that answers wins;
  // after_node is still called.
  virtual bool replay(const NodeEvent&, Values& /*outputs*/) { return false; }
  // Outputs may be replaced (the debugger's `set`).
  virtual void after_node(const NodeEvent&, Values& /*outputs*/) {}
  // True keeps every value alive until the run ends instead of freeing it after its last use.
  virtual bool keeps_values() const { return false; }
  // True (the default) sees every node run. False lets the engine skip a folded node whose every
  // reader prepared its value from elsewhere (a weight's Transpose that a MatMul packs from the
  // weight itself): the profiler's choice, so that it measures the memory a plain run takes.
  virtual bool sees_every_node() const { return true; }
};

}  // namespace refeval
