// GPT-2 self-attention without past (ORT's FusionGptAttentionNoPast, as torch exports it) into
// com.microsoft Attention, which keeps the merged Q|K|V projection:
//   qkv = x W + b;  q, k, v = Split(qkv, [D, D, D], last axis)
//   q' = Transpose(Reshape(q, (B, S, N, h)), 0 2 1 3); k' likewise with 0 2 3 1 (K transposed);
//   v' with 0 2 1 3;  s = MatMul(q', k') / c;  s = Where(hide, filler, s)  (causal mask)
//   y = Reshape(Transpose(MatMul(Softmax(s), v'), 0 2 1 3), (B, S, D))
// -> Attention(x, W, b, num_heads=N, unidirectional=1). Checked, not assumed: the Split sizes and
// axis, the head shape N x h = D from shape inference, the permutations, Softmax over the last
// axis, the mask being "key after query" exactly: Not(Slice(Slice(C, 0:S, axis 2), 0:S, axis 3))
// of a lower-triangular constant C with S the query's own length, and a filler so negative that
// replacing a score (Where) and adding it (Attention's mask_filter_value) give the same softmax.
// A scale other than 1/sqrt(h) becomes the `scale` attribute.
#include <cmath>

#include "../pass.h"
#include "refeval/builder.h"
#include "refeval/dispatch.h"

namespace refeval::optimize {
namespace {

auto perm_is(std::vector<int64_t> p) {
  return [p](const Node& n) { return ints_attr(n, "perm") == p; };
}

// The Split of qkv into three equal parts D along the last axis; D, or 0.
int64_t equal_split(const Node& split, const GraphIndex& g) {
  const std::vector<Dim>* dims = g.dims(split.inputs[0]);
  if (!dims || dims->empty() || !dims->back().fixed() || split.outputs.size() != 3) return 0;
  const int64_t axis = int_attr(split, "axis", 0), rank = int64_t(dims->size());
  if (axis != -1 && axis != rank - 1) return 0;
  std::vector<int64_t> sizes = ints_attr(split, "split");
  if (split.inputs.size() > 1 && !split.inputs[1].empty()) sizes = g.ints(split.inputs[1]).value_or(std::vector<int64_t>{});
  const int64_t total = dims->back().value;
  if (total % 3 != 0) return 0;
  if (!sizes.empty() && sizes != std::vector<int64_t>(3, total / 3)) return 0;
  return total / 3;
}

// The slice [0, S) of axis `axis` of `value`'s producer, S the query length; the sliced input.
std::optional<std::string> slice_from_zero(const GraphIndex& g, const std::string& value, int64_t axis, const Dim& seq) {
  const int p = g.producer(value);
  if (p < 0) return std::nullopt;
  const Node& n = g.graph().nodes[size_t(p)];
  if (n.op_type != "Slice" || n.inputs.size() < 4) return std::nullopt;
  const auto starts = g.ints(n.inputs[1]), axes = g.ints(n.inputs[3]);
  const auto steps = n.inputs.size() > 4 && !n.inputs[4].empty() ? g.ints(n.inputs[4]) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{1});
  if (!starts || !axes || !steps || *starts != std::vector<int64_t>{0} || *axes != std::vector<int64_t>{axis} ||
      *steps != std::vector<int64_t>{1})
    return std::nullopt;
  const std::vector<Dim>* end = g.shape_data(n.inputs[2]);
  const auto end_const = g.ints(n.inputs[2]);
  const bool end_ok = (end && end->size() == 1 && same_dim((*end)[0], seq)) ||
                      (end_const && end_const->size() == 1 && seq.fixed() && (*end_const)[0] == seq.value);
  if (!end_ok) return std::nullopt;
  return n.inputs[0];
}

// True when `cond` is true exactly for key j > query i over an S x S block (the causal mask).
bool hides_future_keys(const GraphIndex& g, std::string cond, const Dim& seq) {
  int p = g.producer(cond);
  if (p >= 0 && g.graph().nodes[size_t(p)].op_type == "Cast" && int_attr(g.graph().nodes[size_t(p)], "to", 0) == int64_t(DType::Bool))
    cond = g.graph().nodes[size_t(p)].inputs[0], p = g.producer(cond);
  if (p < 0 || g.graph().nodes[size_t(p)].op_type != "Not") return false;
  const auto cols = slice_from_zero(g, g.graph().nodes[size_t(p)].inputs[0], 3, seq);
  const auto rows = cols ? slice_from_zero(g, *cols, 2, seq) : std::nullopt;
  const Tensor* c = rows ? g.constant(*rows) : nullptr;
  if (!c || c->rank() != 4 || c->dim(0) != 1 || c->dim(1) != 1 || c->dim(2) != c->dim(3) || c->dtype() != DType::Bool) return false;
  if (seq.fixed() && seq.value > c->dim(2)) return false;
  const int64_t W = c->dim(2);
  const bool* v = c->data<bool>();
  for (int64_t i = 0; i < W; ++i)
    for (int64_t j = 0; j < W; ++j)
      if (v[i * W + j] != (j <= i)) return false;
  return true;
}

}  // namespace

Pass attention_pass() {
  Pattern p{{{"mm", "MatMul", {cap("x"), konst("w")}},
             {"qkv", "Add", {node("mm"), konst("bias")}},
             {"split", "Split", {node("qkv"), opt()}},
             {"rq", "Reshape", {node("split", 0), any()}},
             {"q", "Transpose", {node("rq")}, perm_is({0, 2, 1, 3})},
             {"rk", "Reshape", {node("split", 1), any()}},
             {"k", "Transpose", {node("rk")}, perm_is({0, 2, 3, 1})},
             {"rv", "Reshape", {node("split", 2), any()}},
             {"v", "Transpose", {node("rv")}, perm_is({0, 2, 1, 3})},
             {"qk", "MatMul", {node("q"), node("k")}},
             {"scaled", "Div", {node("qk"), konst("divisor")}},
             {"masked", "Where", {cap("hide"), konst("filler"), node("scaled")}},
             {"probs", "Softmax", {node("masked")}, [](const Node& n) { return int_attr(n, "axis", -1) == -1 || int_attr(n, "axis", -1) == 3; }},
             {"o", "MatMul", {node("probs"), node("v")}},
             {"t", "Transpose", {node("o")}, perm_is({0, 2, 1, 3})},
             {"y", "Reshape", {node("t"), any()}}}};
  Rewrite r{"Attention", {p}, [](const Match& m, RewriteContext& ctx) -> std::optional<Replacement> {
              const GraphIndex& g = ctx.index;
              const int64_t D = equal_split(m.node(g, "split"), g);
              const std::vector<Dim>* x = g.dims(m.value("x"));
              const std::vector<Dim>* head = g.dims(m.node(g, "rq").outputs[0]);
              const std::vector<Dim>* out = g.dims(m.node(g, "y").outputs[0]);
              if (!D || !x || x->size() != 3 || !head || head->size() != 4 || !out || out->size() != 3) return std::nullopt;
              for (const char* id : {"rk", "rv"}) {
                const std::vector<Dim>* other = g.dims(m.node(g, id).outputs[0]);
                if (!other || !same_shape(*other, *head)) return std::nullopt;
              }
              if (!(*head)[2].fixed() || !(*head)[3].fixed()) return std::nullopt;
              const int64_t N = (*head)[2].value, h = (*head)[3].value;
              // (B, S) of the heads and the output are x's own; the output's last dim is D.
              if (N * h != D || !same_dim((*head)[0], (*x)[0]) || !same_dim((*head)[1], (*x)[1]) ||
                  !same_dim((*out)[0], (*x)[0]) || !same_dim((*out)[1], (*x)[1]) || !(*out)[2].fixed() || (*out)[2].value != D)
                return std::nullopt;
              const Tensor* w = g.constant(m.value("w"));
              const Tensor* b = g.constant(m.value("bias"));
              if (w->rank() != 2 || w->dim(1) != 3 * D || b->rank() != 1 || b->dim(0) != 3 * D) return std::nullopt;
              const auto divisor = g.scalar(m.value("divisor"));
              const auto filler = g.scalar(m.value("filler"));
              if (!divisor || !(*divisor > 0) || !filler || !(*filler <= -1e4)) return std::nullopt;
              if (!hides_future_keys(g, m.value("hide"), (*x)[1])) return std::nullopt;
              std::vector<Attribute> attrs = {build::attr("num_heads", N), build::attr("unidirectional", int64_t(1)),
                                              build::attr("mask_filter_value", float(std::max(*filler, -3.4028234663852886e38)))};
              if (std::fabs(*divisor - std::sqrt(double(h))) > 1e-6 * std::sqrt(double(h)))
                attrs.push_back(build::attr("scale", float(1.0 / *divisor)));
              const Node& y = m.node(g, "y");
              return Replacement{{make_node("Attention", "com.microsoft", {m.value("x"), m.value("w"), m.value("bias")}, {y.outputs[0]},
                                            attrs, ctx.fused_name(m, "Attention"))},
                                 {}};
            }};
  return rewrite_pass("attention", Level::Extended, std::move(r));
}

}  // namespace refeval::optimize
