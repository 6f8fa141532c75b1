#include "rewrite.h"

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace refeval::optimize {

std::string RewriteContext::fused_name(const Match& m, const std::string& op_type) const {
  std::vector<std::string> replaced;
  for (const auto& [id, gi] : m.nodes) replaced.push_back(index.graph().nodes[size_t(gi)].name);
  std::string prefix = replaced.empty() ? "" : replaced[0];
  for (const std::string& n : replaced) {
    size_t k = 0;
    while (k < prefix.size() && k < n.size() && prefix[k] == n[k]) ++k;
    prefix.resize(k);
  }
  prefix.resize(prefix.rfind('/') == std::string::npos ? 0 : prefix.rfind('/') + 1);
  return names.node(prefix + op_type);
}

Node make_node(const std::string& op_type, const std::string& domain, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::vector<Attribute> attributes, const std::string& name) {
  Node n;
  n.op_type = op_type, n.domain = domain, n.inputs = std::move(inputs), n.outputs = std::move(outputs);
  n.attributes = std::move(attributes), n.name = name;
  return n;
}

void record_provenance(Model& model, const std::vector<Provenance>& fusions) {
  std::map<std::string, std::string> earlier;  // a replaced node that was itself fused -> its originals
  for (const auto& [key, value] : model.metadata)
    if (key.rfind(kFusedFromKey, 0) == 0) earlier[key.substr(std::string(kFusedFromKey).size())] = value;
  std::set<std::string> consumed;
  for (const Provenance& f : fusions) {
    std::vector<std::string> originals;
    for (const std::string& name : f.replaced) {
      if (name.empty()) continue;
      if (auto it = earlier.find(name); it != earlier.end()) {
        originals.push_back(it->second);
        consumed.insert(name);
      } else {
        originals.push_back(name);
      }
    }
    if (originals.empty()) continue;
    const std::string list = fmt::format("{}", fmt::join(originals, ","));
    for (const std::string& n : f.created)
      if (!n.empty()) model.metadata.emplace_back(kFusedFromKey + n, list);
  }
  std::erase_if(model.metadata, [&](const auto& kv) {
    return kv.first.rfind(kFusedFromKey, 0) == 0 && consumed.count(kv.first.substr(std::string(kFusedFromKey).size()));
  });
}

void Explain::add(const std::string& pass, const std::string& node, const std::string& why) {
  not_fused.push_back(fmt::format("not fused: {} at '{}': {}", pass, node, why));
  // REFEVAL_EXPLAIN_LOG: every reason given anywhere (CLI runs, unit tests) appended to one file,
  // for tests/tools/optimize/refusals.py, which checks each refusal in the code has a test.
  static const char* log = std::getenv("REFEVAL_EXPLAIN_LOG");
  if (log && *log)
    if (std::FILE* f = std::fopen(log, "a")) {
      std::fprintf(f, "%s\n", why.c_str());
      std::fclose(f);
    }
}

void Explain::count(const std::string& pass, int candidates, int fused) {
  for (PassCount& c : counts)
    if (c.pass == pass) {
      c.candidates += candidates, c.fused += fused;
      return;
    }
  counts.push_back({pass, candidates, fused});
}

namespace {

// For --explain: the best reason each anchor node was left unfused, from every failed attempt
// whose partial match bound it (the attempt that bound the most pattern nodes wins).
class Reasons {
 public:
  void note(const Pattern& p, const MatchFailure& f, int bonus = 0) {
    auto it = f.nodes.find(p.anchor_node().id);
    if (it == f.nodes.end()) return;
    Reason& r = by_anchor_[it->second];
    if (int(f.nodes.size()) + bonus > r.depth) r = {int(f.nodes.size()) + bonus, f.why};
  }
  void report(const Rewrite& r, const Graph& g, const std::vector<bool>& claimed, Explain& explain, const std::string& pass,
              int fused) const {
    std::set<std::string> anchor_types;
    for (const Pattern& p : r.patterns)
      if (p.look_alike.empty()) anchor_types.insert(p.anchor_node().op_type);
    int candidates = fused;
    for (int i = 0; i < int(g.nodes.size()); ++i) {
      const Node& n = g.nodes[size_t(i)];
      // What this pass made in an earlier round is its result, not a candidate.
      if (claimed[size_t(i)] || !anchor_types.count(n.op_type) || (explain.made.count(pass) && explain.made.at(pass).count(n.name))) continue;
      ++candidates;
      auto it = by_anchor_.find(i);
      explain.add(pass, n.name.empty() ? n.outputs.at(0) : n.name,
                  it != by_anchor_.end() ? it->second.why : fmt::format("no {} pattern reaches it", r.counter));
    }
    explain.count(pass, candidates, fused);
  }

 private:
  struct Reason {
    int depth = -1;
    std::string why;
  };
  std::map<int, Reason> by_anchor_;
};

}  // namespace

int apply(const Rewrite& r, Model& model, const Inference* inference, Explain* explain, const std::string& pass) {
  Graph& g = model.graph;
  const GraphIndex index(g, inference);
  NameGen names(g);
  RewriteContext ctx{index, names, model.opsets, ""};
  std::vector<bool> claimed(g.nodes.size(), false);
  std::map<int, Replacement> replacements;  // by root index
  std::map<int, std::vector<std::string>> replaced;  // by root index: the matched nodes' names
  Reasons reasons;
  for (int root = 0; root < int(g.nodes.size()); ++root) {
    for (const Pattern& p : r.patterns) {
      if (claimed[size_t(root)] || p.root().op_type != g.nodes[size_t(root)].op_type) continue;
      MatchFailure failure;
      std::optional<Match> m = match(p, index, root, claimed, explain ? &failure : nullptr);
      if (!m) {
        if (explain) reasons.note(p, failure);
        continue;
      }
      if (!p.look_alike.empty()) {
        if (explain) reasons.note(p, {p.look_alike, m->nodes}, 1000);  // a named look-alike outranks partial matches
        continue;
      }
      if (const std::string escaping = escaping_intermediate(*m, index); !escaping.empty()) {
        if (explain) reasons.note(p, {escaping, m->nodes});
        continue;
      }
      ctx.refusal.clear();
      std::optional<Replacement> rep = r.build(*m, ctx);
      if (!rep) {
        if (explain) reasons.note(p, {ctx.refusal.empty() ? "the replacement's conditions do not hold" : ctx.refusal, m->nodes});
        continue;
      }
      for (const auto& [id, gi] : m->nodes) {
        claimed[size_t(gi)] = true;
        replaced[root].push_back(g.nodes[size_t(gi)].name);
      }
      replacements.emplace(root, std::move(*rep));
      break;
    }
  }
  if (explain) reasons.report(r, g, claimed, *explain, pass, int(replacements.size()));
  if (replacements.empty()) return 0;
  std::vector<Provenance> provenance;
  for (const auto& [root, rep] : replacements) {
    Provenance p{replaced.at(root), {}};
    for (const Node& n : rep.nodes) {
      p.created.push_back(n.name);
      if (explain) explain->made[pass].insert(n.name);
    }
    provenance.push_back(std::move(p));
  }
  record_provenance(model, provenance);
  std::vector<Node> nodes;
  for (int i = 0; i < int(g.nodes.size()); ++i) {
    if (auto it = replacements.find(i); it != replacements.end()) {
      for (Node& n : it->second.nodes) nodes.push_back(std::move(n));
      for (Initializer& init : it->second.initializers) g.initializers.push_back(std::move(init));
    } else if (!claimed[size_t(i)]) {
      nodes.push_back(std::move(g.nodes[size_t(i)]));
    }
  }
  g.nodes = std::move(nodes);
  return int(replacements.size());
}

}  // namespace refeval::optimize
