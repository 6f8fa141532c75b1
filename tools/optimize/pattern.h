// Declarative graph patterns, in the spirit of MLIR's and TVM's pattern languages: a pattern is a
// list of operator nodes whose inputs are captures (any value, named), outputs of other pattern
// nodes, or scalar constants; the last node is the root. The matcher walks up from a root
// candidate, tries both operand orders of commutative operators (Add, Mul), binds each capture
// once (a capture used twice must be the same value) and each pattern node to a distinct graph
// node. Example, the tanh GELU of GPT-2:
//
//   Pattern p{{
//       {"half", "Mul", {cap("x"), val(0.5)}},
//       {"cube", "Pow", {cap("x"), val(3.0)}},
//       {"scaled_cube", "Mul", {node("cube"), val(0.044715, 1e-4)}},
//       ...
//       {"y", "Mul", {node("half"), node("one_plus")}},
//   }};
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph_index.h"

namespace refeval::optimize {

struct Operand {
  enum class Kind { Capture, Constant, NodeOutput, Scalar, Any, Optional };
  Kind kind = Kind::Any;
  std::string name;  // capture name, or pattern node id
  int output = 0;    // which output of that node
  double value = 0, tolerance = 0;
};
Operand cap(const std::string& name);
// A capture that only binds a constant (an initializer or Constant node): with a commutative
// operator this picks the constant operand whichever side it is on.
Operand konst(const std::string& name);
Operand node(const std::string& id, int output = 0);
// A constant holding one element within `tolerance` of v (absolute; relative for |v| > 1).
Operand val(double v, double tolerance = 1e-6);
Operand any();
// Any value or an omitted trailing input (Split's sizes, Slice's steps).
Operand opt();

struct PatternNode {
  std::string id, op_type;
  std::vector<Operand> inputs;
  // Attribute and arity conditions on the graph node; null accepts any.
  std::function<bool(const Node&)> accept = nullptr;
  std::string domain = "";
  // What `accept` checks, for --explain: "ReduceMean over the last axis keeping it" gives
  // "'/ln/ReduceMean' is not ReduceMean over the last axis keeping it".
  std::string why = "";
};

struct Pattern {
  std::vector<PatternNode> nodes;  // the root last
  // Pattern nodes besides the root whose first output may be read outside the match, because
  // the replacement writes it too (SkipLayerNormalization's sum output).
  std::vector<std::string> may_escape = {};
  // The pattern node that makes a graph node a candidate for --explain (the Softmax of an
  // attention, the Tanh of a GELU): every graph node of its op type that the pass leaves unfused
  // gets one "not fused" line, with the condition that failed on the deepest partial match
  // through it. Empty: the root.
  std::string anchor = "";
  // A look-alike: a form that resembles the fusion but computes something else (epsilon added
  // outside the square root). It is never fused; a match names this reason under --explain.
  std::string look_alike = "";
  const PatternNode& root() const { return nodes.back(); }
  const PatternNode& anchor_node() const;
};

struct Match {
  const Pattern* pattern = nullptr;
  std::map<std::string, int> nodes;             // pattern node id -> graph node index
  std::map<std::string, std::string> captures;  // capture name -> value name
  const Node& node(const GraphIndex& g, const std::string& id) const { return g.graph().nodes[size_t(nodes.at(id))]; }
  const std::string& value(const std::string& capture) const { return captures.at(capture); }
};

// Why a match failed, for --explain: the condition that failed on the deepest partial match (the
// one that bound the most pattern nodes) and the graph nodes bound then.
struct MatchFailure {
  std::string why;
  std::map<std::string, int> nodes;  // pattern node id -> graph node index
};

// Matches `p` rooted at graph node `root`; nodes in `claimed` (already rewritten in this pass)
// never match. The first match in operand-order search order, or nullopt; then `failure`, when
// given, holds the deepest failure.
std::optional<Match> match(const Pattern& p, const GraphIndex& g, int root, const std::vector<bool>& claimed,
                           MatchFailure* failure = nullptr);

// True when every output of every matched node except the root is read only by matched nodes
// and is no graph output: removing them changes nothing else (an intermediate also used
// elsewhere blocks the fusion).
bool only_root_escapes(const Match& m, const GraphIndex& g);
// The same check, naming the first escaping intermediate: "'/ln/Sub' output 'd' is also read by
// '/x/Mul'"; empty when only the root escapes.
std::string escaping_intermediate(const Match& m, const GraphIndex& g);

// Attribute helpers for `accept`.
int64_t int_attr(const Node& n, const std::string& name, int64_t fallback);
float float_attr(const Node& n, const std::string& name, float fallback);
std::vector<int64_t> ints_attr(const Node& n, const std::string& name);
// A Gather index into an axis of `size` elements made non-negative (-1 is the last, as Gather
// reads it); -1 when it is outside -size..size-1.
int64_t gather_index(double index, int64_t size);
// True when p holds 0..p.size()-1, each once: a Transpose's perm the evaluator would run.
bool is_permutation(const std::vector<int64_t>& p);
// The axes of an Unsqueeze, Squeeze or Reduce*: the attribute before the opset made them an input
// (13, 18), the constant input since; nullopt for an input that is not a constant.
std::optional<std::vector<int64_t>> axes_of(const Node& n, const GraphIndex& g);
// A Slice's bounds in either form (attributes before opset 10, inputs since): axes made
// non-negative for an input of rank `rank` and 0, 1, .. when not given, steps 1 when not given.
// nullopt when a bound is unknown, an axis is out of range or repeated, or the lengths differ.
struct SliceBounds {
  std::vector<Dim> starts, ends;  // as GraphIndex::shape_values reads them
  std::vector<int64_t> axes, steps;
};
std::optional<SliceBounds> slice_bounds(const Node& slice, const GraphIndex& g, size_t rank);

}  // namespace refeval::optimize
