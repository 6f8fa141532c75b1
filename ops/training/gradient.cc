// Gradient (ai.onnx.preview.training 1): the derivatives of the value named by `y` with respect to
// the values named by `xs`, through the nodes of the enclosing graph that lead from xs (and zs,
// held constant) to y. The node's inputs are the values of xs then zs; its outputs are dY/dX_i.
// A non-scalar y is differentiated as the sum of its elements, as reverse-mode autodiff seeds it.
//
// The forward nodes are evaluated with the evaluator, then differentiated in reverse order with
// the rules of gradient_rules.cc (Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh, Exp, Log,
// Sqrt, 2-D MatMul); any other node on the path is a model error naming it.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "gradient_rules.h"
#include "refeval/evaluator.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

class Gradient : public OpRun {
 public:
  using Types = Floats;
  explicit Gradient(const NodeContext& ctx)
      : xs_(ctx.required<std::vector<std::string>>("xs")),
        zs_(ctx.attr<std::vector<std::string>>("zs", {})),
        y_(ctx.required<std::string>("y")) {
    if (ctx.num_inputs() != xs_.size() + zs_.size())
      ctx.fail(fmt::format("Gradient has {} inputs but xs and zs name {} values", ctx.num_inputs(), xs_.size() + zs_.size()));
    if (ctx.num_outputs() != xs_.size())
      ctx.fail(fmt::format("Gradient has {} outputs but xs names {} values", ctx.num_outputs(), xs_.size()));
    Graph forward = forward_graph(ctx);
    for (const Node& n : forward.nodes)
      if (!n.domain.empty() || !has_gradient_rule(n.op_type))
        ctx.fail(fmt::format("no derivative rule for {} on the path from xs to '{}'", n.describe(), y_));
    forward_ = std::make_shared<ReferenceEvaluator>(ReferenceEvaluator::from_graph(std::move(forward), ctx.opsets()));
  }

  Values run(const Values& in, RunContext&) override {
    std::map<std::string, Value> feeds;
    for (size_t i = 0; i < xs_.size(); ++i) feeds[xs_[i]] = input_tensor(in, i);
    for (size_t i = 0; i < zs_.size(); ++i) feeds[zs_[i]] = input_tensor(in, xs_.size() + i);
    std::map<std::string, Dense> value;
    for (const auto& [name, v] : forward_->run_all(feeds))
      if (v.is_tensor() && Floats::contains(v.tensor().dtype())) value[name] = to_dense(v.tensor());

    std::map<std::string, Dense> grad;
    const Dense& y = value.at(y_);
    grad[y_] = Dense{y.shape, std::vector<double>(y.v.size(), 1.0)};
    const auto& nodes = forward_->model().graph.nodes;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      auto g = grad.find(it->outputs[0]);
      if (g == grad.end()) continue;
      std::vector<Dense> ins;
      for (const auto& name : it->inputs) ins.push_back(value.at(name));
      const auto dins = input_gradients(it->op_type, ins, value.at(it->outputs[0]), g->second);
      for (size_t k = 0; k < it->inputs.size(); ++k) accumulate(grad, it->inputs[k], dins[k]);
    }
    Values out;
    for (size_t i = 0; i < xs_.size(); ++i) {
      const Tensor& x = input_tensor(in, i);
      auto g = grad.find(xs_[i]);
      out.push_back(g == grad.end() ? Tensor(x.dtype(), x.shape()) : from_dense(g->second, x.dtype()));
    }
    return out;
  }

 private:
  // The nodes y depends on, stopping at xs and zs, as a graph whose inputs are xs then zs.
  Graph forward_graph(const NodeContext& ctx) const {
    const Graph& outer = ctx.graph();
    std::map<std::string, size_t> producer;
    for (size_t i = 0; i < outer.nodes.size(); ++i)
      for (const auto& o : outer.nodes[i].outputs) producer[o] = i;
    std::set<std::string> leaves(xs_.begin(), xs_.end());
    leaves.insert(zs_.begin(), zs_.end());
    std::set<size_t> needed;
    std::vector<std::string> todo{y_};
    std::set<std::string> seen;
    Graph g;
    while (!todo.empty()) {
      const std::string name = todo.back();
      todo.pop_back();
      if (name.empty() || !seen.insert(name).second || leaves.count(name)) continue;
      if (auto p = producer.find(name); p != producer.end()) {
        if (outer.nodes[p->second].op_type == "Gradient") ctx.fail("y depends on a Gradient node");
        needed.insert(p->second);
        for (const auto& in : outer.nodes[p->second].inputs) todo.push_back(in);
      } else if (const Initializer* init = outer.find_initializer(name)) {
        g.initializers.push_back(*init);
      } else {
        ctx.fail(fmt::format("'{}' on the path to y is neither computed by a node nor listed in xs or zs", name));
      }
    }
    // Topological order (the reverse pass walks it backwards), stored order among ready nodes.
    std::set<std::string> ready(leaves.begin(), leaves.end());
    for (const auto& init : g.initializers) ready.insert(init.name);
    while (!needed.empty()) {
      auto next = std::find_if(needed.begin(), needed.end(), [&](size_t i) {
        const auto& ins = outer.nodes[i].inputs;
        return std::all_of(ins.begin(), ins.end(), [&](const std::string& n) { return n.empty() || ready.count(n); });
      });
      if (next == needed.end()) ctx.fail("the nodes leading to y form a cycle");
      const Node& n = outer.nodes[*next];
      if (n.outputs.size() != 1) ctx.fail(fmt::format("{} on the path to y has several outputs", n.describe()));
      g.nodes.push_back(n);
      ready.insert(n.outputs[0]);
      needed.erase(next);
    }
    for (const auto& names : {xs_, zs_})
      for (const auto& name : names) {
        const ValueInfo* declared = outer.find_input(name);
        g.inputs.push_back(declared ? *declared : ValueInfo{name, {}});
      }
    g.outputs.push_back(ValueInfo{y_, {}});
    return g;
  }

  static void accumulate(std::map<std::string, Dense>& grad, const std::string& name, const Dense& d) {
    if (name.empty() || d.v.empty()) return;
    auto [it, fresh] = grad.emplace(name, d);
    if (!fresh)
      for (size_t i = 0; i < d.v.size(); ++i) it->second.v[i] += d.v[i];
  }

  std::vector<std::string> xs_, zs_;
  std::string y_;
  std::shared_ptr<ReferenceEvaluator> forward_;
};

}  // namespace

void register_gradient(Registry& reg) { reg.add("ai.onnx.preview.training", "Gradient", {1}, make<Gradient>); }

}  // namespace refeval::ops
