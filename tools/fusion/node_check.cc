#include "node_check.h"

#include <algorithm>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "decompositions/decompositions.h"
#include "oracle.h"
#include "refeval/evaluator.h"

namespace refeval::fusion {
namespace {

// The domain the unfused side calls a model-local function under, so that a kernel registered
// for the function's own (domain, op type) cannot take its place.
const char* const kUnfusedDomain = "refeval.check_fusion.unfused";

std::string qualified(const Node& n) { return n.domain.empty() ? n.op_type : fmt::format("{}:{}", n.domain, n.op_type); }

// A graph with the node alone, reading and writing the node's own names.
Graph single_node_graph(const Node& n) {
  std::vector<ValueInfo> inputs, outputs;
  std::set<std::string> seen;
  for (const auto& name : n.inputs)
    if (!name.empty() && seen.insert(name).second) inputs.push_back(build::untyped_info(name));
  for (const auto& name : n.outputs)
    if (!name.empty()) outputs.push_back(build::untyped_info(name));
  return build::graph("check-fusion", {n}, inputs, outputs);
}

// The model-local function, called under kUnfusedDomain so the registry cannot resolve it.
ReferenceEvaluator function_side(const Model& model, const Function& fn, Node node, const Registry& registry) {
  std::vector<Function> functions = model.functions;
  Function renamed = fn;
  renamed.domain = kUnfusedDomain;
  functions.push_back(renamed);
  node.domain = kUnfusedDomain;
  return ReferenceEvaluator::from_graph(single_node_graph(node), model.opsets, functions, {&registry});
}

Runner runner_of(std::shared_ptr<ReferenceEvaluator> ev, const std::vector<std::string>& outputs) {
  return [ev, outputs](const std::map<std::string, Value>& feeds) { return ev->run(outputs, feeds); };
}

}  // namespace

FusionReport check_node(const Model& model, const NodeMatch& match, const Registry& registry,
                        const std::map<std::string, Value>& model_feeds, const CheckOptions& options) {
  const Node& node = *match.node;
  if (match.depth > 0)
    fail_usage(fmt::format("{} is inside a body ({}); check-fusion checks nodes of the main graph", node.describe(), match.id));
  const auto opset = model.opsets.find(node.domain);
  const int64_t version = opset == model.opsets.end() ? 1 : opset->second;
  if (!registry.resolve(node.domain, node.op_type, version))
    fail_usage(fmt::format("{}: no kernel is registered for {} at opset {}; load one with --custom-ops", node.describe(),
                           qualified(node), version));

  // The node's inputs, from running the model up to it.
  std::vector<std::string> input_names;
  for (const auto& name : node.inputs)
    if (!name.empty() && std::find(input_names.begin(), input_names.end(), name) == input_names.end()) input_names.push_back(name);
  ReferenceEvaluator whole(model, {&registry});
  const Values inputs = whole.run(input_names, model_feeds);
  std::map<std::string, Value> node_feeds;
  std::set<std::string> weights;
  for (size_t i = 0; i < input_names.size(); ++i) {
    node_feeds[input_names[i]] = inputs[i];
    if (model.graph.find_initializer(input_names[i]) && !model.graph.find_input(input_names[i])) weights.insert(input_names[i]);
  }
  Values samples;
  for (const auto& name : node.inputs) samples.push_back(name.empty() ? Value() : node_feeds[name]);

  std::string unfused_kind;
  std::shared_ptr<ReferenceEvaluator> unfused, oracle;  // oracle: the unfused side in float64
  if (const Function* fn = model.find_function(node.domain, node.op_type, node.overload)) {
    unfused = std::make_shared<ReferenceEvaluator>(function_side(model, *fn, node, registry));
    try {
      Function wide = *fn;
      accuracy::widen_function(wide);
      Graph g;
      g.nodes = {node};
      accuracy::widen_graph(g);
      oracle = std::make_shared<ReferenceEvaluator>(function_side(model, wide, g.nodes[0], registry));
    } catch (const refeval::Error&) {  // no oracle: the plain comparison decides
    }
    unfused_kind = "model-local function";
  } else if (DecompositionBuilder build = find_decomposition(node.domain, node.op_type)) {
    GraphWriter w(node, samples);
    build(w, version);
    Graph g = w.finish();
    unfused = std::make_shared<ReferenceEvaluator>(ReferenceEvaluator::from_graph(g, {{"", kDecompositionOpset}}, {}, {&registry}));
    try {
      accuracy::widen_graph(g);
      oracle = std::make_shared<ReferenceEvaluator>(ReferenceEvaluator::from_graph(g, {{"", kDecompositionOpset}}, {}, {&registry}));
    } catch (const refeval::Error&) {  // no oracle: the plain comparison decides
    }
    unfused_kind = "built-in decomposition";
  } else {
    fail_usage(fmt::format("{}: nothing to check against: the model has no function {} and refeval has no built-in "
                           "decomposition of it (see `refeval check-fusion --help`)", node.describe(), qualified(node)));
  }
  auto fused = std::make_shared<ReferenceEvaluator>(ReferenceEvaluator::from_node(node, model.opsets, {&registry}));
  const std::vector<std::string> outputs = fused->output_names();
  const auto sets = make_input_sets(node_feeds, weights, options.sets);
  FusionReport report = check_equivalence(runner_of(fused, outputs), runner_of(unfused, outputs), sets, options,
                                          oracle ? runner_of(oracle, outputs) : Runner());
  report.subject = node.describe();
  report.fused = fmt::format("{} kernel ({})", qualified(node), registry.resolve(node.domain, node.op_type, version)->origin);
  report.unfused = unfused_kind;
  report.outputs = outputs;
  return report;
}

}  // namespace refeval::fusion
