// Generic graph editing the passes share: renaming a value's uses (into If/Loop/Scan bodies
// too), dropping dead nodes and unused initializers, and fresh names.
#pragma once

#include <set>
#include <string>

#include "refeval/ir.h"

namespace refeval::optimize {

// Every read of `from` (node inputs, graph outputs, and outer-scope reads inside bodies) reads `to`.
void rename_uses(Graph& g, const std::string& from, const std::string& to);

// Names a node reads, including outer-scope names its bodies read.
std::set<std::string> reads_of(const Node& n);

// Removes the nodes marked in `drop` (by index), then makes every reader of each `from` read its
// `to` (in order, so chains resolved by the caller stay resolved). Returns the nodes removed.
int drop_nodes(Graph& g, const std::vector<bool>& drop, const std::vector<std::pair<std::string, std::string>>& renames = {});

// Orders the nodes so every node comes after the producers of what it reads (stable: nodes
// already in order keep it). The passes assume this order, as ONNX requires it.
void topological_sort(Graph& g);

// Removes nodes no graph output depends on (nodes with no outputs kept only if they have
// side effects: none in ONNX) and initializers nothing reads. Returns the nodes removed.
int remove_dead(Graph& g);

// Gives every body of g's nodes (If/Loop/Scan graphs, at any depth) a copy of its own: a Graph
// copied by value shares its bodies with the original, whose caller must not see them edited.
void own_bodies(Graph& g);

// A name not used by any value or node of `g` yet, from `base` ("base", "base_1", ...); remembers it.
class NameGen {
 public:
  explicit NameGen(const Graph& g);
  std::string value(const std::string& base);
  std::string node(const std::string& base);

 private:
  std::set<std::string> values_, nodes_;
};

}  // namespace refeval::optimize
