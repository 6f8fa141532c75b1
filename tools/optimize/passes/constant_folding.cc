// Constant folding through the evaluator (ORT's ConstantFolding): a deterministic node whose
// inputs are all constants is run once and its outputs become initializers; Constant nodes
// become initializers. Not folded: random operators (their registrations say so), nodes with
// bodies, user operators that did not declare themselves deterministic, and a node whose result
// would copy a large constant that stays in use (Transpose of a shared embedding: FusedMatMul
// absorbs it instead of doubling the weights).
#include <spdlog/spdlog.h>

#include "../pass.h"
#include "refeval/evaluator.h"

namespace refeval::optimize {
namespace {

constexpr int64_t kLargeElements = 1 << 20;
// A node whose inferred output holds more elements than this is not folded: a ConstantOfShape or
// Expand of a computed size (2^31 in an invalid graph) would take gigabytes, and a model whose
// constants are that large is not what a user wants written.
constexpr int64_t kFoldedElements = int64_t(1) << 26;

// True when inference knows every dim of one of `n`'s outputs and their product exceeds
// kFoldedElements.
bool too_large_to_fold(const Node& n, const GraphIndex& index) {
  for (const std::string& out : n.outputs) {
    const std::vector<Dim>* dims = out.empty() ? nullptr : index.dims(out);
    if (!dims) continue;
    int64_t elements = 1;
    for (const Dim& d : *dims) {
      if (!d.fixed() || d.value < 0) {
        elements = 0;
        break;
      }
      if (d.value > 0 && elements > kFoldedElements / d.value) return true;
      elements *= d.value;
    }
    if (elements > kFoldedElements) return true;
  }
  return false;
}

bool has_body(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

int fold(Model& m, const Registry& registry, const Inference* inference) {
  Graph& g = m.graph;
  const GraphIndex index(g, inference);
  std::map<std::string, Tensor> known;  // constants so far: the index's and those folded here
  for (const Initializer& i : g.initializers)
    if (const Tensor* t = index.constant(i.name)) known.emplace(i.name, *t);
  std::vector<bool> drop(g.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.outputs.empty() || has_body(n)) continue;
    if (n.op_type == "Constant" && n.domain.empty()) {
      const Tensor* t = n.outputs.size() == 1 ? index.constant(n.outputs[0]) : nullptr;
      if (!t) continue;
      known.emplace(n.outputs[0], *t);
      g.initializers.push_back({n.outputs[0], *t});
      drop[i] = true, ++folded;
      continue;
    }
    bool all_constant = !n.inputs.empty();
    std::map<std::string, Value> feeds;
    bool duplicates_large = false;
    for (const std::string& in : n.inputs) {
      if (in.empty()) continue;
      auto it = known.find(in);
      if (it == known.end()) { all_constant = false; break; }
      feeds.emplace(in, it->second);
      if (it->second.size() >= kLargeElements && index.consumers(in).size() > 1) duplicates_large = true;
    }
    if (!all_constant || duplicates_large) continue;
    if (too_large_to_fold(n, index)) {
      spdlog::debug("constant folding: {} left as is: its output would exceed {} elements", n.describe(), kFoldedElements);
      continue;
    }
    const int64_t opset = m.opsets.count(n.domain) ? m.opsets.at(n.domain) : 1;
    const OpRegistration* reg = registry.resolve(n.domain, n.op_type, opset);
    if (!reg || reg->determinism != Determinism::Deterministic) continue;
    try {
      ReferenceEvaluator ev = ReferenceEvaluator::from_node(n, m.opsets, {&registry});
      const Values out = ev.run({}, feeds);
      bool tensors = true;
      for (const Value& v : out) tensors = tensors && v.is_tensor();
      // The evaluator returns the named outputs, in order (an optional one left unnamed has none).
      std::vector<std::string> named;
      for (const std::string& o : n.outputs)
        if (!o.empty()) named.push_back(o);
      if (!tensors || out.size() != named.size()) continue;
      for (size_t k = 0; k < out.size(); ++k) {
        known.emplace(named[k], out[k].tensor());
        g.initializers.push_back({named[k], out[k].tensor()});
      }
      drop[i] = true, ++folded;
    } catch (const Error& e) {
      spdlog::debug("constant folding: {} left as is: {}", n.describe(), e.what());
    }
  }
  drop_nodes(g, drop);
  return folded;
}

}  // namespace

Pass constant_folding_pass() {
  return {"constant-folding", "Folded constant node", Level::Basic,
          [](Model& m, PassContext& ctx) { return fold(m, ctx.registry, ctx.inference); }};
}

}  // namespace refeval::optimize
