// A rewrite: declarative patterns (pattern.h) plus a replacement builder that may still refuse
// (conditions a pattern cannot say: an epsilon's range, a mask's values, shapes). Applying it
// replaces each match, whose intermediates nothing else reads, by the builder's nodes at the
// root's place; the replacement writes the root's outputs, so consumers are untouched.
#pragma once

#include <functional>
#include <map>
#include <set>
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
  // A builder that refuses a match says why, for --explain:
  //   return ctx.refuse(fmt::format("epsilon {} is not in (0, 0.01]", eps));
  std::nullopt_t refuse(std::string why) {
    refusal = std::move(why);
    return std::nullopt;
  }
  std::string refusal;
};

// What --explain collects: per pass, the candidates found and fused, and one line per candidate
// left unfused with the condition that failed.
struct Explain {
  struct PassCount {
    std::string pass;
    int candidates = 0, fused = 0;
  };
  std::vector<PassCount> counts;
  std::vector<std::string> not_fused;  // "not fused: <pass> at '<node>': <why>"
  std::map<std::string, std::set<std::string>> made;  // per pass, the nodes it wrote (not candidates in a later round)
  void add(const std::string& pass, const std::string& node, const std::string& why);
  void count(const std::string& pass, int candidates, int fused);
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
// With `explain`, also counts the candidates (graph nodes of the anchor's op type, pattern.h) and
// says, for each one left unfused, which condition failed.
int apply(const Rewrite& r, Model& model, const Inference* inference, Explain* explain = nullptr, const std::string& pass = "");

inline constexpr const char* kFusedFromKey = "refeval.fused_from:";

// One fusion's provenance: the nodes it replaced and the nodes it created, by name. For passes
// that rewrite without apply() (attention).
struct Provenance {
  std::vector<std::string> replaced, created;
};
void record_provenance(Model& model, const std::vector<Provenance>& fusions);

// Builders' helpers.
Node make_node(const std::string& op_type, const std::string& domain, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::vector<Attribute> attributes, const std::string& name);

}  // namespace refeval::optimize
