// Node addressing (CLI.md), shared by every verb and API that names a node:
//   NAME            a node name (wins over every other reading)
//   #I              the I-th node of the graph, 0-based, in stored order
//   op:TYPE         every node of that op type (op:DOMAIN:TYPE to name the domain too)
//   PARENT/ATTR/SUB a node SUB inside the graph attribute ATTR of node PARENT (by name or #I)
// Node names may contain '/', as exporters like to write them ("/h.0/attn/MatMul"), so a path is
// matched against names first and split only where a name does not match.
#pragma once

#include <string>
#include <vector>

#include "refeval/ir.h"

namespace refeval {

struct NodeMatch {
  std::string id;               // qualified id, as observers see it in NodeEvent::id
  const Node* node = nullptr;
  const Graph* graph = nullptr; // the graph holding the node
  size_t index = 0;             // stored position in that graph
  int depth = 0;                // 0: main graph; n: inside n nested bodies
};

// The qualified id the engine gives the node at `index` of a graph whose ids start with `prefix`.
std::string node_id(const std::string& prefix, const Node& node, size_t index);

// Every node the address names, in stored order (op:TYPE also searches bodies, depth first).
// An address that names nothing is a usage error that says so.
std::vector<NodeMatch> find_nodes(const Graph& graph, const std::string& address);

}  // namespace refeval
