// A product between a Transpose and its inverse: Transpose(x, p) -> MatMul(., W) [-> Add(., b)]
// -> Transpose(., p^-1) is MatMul(x, W) [+ b] when p keeps the last axis last. A product with a
// 2-D W and a bias over the last axis act on each row alone, so the order of the rows does not
// matter. torch's nn.MultiheadAttention leaves one around every out-projection (its
// sequence-first layout, undone for batch_first; ViT, nn.TransformerEncoder) once the attention is
// fused and gemm-reshape has turned the 2-D Gemm back into a MatMul on the 3-D rows.
//
// The same holds for a tree of row-wise nodes: the packed in-projection of nn.MultiheadAttention,
// Transpose(x, p) -> MatMul(., W) -> Add(., b) -> three Slices of the last axis, each read by the
// Transpose back (the fused attention's batch-first q, k, v). When every path from the Transpose
// through row-wise nodes (MatMul by a 2-D constant, Add/Sub/Mul/Div by a constant of rank <= 1, a
// Slice of the last axis only) ends in a Transpose undoing it (or in a reader nothing needs: the Shape the folding left
// behind), the row-wise nodes read x itself and every Transpose of the tree goes.
#include <fmt/format.h>

#include <set>

#include "../pass.h"

namespace refeval::optimize {
namespace {

bool keeps_last_axis(const Node& n) {
  const std::vector<int64_t> p = ints_attr(n, "perm");
  return !p.empty() && p.back() == int64_t(p.size()) - 1;
}

// q undoes p: Transpose(Transpose(x, p), q) is x.
bool inverse(const std::vector<int64_t>& p, const std::vector<int64_t>& q) {
  if (p.size() != q.size()) return false;
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] < 0 || size_t(q[i]) >= p.size() || p[size_t(q[i])] != int64_t(i)) return false;
  return true;
}

std::optional<Replacement> unwrap(const Match& m, RewriteContext& ctx, bool with_bias) {
  const GraphIndex& g = ctx.index;
  const std::vector<int64_t> p = ints_attr(m.node(g, "in"), "perm"), q = ints_attr(m.node(g, "out"), "perm");
  if (p.size() != q.size()) return ctx.refuse("the two Transposes have different ranks");
  if (!inverse(p, q)) return ctx.refuse("the second Transpose does not undo the first");
  const Tensor* w = g.constant(m.value("w"));
  if (!w || w->rank() != 2) return ctx.refuse("the product's right operand is not a 2-D constant");
  if (with_bias) {
    const Tensor* b = g.constant(m.value("b"));
    if (!b || b->rank() != 1 || b->dim(0) != w->dim(1)) return ctx.refuse(fmt::format("the added value is not a 1-D bias of {}", w->dim(1)));
  }
  Replacement rep;
  const Node& out = m.node(g, "out");
  if (!with_bias) {
    rep.nodes.push_back(make_node("MatMul", "", {m.value("x"), m.value("w")}, out.outputs, {}, ctx.fused_name(m, "MatMul")));
    return rep;
  }
  const std::string product = ctx.names.value(m.node(g, "mm").outputs[0] + "_rows");
  rep.nodes.push_back(make_node("MatMul", "", {m.value("x"), m.value("w")}, {product}, {}, ctx.fused_name(m, "MatMul")));
  rep.nodes.push_back(make_node("Add", "", {product, m.value("b")}, out.outputs, {}, ctx.fused_name(m, "Add")));
  return rep;
}

// `n` acts on each row (the last axis) alone, reading `v` as its one varying input.
bool row_wise(const Node& n, const std::string& v, const GraphIndex& g, size_t rank) {
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) return false;
  if (n.op_type == "MatMul") {
    const Tensor* w = n.inputs.size() == 2 && n.inputs[0] == v ? g.constant(n.inputs[1]) : nullptr;
    return w && w->rank() == 2;
  }
  if (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" || n.op_type == "Div") {  // either side
    if (n.inputs.size() != 2 || (n.inputs[0] == v) == (n.inputs[1] == v)) return false;
    const Tensor* c = g.constant(n.inputs[n.inputs[0] == v ? 1 : 0]);
    return c && c->rank() <= 1;
  }
  if (n.inputs[0] != v) return false;
  if (n.op_type == "Slice") {  // data, starts, ends, axes: every axis the last
    if (n.inputs.size() < 4 || n.inputs[3].empty()) return false;
    const auto axes = g.ints(n.inputs[3]);
    if (!axes || axes->empty()) return false;
    for (int64_t a : *axes)
      if (a != -1 && a != int64_t(rank) - 1) return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (!n.inputs[i].empty() && !g.constant(n.inputs[i])) return false;
    return true;
  }
  return false;
}

// Which nodes compute something a graph output needs (nodes run in order, so a reader comes after
// what it reads). A dead reader (a Shape the folding left behind, say) does not keep a tree.
std::vector<bool> live_nodes(const GraphIndex& g) {
  const std::vector<Node>& nodes = g.graph().nodes;
  std::vector<bool> live(nodes.size(), false);
  for (size_t i = nodes.size(); i-- > 0;)
    for (const std::string& o : nodes[i].outputs) {
      if (o.empty()) continue;
      if (g.is_graph_output(o)) live[i] = true;
      for (const int c : g.consumers(o)) live[i] = live[i] || live[size_t(c)];
    }
  return live;
}

// From Transpose `t`: the row-wise nodes, the closing Transposes and the dead readers, or false
// when a path ends anywhere else (a graph output, another reader).
bool tree(const GraphIndex& g, const std::vector<bool>& live, const std::string& v, const std::vector<int64_t>& perm, std::vector<int>& rows,
          std::vector<int>& closing, std::vector<int>& dead_readers) {
  if (g.is_graph_output(v) || g.consumers(v).empty()) return false;
  for (const int c : g.consumers(v)) {
    const Node& n = g.graph().nodes[size_t(c)];
    if (n.op_type == "Transpose" && n.domain.empty() && inverse(perm, ints_attr(n, "perm"))) {
      closing.push_back(c);
    } else if (row_wise(n, v, g, perm.size())) {
      rows.push_back(c);
      if (!tree(g, live, n.outputs[0], perm, rows, closing, dead_readers)) return false;
    } else if (!live[size_t(c)]) {
      dead_readers.push_back(c);
    } else {
      return false;
    }
  }
  return true;
}

// Every Transpose whose row-wise tree closes: removed with its closing Transposes.
int unwrap_trees(Model& m, const PassContext& ctx) {
  Graph& g = m.graph;
  const GraphIndex index(g, ctx.inference);
  std::vector<bool> drop(g.nodes.size(), false);
  std::vector<std::pair<std::string, std::string>> renames;
  std::set<int> touched;
  NameGen names(g);
  const std::vector<bool> live = live_nodes(index);
  int removed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& t = g.nodes[i];
    if (t.op_type != "Transpose" || !t.domain.empty() || !keeps_last_axis(t) || touched.count(int(i))) continue;
    const std::vector<int64_t> perm = ints_attr(t, "perm");
    std::vector<int> rows, closing, dead_readers;
    if (!tree(index, live, t.outputs[0], perm, rows, closing, dead_readers) || rows.empty()) continue;
    bool free = true;  // a node in two trees (a chain already taken) waits for the next round
    for (int r : rows) free = free && !touched.count(r);
    for (int c : closing) free = free && !touched.count(c);
    if (!free) continue;
    // The row-wise nodes read the untransposed values, under fresh names (their shapes change).
    std::map<std::string, std::string> fresh = {{t.outputs[0], t.inputs[0]}};
    for (int r : rows) {
      Node& n = g.nodes[size_t(r)];
      for (std::string& in : n.inputs)
        if (fresh.count(in)) in = fresh.at(in);
      const std::string out = names.value(n.outputs[0] + "_rows");
      fresh[n.outputs[0]] = out;
      n.outputs[0] = out;
      touched.insert(r);
    }
    for (int c : closing) {
      Node& back = g.nodes[size_t(c)];
      touched.insert(c);
      if (index.is_graph_output(back.outputs[0])) {  // the output keeps its name
        back = make_node("Identity", "", {fresh.at(back.inputs[0])}, back.outputs, {}, back.name);
        continue;
      }
      drop[size_t(c)] = true;
      renames.emplace_back(back.outputs[0], fresh.at(back.inputs[0]));
    }
    // With dead readers the Transpose stays for them, dead too, until dead-code removes them all.
    drop[i] = dead_readers.empty(), touched.insert(int(i));
    ++removed;
  }
  if (removed) drop_nodes(g, drop, renames);
  return removed;
}

}  // namespace

Pass transpose_sandwich_pass() {
  const char* why = "Transpose keeping the last axis last";
  Pattern biased{{{"in", "Transpose", {cap("x")}, keeps_last_axis, "", why},
                  {"mm", "MatMul", {node("in"), konst("w")}},
                  {"add", "Add", {node("mm"), konst("b")}},
                  {"out", "Transpose", {node("add")}, keeps_last_axis, "", why}}};
  Pattern plain{{{"in", "Transpose", {cap("x")}, keeps_last_axis, "", why},
                 {"mm", "MatMul", {node("in"), konst("w")}},
                 {"out", "Transpose", {node("mm")}, keeps_last_axis, "", why}}};
  Rewrite with_bias{"Transpose pair around MatMul+Add", {biased}, [](const Match& m, RewriteContext& ctx) { return unwrap(m, ctx, true); }};
  Rewrite without{"Transpose pair around MatMul", {plain}, [](const Match& m, RewriteContext& ctx) { return unwrap(m, ctx, false); }};
  return {"transpose-sandwich", "Removed Transpose pair around a product", Level::Extended, [=](Model& m, PassContext& ctx) {
            return apply(with_bias, m, ctx.inference, ctx.explain, "transpose-sandwich") + apply(without, m, ctx.inference, ctx.explain, "transpose-sandwich") +
                   unwrap_trees(m, ctx);
          }};
}

}  // namespace refeval::optimize
