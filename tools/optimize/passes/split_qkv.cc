// Packed q/k/v projections in the layouts that hide their heads from the attention pass, rewritten
// as separate parts every fusion reads:
//
// - Heads interleaving q, k and v (GPT-NeoX's query_key_value: the (B, S, 3D) product viewed as
//   (B, S, N, 3h), then q = [..., :h], k = [..., h:2h], v = [..., 2h:]): each slice of the view
//   becomes x W_j (+ b_j) viewed as (B, S, N, h), W_j the columns n*3h + j*h + c of W. Checked: a
//   constant 2-D W (and 1-D bias) of 3D columns, a view keeping B and S with N*3h = 3D, a slice of
//   the last axis with unit step covering one of the three parts of h.
// - timm's `qkv(x).reshape(B, S, 3, N, h).permute(2, 0, 3, 1, 4)` then `unbind(0)` (Split on axis
//   0 and Squeeze, or Gather of 0, 1, 2): part j is the j-th third of the product's last axis,
//   viewed as (B, S, N, h) and transposed 0 2 1 3, the form the attention pass reads as a packed
//   projection (three Slices). Checked: the view keeps B and S and splits 3D into (3, N, h).
// - MixFormer's (Phi-2's original code) `Wqkv(x).view(B, S, 3, N, h)` then `qkv[:, :, j]` (Gather
//   of j on axis 2): part j is the j-th third of the product viewed as (B, S, N, h), untransposed.
#include <map>

#include <fmt/format.h>

#include "../pass.h"
#include "../symbolic_shapes.h"
#include "refeval/builder.h"
#include "refeval/compute_vector.h"

namespace refeval::optimize {

namespace {

// Part j of timm's unbound q/k/v: Squeeze(Split(T, axis 0)[j], 0) or Gather(T, j, axis 0), with T
// = Transpose(Reshape(P, (B, S, 3, N, h)), 2 0 3 1 4). On a match: P, N, h, j and the nodes read.
struct UnboundPart {
  std::string packed;
  int64_t N = 0, h = 0, j = -1;
  bool transposed = true;  // timm's (B, N, S, h); MixFormer's part stays (B, S, N, h)
};

// P viewed as (B, S, 3, N, h) by `view`, keeping B and S: (N, h).
std::optional<std::pair<int64_t, int64_t>> three_heads_view(const GraphIndex& g, const Node& view) {
  const std::vector<Dim>* vd = g.dims(view.outputs[0]);
  const std::vector<Dim>* pd = view.inputs.empty() ? nullptr : g.dims(view.inputs[0]);
  if (!vd || !pd || vd->size() != 5 || pd->size() != 3 || !(*vd)[2].fixed() || (*vd)[2].value != 3 || !(*vd)[3].fixed() || !(*vd)[4].fixed() ||
      !(*pd)[2].fixed() || 3 * (*vd)[3].value * (*vd)[4].value != (*pd)[2].value || !dims_equal((*vd)[0], (*pd)[0], g.inference()) ||
      !dims_equal((*vd)[1], (*pd)[1], g.inference()))
    return std::nullopt;
  return std::pair{(*vd)[3].value, (*vd)[4].value};
}

std::optional<UnboundPart> unbound_part(const GraphIndex& g, const Node& n) {
  std::string t;
  int64_t j = -1;
  if (n.op_type == "Gather" && n.inputs.size() == 2 && (int_attr(n, "axis", 0) == 2 || int_attr(n, "axis", 0) == -3)) {
    const Tensor* idx = g.constant(n.inputs[1]);
    const Node* view = g.producer_node(n.inputs[0]);
    if (!idx || idx->rank() != 0 || !g.scalar(n.inputs[1]) || !view || view->op_type != "Reshape") return std::nullopt;
    const int64_t k = gather_index(*g.scalar(n.inputs[1]), 3);
    const auto heads = three_heads_view(g, *view);
    if (!heads || k < 0) return std::nullopt;
    return UnboundPart{view->inputs[0], heads->first, heads->second, k, false};
  }
  if (n.op_type == "Gather" && n.inputs.size() == 2 && int_attr(n, "axis", 0) == 0) {
    const Tensor* idx = g.constant(n.inputs[1]);
    if (!idx || idx->rank() != 0 || !g.scalar(n.inputs[1])) return std::nullopt;
    t = n.inputs[0], j = gather_index(*g.scalar(n.inputs[1]), 3);
  } else if (n.op_type == "Squeeze" && !n.inputs.empty()) {
    const std::vector<int64_t> axes = axes_of(n, g).value_or(std::vector<int64_t>{});
    const Node* split = g.producer_node(n.inputs[0]);
    if (axes != std::vector<int64_t>{0} || !split) return std::nullopt;
    if (split->op_type != "Split" || split->outputs.size() != 3 || int_attr(*split, "axis", 0) != 0) return std::nullopt;
    for (int64_t k = 0; k < 3; ++k)
      if (split->outputs[size_t(k)] == n.inputs[0]) j = k;
    const std::vector<Dim>* pd = g.dims(n.inputs[0]);
    if (!pd || pd->empty() || !(*pd)[0].fixed() || (*pd)[0].value != 1) return std::nullopt;
    t = split->inputs[0];
  } else {
    return std::nullopt;
  }
  if (j < 0) return std::nullopt;
  const Node* tr = g.producer_node(t);
  if (!tr || tr->op_type != "Transpose" || ints_attr(*tr, "perm") != std::vector<int64_t>{2, 0, 3, 1, 4}) return std::nullopt;
  const Node* view = g.producer_node(tr->inputs[0]);
  if (!view || view->op_type != "Reshape") return std::nullopt;
  const auto heads = three_heads_view(g, *view);
  if (!heads) return std::nullopt;
  return UnboundPart{view->inputs[0], heads->first, heads->second, j};
}

}  // namespace

Pass split_qkv_pass() {
  return {"split-qkv", "Split packed QKV", Level::Extended, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g, ctx.inference);
            NameGen names(g);
            std::vector<Node> added_nodes;
            std::map<size_t, std::vector<Node>> before;  // node index -> nodes to insert before it
            std::vector<Initializer> added;
            std::vector<bool> drop(g.nodes.size(), false);
            int split = 0;
            for (size_t i = 0; i < g.nodes.size(); ++i) {
              if (const auto part = g.nodes[i].domain.empty() ? unbound_part(index, g.nodes[i]) : std::nullopt) {
                const Node& n = g.nodes[i];
                const int64_t D = part->N * part->h;
                const std::string base = n.name.empty() ? n.outputs[0] : n.name;
                auto ints = [&](const std::string& what, std::vector<int64_t> v) {
                  const std::string name = names.value(base + "/" + what);
                  added.push_back({name, Tensor::from_vector<int64_t>({int64_t(v.size())}, v)});
                  return name;
                };
                const std::string third = names.value(base + "/third"), heads = names.value(base + "/heads");
                std::vector<Node> nodes;
                nodes.push_back(make_node("Slice", "", {part->packed, ints("start", {part->j * D}), ints("end", {(part->j + 1) * D}), ints("axis", {-1})},
                                          {third}, {}, names.node(base + "/Slice")));
                const std::vector<std::string> heads_out = part->transposed ? std::vector<std::string>{heads} : n.outputs;
                nodes.push_back(make_node("Reshape", "", {third, ints("heads_shape", {0, 0, part->N, part->h})}, heads_out, {}, names.node(base + "/Heads")));
                if (part->transposed)
                  nodes.push_back(make_node("Transpose", "", {heads}, n.outputs, {build::attr("perm", std::vector<int64_t>{0, 2, 1, 3})},
                                            names.node(base + "/Transpose")));
                before[i] = std::move(nodes);
                drop[i] = true;
                ++split;
                continue;
              }
              // The parts of the (B, S, N, 3h) view a Slice or a Split takes: (j, output) pairs.
              const Node& sl = g.nodes[i];
              std::vector<std::pair<int64_t, std::string>> parts;
              const int rp = sl.domain.empty() && !sl.inputs.empty() ? index.producer(sl.inputs[0]) : -1;
              if (rp < 0 || g.nodes[size_t(rp)].op_type != "Reshape") continue;
              const Node& view = g.nodes[size_t(rp)];
              const std::vector<Dim>* vd = index.dims(view.outputs[0]);
              const std::vector<Dim>* pd = index.dims(view.inputs[0]);
              if (!vd || !pd || vd->size() != 4 || pd->size() != 3 || !(*vd)[2].fixed() || !(*vd)[3].fixed() || !(*pd)[2].fixed()) continue;
              const int64_t N = (*vd)[2].value, h3 = (*vd)[3].value, D3 = (*pd)[2].value;
              if (h3 % 3 != 0 || N * h3 != D3 || !dims_equal((*vd)[0], (*pd)[0], index.inference()) || !dims_equal((*vd)[1], (*pd)[1], index.inference()))
                continue;
              const int64_t h = h3 / 3;
              if (sl.op_type == "Slice" && sl.inputs.size() >= 4) {
                const auto starts = index.ints(sl.inputs[1]), ends = index.ints(sl.inputs[2]), axes = index.ints(sl.inputs[3]);
                if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 || axes->size() != 1 || ((*axes)[0] != 3 && (*axes)[0] != -1))
                  continue;
                if (sl.inputs.size() > 4 && !sl.inputs[4].empty() && index.ints(sl.inputs[4]) != std::vector<int64_t>{1}) continue;
                const int64_t j = (*starts)[0] / h, end = std::min((*ends)[0], h3);
                if ((*starts)[0] % h != 0 || j < 0 || j > 2 || end != (j + 1) * h) continue;
                parts.emplace_back(j, sl.outputs[0]);
              } else if (sl.op_type == "Split" && sl.outputs.size() == 3 && (int_attr(sl, "axis", 0) == 3 || int_attr(sl, "axis", 0) == -1)) {
                // split(h, dim=-1): three parts of h each, given as sizes or num_outputs.
                std::vector<int64_t> sizes = ints_attr(sl, "split");
                if (sl.inputs.size() > 1 && !sl.inputs[1].empty()) sizes = index.ints(sl.inputs[1]).value_or(std::vector<int64_t>{});
                if (!sizes.empty() && sizes != std::vector<int64_t>{h, h, h}) continue;
                for (int64_t j = 0; j < 3; ++j) parts.emplace_back(j, sl.outputs[size_t(j)]);
              } else {
                continue;
              }
              // The projection: x W (+ b), constants.
              std::string product = view.inputs[0], bias;
              int pp = index.producer(product);
              if (pp >= 0 && g.nodes[size_t(pp)].op_type == "Add" && g.nodes[size_t(pp)].inputs.size() == 2) {
                const Node& add = g.nodes[size_t(pp)];
                const int side = index.constant(add.inputs[1]) ? 1 : index.constant(add.inputs[0]) ? 0 : -1;
                if (side < 0) continue;
                bias = add.inputs[size_t(side)], product = add.inputs[size_t(1 - side)];
                pp = index.producer(product);
              }
              if (pp < 0 || g.nodes[size_t(pp)].op_type != "MatMul" || !g.nodes[size_t(pp)].domain.empty()) continue;
              const Node& mm = g.nodes[size_t(pp)];
              const Tensor* w = index.constant(mm.inputs[1]);
              const Tensor* b = bias.empty() ? nullptr : index.constant(bias);
              if (!w || w->rank() != 2 || w->dim(1) != D3 || (b && (b->rank() != 1 || b->dim(0) != D3)) || !is_float_dtype(w->dtype())) continue;
              const int64_t rows = w->dim(0), D = N * h;
              const std::vector<double> wv = to_doubles(*w);
              const std::vector<double> bv = b ? to_doubles(*b) : std::vector<double>{};
              const std::string base = sl.name.empty() ? sl.outputs[0] : sl.name;
              const std::string shape = names.value(base + "/heads_shape");
              added.push_back({shape, Tensor::from_vector<int64_t>({4}, {0, 0, N, h})});
              std::vector<Node> nodes;
              for (const auto& [j, output] : parts) {
                if (output.empty()) continue;
                // The columns of part j, head by head.
                std::vector<double> wj(size_t(rows * D)), bj;
                for (int64_t r = 0; r < rows; ++r)
                  for (int64_t n = 0; n < N; ++n)
                    for (int64_t c = 0; c < h; ++c) wj[size_t(r * D + n * h + c)] = wv[size_t(r * D3 + n * h3 + j * h + c)];
                for (int64_t n = 0; b && n < N; ++n)
                  for (int64_t c = 0; c < h; ++c) bj.push_back(bv[size_t(n * h3 + j * h + c)]);
                const char* part = j == 0 ? "query" : j == 1 ? "key" : "value";
                const std::string wn = names.value(mm.inputs[1] + "_" + part);
                added.push_back({wn, from_doubles(w->dtype(), {rows, D}, wj)});
                std::string y = names.value(mm.outputs[0] + "_" + part);
                nodes.push_back(make_node("MatMul", "", {mm.inputs[0], wn}, {y}, {}, names.node(base + "/MatMul")));
                if (b) {
                  const std::string bn = names.value(bias + "_" + part), yb = names.value(y + "_bias");
                  added.push_back({bn, from_doubles(b->dtype(), {D}, bj)});
                  nodes.push_back(make_node("Add", "", {y, bn}, {yb}, {}, names.node(base + "/Add")));
                  y = yb;
                }
                nodes.push_back(make_node("Reshape", "", {y, shape}, {output}, {}, names.node(base + "/Heads")));
              }
              before[i] = std::move(nodes);
              drop[i] = true;
              ++split;
            }
            if (!split) return 0;
            std::vector<Node> out;
            for (size_t i = 0; i < g.nodes.size(); ++i) {
              if (auto it = before.find(i); it != before.end())
                for (Node& n : it->second) out.push_back(std::move(n));
              if (!drop[i]) out.push_back(std::move(g.nodes[i]));
            }
            g.nodes = std::move(out);
            for (Initializer& init : added) g.initializers.push_back(std::move(init));
            remove_dead(g);
            return split;
          }};
}

}  // namespace refeval::optimize
