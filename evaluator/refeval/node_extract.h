// A single node cut out of a model as a model of its own (`refeval node --extract`): the node,
// the model's opsets and IR version, the model-local functions it calls, and graph inputs and
// outputs typed from actual values, so the result runs anywhere on the values it was cut with.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "refeval/ir.h"
#include "refeval/value.h"

namespace refeval {

// The names a node reads, in order and without duplicates: its inputs, then the outer-scope
// names its bodies (If/Loop/Scan graphs) capture. Omitted optional inputs ("") are left out.
std::vector<std::string> node_reads(const Node& node);

// The model-local functions of `m` that `nodes` call, directly or through other functions and
// If/Loop/Scan bodies, each once, appended to `out`.
void collect_functions(const std::vector<Node>& nodes, const Model& m, std::vector<const Function*>& out);

// The declared type of a value as a graph would declare it: a tensor with its fixed shape, a
// sequence / optional / map of its element type.
ValueType type_of_value(const Value& v);

// A one-node model: `values` must hold every name node_reads(node) gives (they become the graph
// inputs, in that order; ErrorKind::Usage names a missing one). The node's outputs are typed
// from `values` when it holds them, else left untyped (enough to run the node).
Model single_node_model(const Model& source, const Node& node, const std::map<std::string, Value>& values);

}  // namespace refeval
