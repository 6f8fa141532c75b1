#include "model_check.h"

#include <algorithm>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "oracle.h"
#include "refeval/evaluator.h"

namespace refeval::fusion {
namespace {

// Names a model computes: graph outputs first, then node outputs in stored order.
std::vector<std::string> computed_names(const Model& m) {
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const auto& o : m.graph.outputs) add(o.name);
  for (const auto& node : m.graph.nodes)
    for (const auto& o : node.outputs) add(o);
  return names;
}

Runner runner_of(std::shared_ptr<ReferenceEvaluator> ev, const std::vector<std::string>& outputs) {
  const auto inputs = ev->input_names();
  return [ev, outputs, inputs](const std::map<std::string, Value>& feeds) {
    std::map<std::string, Value> own;
    for (const auto& name : inputs)
      if (auto it = feeds.find(name); it != feeds.end()) own[name] = it->second;
    return ev->run(outputs, own);
  };
}

}  // namespace

FusionReport check_models(const Model& fused, const Model& unfused, const Registry& registry,
                          const std::map<std::string, Value>& feeds, const CheckOptions& options) {
  const auto unfused_names = computed_names(unfused);
  const std::set<std::string> in_unfused(unfused_names.begin(), unfused_names.end());
  std::vector<std::string> shared;
  for (const auto& name : computed_names(fused))
    if (in_unfused.count(name)) shared.push_back(name);
  if (shared.empty())
    fail_usage(fmt::format("{} and {} share no output or value name to compare", fused.path, unfused.path));
  auto a = std::make_shared<ReferenceEvaluator>(fused, EvaluatorOptions{&registry});
  auto b = std::make_shared<ReferenceEvaluator>(unfused, EvaluatorOptions{&registry});
  const auto sets = make_input_sets(feeds, {}, options.sets);
  // The unfused model in float64: both sides' reference (equivalence.h).
  Runner oracle;
  try {
    oracle = runner_of(std::make_shared<ReferenceEvaluator>(accuracy::widen_model(unfused), EvaluatorOptions{&registry}), shared);
  } catch (const refeval::Error&) {  // no oracle: the plain comparison decides
  }
  FusionReport report = check_equivalence(runner_of(a, shared), runner_of(b, shared), sets, options, oracle);
  report.subject = fmt::format("{} vs {}", fused.path.empty() ? "fused model" : fused.path,
                               unfused.path.empty() ? "unfused model" : unfused.path);
  report.fused = fmt::format("{} nodes", fused.graph.nodes.size());
  report.unfused = fmt::format("{} nodes", unfused.graph.nodes.size());
  report.outputs = shared;
  return report;
}

}  // namespace refeval::fusion
