#include "pattern.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace refeval::optimize {

Operand cap(const std::string& name) { return {Operand::Kind::Capture, name, 0, 0, 0}; }
Operand node(const std::string& id, int output) { return {Operand::Kind::NodeOutput, id, output, 0, 0}; }
Operand val(double v, double tolerance) { return {Operand::Kind::Scalar, "", 0, v, tolerance}; }
Operand any() { return {}; }
Operand konst(const std::string& name) { return {Operand::Kind::Constant, name, 0, 0, 0}; }
Operand opt() { return {Operand::Kind::Optional, "", 0, 0, 0}; }

namespace {

bool commutative(const std::string& op) { return op == "Add" || op == "Mul"; }

struct State {
  std::map<std::string, int> nodes;
  std::map<std::string, std::string> captures;
  std::set<int> used;
};

class Matcher {
 public:
  Matcher(const Pattern& p, const GraphIndex& g, const std::vector<bool>& claimed) : p_(p), g_(g), claimed_(claimed) {
    for (size_t i = 0; i < p.nodes.size(); ++i) by_id_[p.nodes[i].id] = i;
  }

  bool node(size_t pid, int gi, State& s) {
    const PatternNode& pn = p_.nodes[pid];
    if (auto it = s.nodes.find(pn.id); it != s.nodes.end()) return it->second == gi;
    if (gi < 0 || claimed_[size_t(gi)] || s.used.count(gi)) return false;
    const Node& n = g_.graph().nodes[size_t(gi)];
    if (n.op_type != pn.op_type || n.domain != pn.domain) return false;
    size_t arity = n.inputs.size();
    while (arity > 0 && n.inputs[arity - 1].empty()) --arity;
    if (arity > pn.inputs.size()) return false;
    for (size_t i = arity; i < pn.inputs.size(); ++i)
      if (pn.inputs[i].kind != Operand::Kind::Optional) return false;
    if (pn.accept && !pn.accept(n)) return false;
    std::vector<std::vector<size_t>> orders = {{}};
    for (size_t i = 0; i < pn.inputs.size(); ++i) orders[0].push_back(i);
    if (commutative(pn.op_type) && pn.inputs.size() == 2) orders.push_back({1, 0});
    for (const auto& order : orders) {
      State trial = s;
      trial.nodes[pn.id] = gi;
      trial.used.insert(gi);
      bool ok = true;
      for (size_t k = 0; k < arity && ok; ++k) ok = operand(pn.inputs[order[k]], n.inputs[k], trial);
      if (ok) {
        s = std::move(trial);
        return true;
      }
    }
    return false;
  }

 private:
  bool operand(const Operand& op, const std::string& value, State& s) {
    switch (op.kind) {
      case Operand::Kind::Any:
      case Operand::Kind::Optional: return true;
      case Operand::Kind::Constant: {
        if (!g_.constant(value)) return false;
        auto [it, fresh] = s.captures.emplace(op.name, value);
        return fresh || it->second == value;
      }
      case Operand::Kind::Capture: {
        auto [it, fresh] = s.captures.emplace(op.name, value);
        return fresh || it->second == value;
      }
      case Operand::Kind::Scalar: {
        const auto v = g_.scalar(value);
        const double scale = std::max(1.0, std::fabs(op.value));
        return v && std::fabs(*v - op.value) <= op.tolerance * scale;
      }
      case Operand::Kind::NodeOutput: {
        const int gi = g_.producer(value);
        if (gi < 0) return false;
        const Node& n = g_.graph().nodes[size_t(gi)];
        if (op.output >= int(n.outputs.size()) || n.outputs[size_t(op.output)] != value) return false;
        return node(by_id_.at(op.name), gi, s);
      }
    }
    return false;
  }

  const Pattern& p_;
  const GraphIndex& g_;
  const std::vector<bool>& claimed_;
  std::map<std::string, size_t> by_id_;
};

}  // namespace

std::optional<Match> match(const Pattern& p, const GraphIndex& g, int root, const std::vector<bool>& claimed) {
  Matcher m(p, g, claimed);
  State s;
  if (!m.node(p.nodes.size() - 1, root, s)) return std::nullopt;
  if (s.nodes.size() != p.nodes.size()) return std::nullopt;  // a pattern node no path reaches
  return Match{&p, s.nodes, s.captures};
}

bool only_root_escapes(const Match& m, const GraphIndex& g) {
  std::set<int> inside;
  for (const auto& [id, gi] : m.nodes) inside.insert(gi);
  std::set<int> escaping = {m.nodes.at(m.pattern->root().id)};
  for (const std::string& id : m.pattern->may_escape) escaping.insert(m.nodes.at(id));
  for (int gi : inside) {
    if (escaping.count(gi)) continue;
    for (const std::string& out : g.graph().nodes[size_t(gi)].outputs) {
      if (out.empty()) continue;
      if (g.is_graph_output(out)) return false;
      for (int c : g.consumers(out))
        if (!inside.count(c)) return false;
    }
  }
  return true;
}

int64_t int_attr(const Node& n, const std::string& name, int64_t fallback) {
  const Attribute* a = n.find_attribute(name);
  return a && a->type == AttrType::Int ? a->i : fallback;
}

float float_attr(const Node& n, const std::string& name, float fallback) {
  const Attribute* a = n.find_attribute(name);
  return a && a->type == AttrType::Float ? a->f : fallback;
}

std::vector<int64_t> ints_attr(const Node& n, const std::string& name) {
  const Attribute* a = n.find_attribute(name);
  return a && a->type == AttrType::Ints ? a->ints : std::vector<int64_t>{};
}

}  // namespace refeval::optimize
