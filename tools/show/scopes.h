// A graph's nodes grouped into nested layers by their name scopes, as Google's Model Explorer
// groups them: a node's scope is its metadata_props["namespace"] when given (": Class" parts of torch's
// dynamo exporter dropped; node_namespaces reads them), else its name's `/`-separated parts
// without the last (torch's "/model/layers.3/self_attn/q_proj/MatMul" -> model, layers.3,
// self_attn, q_proj). A scope-less node with no inputs (torch's "Constant_12") joins the deepest
// scope common to its consumers, as Model Explorer places initializers; other scope-less nodes
// stay at the root. A group holding a single node dissolves into its parent (repeatedly). In a
// group with subgroups, each run of 32 consecutive scope-less children (8 when the group has more
// than `max_children` children) becomes a section ("section_k_of_n"), so that the layers are in
// the first view; a group still above `max_children` is cut into parts ("part_k_of_n") of
// consecutive children in topological order; sibling groups (siblings across sections too) with the same structure (op types, domains and internal
// edges in order, names ignored) are marked identical (repeated transformer blocks).
// `collapse` is the graph seen at a depth: groups at that depth become single boxes and edges
// between boxes are deduplicated (show --format text|dot --depth N).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "refeval/ir.h"

namespace refeval::show {

struct ScopeOptions {
  size_t max_children = 120;
  const std::vector<std::string>* namespaces = nullptr;  // per node: a `/` path that replaces the name's scope
};

// A child of a group: node i is `i`, group g is `~g` (negative).
inline bool is_group_item(int item) { return item < 0; }
inline int group_of_item(int item) { return ~item; }

struct Scope {
  std::string name;  // "layers.3", "section_2_of_3"; "" for the root
  std::string path;  // "layers.3/self_attn"; "" for the root
  int parent = -1;
  int depth = 0;              // the root is 0
  std::vector<int> items;     // direct children in topological order (see is_group_item)
  std::vector<size_t> nodes;  // every node under the group, ascending
  std::vector<std::pair<std::string, size_t>> top_ops;  // the 3 most frequent op types under it, Constant left out
  int identical = -1;         // the class of identical siblings it belongs to (index into Scopes::identical), -1 if none
  bool section = false;       // cut by size (section_k_of_n, part_k_of_n), not a scope of the names
};

struct IdenticalBlocks {
  std::vector<int> groups;  // siblings with the same structure, in order
  std::string summary;      // "layers.1–11: 11 identical blocks"
};

struct Scopes {
  std::vector<Scope> groups;  // [0] is the root
  std::vector<int> node_group;  // node -> innermost group
  std::vector<IdenticalBlocks> identical;
};

Scopes build_scopes(const Graph& g, const ScopeOptions& options = {});

// "MatMul 7, Add 3, Mul 2".
std::string op_summary(const Scope& s);

// The graph with every group at `depth` (>= 1) shown as one box.
struct CollapsedGraph {
  struct Box {
    int group = -1;   // a group at `depth`, or -1 for a node
    size_t node = 0;  // when group < 0
  };
  struct Edge {
    int from = -1, to = -1;  // boxes; -1: a graph input (from) or output (to)
    std::string value;       // the first value along it
    size_t count = 0;        // values along it
  };
  std::vector<Box> boxes;  // in topological order
  std::vector<Edge> edges;
};
CollapsedGraph collapse(const Graph& g, const Scopes& scopes, int depth);

// The collapsed graph as text, one line per box then one per edge:
//   [layers.3] 229 nodes: MatMul 7, Mul 20, Add 3  (≡ layers.1–11: 11 identical blocks)
//   /Where_4 Where
//   layers.2 -> layers.3  /layers.2/Add_1_output_0
//   /Where_4 -> layers.3  3 values
std::string collapsed_text(const Graph& g, const Scopes& scopes, const CollapsedGraph& c);
// The same as Graphviz DOT: groups as 3-D boxes, edges labelled with their value or count.
std::string collapsed_dot(const Graph& g, const Scopes& scopes, const CollapsedGraph& c);

// The main graph's nodes' metadata_props["namespace"] (NodeProto field 9, IR 10: newer than the
// onnx.proto Debian's libonnx has, so read from the file's unknown fields), by node index; "" where
// a node has none; empty when no node has one or the file cannot be read as a model.
std::vector<std::string> node_namespaces(const std::string& model_path);

}  // namespace refeval::show
