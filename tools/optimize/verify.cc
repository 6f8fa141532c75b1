#include "verify.h"

#include <memory>

#include <fmt/format.h>

#include "input_sets.h"
#include "oracle.h"
#include "refeval/error.h"
#include "refeval/evaluator.h"

namespace refeval::optimize {

fusion::FusionReport verify(const Model& original, const Model& optimized, const Registry& registry,
                            const std::map<std::string, Value>& feeds, const fusion::CheckOptions& options) {
  std::vector<std::string> outputs;
  for (const ValueInfo& o : original.graph.outputs) outputs.push_back(o.name);
  std::vector<std::string> optimized_outputs;
  for (const ValueInfo& o : optimized.graph.outputs) optimized_outputs.push_back(o.name);
  if (outputs != optimized_outputs)
    fail_runtime(fmt::format("the optimized model's outputs ({}) are not the original's ({})", fmt::join(optimized_outputs, ", "),
                             fmt::join(outputs, ", ")));
  auto a = std::make_shared<ReferenceEvaluator>(optimized, EvaluatorOptions{&registry});
  auto b = std::make_shared<ReferenceEvaluator>(original, EvaluatorOptions{&registry});
  auto runner = [outputs](std::shared_ptr<ReferenceEvaluator> ev) {
    return [ev, outputs](const std::map<std::string, Value>& f) { return ev->run(outputs, f); };
  };
  const auto sets = fusion::make_input_sets(feeds, {}, options.sets);
  // The original in float64: both sides' reference (fusion/equivalence.h).
  fusion::Runner oracle;
  try {
    oracle = runner(std::make_shared<ReferenceEvaluator>(accuracy::widen_model(original), EvaluatorOptions{&registry}));
  } catch (const refeval::Error&) {  // no oracle: the plain comparison decides
  }
  fusion::FusionReport report = fusion::check_equivalence(runner(a), runner(b), sets, options, oracle);
  report.subject = fmt::format("{} nodes vs {} nodes", optimized.graph.nodes.size(), original.graph.nodes.size());
  report.fused = "optimized";
  report.unfused = "original";
  report.outputs = outputs;
  return report;
}

}  // namespace refeval::optimize
