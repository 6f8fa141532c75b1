// A rewrite: declarative patterns (pattern.h) plus a replacement builder that may still refuse
// (conditions a pattern cannot say: an epsilon's range, a mask's values, shapes). Applying it
// replaces each match, whose intermediates nothing else reads, by the builder's nodes at the
// root's place; the replacement writes the root's outputs, so consumers are untouched.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph_edit.h"
#include "graph_index.h"
#include "pattern.h"

namespace refeval::optimize {

struct Replacement {
  std::vector<Node> nodes;
  std::vector<Initializer> initializers;
};

// What a builder may use: the graph (read-only through the index), fresh names, the opsets.
struct RewriteContext {
  const GraphIndex& index;
  NameGen& names;
  const OpsetMap& opsets;
  // A node name for a fused node: the replaced nodes' common scope ("/blocks.0/") + op type.
  std::string fused_name(const Match& m, const std::string& op_type) const;
};

struct Rewrite {
  std::string counter;             // what the statistics call it: "FastGelu"
  std::vector<Pattern> patterns;   // alternatives, tried in order
  std::function<std::optional<Replacement>(const Match&, RewriteContext&)> build;
};

// Applies `r` everywhere in `model.graph`; returns the number of matches replaced. Each fused
// node's provenance, the names of the original nodes it replaced (through earlier fusions too),
// is kept in the model's metadata_props as "refeval.fused_from:<node name>" = "a,b,c", which
// `refeval show --diff` uses to link fused nodes to what they replaced; ONNX Runtime ignores it.
int apply(const Rewrite& r, Model& model, const Inference* inference);

inline constexpr const char* kFusedFromKey = "refeval.fused_from:";

// Builders' helpers.
Node make_node(const std::string& op_type, const std::string& domain, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::vector<Attribute> attributes, const std::string& name);

}  // namespace refeval::optimize
