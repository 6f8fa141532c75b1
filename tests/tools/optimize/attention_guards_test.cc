// The attention pass's checks on forms its other tests do not feed: each case is an exporter's
// form or a look-alike the pass must refuse, with the refusal --explain gives, the operators it
// writes, or (optimized(), optimize_test_util.h) the fused result checked equal to the original
// with the evaluator. BERT-like self-attention on x (B, S, 16), 2 heads of 8.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::ramp;

namespace {

constexpr int64_t kHeads = 2, kHead = 8, kHidden = kHeads * kHead;
constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
const std::string kAt = "not fused: attention at '/attn/Softmax': ";

// A graph under construction; node outputs are named after the node ("Add_3"), nodes "/Add_3".
class G : public testing::GraphUnderConstruction {
 public:
  explicit G(int opset = 17) : opset_(opset) {}
  Node& last() { return nodes_.back(); }
  std::string scalar(float v) { return c(Tensor::scalar<float>(v)); }
  Model model() {
    Model m = build::model(graph("attention", nodes_, inputs_, outputs_, inits_), {{"", opset_}});
    for (const Node& n : m.graph.nodes)
      if (n.domain == "com.microsoft") m.opsets["com.microsoft"] = 1;
    return m;
  }

 private:
  int opset_;
};

// x W (+ b) of `width` columns.
std::string proj(G& g, const std::string& x, float start, int64_t width = kHidden, bool bias = true) {
  const std::string y = g.add("MatMul", {x, g.c(ramp({kHidden, width}, start, 0.013f))});
  return bias ? g.add("Add", {y, g.c(ramp({width}, -0.1f, 0.01f))}) : y;
}

// (B, S, 16) -> (B, S, 2, 8) -> Transpose perm: 0 2 1 3 for Q and V, 0 2 3 1 for K^T.
std::string heads(G& g, const std::string& p, std::vector<int64_t> perm = {0, 2, 1, 3}) {
  return g.add("Transpose", {g.add("Reshape", {p, g.c(ints({0, 0, kHeads, kHead}))})}, {attr("perm", perm)});
}

// Softmax(mask(MatMul(q, kT) / sqrt(8))) v, the heads merged back to (B, S, 16), a graph output;
// `mask` adds its terms to the scaled scores.
void attend(G& g, const std::string& q, const std::string& kT, const std::string& v, const std::function<std::string(const std::string&)>& mask = {}) {
  std::string s = g.add("Div", {g.add("MatMul", {q, kT}), g.scalar(std::sqrt(float(kHead)))});
  if (mask) s = mask(s);
  const std::string p = g.add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, "/attn/Softmax");
  const std::string ctx = g.add("MatMul", {p, v});
  g.out(g.add("Reshape", {g.add("Transpose", {ctx}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), g.c(ints({0, 0, kHidden}))}));
}

// BERT's self-attention on x with batch and seq dims `b`, `s`: its three biased projections in
// heads, each made when first asked for.
struct Bert {
  G g;
  std::string x;
  explicit Bert(DimSpec b = "batch", DimSpec s = "seq", int opset = 17) : g(opset) { x = g.input(f32("x", {b, s, kHidden})); }
  std::string q() { return heads(g, proj(g, x, -0.2f)); }
  std::string kT() { return heads(g, proj(g, x, 0.2f), {0, 2, 3, 1}); }
  std::string v() { return heads(g, proj(g, x, -0.1f)); }
  void attend(const std::function<std::string(const std::string&)>& mask = {}) {
    const std::string q_ = q(), k_ = kT(), v_ = v();
    ::attend(g, q_, k_, v_, mask);
  }
};

// A (B, T) int64 padding mask whose 1 keeps a key, as BERT adds it: (1 - float(m)) * -10000,
// viewed (B, 1, 1, T) by Unsqueeze `axes`.
std::string padding(G& g, std::vector<int64_t> axes = {1, 2}, DimSpec b = "batch", DimSpec t = "seq") {
  const std::string m = g.input(tensor_info("mask", DType::Int64, {b, t}));
  const std::string f = g.add("Cast", {g.add("Unsqueeze", {m, g.c(ints(axes))})}, {attr("to", int64_t(DType::Float))});
  return g.add("Mul", {g.add("Sub", {g.scalar(1), f}), g.scalar(-10000)});
}

// The attention pass alone, checked against the original with `mask` (3 x 3, 0 and 1) fed.
Model fused(const Model& m, std::vector<int64_t> mask = {}) {
  std::map<std::string, Value> fed;
  if (!mask.empty()) fed.emplace("mask", Tensor::from_vector<int64_t>({3, 3}, mask));
  return optimized(m, {"attention"}, "", "all", fed);
}
const std::vector<int64_t> kMask = {1, 1, 1, 1, 1, 0, 1, 0, 0};

// The attention pass's --explain refusals, every form allowed (as fused() writes them).
std::string explain(const Model& m) {
  optimize::OptimizeOptions o;
  o.only = {"attention"};
  o.explain = true;
  o.forms = "all";
  return testing::not_fused_lines(optimize::optimize(m, Registry::builtin(), o).explain);
}

const Node& node_of(const Model& m, const std::string& op) {
  const auto it = std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  REQUIRE(it != m.graph.nodes.end());
  return *it;
}

}  // namespace

// ---- Softmax and scores ----

TEST_CASE("attention guards: probabilities also averaged for the returned weights (nn.MultiheadAttention's need_weights) stay, explained") {
  // The weights read before the product with V: the Softmax is not the attention's alone.
  Bert b;
  b.attend();
  Model m = b.g.model();  // ReduceMean(probs) inserted before MatMul(probs, V), a graph output
  auto& nodes = m.graph.nodes;
  const auto sm = std::find_if(nodes.begin(), nodes.end(), [](const Node& n) { return n.op_type == "Softmax"; });
  nodes.insert(sm + 1, node("ReduceMean", {sm->outputs[0]}, {"weights"}, {attr("axes", std::vector<int64_t>{1})}, "/attn/AverageWeights"));
  m.graph.outputs.push_back({"weights", ValueType::tensor_of_unknown_rank(DType::Float)});
  CHECK(explain(m) == kAt + "the probabilities are not only multiplied by V\n");
}

TEST_CASE("attention guards: ten scales between the product and the Softmax are more than the reader follows, explained") {
  Bert b;
  b.attend([&](std::string s) {
    for (int i = 0; i < 10; ++i) s = b.g.add("Mul", {s, b.g.scalar(1.0f)});
    return s;
  });
  CHECK(explain(b.g.model()) == kAt + "the scores do not come from a product of Q and K\n");
}

TEST_CASE("attention guards: a negative scale between q's head split and its transpose is not a scale the operators take") {
  Bert b;
  const std::string split = b.g.add("Reshape", {proj(b.g, b.x, -0.2f), b.g.c(ints({0, 0, kHeads, kHead}))});
  const std::string q = b.g.add("Transpose", {b.g.add("Mul", {b.g.scalar(-0.5f), split})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}, 1, "/q/Transpose");
  const std::string kT = b.kT(), v = b.v();
  attend(b.g, q, kT, v);
  CHECK(explain(b.g.model()) == kAt + "'/q/Transpose' does not transpose a Reshape into heads\n");
}

// ---- masks ----
namespace {

// Where(causal rows and columns of a 4 x 4 lower-triangular bool buffer, scores, -1e9) on fixed
// S = T = `tokens` (a GPT-2 block without past): the Slice takes `starts`, `ends` of axes 2 and 3,
// by `steps`.
Model causal(int64_t tokens, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps = {1, 1}) {
  Bert b(1, tokens);
  b.attend([&](const std::string& s) {
    std::vector<float> tril(16);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) tril[size_t(i * 4 + j)] = j <= i;
    const std::string buffer = b.g.c(Tensor::from_vector<float>({1, 1, 4, 4}, tril));
    const std::string keep = b.g.add("Cast", {b.g.add("Slice", {buffer, b.g.c(ints(starts)), b.g.c(ints(ends)), b.g.c(ints({2, 3})), b.g.c(ints(steps))})},
                                     {attr("to", int64_t(DType::Bool))});
    return b.g.add("Where", {keep, s, b.g.scalar(-1e9f)}, {}, 1, "/attn/Causal");
  });
  return b.g.model();
}

}  // namespace

TEST_CASE("attention guards: a causal buffer's rows and columns [0, 3) fuse; one row late, or every other row, is not causal, explained") {
  const Model ok = fused(causal(3, {0, 0}, {3, 3}));
  REQUIRE(count_ops(ok, "Attention") == 1);
  CHECK(node_of(ok, "Attention").find_attribute("unidirectional")->i == 1);
  const std::string not_causal = kAt + "the mask of '/attn/Causal' slices a constant buffer that is not causal (key j <= query i + past) over ";
  // rows [1, 4): query i sees key i + 1, one future token
  const Model late = causal(3, {1, 0}, {4, 3});
  CHECK(explain(late) == not_causal + "S = 3, T = 3\n");
  CHECK(count_ops(fused(late), "Softmax") == 1);
  // rows 0:2:2 of a 2-token block: row 0 alone, broadcast to both queries
  const Model strided = causal(2, {0, 0}, {2, 2}, {2, 1});
  CHECK(explain(strided) == not_causal + "S = 2, T = 2\n");
  CHECK(count_ops(fused(strided), "Softmax") == 1);
}

TEST_CASE("attention guards: a causal buffer sliced by an opset-9 Slice (bounds in attributes) fuses as the opset-10 one does") {
  Bert b(1, 3, 9);
  b.attend([&](const std::string& s) {
    const std::string buffer = b.g.c(Tensor::from_vector<float>({1, 1, 4, 4}, {1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}));
    const std::string rows = b.g.add("Slice", {buffer}, {attr("starts", std::vector<int64_t>{0}), attr("ends", std::vector<int64_t>{3}), attr("axes", std::vector<int64_t>{2})});
    const std::string block = b.g.add("Slice", {rows}, {attr("starts", std::vector<int64_t>{0}), attr("ends", std::vector<int64_t>{3}), attr("axes", std::vector<int64_t>{-1})});
    return b.g.add("Where", {b.g.add("Cast", {block}, {attr("to", int64_t(DType::Bool))}), s, b.g.scalar(-1e9f)}, {}, 1, "/attn/Causal");
  });
  const Model out = fused(b.g.model());
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(node_of(out, "Attention").find_attribute("unidirectional")->i == 1);
}

TEST_CASE("attention guards: a 2-D causal buffer sliced without axes (ONNX's default 0, 1: its rows and columns) fuses; one row late does not") {
  // Where(Slice(tril(4 x 4), starts, ends), scores, -1e9): the (S, T) condition broadcasts over
  // batch and heads.
  const auto model = [](std::vector<int64_t> starts, std::vector<int64_t> ends) {
    Bert b(1, 3);
    b.attend([&](const std::string& s) {
      const std::string buffer = b.g.c(Tensor::from_vector<float>({4, 4}, {1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}));
      const std::string keep = b.g.add("Cast", {b.g.add("Slice", {buffer, b.g.c(ints(starts)), b.g.c(ints(ends))})}, {attr("to", int64_t(DType::Bool))});
      return b.g.add("Where", {keep, s, b.g.scalar(-1e9f)}, {}, 1, "/attn/Causal");
    });
    return b.g.model();
  };
  const Model out = fused(model({0, 0}, {3, 3}));
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(node_of(out, "Attention").find_attribute("unidirectional")->i == 1);
  CHECK(explain(model({1, 0}, {4, 3})) ==
        kAt + "the mask of '/attn/Causal' slices a constant buffer that is not causal (key j <= query i + past) over S = 3, T = 3\n");
}

TEST_CASE("attention guards: a padding mask whose zeros come from a ConstantOfShape without a value (ONNX's default 0) is mask_index") {
  // Where(mask, zeros_like, -10000): masked_fill of a float zeros tensor
  Bert b;
  b.attend([&](const std::string& s) {
    const std::string m = b.g.input(tensor_info("mask", DType::Int64, {"batch", "seq"}));
    const std::string keep = b.g.add("Cast", {b.g.add("Unsqueeze", {m, b.g.c(ints({1, 2}))})}, {attr("to", int64_t(DType::Bool))});
    const std::string zeros = b.g.add("ConstantOfShape", {b.g.add("Shape", {keep})});
    return b.g.add("Add", {s, b.g.add("Where", {keep, zeros, b.g.scalar(-10000)})});
  });
  const Model out = fused(b.g.model(), kMask);
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(node_of(out, "Attention").inputs[3] == "mask_int32");
}

TEST_CASE("attention guards: a bool padding mask inverted by Not (masked_fill(~mask, min)) is mask_index, not a bias") {
  Bert b;
  b.attend([&](const std::string& s) {
    const std::string m = b.g.input(tensor_info("mask", DType::Bool, {"batch", "seq"}));
    const std::string hide = b.g.add("Not", {b.g.add("Unsqueeze", {m, b.g.c(ints({1, 2}))})});
    return b.g.add("Where", {hide, b.g.scalar(-3.4e38f), s});
  });
  std::vector<bool> keep;
  for (const int64_t k : kMask) keep.push_back(k != 0);
  const Model out = optimized(b.g.model(), {"attention"}, "", "all", {{"mask", Tensor::from_vector<bool>({3, 3}, keep)}});
  REQUIRE(count_ops(out, "Attention") == 1);
  const Node& att = node_of(out, "Attention");
  CHECK(att.inputs[3] == "mask_int32");
  CHECK((att.inputs.size() < 6 || att.inputs[5].empty()));
}

TEST_CASE("attention guards: a padding mask scaled by a Div, (m - 1) / 1e-4, is mask_index, not a bias") {
  Bert b;
  b.attend([&](const std::string& s) {
    const std::string m = b.g.input(tensor_info("mask", DType::Int64, {"batch", "seq"}));
    const std::string f = b.g.add("Cast", {b.g.add("Unsqueeze", {m, b.g.c(ints({1, 2}))})}, {attr("to", int64_t(DType::Float))});
    return b.g.add("Add", {s, b.g.add("Div", {b.g.add("Sub", {f, b.g.scalar(1)}), b.g.scalar(1e-4f)})});
  });
  const Model out = fused(b.g.model(), kMask);
  REQUIRE(count_ops(out, "Attention") == 1);
  const Node& att = node_of(out, "Attention");
  CHECK(att.inputs[3] == "mask_int32");
  CHECK((att.inputs.size() < 6 || att.inputs[5].empty()));
}

TEST_CASE("attention guards: a padding mask viewed (1, 1, B, T), its batch on the queries' axis, is not key padding, explained") {
  Bert b;
  std::string m;
  b.attend([&](const std::string& s) { return b.g.add("Add", {s, m = padding(b.g, {0, 1})}); });
  const Model model = b.g.model();
  CHECK(explain(model) == kAt + "the added '" + m + "' (shape (1, 1, batch, seq)) is neither a padding mask nor a bias of shape (S, T), (1|B, S, T), "
                                "(B|1, N|1, S, T) or (B|1, N|1, 1, T) with S = seq, T = seq\n");
}

TEST_CASE("attention guards: a padding term that adds -1, not a hiding value, is refused after a bias too") {
  // scores + (1 - m) * -1 + bias: read from the Softmax, the padding term is the second one
  Bert b;
  std::string add;
  b.attend([&](const std::string& s) {
    const std::string m = b.g.input(tensor_info("mask", DType::Int64, {"batch", "seq"}));
    const std::string f = b.g.add("Cast", {b.g.add("Unsqueeze", {m, b.g.c(ints({1, 2}))})}, {attr("to", int64_t(DType::Float))});
    add = b.g.add("Add", {s, b.g.add("Mul", {b.g.add("Sub", {b.g.scalar(1), f}), b.g.scalar(-1)})});
    return b.g.add("Add", {add, b.g.input(f32("bias", {1, 1, "seq", "seq"}))});
  });
  CHECK(explain(b.g.model()) == kAt + "the padding mask of '/" + add + "' adds -0 and -1, not 0 and a hiding value (<= -10000)\n");
}

// ---- head splits: torch's nn.MultiheadAttention on (S, B, D), S = 8, B = 2 ----
namespace {

// x (8, 2, 16); projections viewed (S, B*N, h) = (8, 4, 8) and transposed 1 0 2 (1 2 0 for K^T).
struct SeqFirst {
  G g;
  std::string x = g.input(f32("x", {8, 2, kHidden}));
  std::string split(float start, std::vector<int64_t> perm = {1, 0, 2}, const std::string& name = "") {
    return g.add("Transpose", {g.add("Reshape", {proj(g, x, start), g.c(ints({8, 4, kHead}))})}, {attr("perm", perm)}, 1, name);
  }
  // The context (B*N, S, h) back to (S, B, 16): Transpose 1 0 2 and Reshape, unless `merge` does it.
  void attend(const std::string& q, const std::function<void(const std::string&)>& merge = {}) {
    const std::string k = split(0.2f, {1, 2, 0}), v = split(-0.1f);
    const std::string s = g.add("Div", {g.add("MatMul", {q, k}), g.scalar(std::sqrt(float(kHead)))});
    const std::string ctx = g.add("MatMul", {g.add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, "/attn/Softmax"), v});
    if (merge) return merge(ctx);
    g.out(g.add("Reshape", {g.add("Transpose", {ctx}, {attr("perm", std::vector<int64_t>{1, 0, 2})}), g.c(ints({8, 2, kHidden}))}));
  }
};

}  // namespace

TEST_CASE("attention guards: nn.MultiheadAttention's (S, B*N, h) heads fuse; a query transposed 1 2 0, or not a view, is refused, named") {
  SeqFirst ok;
  ok.attend(ok.split(-0.2f));
  CHECK(count_ops(fused(ok.g.model()), "Softmax") == 0);
  // q^T (B*N, h, S): with S = h = 8 the product is defined, but it is not the queries' heads
  SeqFirst qt;
  qt.attend(qt.split(-0.2f, {1, 2, 0}, "/q/Transpose"));
  CHECK(explain(qt.g.model()) == kAt + "'/q/Transpose' has perm 1 2 0 for a head split\n");
  // the queries given as (S, B*N, h): a Transpose of an input, no head split to read
  SeqFirst given;
  given.attend(given.g.add("Transpose", {given.g.input(f32("q", {8, 4, kHead}))}, {attr("perm", std::vector<int64_t>{1, 0, 2})}, 1, "/q/Transpose"));
  CHECK(explain(given.g.model()) == kAt + "'/q/Transpose' does not transpose a Reshape into heads\n");
  // queries given in heads (S, B, N, h), viewed (S, B*N, h): not a split of a 3-D projection
  SeqFirst four_d;
  four_d.attend(four_d.g.add("Transpose", {four_d.g.add("Reshape", {four_d.g.input(f32("q", {8, 2, kHeads, kHead})), four_d.g.c(ints({8, 4, kHead}))}, {}, 1, "/q/View")},
                             {attr("perm", std::vector<int64_t>{1, 0, 2})}));
  CHECK(explain(four_d.g.model()) == kAt + "the head split '/q/View' has unknown shapes\n");
}

TEST_CASE("attention guards: a (B*N, S, h) context reshaped to a shape of unknown rank is not merged back, explained") {
  SeqFirst sf;
  sf.attend(sf.split(-0.2f), [&](const std::string& ctx) { sf.g.out(sf.g.add("Reshape", {ctx, sf.g.input(tensor_info("view", DType::Int64, {"rank"}))})); });
  CHECK(explain(sf.g.model()) == kAt + "the (B*N, S, h) context is neither viewed as (B, N, S, h) nor transposed to (S, B*N, h)\n");
}

TEST_CASE("attention guards: fairseq's view(S, B, N, h).permute(1, 2, 0, 3) of queries given as an input is not a head split, explained") {
  Bert b(2, 8);
  const std::string q = b.g.add("Transpose", {b.g.input(f32("q", {8, 2, kHeads, kHead}))}, {attr("perm", std::vector<int64_t>{1, 2, 0, 3})}, 1, "/q/Transpose");
  const std::string kT = b.kT(), v = b.v();
  attend(b.g, q, kT, v);
  CHECK(explain(b.g.model()) == kAt + "'/q/Transpose' does not transpose a Reshape into heads\n");
}

// ---- projections: one packed product (Attention's W and b), three (packed here), or neither ----
namespace {

// GPT-2's c_attn: x W + b of 48 columns (W a graph input with `runtime_w`), cut into three by
// one Split of the last axis; the parts as q, k, v in `order`.
struct Packed {
  std::string mm, whole, parts[3];
};
Packed packed(G& g, const std::string& x, bool runtime_w = false, std::vector<int> order = {0, 1, 2}) {
  Packed p;
  const std::string w = runtime_w ? g.input(f32("W", {kHidden, 3 * kHidden})) : g.c(ramp({kHidden, 3 * kHidden}, -0.4f, 0.035f));
  p.mm = g.add("MatMul", {x, w});
  p.whole = g.add("Add", {p.mm, g.c(ramp({3 * kHidden}, -0.3f, 0.03f))});
  const std::string s = g.add("Split", {p.whole, g.c(ints({kHidden, kHidden, kHidden}))}, {attr("axis", int64_t(-1))}, 3);
  for (int i = 0; i < 3; ++i) p.parts[i] = s + (order[size_t(i)] ? "_" + std::to_string(order[size_t(i)]) : "");
  return p;
}

// Self-attention on q, k, v given as 3-D (B, S, 16) values.
Model on_parts(G& g, const std::string& q, const std::string& k, const std::string& v) {
  const std::string qh = heads(g, q), kh = heads(g, k, {0, 2, 3, 1}), vh = heads(g, v);
  attend(g, qh, kh, vh);
  return g.model();
}

int ops(const Model& m, const std::string& op) { return count_ops(fused(m), op); }

}  // namespace

TEST_CASE("attention guards: GPT-2's packed product is Attention's W; read elsewhere, or W fed at run time, it is MultiHeadAttention's q, k, v") {
  {
    Bert b;
    const Packed p = packed(b.g, b.x);
    CHECK(ops(on_parts(b.g, p.parts[0], p.parts[1], p.parts[2]), "Attention") == 1);
  }
  {  // x W + b also a graph output
    Bert b;
    const Packed p = packed(b.g, b.x);
    b.g.out(p.whole);
    CHECK(ops(on_parts(b.g, p.parts[0], p.parts[1], p.parts[2]), "MultiHeadAttention") == 1);
  }
  {  // x W also read by another node
    Bert b;
    const Packed p = packed(b.g, b.x);
    b.g.out(b.g.add("Relu", {p.mm}));
    CHECK(ops(on_parts(b.g, p.parts[0], p.parts[1], p.parts[2]), "MultiHeadAttention") == 1);
  }
  {  // W a graph input: no constant weights to write into Attention
    Bert b;
    const Packed p = packed(b.g, b.x, true);
    CHECK(ops(on_parts(b.g, p.parts[0], p.parts[1], p.parts[2]), "MultiHeadAttention") == 1);
  }
}

// The product x W is an intermediate of Attention: also a graph output, it stays, and so do q, k, v.
TEST_CASE("attention guards: a packed product whose x W is also a graph output is MultiHeadAttention's q, k, v") {
  Bert b;
  const Packed p = packed(b.g, b.x);
  b.g.out(p.mm);
  CHECK(ops(on_parts(b.g, p.parts[0], p.parts[1], p.parts[2]), "MultiHeadAttention") == 1);
}

TEST_CASE("attention guards: a packed product whose Split gives k first, then q, is not Attention's [q | k | v] weight") {
  Bert b;
  const Packed p = packed(b.g, b.x, false, {1, 0, 2});
  const Model out = fused(on_parts(b.g, p.parts[0], p.parts[1], p.parts[2]));
  CHECK(count_ops(out, "MultiHeadAttention") == 1);
  CHECK(count_ops(out, "Split") == 1);
}

TEST_CASE("attention guards: Slices of the packed product cutting the queries' tokens too are not its thirds") {
  // q = qkv[:, 1:, :16] (every token but the first asks), k and v the other thirds: q has S - 1 rows
  Bert b;
  const Packed p = packed(b.g, b.x);
  const auto third = [&](int64_t i) { return b.g.add("Slice", {p.whole, b.g.c(ints({i * kHidden})), b.g.c(ints({(i + 1) * kHidden})), b.g.c(ints({-1}))}); };
  const std::string q = b.g.add("Slice", {p.whole, b.g.c(ints({0, 1})), b.g.c(ints({kHidden, kBig})), b.g.c(ints({-1, 1}))});
  const Model out = fused(on_parts(b.g, q, third(1), third(2)));
  CHECK(count_ops(out, "MultiHeadAttention") == 1);
  CHECK(count_ops(out, "Slice") == 3);
}

TEST_CASE("attention guards: BERT's three projections pack into Attention unless a projection is read elsewhere or its bias is not (16)") {
  const auto layer = [](const std::function<std::string(G&, const std::string&, float)>& make_v) {
    Bert b;
    const std::string q = proj(b.g, b.x, -0.2f), k = proj(b.g, b.x, 0.2f), v = make_v(b.g, b.x, -0.1f);
    return on_parts(b.g, q, k, v);
  };
  CHECK(ops(layer([](G& g, const std::string& x, float s) { return proj(g, x, s); }), "Attention") == 1);
  // v's projection also a graph output
  CHECK(ops(layer([](G& g, const std::string& x, float s) {
          const std::string v = proj(g, x, s);
          g.out(v);
          return v;
        }), "MultiHeadAttention") == 1);
  // v's bias a graph input
  CHECK(ops(layer([](G& g, const std::string& x, float s) { return g.add("Add", {g.add("MatMul", {x, g.c(ramp({kHidden, kHidden}, s, 0.013f))}), g.input(f32("b", {kHidden}))}); }),
            "MultiHeadAttention") == 1);
  // v projected by an ORT-optimized model's FusedMatMul scaling x W by 0.5: not a MatMul whose W
  // the packed weight can take (its alpha would be lost)
  CHECK(ops(layer([](G& g, const std::string& x, float s) {
          const std::string y = g.add("FusedMatMul", {x, g.c(ramp({kHidden, kHidden}, s, 0.013f))}, {attr("alpha", 0.5f)});
          g.last().domain = "com.microsoft";
          return g.add("Add", {y, g.c(ramp({kHidden}, -0.1f, 0.01f))});
        }), "MultiHeadAttention") == 1);
  // v's bias of shape (1): one value broadcast over the 16 columns
  CHECK(ops(layer([](G& g, const std::string& x, float s) { return g.add("Add", {g.add("MatMul", {x, g.c(ramp({kHidden, kHidden}, s, 0.013f))}), g.c(ramp({1}, 0.3f, 0))}); }),
            "MultiHeadAttention") == 1);
}

TEST_CASE("attention guards: BART's scaled query projection also a graph output keeps its Mul; MultiHeadAttention reads the scaled value") {
  Bert b;
  const std::string scaled = b.g.add("Mul", {proj(b.g, b.x, -0.2f), b.g.scalar(0.35f)});
  b.g.out(scaled);
  const std::string k = proj(b.g, b.x, 0.2f), v = proj(b.g, b.x, -0.1f);
  const Model out = fused(on_parts(b.g, scaled, k, v));
  REQUIRE(count_ops(out, "MultiHeadAttention") == 1);
  CHECK(node_of(out, "MultiHeadAttention").inputs[0] == scaled);
  CHECK(node_of(out, "MultiHeadAttention").find_attribute("scale") == nullptr);
}

// ---- ORT's GPT-2 with a stacked past (2, B, N, P, h) ----
namespace {

// K = Concat(past[0], k), V = Concat(past[1], v) on the sequence axis, past[i] by Gather; the
// present stack([K, V]) (or `stack` of the two Unsqueezes), a graph output.
Model stacked_past(const std::function<void(G&, const std::string&, const std::string&)>& stack) {
  Bert b;
  const Packed p = packed(b.g, b.x);
  const std::string past = b.g.input(f32("past", {2, "batch", kHeads, "past_seq", kHead}));
  const auto cat = [&](int64_t i, const std::string& part) {
    const std::string earlier = b.g.add("Gather", {past, b.g.c(Tensor::scalar<int64_t>(i))}, {attr("axis", int64_t(0))});
    return b.g.add("Concat", {earlier, heads(b.g, part)}, {attr("axis", int64_t(2))});
  };
  const std::string q = heads(b.g, p.parts[0]), K = cat(0, p.parts[1]), V = cat(1, p.parts[2]);
  const auto unsqueeze0 = [&](const std::string& v) { return b.g.add("Unsqueeze", {v, b.g.c(ints({0}))}); };
  const std::string uk = unsqueeze0(K), uv = unsqueeze0(V);
  stack(b.g, uk, uv);
  attend(b.g, q, b.g.add("Transpose", {K}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), V);
  return b.g.model();
}

const std::string kStackedPast = kAt + "the past keys and values are not graph inputs (ORT's stacked past is not supported here)\n";

}  // namespace

TEST_CASE("attention guards: a present stacked as [V, K], or whose unsqueezed keys are read again, is not Attention's present, explained") {
  const Model kv = stacked_past([](G& g, const std::string& uk, const std::string& uv) { g.out(g.add("Concat", {uk, uv}, {attr("axis", int64_t(0))})); });
  CHECK(count_ops(fused(kv), "Attention") == 1);
  // stack([V, K]): the cache in the other order
  const Model vk = stacked_past([](G& g, const std::string& uk, const std::string& uv) { g.out(g.add("Concat", {uv, uk}, {attr("axis", int64_t(0))})); });
  CHECK(explain(vk) == kStackedPast);
  CHECK(count_ops(fused(vk), "Softmax") == 1);
  // the (1, B, N, T, h) keys also an output of their own, after the stack
  const Model again = stacked_past([](G& g, const std::string& uk, const std::string& uv) {
    g.out(g.add("Concat", {uk, uv}, {attr("axis", int64_t(0))}));
    g.out(g.add("Identity", {uk}));
  });
  CHECK(explain(again) == kStackedPast);
}

// ---- mha-projections: MultiHeadAttention's q, k, v as products of x ----
namespace {

// MultiHeadAttention (2 heads) on three values of x made by `parts`, --forms cpu.
Model mha(int opset, const std::function<std::vector<std::string>(G&, const std::string&)>& parts) {
  G g(opset);
  const std::string x = g.input(f32("x", {"batch", "seq", kHidden}));
  g.out(g.add("MultiHeadAttention", parts(g, x), {attr("num_heads", kHeads)}, 1, "/mha"));
  g.last().domain = "com.microsoft";
  return g.model();
}
std::string mha_explain(const Model& m) { return testing::refusals(m, {"mha-projections"}); }
std::string not_projection(const std::string& v) {
  return "not fused: mha-projections at '/mha': '" + v + "' is not MatMul(x, W) [+ b] [sliced on the last axis] with a constant 2-D W and 1-D b\n";
}

}  // namespace

TEST_CASE("mha-projections guards: opset 18's uneven num_outputs Split (14, 14, 12 of 40 columns) is refused, named") {
  std::string split;
  const Model m = mha(18, [&](G& g, const std::string& x) {
    split = g.add("Split", {proj(g, x, -0.2f, 40)}, {attr("axis", int64_t(-1)), attr("num_outputs", int64_t(3))}, 3);
    return std::vector<std::string>{split, split + "_1", split + "_2"};
  });
  CHECK(mha_explain(m) == not_projection(split));
}

TEST_CASE("mha-projections guards: a query sliced on the tokens' axis, weights fed at run time, or a bias of shape (1) are not projections, named") {
  std::vector<std::string> in;
  // q = proj(x)[:, 1:]: every token but the first
  const Model tokens = mha(17, [&](G& g, const std::string& x) {
    in = {g.add("Slice", {proj(g, x, -0.2f), g.c(ints({1})), g.c(ints({kBig})), g.c(ints({1}))}), proj(g, x, 0.2f), proj(g, x, -0.1f)};
    return in;
  });
  CHECK(mha_explain(tokens) == not_projection(in[0]));
  const Model runtime = mha(17, [&](G& g, const std::string& x) {
    in = {g.add("Add", {g.add("MatMul", {x, g.input(f32("W", {kHidden, kHidden}))}), g.c(ramp({kHidden}, 0.1f, 0.01f))}), proj(g, x, 0.2f), proj(g, x, -0.1f)};
    return in;
  });
  CHECK(mha_explain(runtime) == not_projection(in[0]));
  const Model scalar_bias = mha(17, [&](G& g, const std::string& x) {
    in = {proj(g, x, -0.2f), proj(g, x, 0.2f), g.add("Add", {g.add("MatMul", {x, g.c(ramp({kHidden, kHidden}, 0.1f, 0.01f))}), g.c(ramp({1}, 0.3f, 0))})};
    return in;
  });
  CHECK(mha_explain(scalar_bias) == not_projection(in[2]));
  CHECK(count_ops(optimized(scalar_bias, {"mha-projections"}, "", "cpu"), "Add") == 3);
}

// ---- split-qkv ----
namespace {

// timm's qkv(x).reshape(`view`).permute(2, 0, 3, 1, 4) of x (2, 3, 16) unbound by Split +
// Squeeze; `five_d` instead of the view when given.
Model timm(std::vector<int64_t> view, bool five_d_input = false) {
  G g;
  const std::string x = g.input(f32("x", {2, 3, kHidden}));
  const std::string v = five_d_input ? g.input(f32("qkv", {2, 3, 3, kHeads, kHead})) : g.add("Reshape", {proj(g, x, -0.4f, 3 * kHidden), g.c(ints(view))});
  const std::string t = g.add("Transpose", {v}, {attr("perm", std::vector<int64_t>{2, 0, 3, 1, 4})});
  const std::string s = g.add("Split", {t, g.c(ints({1, 1, 1}))}, {attr("axis", int64_t(0))}, 3);
  for (const std::string& part : {s, s + "_1", s + "_2"}) g.out(g.add("Squeeze", {part, g.c(ints({0}))}));
  return g.model();
}

int split_slices(const Model& m) { return count_ops(optimized(m, {"split-qkv"}), "Slice"); }

}  // namespace

TEST_CASE("split-qkv guards: timm's unbind of a view with batch and tokens swapped, or of a 5-D input, stays") {
  CHECK(split_slices(timm({2, 3, 3, kHeads, kHead})) == 3);
  CHECK(split_slices(timm({3, 2, 3, kHeads, kHead})) == 0);  // (S, B, 3, N, h) of a (B, S, 48) product
  CHECK(split_slices(timm({}, true)) == 0);                  // no product to cut
}

TEST_CASE("split-qkv guards: GPT-NeoX's interleaved heads of a FusedMatMul (its alpha a scale) stay one product") {
  G g;
  const std::string x = g.input(f32("x", {"batch", "seq", kHidden}));
  const std::string y = g.add("FusedMatMul", {x, g.c(ramp({kHidden, 3 * kHidden}, -0.4f, 0.035f))}, {attr("alpha", 0.5f)});
  g.last().domain = "com.microsoft";
  const std::string view = g.add("Reshape", {y, g.c(ints({0, 0, kHeads, 3 * kHead}))});
  const std::string s = g.add("Split", {view, g.c(ints({kHead, kHead, kHead}))}, {attr("axis", int64_t(-1))}, 3);
  g.out(s), g.out(s + "_1"), g.out(s + "_2");
  const Model out = optimized(g.model(), {"split-qkv"});
  CHECK(count_ops(out, "FusedMatMul") == 1);
  CHECK(count_ops(out, "Split") == 1);
}
