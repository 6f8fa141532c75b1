#include "graph_edit.h"

#include <functional>
#include <map>

#include <fmt/format.h>

namespace refeval::optimize {
namespace {

void collect_body_reads(const Graph& body, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const ValueInfo& v : body.inputs) defined.insert(v.name);
  for (const Initializer& i : body.initializers) defined.insert(i.name);
  for (const Node& n : body.nodes)
    for (const std::string& o : n.outputs) defined.insert(o);
  for (const Node& n : body.nodes)
    for (const std::string& r : reads_of(n))
      if (!defined.count(r)) out.insert(r);
  for (const ValueInfo& v : body.outputs)
    if (!defined.count(v.name)) out.insert(v.name);
}

template <class F>
void for_each_body(Node& n, F&& f) {
  for (Attribute& a : n.attributes) {
    if (a.g) f(*a.g);
    for (auto& g : a.graphs)
      if (g) f(*g);
  }
}

bool defines(const Graph& body, const std::string& name) {
  for (const ValueInfo& v : body.inputs)
    if (v.name == name) return true;
  for (const Initializer& i : body.initializers)
    if (i.name == name) return true;
  for (const Node& n : body.nodes)
    for (const std::string& o : n.outputs)
      if (o == name) return true;
  return false;
}

}  // namespace

std::set<std::string> reads_of(const Node& n) {
  std::set<std::string> out;
  for (const std::string& i : n.inputs)
    if (!i.empty()) out.insert(i);
  for (const Attribute& a : n.attributes) {
    if (a.g) collect_body_reads(*a.g, out);
    for (const auto& g : a.graphs)
      if (g) collect_body_reads(*g, out);
  }
  return out;
}

void rename_uses(Graph& g, const std::string& from, const std::string& to) {
  for (Node& n : g.nodes) {
    for (std::string& i : n.inputs)
      if (i == from) i = to;
    for_each_body(n, [&](Graph& body) {
      if (!defines(body, from)) rename_uses(body, from, to);
    });
  }
  for (ValueInfo& o : g.outputs)
    if (o.name == from) o.name = to;
}

void topological_sort(Graph& g) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& o : g.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  std::vector<int> state(g.nodes.size(), 0);  // 0 unvisited, 1 on the stack, 2 placed
  std::vector<size_t> order;
  // Depth first from each node in graph order: producers first; a cycle is left for the
  // evaluator's planner to report (the model did not plan, so optimize never gets here with one).
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i]) return;
    state[i] = 1;
    for (const std::string& r : reads_of(g.nodes[i]))
      if (auto it = producer.find(r); it != producer.end() && it->second != i) visit(it->second);
    state[i] = 2;
    order.push_back(i);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) visit(i);
  std::vector<Node> sorted;
  for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
}

int drop_nodes(Graph& g, const std::vector<bool>& drop, const std::vector<std::pair<std::string, std::string>>& renames) {
  int removed = 0;
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (drop[i]) ++removed;
    else kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  for (const auto& [from, to] : renames) rename_uses(g, from, to);
  return removed;
}

int remove_dead(Graph& g) {
  std::set<std::string> live;
  for (const ValueInfo& o : g.outputs) live.insert(o.name);
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {  // graph order is topological: one backward sweep
    const Node& n = g.nodes[i];
    for (const std::string& o : n.outputs)
      if (!o.empty() && live.count(o)) keep[i] = true;
    if (keep[i])
      for (const std::string& r : reads_of(n)) live.insert(r);
  }
  std::vector<Node> nodes;
  int removed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (keep[i]) nodes.push_back(std::move(g.nodes[i]));
    else ++removed;
  }
  g.nodes = std::move(nodes);
  std::set<std::string> inputs;
  for (const ValueInfo& v : g.inputs) inputs.insert(v.name);
  std::erase_if(g.initializers, [&](const Initializer& i) { return !live.count(i.name) && !inputs.count(i.name); });
  std::erase_if(g.value_info, [&](const ValueInfo& v) { return !live.count(v.name); });
  return removed;
}

NameGen::NameGen(const Graph& g) {
  for (const ValueInfo& v : g.inputs) values_.insert(v.name);
  for (const Initializer& i : g.initializers) values_.insert(i.name);
  for (const Node& n : g.nodes) {
    nodes_.insert(n.name);
    for (const std::string& o : n.outputs) values_.insert(o);
  }
}

namespace {
std::string fresh(std::set<std::string>& used, const std::string& base) {
  std::string name = base;
  for (int k = 1; used.count(name); ++k) name = fmt::format("{}_{}", base, k);
  used.insert(name);
  return name;
}
}  // namespace

void own_bodies(Graph& g) {
  for (Node& n : g.nodes)
    for (Attribute& a : n.attributes) {
      if (a.g) {
        a.g = std::make_shared<Graph>(*a.g);
        own_bodies(*a.g);
      }
      for (std::shared_ptr<Graph>& body : a.graphs) {
        body = std::make_shared<Graph>(*body);
        own_bodies(*body);
      }
    }
}

std::string NameGen::value(const std::string& base) { return fresh(values_, base); }
std::string NameGen::node(const std::string& base) { return fresh(nodes_, base); }

}  // namespace refeval::optimize
