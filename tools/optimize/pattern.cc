#include "pattern.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>

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

std::string quoted(const Node& n) { return fmt::format("'{}' ({})", n.name.empty() ? n.outputs.at(0) : n.name, n.op_type); }

class Matcher {
 public:
  Matcher(const Pattern& p, const GraphIndex& g, const std::vector<bool>& claimed, MatchFailure* failure)
      : p_(p), g_(g), claimed_(claimed), failure_(failure) {
    for (size_t i = 0; i < p.nodes.size(); ++i) by_id_[p.nodes[i].id] = i;
  }

  bool node(size_t pid, int gi, State& s) {
    const PatternNode& pn = p_.nodes[pid];
    if (auto it = s.nodes.find(pn.id); it != s.nodes.end())
      return it->second == gi || fail(s, [&] { return fmt::format("pattern node '{}' would be two different nodes", pn.id); });
    const Node& n = g_.graph().nodes[size_t(gi)];
    if (claimed_[size_t(gi)] || s.used.count(gi)) return fail(s, [&] { return fmt::format("{} is already part of another match", quoted(n)); });
    if (n.op_type != pn.op_type || n.domain != pn.domain)
      return fail(s, [&] { return fmt::format("{} where the pattern has {}", quoted(n), pn.op_type); });
    size_t arity = n.inputs.size();
    while (arity > 0 && n.inputs[arity - 1].empty()) --arity;
    bool arity_ok = arity <= pn.inputs.size();
    for (size_t i = arity; i < pn.inputs.size() && arity_ok; ++i) arity_ok = pn.inputs[i].kind == Operand::Kind::Optional;
    if (!arity_ok) return fail(s, [&] { return fmt::format("{} has {} inputs, the pattern {}", quoted(n), arity, pn.inputs.size()); });
    if (pn.accept && !pn.accept(n))
      return fail(s, [&] { return fmt::format("{} is not {}", quoted(n), pn.why.empty() ? "the pattern's " + pn.op_type : pn.why); });
    std::vector<std::vector<size_t>> orders = {{}};
    for (size_t i = 0; i < pn.inputs.size(); ++i) orders[0].push_back(i);
    if (commutative(pn.op_type) && pn.inputs.size() == 2) orders.push_back({1, 0});
    for (const auto& order : orders) {
      State trial = s;
      trial.nodes[pn.id] = gi;
      trial.used.insert(gi);
      bool ok = true;
      for (size_t k = 0; k < arity && ok; ++k) {
        ok = operand(pn.inputs[order[k]], n.inputs[k], trial);
        if (!ok) operand_failure(pn.inputs[order[k]], n, k, trial);
      }
      if (ok) {
        s = std::move(trial);
        return true;
      }
    }
    return false;
  }

 private:
  // Records a failure when it is the deepest so far (only with --explain); returns false.
  template <class Why>
  bool fail(const State& s, Why why) {
    if (failure_ && (best_depth_ < 0 || int(s.nodes.size()) > best_depth_)) {
      best_depth_ = int(s.nodes.size());
      failure_->why = why();
      failure_->nodes = s.nodes;
    }
    return false;
  }

  // Why input k of n does not fit a leaf operand (a node operand has recorded its own failure).
  void operand_failure(const Operand& op, const Node& n, size_t k, const State& s) {
    const std::string& value = n.inputs[k];
    switch (op.kind) {
      case Operand::Kind::Constant: fail(s, [&] { return fmt::format("input {} of {} ('{}') is not a constant", k, quoted(n), value); }); break;
      case Operand::Kind::Capture:
        fail(s, [&] { return fmt::format("input {} of {} ('{}') is not '{}', which the pattern reads there", k, quoted(n), value, s.captures.at(op.name)); });
        break;
      case Operand::Kind::Scalar: {
        const auto v = g_.scalar(value);
        fail(s, [&] {
          return v ? fmt::format("input {} of {} is {:g}, not {:g}", k, quoted(n), *v, op.value)
                   : fmt::format("input {} of {} ('{}') is not the constant {:g}", k, quoted(n), value, op.value);
        });
        break;
      }
      case Operand::Kind::NodeOutput:
        if (g_.producer(value) < 0)
          fail(s, [&] {
            return fmt::format("input {} of {} ('{}') is not computed by a node; the pattern has {} there", k, quoted(n), value,
                               p_.nodes[by_id_.at(op.name)].op_type);
          });
        break;
      default: break;
    }
  }

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
  MatchFailure* failure_;
  int best_depth_ = -1;
  std::map<std::string, size_t> by_id_;
};

}  // namespace

const PatternNode& Pattern::anchor_node() const {
  for (const PatternNode& n : nodes)
    if (n.id == anchor) return n;
  return root();
}

std::optional<Match> match(const Pattern& p, const GraphIndex& g, int root, const std::vector<bool>& claimed, MatchFailure* failure) {
  Matcher m(p, g, claimed, failure);
  State s;
  if (!m.node(p.nodes.size() - 1, root, s)) return std::nullopt;
  if (s.nodes.size() != p.nodes.size()) {  // a pattern node no path reaches: a defect of the pattern
    if (failure) failure->why = "the pattern has a node no input path reaches", failure->nodes = s.nodes;
    return std::nullopt;
  }
  return Match{&p, s.nodes, s.captures};
}

bool only_root_escapes(const Match& m, const GraphIndex& g) { return escaping_intermediate(m, g).empty(); }

std::string escaping_intermediate(const Match& m, const GraphIndex& g) {
  std::set<int> inside;
  for (const auto& [id, gi] : m.nodes) inside.insert(gi);
  std::set<int> escaping = {m.nodes.at(m.pattern->root().id)};
  for (const std::string& id : m.pattern->may_escape) escaping.insert(m.nodes.at(id));
  for (int gi : inside) {
    if (escaping.count(gi)) continue;
    const Node& n = g.graph().nodes[size_t(gi)];
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      if (g.is_graph_output(out)) return fmt::format("the intermediate '{}' of {} is a graph output", out, quoted(n));
      for (int c : g.consumers(out))
        if (!inside.count(c))
          return fmt::format("the intermediate '{}' of {} is also read by {}", out, quoted(n), quoted(g.graph().nodes[size_t(c)]));
    }
  }
  return "";
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

int64_t gather_index(double index, int64_t size) {
  if (index < double(-size) || index >= double(size)) return -1;
  return index < 0 ? int64_t(index) + size : int64_t(index);
}

bool is_permutation(const std::vector<int64_t>& p) {
  std::vector<bool> seen(p.size(), false);
  for (int64_t a : p) {
    if (a < 0 || a >= int64_t(p.size()) || seen[size_t(a)]) return false;
    seen[size_t(a)] = true;
  }
  return true;
}

std::optional<std::vector<int64_t>> axes_of(const Node& n, const GraphIndex& g) {
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) return g.ints(n.inputs[1]);
  return ints_attr(n, "axes");
}

std::optional<SliceBounds> slice_bounds(const Node& slice, const GraphIndex& g, size_t rank) {
  SliceBounds b;
  std::optional<std::vector<int64_t>> axes, steps;
  const auto has = [&](const char* name) {
    return std::any_of(slice.attributes.begin(), slice.attributes.end(), [&](const Attribute& a) { return a.name == name; });
  };
  if (slice.inputs.size() == 1) {  // opset < 10
    if (!has("starts") || !has("ends")) return std::nullopt;
    for (int64_t x : ints_attr(slice, "starts")) b.starts.push_back(Dim{x, ""});
    for (int64_t x : ints_attr(slice, "ends")) b.ends.push_back(Dim{x, ""});
    if (has("axes")) axes = ints_attr(slice, "axes");
  } else if (slice.inputs.size() >= 3) {
    auto starts = g.shape_values(slice.inputs[1]), ends = g.shape_values(slice.inputs[2]);
    if (!starts || !ends) return std::nullopt;
    b.starts = std::move(*starts), b.ends = std::move(*ends);
    if (slice.inputs.size() > 3 && !slice.inputs[3].empty() && !(axes = g.ints(slice.inputs[3]))) return std::nullopt;
    if (slice.inputs.size() > 4 && !slice.inputs[4].empty() && !(steps = g.ints(slice.inputs[4]))) return std::nullopt;
  } else {
    return std::nullopt;
  }
  const size_t n = b.starts.size();
  if (!axes) {
    axes.emplace(n);
    std::iota(axes->begin(), axes->end(), int64_t(0));
  }
  b.steps = steps.value_or(std::vector<int64_t>(n, 1));
  if (b.ends.size() != n || axes->size() != n || b.steps.size() != n) return std::nullopt;
  for (int64_t a : *axes) {
    const int64_t axis = a < 0 ? a + int64_t(rank) : a;
    if (axis < 0 || axis >= int64_t(rank) || std::count(b.axes.begin(), b.axes.end(), axis)) return std::nullopt;
    b.axes.push_back(axis);
  }
  return b;
}

}  // namespace refeval::optimize
