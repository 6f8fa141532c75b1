// --target ort --forms cpu: the q, k and v projections of a MultiHeadAttention in the form ONNX
// Runtime's CPU kernel reads fastest. Its kernel takes q, k and v as three (B, S, D) tensors (no
// packed input on CPU) and adds its optional bias input while it reorders them into heads, a pass
// it makes anyway. So a packed projection sliced in three (nn.MultiheadAttention's in_proj,
// ORT's Split after its GatherSliceToSplitFusion) costs ORT a copy of q, k and v, and a bias Add
// per part a pass over each; written as three MatMuls by the weight's column blocks, with the
// biases (zeros for a part without one) as the bias input, both go. On nn.TransformerEncoder at
// batch 2 x 128 (ort/time_pair.js, with transpose-sandwich's removal of its Transposes) ORT went
// from 1.024x to 0.99x the original at one thread.
//
// Each of q, k and v, read by the attention only, is MatMul(x, W) [+ b] [-> Slice or Split of the
// last axis], W a 2-D constant and b a 1-D constant over its columns; every node replaced is read
// by the others or by the attention only (a packed product read elsewhere stays). Not with a past
// (the bias would apply to the new keys only, a difference a reader should not have to know) or
// keys and values given in heads.
#include <fmt/format.h>

#include <set>

#include "../pass.h"
#include "rotary_common.h"
#include "refeval/compute_vector.h"

namespace refeval::optimize {
namespace {

constexpr int kBias = 3, kPastKey = 6, kPastValue = 7;

// One projection: x times columns [begin, end) of W, plus those of b (if any); `nodes` computes it.
struct Projection {
  std::string x, w, b;
  int64_t begin = 0, end = 0;
  std::vector<int> nodes;
};

// Columns [begin, end) of the last axis that output `k` of Slice or Split `n` keeps, of `width`.
std::optional<std::pair<int64_t, int64_t>> last_axis_part(const GraphIndex& g, const Node& n, size_t k, int64_t width) {
  const std::vector<Dim>* d = g.dims(n.inputs[0]);
  if (!d) return std::nullopt;
  if (n.op_type == "Slice") {
    const auto r = rotary::last_axis_range(g, n, width, d->size());
    if (!r || r->first >= r->second) return std::nullopt;
    return r;
  }
  if (const int64_t axis = int_attr(n, "axis", 0); n.op_type == "Split" && (axis == -1 || axis == int64_t(d->size()) - 1)) {
    std::vector<int64_t> sizes;
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
      const auto s = g.ints(n.inputs[1]);
      if (!s) return std::nullopt;
      sizes = *s;
    } else if (!ints_attr(n, "split").empty()) {
      sizes = ints_attr(n, "split");
    } else if (width % int64_t(n.outputs.size()) == 0) {  // equal parts (num_outputs since opset 18)
      sizes.assign(n.outputs.size(), width / int64_t(n.outputs.size()));
    }
    if (sizes.size() != n.outputs.size()) return std::nullopt;
    int64_t begin = 0;
    for (size_t i = 0; i < k; ++i) begin += sizes[i];
    return std::pair{begin, begin + sizes[k]};
  }
  return std::nullopt;
}

// The projection computing `v`: MatMul(x, W) [+ b] [-> Slice or Split of the last axis].
std::optional<Projection> projection(const GraphIndex& g, const std::string& v) {
  const Graph& graph = g.graph();
  auto produced_by = [&](const std::string& value, std::initializer_list<const char*> ops) -> int {
    const int at = g.producer(value);
    if (at < 0 || !graph.nodes[size_t(at)].domain.empty()) return -1;
    for (const char* op : ops)
      if (graph.nodes[size_t(at)].op_type == op) return at;
    return -1;
  };
  Projection p;
  std::string value = v;
  const int cut = produced_by(value, {"Slice", "Split"});
  if (cut >= 0) p.nodes.push_back(cut), value = graph.nodes[size_t(cut)].inputs[0];
  if (const int add = produced_by(value, {"Add"}); add >= 0) {
    const Node& n = graph.nodes[size_t(add)];
    const int c = g.constant(n.inputs[0]) ? 0 : 1;
    const Tensor* b = g.constant(n.inputs[size_t(c)]);
    if (!b || b->rank() != 1) return std::nullopt;
    p.b = n.inputs[size_t(c)];
    p.nodes.push_back(add), value = n.inputs[size_t(1 - c)];
  }
  const int mm = produced_by(value, {"MatMul"});
  if (mm < 0) return std::nullopt;
  const Node& n = graph.nodes[size_t(mm)];
  const Tensor* w = g.constant(n.inputs[1]);
  const std::vector<Dim>* xd = g.dims(n.inputs[0]);
  if (!w || w->rank() != 2 || !xd || xd->size() != 3 || (!p.b.empty() && g.constant(p.b)->dim(0) != w->dim(1))) return std::nullopt;
  p.nodes.push_back(mm);
  p.x = n.inputs[0], p.w = n.inputs[1];
  p.begin = 0, p.end = w->dim(1);
  if (cut >= 0) {
    const Node& c = graph.nodes[size_t(cut)];
    const size_t k = size_t(std::find(c.outputs.begin(), c.outputs.end(), v) - c.outputs.begin());
    const auto part = last_axis_part(g, c, k, w->dim(1));
    if (!part) return std::nullopt;
    std::tie(p.begin, p.end) = *part;
  }
  return p;
}

// Columns [begin, end) of the 2-D `t` (or of the 1-D `t`), as its own type.
Tensor columns(const Tensor& t, int64_t begin, int64_t end) {
  const std::vector<double> v = to_doubles(t);
  const int64_t rows = t.rank() == 2 ? t.dim(0) : 1, width = t.rank() == 2 ? t.dim(1) : t.dim(0);
  std::vector<double> out;
  out.reserve(size_t(rows * (end - begin)));
  for (int64_t r = 0; r < rows; ++r) out.insert(out.end(), v.begin() + r * width + begin, v.begin() + r * width + end);
  return t.rank() == 2 ? from_doubles(t.dtype(), {rows, end - begin}, out) : from_doubles(t.dtype(), {end - begin}, out);
}

int rewrite(Model& m, PassContext& ctx) {
  Graph& g = m.graph;
  const GraphIndex index(g, ctx.inference);
  NameGen names(g);
  std::vector<bool> drop(g.nodes.size(), false);
  std::vector<Node> added;
  std::vector<Initializer> weights;  // appended at the end: the index points into g.initializers
  std::vector<Provenance> provenance;  // the new products come from the nodes they replace (show's diff)
  int candidates = 0, rewritten = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& mha = g.nodes[i];
    if (mha.op_type != "MultiHeadAttention" || mha.domain != "com.microsoft") continue;
    auto refuse = [&](const std::string& why) {
      if (ctx.explain) ctx.explain->add("mha-projections", mha.name, why);
    };
    auto input = [&](int k) { return size_t(k) < mha.inputs.size() ? mha.inputs[size_t(k)] : std::string(); };
    if (!input(kBias).empty()) continue;  // already in this form
    ++candidates;
    std::vector<Projection> parts;
    std::string why;
    if (input(1).empty() || input(2).empty() || input(1) == input(2) || input(0) == input(1))
      why = "q, k and v are not three values (packed, or one value read twice)";
    else if (!input(kPastKey).empty() || !input(kPastValue).empty())
      why = "it has a past (a bias would apply to the new keys and values only)";
    for (int k = 0; k < 3 && why.empty(); ++k) {
      if (auto p = projection(index, mha.inputs[size_t(k)])) parts.push_back(*p);
      else why = fmt::format("'{}' is not MatMul(x, W) [+ b] [sliced on the last axis] with a constant 2-D W and 1-D b", mha.inputs[size_t(k)]);
    }
    if (!why.empty()) {
      refuse(why);
      continue;
    }
    // Every node replaced is read only by the others and the attention.
    std::set<int> replaced;
    for (const Projection& p : parts) replaced.insert(p.nodes.begin(), p.nodes.end());
    std::string escapes;
    for (int r : replaced)
      for (const std::string& o : g.nodes[size_t(r)].outputs) {
        if (o.empty()) continue;
        if (index.is_graph_output(o)) escapes = o;
        for (int c : index.consumers(o))
          if (c != int(i) && !replaced.count(c)) escapes = o;
      }
    bool taken = false;
    for (int r : replaced) taken = taken || drop[size_t(r)];
    if (!escapes.empty() || taken) {
      refuse(fmt::format("'{}' is also read outside the attention's projections", escapes.empty() ? "a projection" : escapes));
      continue;
    }
    // Nothing to gain: three plain products already.
    bool gain = false;
    for (const Projection& p : parts) gain = gain || !p.b.empty() || p.nodes.size() > 1;
    if (!gain) {
      --candidates;
      continue;
    }
    std::vector<double> bias;
    Provenance from;
    for (int r : replaced) from.replaced.push_back(g.nodes[size_t(r)].name);
    for (size_t k = 0; k < 3; ++k) {
      const Projection& p = parts[k];
      const Tensor& w = *index.constant(p.w);
      std::string weight = p.w;
      if (p.begin != 0 || p.end != w.dim(1)) {
        weight = names.value(p.w + "_cols_" + std::to_string(p.begin));
        weights.push_back({weight, columns(w, p.begin, p.end)});
      }
      const std::string out = names.value(mha.inputs[k] + "_projected");
      added.push_back(make_node("MatMul", "", {p.x, weight}, {out}, {}, names.node(mha.name + "/" + "QKV"[k] + "Projection")));
      from.created.push_back(added.back().name);
      const std::vector<double> b = p.b.empty() ? std::vector<double>(size_t(p.end - p.begin), 0.0) : to_doubles(columns(*index.constant(p.b), p.begin, p.end));
      bias.insert(bias.end(), b.begin(), b.end());
      mha.inputs[k] = out;
    }
    const std::string bias_name = names.value(mha.name + "/qkv_bias");
    weights.push_back({bias_name, from_doubles(index.constant(parts[0].w)->dtype(), {int64_t(bias.size())}, bias)});
    if (mha.inputs.size() <= size_t(kBias)) mha.inputs.resize(size_t(kBias) + 1);
    mha.inputs[size_t(kBias)] = bias_name;
    for (int r : replaced) drop[size_t(r)] = true;
    provenance.push_back(std::move(from));
    ++rewritten;
  }
  if (ctx.explain) ctx.explain->count("mha-projections", candidates, rewritten);
  if (!rewritten) return 0;
  drop_nodes(g, drop);
  g.nodes.insert(g.nodes.end(), added.begin(), added.end());
  g.initializers.insert(g.initializers.end(), weights.begin(), weights.end());
  record_provenance(m, provenance);
  topological_sort(g);
  return rewritten;
}

}  // namespace

Pass mha_projections_pass() { return {"mha-projections", "Wrote q/k/v projections as MultiHeadAttention reads them", Level::Extended, rewrite}; }

}  // namespace refeval::optimize
