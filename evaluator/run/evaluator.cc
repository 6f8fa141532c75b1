// ReferenceEvaluator: ties the stages together: a loaded Model, its Plan and the Engine.
#include "refeval/evaluator.h"

#include <malloc.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "run/engine.h"
#include "values/buffer_cache.h"

namespace refeval {

struct ReferenceEvaluator::Impl {
  std::shared_ptr<Model> model;
  const Registry* registry = nullptr;
  std::shared_ptr<Plan> plan;
  Engine engine;
};

namespace {

const ValueType* find_declared(const Graph& g, const std::string& name) {
  for (const auto* list : {&g.inputs, &g.outputs, &g.value_info})
    for (const auto& vi : *list)
      if (vi.name == name && vi.type.kind != ValueType::Kind::Unknown) return &vi.type;
  return nullptr;
}

std::string describe_value(const Value& v) {
  if (v.is_tensor()) return fmt::format("tensor({}){}", dtype_short_name(v.tensor().dtype()), shape_to_string(v.tensor().shape()));
  return v.kind_name();
}

// Checks a feed against its declared type: kind, element type, rank and fixed dimensions.
void check_feed(const std::string& name, const Value& v, const ValueType& t) {
  using Kind = ValueType::Kind;
  auto mismatch = [&](const std::string& why) {
    fail_input(fmt::format("input '{}': expected {} but got {} ({})", name, t.to_string(), describe_value(v), why));
  };
  switch (t.kind) {
    case Kind::Tensor: {
      if (!v.is_tensor()) mismatch("not a tensor");
      const Tensor& x = v.tensor();
      if (t.dtype != DType::Undefined && x.dtype() != t.dtype) mismatch("element type differs");
      if (!t.has_shape) return;
      if (x.rank() != t.dims.size()) mismatch("rank differs");
      for (size_t d = 0; d < t.dims.size(); ++d)
        if (t.dims[d].fixed() && t.dims[d].value != x.dim(d)) mismatch(fmt::format("dimension {} differs", d));
      return;
    }
    case Kind::Sequence: if (!v.is_sequence()) mismatch("not a sequence"); return;
    case Kind::Map: if (!v.is_map()) mismatch("not a map"); return;
    case Kind::Optional: if (!v.is_optional()) mismatch("not an optional"); return;
    default: return;
  }
}

}  // namespace

ReferenceEvaluator::ReferenceEvaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReferenceEvaluator::ReferenceEvaluator(ReferenceEvaluator&&) noexcept = default;
ReferenceEvaluator& ReferenceEvaluator::operator=(ReferenceEvaluator&&) noexcept = default;
ReferenceEvaluator::~ReferenceEvaluator() = default;

ReferenceEvaluator::ReferenceEvaluator(Model model, EvaluatorOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->model = std::make_shared<Model>(std::move(model));
  impl_->registry = options.registry ? options.registry : &Registry::builtin();
  PlanEnv env;
  env.registry = impl_->registry;
  env.model = impl_->model.get();
  env.opsets = impl_->model->opsets;
  if (options.release_packed_weights)
    env.release_initializer = [model = impl_->model.get()](const std::string& name) {
      for (Initializer& init : model->graph.initializers)
        if (init.name == name) init.value = Tensor::view(init.value.dtype(), init.value.shape(), nullptr, nullptr);
      // The buffer cache would keep the weight for a tensor of its size, and glibc its pages.
      buffer_cache::free_held();
      malloc_trim(0);
    };
  std::shared_ptr<const Graph> graph(impl_->model, &impl_->model->graph);
  const std::string where = impl_->model->path.empty() ? std::string() : impl_->model->path + ": ";
  try {
    impl_->plan = plan_graph(graph, env, nullptr, "");
  } catch (const Error& e) {
    throw Error(e.kind(), where + e.what());
  }
}

ReferenceEvaluator ReferenceEvaluator::from_graph(Graph graph, OpsetMap opsets, std::vector<Function> functions,
                                                  EvaluatorOptions options) {
  Model m;
  m.ir_version = 10;
  m.opsets = std::move(opsets);
  m.graph = std::move(graph);
  m.functions = std::move(functions);
  return ReferenceEvaluator(std::move(m), options);
}

ReferenceEvaluator ReferenceEvaluator::from_function(const Function& f, const std::vector<Attribute>& attributes,
                                                     EvaluatorOptions options) {
  std::map<std::string, Attribute> values;
  for (const Attribute& a : f.attribute_defaults) values[a.name] = a;
  for (const Attribute& a : attributes) values[a.name] = a;
  Graph g;
  g.name = f.name;
  g.nodes = f.nodes;
  bind_attribute_refs(g.nodes, values);
  for (const auto& i : f.inputs) g.inputs.push_back({i, {}});
  for (const auto& o : f.outputs) g.outputs.push_back({o, {}});
  return from_graph(std::move(g), f.opsets, {}, options);
}

ReferenceEvaluator ReferenceEvaluator::from_node(const Node& node, OpsetMap opsets, EvaluatorOptions options) {
  if (opsets.empty()) {
    opsets[""] = kLatestOnnxOpset;
    if (!node.domain.empty()) opsets[node.domain] = 1;
  }
  Graph g;
  g.name = node.op_type;
  std::set<std::string> seen;
  for (const auto& i : node.inputs)
    if (!i.empty() && seen.insert(i).second) g.inputs.push_back({i, {}});
  for (const auto& o : node.outputs)
    if (!o.empty()) g.outputs.push_back({o, {}});
  g.nodes.push_back(node);
  return from_graph(std::move(g), std::move(opsets), {}, options);
}

const Model& ReferenceEvaluator::model() const { return *impl_->model; }

std::vector<std::string> ReferenceEvaluator::input_names() const {
  std::vector<std::string> names;
  for (const auto* vi : impl_->model->graph.feed_inputs()) names.push_back(vi->name);
  return names;
}

std::vector<std::string> ReferenceEvaluator::output_names() const { return impl_->plan->output_names; }

const ValueType* ReferenceEvaluator::declared_type(const std::string& name) const {
  return find_declared(impl_->model->graph, name);
}

void ReferenceEvaluator::add_observer(Observer* o) { impl_->engine.observers.push_back(o); }
void ReferenceEvaluator::remove_observer(Observer* o) {
  auto& obs = impl_->engine.observers;
  obs.erase(std::remove(obs.begin(), obs.end(), o), obs.end());
}

namespace {

Values run_impl(ReferenceEvaluator::Impl& impl, const std::vector<std::string>& outputs,
                const std::map<std::string, Value>& feeds, NamedValues* all) {
  const Plan& plan = *impl.plan;
  const Graph& g = impl.model->graph;
  for (const auto& [name, v] : feeds) {
    if (!g.find_input(name)) {
      std::vector<std::string> names;
      for (const auto& i : g.inputs) names.push_back(i.name);
      fail_input(fmt::format("'{}' is not an input of the model (inputs: {})", name, fmt::join(names, ", ")));
    }
  }
  Values inputs(plan.input_names.size());
  for (size_t i = 0; i < plan.input_names.size(); ++i) {
    const std::string& name = plan.input_names[i];
    const ValueInfo* vi = g.find_input(name);
    auto it = feeds.find(name);
    if (it == feeds.end()) {
      if (!g.find_initializer(name))
        fail_input(fmt::format("missing input '{}' ({})", name, vi ? vi->type.to_string() : "?"));
      continue;
    }
    if (vi) check_feed(name, it->second, vi->type);
    inputs[i] = it->second;
  }
  std::vector<int> wanted;
  const std::vector<int>* wanted_ptr = nullptr;
  if (!outputs.empty()) {
    for (const auto& name : outputs) {
      auto it = std::find(plan.slot_names.begin(), plan.slot_names.end(), name);
      if (it == plan.slot_names.end()) fail_usage(fmt::format("no value named '{}' in the model", name));
      wanted.push_back(int(it - plan.slot_names.begin()));
    }
    wanted_ptr = &wanted;
  }
  return impl.engine.run(plan, nullptr, inputs, GraphEvent{}, wanted_ptr, all);
}

}  // namespace

Values ReferenceEvaluator::run(const std::vector<std::string>& outputs, const std::map<std::string, Value>& feeds) {
  return run_impl(*impl_, outputs, feeds, nullptr);
}

NamedValues ReferenceEvaluator::run_all(const std::map<std::string, Value>& feeds) {
  NamedValues all;
  run_impl(*impl_, {}, feeds, &all);
  return all;
}

}  // namespace refeval
