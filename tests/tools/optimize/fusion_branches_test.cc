// The extended level's smaller fusions on forms the other tests do not feed: gemm-reshape (Hugging
// Face's Conv1D), skip-layer-norm and its bias variant, bias-gelu, fused-matmul and
// transpose-sandwich. Each look-alike asserts the exact reason `--explain` gives where the pass
// gives one; each accepted variant is checked equivalent to the original with the evaluator
// (optimize_test_util.h). A look-alike the evaluator cannot run (the pass must still not touch it)
// is only explained, not evaluated.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "pass.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::ramp;
using refeval::testing::refusals;

namespace {

// The one "not fused" line of `pass` on `m` (only that pass running), or every line joined.
std::string why(const Model& m, const std::string& pass) { return refusals(m, {pass}); }

std::string line(const std::string& pass, const std::string& at, const std::string& reason) {
  return "not fused: " + pass + " at '" + at + "': " + reason + "\n";
}

// ---- Hugging Face's Conv1D: Reshape(x, flat) -> Gemm(., w, b) -> Reshape(., out) ----
// x of `x_dims`, w (16, 24) (or (24, 16) with transB), b of `b_shape`.
Model conv1d(std::vector<DimSpec> x_dims, Tensor flat, Tensor out, Shape b_shape = {24}, Shape w_shape = {16, 24}, std::vector<Attribute> gemm_attrs = {}) {
  return model(graph("conv1d",
                     {node("Reshape", {"x", "flat"}, {"rows"}, {}, "/Reshape"), node("Gemm", {"rows", "w", "b"}, {"h"}, std::move(gemm_attrs), "/Gemm"),
                      node("Reshape", {"h", "out"}, {"y"}, {}, "/Reshape_1")},
                     {f32("x", std::move(x_dims))}, {f32("y", {})},
                     {{"flat", std::move(flat)}, {"out", std::move(out)}, {"w", ramp(std::move(w_shape), -0.3f, 0.03f)}, {"b", ramp(std::move(b_shape), 0.1f, 0.02f)}}));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// gemm-reshape

TEST_CASE("gemm-reshape: the second Reshape to (0, S, N), (-1, S, N) or the fixed batch fuses into MatMul + Add") {
  // GPT-2's Conv1D with the leading dims written the ways an exporter does: -1 (infer the batch),
  // the batch fixed at export, 0 (copy: Reshape copies its own input's dim, the rows B * S, which
  // is x's batch when S is 1, a decoder's single new token).
  struct Case {
    std::vector<DimSpec> x;
    std::vector<int64_t> out;
  };
  for (const Case& c : {Case{{"batch", 1, 16}, {0, 1, 24}}, Case{{"batch", 6, 16}, {-1, 6, 24}}, Case{{2, 6, 16}, {2, 6, 24}}, Case{{1, 6, 16}, {1, -1, 24}}}) {
    CAPTURE(c.out[0]);
    const Model out = optimized(conv1d(c.x, ints({-1, 16}), ints(c.out)), {"gemm-reshape"});
    CHECK(count_ops(out, "Gemm") == 0);
    CHECK(count_ops(out, "Reshape") == 0);
    CHECK(count_ops(out, "MatMul") == 1);
    CHECK(count_ops(out, "Add") == 1);
  }
  // transB = 1 with float32 weights (nn.Linear flattened): the weight is transposed once.
  const Model trans = optimized(conv1d({"batch", 6, 16}, ints({-1, 16}), ints({-1, 6, 24}), {24}, {24, 16}, {attr("transB", int64_t(1))}), {"gemm-reshape"});
  CHECK(count_ops(trans, "MatMul") == 1);
}

// Reshape's 0 copies the dim of its own input, the Gemm's (B * S, N) result: 0 at index 1 is N,
// not S. x (2, 12, 16) -> rows (24, 16) -> Gemm (24, 24) -> Reshape (-1, 0, 24) is (1, 24, 24),
// not x's leading dims: left as is.
TEST_CASE("gemm-reshape: a second Reshape whose 0 copies the Gemm's N, not x's dim, is left as is") {
  const Model m = conv1d({2, 12, 16}, ints({-1, 16}), ints({-1, 0, 24}));
  const Model out = optimized(m, {"gemm-reshape"});  // the evaluator check fails: shapes differ
  CHECK(count_ops(out, "Gemm") == 1);
}

TEST_CASE("gemm-reshape: look-alikes are refused, each named") {
  const std::string pass = "gemm-reshape";
  // A 1-D bias of another length than N (a graph no evaluator runs).
  CHECK(why(conv1d({"batch", 6, 16}, ints({-1, 16}), ints({0, 6, 24}), {12}), pass) == line(pass, "/Gemm", "the Gemm's C is not a 1-D bias of 24"));
  // A 1-D input: viewed as one row.
  CHECK(why(conv1d({16}, ints({-1, 16}), ints({24})), pass) == line(pass, "/Gemm", "the flattened input's shape is unknown"));
  // (batch, 6, 8, 2) flattened to rows of 16: the rows mix x's last two axes.
  CHECK(why(conv1d({"batch", 6, 8, 2}, ints({-1, 16}), ints({0, 6, 8, 3})), pass) == line(pass, "/Gemm", "the input's last dim is not 16"));
  // A first Reshape to 3 dims, or to rows of another width.
  CHECK(why(conv1d({"batch", 6, 16}, ints({-1, 16, 1}), ints({0, 6, 24})), pass) == line(pass, "/Gemm", "the first Reshape is not to (-1, 16)"));
  CHECK(why(conv1d({"batch", 6, 16}, ints({-1, 8}), ints({0, 6, 24})), pass) == line(pass, "/Gemm", "the first Reshape is not to (-1, 16)"));
  // A second Reshape to 2 dims (rows kept flat), or ending in another width.
  CHECK(why(conv1d({"batch", 6, 16}, ints({-1, 16}), ints({-1, 24})), pass) == line(pass, "/Gemm", "the second Reshape does not restore the input's leading dims"));
  CHECK(why(conv1d({"batch", 6, 16}, ints({-1, 16}), ints({0, 12, 12})), pass) == line(pass, "/Gemm", "the second Reshape does not restore the input's leading dims"));
  // (-1, -1, N): two inferred dims (invalid), the second is not the input's.
  CHECK(why(conv1d({"batch", 6, 16}, ints({-1, 16}), ints({-1, -1, 24})), pass) == line(pass, "/Gemm", "the second Reshape's dim 1 is not the input's"));
  // A fixed batch of 2 restored as 3 rows of 4 (a view that regroups the batch).
  CHECK(why(conv1d({2, 6, 16}, ints({-1, 16}), ints({3, 4, 24})), pass) == line(pass, "/Gemm", "the second Reshape's dim 0 is not the input's"));
}

// ---------------------------------------------------------------------------------------------
// skip-layer-norm, skip-simplified-layer-norm, bias-skip-layer-norm

namespace {

// Add(a, b) -> LayerNormalization(sum, gamma[, beta]) (or SimplifiedLayerNormalization).
Model add_ln(ValueInfo a, ValueInfo b, std::vector<Initializer> constants = {}, bool beta = true, const std::string& ln_op = "LayerNormalization",
             std::vector<DimSpec> out = {"batch", 3, 8}) {
  std::vector<ValueInfo> inputs;
  for (ValueInfo* v : {&a, &b})
    if (!v->name.empty()) inputs.push_back(*v);
  const std::string an = a.name.empty() ? constants.at(0).name : a.name, bn = b.name.empty() ? constants.back().name : b.name;
  std::vector<std::string> ln_in = {"sum", "gamma"};
  if (beta) ln_in.push_back("beta");
  constants.push_back({"gamma", ramp({8}, 0.5f, 0.1f)});
  constants.push_back({"beta", ramp({8}, -0.2f, 0.02f)});
  return model(graph("skip", {node("Add", {an, bn}, {"sum"}, {}, "/Add"), node(ln_op, ln_in, {"y"}, {attr("epsilon", 1e-5f)}, "/LN")}, inputs,
                     {f32("y", std::move(out))}, std::move(constants)),
               {{"", 17}, {"com.microsoft", 1}});
}

ValueInfo none() { return ValueInfo{}; }

}  // namespace

TEST_CASE("skip-layer-norm: the skip first, a (1, S, H) skip, and LayerNormalization without beta all fuse") {
  // The residual as the Add's first operand and the hidden states second (BERT's
  // `LayerNorm(residual + hidden)` in a hand-written block): the pass orders them itself.
  const Model swapped = optimized(add_ln(f32("skip", {3, 8}), f32("x", {"batch", 3, 8})), {"skip-layer-norm"});
  const Node& sln = swapped.graph.nodes.at(0);
  REQUIRE(sln.op_type == "SkipLayerNormalization");
  CHECK(sln.inputs[0] == "x");
  CHECK(sln.inputs[1] == "skip");
  // A (1, S, H) skip: broadcast over the batch.
  CHECK(count_ops(optimized(add_ln(f32("x", {"batch", 3, 8}), f32("skip", {1, 3, 8})), {"skip-layer-norm"}), "SkipLayerNormalization") == 1);
  // LayerNormalization(sum, gamma) without beta (opset 17's optional B): no beta input written.
  const Model no_beta = optimized(add_ln(f32("x", {"batch", 3, 8}), f32("skip", {"batch", 3, 8}), {}, false), {"skip-layer-norm"});
  REQUIRE(count_ops(no_beta, "SkipLayerNormalization") == 1);
  CHECK(no_beta.graph.nodes[0].inputs.size() == 3);
  // Llama's RMS form: SimplifiedLayerNormalization of the sum.
  const Model rms = optimized(add_ln(f32("x", {"batch", 3, 8}), f32("skip", {"batch", 3, 8}), {}, false, "SimplifiedLayerNormalization"),
                              {"skip-simplified-layer-norm"});
  CHECK(count_ops(rms, "SkipSimplifiedLayerNormalization") == 1);
}

TEST_CASE("skip-layer-norm: two constants, a (2, S, H) skip and a skip of another length are refused, named") {
  const std::string pass = "skip-layer-norm";
  // Both operands constant (folding did not run): no activation.
  CHECK(why(add_ln(none(), none(), {{"c1", ramp({3, 8}, 0, 0.1f)}, {"c2", ramp({3, 8}, 1, 0.1f)}}), pass) ==
        line(pass, "/LN", "the Add '/Add' adds two constants"));
  // A (2, S, H) skip for a dynamic batch: it would broadcast only if batch were 2 or 1.
  CHECK(why(add_ln(f32("x", {"batch", 3, 8}), f32("skip", {2, 3, 8})), pass) ==
        line(pass, "/LN", "'x' and 'skip' are not (B, S, H) and a skip of that shape, (1, S, H) or (S, H)"));
  // A (1, 1, H) skip: broadcast over the sequence too, which the fused operator does not do.
  CHECK(why(add_ln(f32("x", {"batch", 3, 8}), f32("skip", {1, 1, 8})), pass) ==
        line(pass, "/LN", "'x' and 'skip' are not (B, S, H) and a skip of that shape, (1, S, H) or (S, H)"));
  // Two (S, H) values: no rank-3 input.
  CHECK(why(add_ln(f32("x", {3, 8}), f32("skip", {3, 8}), {}, true, "LayerNormalization", {3, 8}), pass) ==
        line(pass, "/LN", "'x' and 'skip' are not (B, S, H) and a skip of that shape, (1, S, H) or (S, H)"));
}

TEST_CASE("bias-skip-layer-norm: the bias Add on either input folds into the fifth input; other look-alikes stay") {
  // SkipLayerNormalization(Add(x, bias), skip) and SkipLayerNormalization(skip, Add(x, bias)), as
  // BERT's output dense + bias + residual leaves them after skip-layer-norm.
  auto biased = [](bool add_first, std::vector<DimSpec> x_dims, std::vector<DimSpec> skip_dims, Shape bias_shape = {8}, bool x_const = false) {
    std::vector<Initializer> inits = {{"bias", ramp(std::move(bias_shape), 0.1f, 0.05f)}, {"gamma", ramp({8}, 0.5f, 0.1f)}, {"beta", ramp({8}, -0.2f, 0.02f)}};
    std::vector<ValueInfo> inputs = {f32("skip", skip_dims)};
    if (x_const) inits.push_back({"x", ramp({2, 3, 8}, -0.5f, 0.05f)});
    else inputs.push_back(f32("x", std::move(x_dims)));
    std::vector<std::string> sln_in = add_first ? std::vector<std::string>{"xb", "skip", "gamma", "beta"} : std::vector<std::string>{"skip", "xb", "gamma", "beta"};
    return model(graph("bias_skip",
                       {node("Add", {"x", "bias"}, {"xb"}, {}, "/Add"),
                        node("SkipLayerNormalization", sln_in, {"y"}, {attr("epsilon", 1e-5f)}, "/SkipLayerNorm", "com.microsoft")},
                       inputs, {f32("y", {})}, std::move(inits)),
                 {{"", 17}, {"com.microsoft", 1}});
  };
  for (const bool add_first : {true, false}) {
    CAPTURE(add_first);
    const Model out = optimized(biased(add_first, {"batch", 3, 8}, {"batch", 3, 8}), {"bias-skip-layer-norm"});
    REQUIRE(count_ops(out, "SkipLayerNormalization") == 1);
    CHECK(count_ops(out, "Add") == 0);
    CHECK(out.graph.nodes[0].inputs.size() == 5);
  }
  auto stays = [](Model m) {
    const optimize::Inference inference = optimize::infer(m);
    optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
    return optimize::bias_skip_layer_norm_pass().run(m, ctx) == 0;
  };
  // SkipLayerNormalization((S, H) value, Add(x, bias)): folding the bias would make x the input
  // and the (S, H) value the skip, which must then have x's shape: left as is.
  CHECK(stays(biased(false, {"batch", 3, 8}, {3, 8})));
  // A 2-D x (S, H) (the Add's shape is not rank 3).
  CHECK(stays(biased(true, {3, 8}, {3, 8})));
  // A bias of shape (1, 8) (not 1-D), or of width 4 for H = 8 (a graph no evaluator runs).
  CHECK(stays(biased(true, {"batch", 3, 8}, {"batch", 3, 8}, {1, 8})));
  CHECK(stays(biased(true, {"batch", 3, 8}, {"batch", 3, 8}, {4})));
  // x a constant (folding did not run): no activation to read.
  CHECK(stays(biased(true, {}, {"batch", 3, 8}, {8}, true)));
  // x of a symbolic hidden size: the bias length cannot be checked.
  CHECK(stays(biased(true, {"batch", 3, "hidden"}, {"batch", 3, "hidden"})));
}

// ---------------------------------------------------------------------------------------------
// bias-gelu and fused-matmul

TEST_CASE("bias-gelu: a bias over another axis, of a symbolic width, or a constant x is refused, named") {
  auto gelu = [](std::vector<DimSpec> x_dims, Tensor bias, const std::string& op = "Gelu", bool x_const = false) {
    std::vector<Initializer> inits = {{"bias", std::move(bias)}};
    std::vector<ValueInfo> inputs;
    if (x_const) inits.push_back({"x", ramp({2, 8}, -0.5f, 0.1f)});
    else inputs.push_back(f32("x", std::move(x_dims)));
    return model(graph("gelu", {node("Add", {"x", "bias"}, {"pre"}, {}, "/Add"), node(op, {"pre"}, {"y"}, {}, "/Gelu", "com.microsoft")}, inputs,
                       {f32("y", {})}, std::move(inits)),
                 {{"", 17}, {"com.microsoft", 1}});
  };
  const std::string pass = "bias-gelu";
  // FastGelu(x + b) -> FastGelu(x, b): the tanh form with its bias input.
  const Model fast = optimized(gelu({2, 8}, ramp({8}, 0.1f, 0.05f), "FastGelu"), {pass});
  REQUIRE(fast.graph.nodes.size() == 1);
  CHECK(fast.graph.nodes[0].inputs.size() == 2);
  const std::string refused = "the added 'bias' is not a 1-D constant over the last axis of 'x' (or that shape is unknown)";
  // A (2, 1) bias: per row, not per column.
  CHECK(why(gelu({2, 8}, ramp({2, 1}, 0.1f, 0.05f)), pass) == line(pass, "/Gelu", refused));
  // A bias of 1: broadcast over the columns.
  CHECK(why(gelu({2, 8}, ramp({1}, 0.1f, 0.05f)), pass) == line(pass, "/Gelu", refused));
  // x (2, "hidden"): the width is not known to be the bias's.
  CHECK(why(gelu({2, "hidden"}, ramp({8}, 0.1f, 0.05f)), pass) == line(pass, "/Gelu", refused));
  // A scalar x (rank 0) plus a bias of 1.
  CHECK(why(gelu({}, ramp({1}, 0.1f, 0.05f)), pass) == line(pass, "/Gelu", refused));
  // x a constant too: constant folding's, not this pass's.
  CHECK(why(gelu({}, ramp({8}, 0.1f, 0.05f), "Gelu", true), pass) == line(pass, "/Gelu", refused));
}

TEST_CASE("fused-matmul: a transposed 4-D operand fuses; a vector operand or a 1-D Transpose does not") {
  // Q K^T as BERT exports it: MatMul(q, Transpose(k, (0, 1, 3, 2))).
  const Model qk = optimized(model(graph("qk", {node("Transpose", {"k"}, {"kt"}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), node("MatMul", {"q", "kt"}, {"y"})},
                                         {f32("q", {"batch", 2, 3, 4}), f32("k", {"batch", 2, 3, 4})}, {f32("y", {"batch", 2, 3, 3})})),
                             {"fused-matmul"});
  REQUIRE(count_ops(qk, "FusedMatMul") == 1);
  CHECK(qk.graph.nodes[0].find_attribute("transB")->i == 1);
  // MatMul(Transpose(a), v) with v a vector: FusedMatMul needs both operands of rank >= 2.
  const Model vec = optimized(model(graph("mv", {node("Transpose", {"a"}, {"at"}, {attr("perm", std::vector<int64_t>{1, 0})}), node("MatMul", {"at", "v"}, {"y"})},
                                          {f32("a", {4, 3}), f32("v", {4})}, {f32("y", {3})})),
                              {"fused-matmul"});
  CHECK(count_ops(vec, "FusedMatMul") == 0);
  // Transpose of a 1-D value with perm (0): swaps nothing.
  const Model one = optimized(model(graph("t1", {node("Transpose", {"v"}, {"vt"}, {attr("perm", std::vector<int64_t>{0})}), node("MatMul", {"a", "vt"}, {"y"})},
                                          {f32("a", {3, 4}), f32("v", {4})}, {f32("y", {3})})),
                              {"fused-matmul"});
  CHECK(count_ops(one, "FusedMatMul") == 0);
  // A Transpose with the default perm (a full reversal): for rank 3 it is not the last two swapped.
  const Model rev = optimized(model(graph("rev", {node("Transpose", {"a"}, {"at"}), node("MatMul", {"at", "b"}, {"y"})}, {f32("a", {4, 3, 2}), f32("b", {2, 4, 5})},
                                          {f32("y", {2, 3, 5})})),
                              {"fused-matmul"});
  CHECK(count_ops(rev, "FusedMatMul") == 0);
}

// ---------------------------------------------------------------------------------------------
// transpose-sandwich

namespace {

Attribute perm(std::vector<int64_t> p) { return attr("perm", std::move(p)); }

}  // namespace

TEST_CASE("transpose-sandwich: Transpose -> MatMul -> Transpose without a bias becomes one MatMul") {
  // nn.MultiheadAttention's out-projection exported with bias=False (ViT variants).
  const Model m = model(graph("plain",
                              {node("Transpose", {"x"}, {"xt"}, {perm({1, 0, 2})}, "/Transpose"), node("MatMul", {"xt", "w"}, {"p"}, {}, "/MatMul"),
                               node("Transpose", {"p"}, {"y"}, {perm({1, 0, 2})}, "/Transpose_1")},
                              {f32("x", {"S", "B", 8})}, {f32("y", {"S", "B", 4})}, {{"w", ramp({8, 4}, -0.3f, 0.03f)}}));
  const Model out = optimized(m, {"transpose-sandwich"});
  REQUIRE(out.graph.nodes.size() == 1);
  CHECK(out.graph.nodes[0].op_type == "MatMul");
  CHECK(out.graph.nodes[0].inputs[0] == "x");
  CHECK(out.graph.nodes[0].outputs[0] == "y");
}

TEST_CASE("transpose-sandwich: a tree through Sub, Mul by a vector and a Slice with constant steps unwraps; other readers keep it") {
  // Transpose -> MatMul -> (c - .) -> (. * v) -> Slice of the last axis -> Transpose back: every node
  // acts on rows alone.
  auto tree = [](Node third, std::vector<Initializer> extra = {}, std::vector<ValueInfo> more_inputs = {}) {
    std::vector<Initializer> inits = {{"w", ramp({8, 8}, -0.3f, 0.03f)}, {"c", ramp({8}, 0.1f, 0.01f)}, {"v", ramp({8}, 0.5f, 0.05f)},
                                      {"s0", ints({2})}, {"s1", ints({6})}, {"ax", ints({-1})}, {"st", ints({1})}};
    for (Initializer& i : extra) inits.push_back(std::move(i));
    std::vector<ValueInfo> inputs = {f32("x", {"S", "B", 8})};
    for (ValueInfo& v : more_inputs) inputs.push_back(std::move(v));
    return model(graph("tree",
                       {node("Transpose", {"x"}, {"xt"}, {perm({1, 0, 2})}), node("MatMul", {"xt", "w"}, {"p"}), node("Sub", {"c", "p"}, {"d"}), std::move(third),
                        node("Transpose", {"s"}, {"y"}, {perm({1, 0, 2})})},
                       inputs, {f32("y", {})}, std::move(inits)));
  };
  auto transposes = [](const Model& m) { return count_ops(m, "Transpose"); };
  CHECK(transposes(optimized(tree(node("Slice", {"d", "s0", "s1", "ax", "st"}, {"s"})), {"transpose-sandwich"})) == 0);
  CHECK(transposes(optimized(tree(node("Mul", {"d", "v"}, {"s"})), {"transpose-sandwich"})) == 0);
  // d + d: the value on both sides (not a row-wise op of one varying input).
  CHECK(transposes(optimized(tree(node("Add", {"d", "d"}, {"s"})), {"transpose-sandwich"})) == 2);
  // d * a (1, 8) matrix: row-wise in truth, but a 2-D constant could be (B, 8), which mixes rows
  // with the transposed batch axis; only vectors and scalars are taken.
  CHECK(transposes(optimized(tree(node("Mul", {"d", "m2"}, {"s"}), {{"m2", ramp({1, 8}, 0.5f, 0.05f)}}), {"transpose-sandwich"})) == 2);
  // A Slice without axes (of the first axis by default), or with empty axes, or with starts from
  // a graph input: not known to act on the last axis only.
  CHECK(transposes(optimized(tree(node("Slice", {"d", "s0", "s1"}, {"s"})), {"transpose-sandwich"})) == 2);
  Model empty_axes = tree(node("Slice", {"d", "s0", "s1", "none"}, {"s"}), {{"none", Tensor(DType::Int64, {0})}});
  const optimize::Inference inference = optimize::infer(empty_axes);
  optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
  CHECK(optimize::transpose_sandwich_pass().run(empty_axes, ctx) == 0);
  CHECK(transposes(optimized(tree(node("Slice", {"d", "start", "s1", "ax"}, {"s"}), {}, {tensor_info("start", DType::Int64, {1})}), {"transpose-sandwich"})) == 2);
  // Softmax over the last axis is row-wise in truth, but not one of the pass's known operators.
  CHECK(transposes(optimized(tree(node("Softmax", {"d"}, {"s"}, {attr("axis", int64_t(-1))})), {"transpose-sandwich"})) == 2);
}

// ---------------------------------------------------------------------------------------------
// embed-layer-norm

namespace {

// Embedding sums over the tables word (100, 8), pos (16, 8) and seg (2, 8): `nodes` compute "sum"
// from the ids, then LayerNormalization(sum, gamma, beta) (the `norm` node when given).
Model embeddings(std::vector<Node> nodes, std::vector<ValueInfo> inputs, std::vector<Initializer> inits = {}, std::optional<Node> norm = std::nullopt) {
  inits.push_back({"word", ramp({100, 8}, -0.5f, 0.05f)});
  inits.push_back({"pos", ramp({16, 8}, 0.3f, -0.02f)});
  inits.push_back({"seg", ramp({2, 8}, -0.1f, 0.03f)});
  inits.push_back({"gamma", ramp({8}, 0.8f, 0.05f)});
  inits.push_back({"beta", ramp({8}, -0.1f, 0.02f)});
  nodes.push_back(norm ? *norm : node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}, {attr("epsilon", 1e-12f)}, "/LayerNorm"));
  const std::string y = nodes.back().outputs[0];  // before the move: the order of the arguments is unspecified
  return model(graph("emb", std::move(nodes), std::move(inputs), {f32(y, {})}, std::move(inits)), {{"", 17}, {"com.microsoft", 1}});
}

Node gather(const std::string& table, const std::string& ids, const std::string& out) { return node("Gather", {table, ids}, {out}, {}, "/Gather_" + table); }
ValueInfo i64(const std::string& name, std::vector<DimSpec> dims) { return tensor_info(name, DType::Int64, std::move(dims)); }

}  // namespace

TEST_CASE("embed-layer-norm: constant positions of a fixed length, zeros of ConstantOfShape as segments, and no beta") {
  // A batch-2 export with the sequence fixed at 3: position ids folded to the constant [[0, 1, 2]]
  // (the operator's default), or [[2, 3, 4]] (RoBERTa's offset, passed as position_ids).
  for (const bool offset : {false, true}) {
    CAPTURE(offset);
    const Model m = embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), node("Add", {"w", "p"}, {"sum"})}, {i64("ids", {2, 3})},
                               {{"positions", Tensor::from_vector<int64_t>({1, 3}, offset ? std::vector<int64_t>{2, 3, 4} : std::vector<int64_t>{0, 1, 2})}});
    const Model out = optimized(m, {"embed-layer-norm"});
    REQUIRE(count_ops(out, "EmbedLayerNormalization") == 1);
    const Node& e = *std::find_if(out.graph.nodes.begin(), out.graph.nodes.end(), [](const Node& n) { return n.op_type == "EmbedLayerNormalization"; });
    CHECK(e.inputs.size() == (offset ? 9u : 7u));
  }
  // token_type_ids = ConstantOfShape(Shape(ids)) of 0 (HF's buffered zeros when none are given):
  // the segment row 0 is folded into the position table. Positions from Range(0, S).
  std::vector<Node> nodes = {node("Shape", {"ids"}, {"ids_shape"}), node("ConstantOfShape", {"ids_shape"}, {"types"}, {attr("value", Tensor::from_vector<int64_t>({1}, {0}))}),
                             node("Gather", {"ids_shape", "one"}, {"S"}, {attr("axis", int64_t(0))}), node("Range", {"zero", "S", "one"}, {"positions"}),
                             gather("word", "ids", "w"), gather("pos", "positions", "p"), gather("seg", "types", "t"), node("Add", {"w", "t"}, {"wt"}),
                             node("Add", {"wt", "p"}, {"sum"})};
  const std::vector<Initializer> scalars = {{"zero", Tensor::scalar<int64_t>(0)}, {"one", Tensor::scalar<int64_t>(1)}};
  const Model zeros = optimized(embeddings(nodes, {i64("ids", {"batch", "seq"})}, scalars), {"embed-layer-norm"});
  REQUIRE(count_ops(zeros, "EmbedLayerNormalization") == 1);
  CHECK(count_ops(zeros, "Gather") == 0);  // the positions are the operator's default: their Range goes too
  CHECK(count_ops(zeros, "ConstantOfShape") == 0);
  CHECK(zeros.graph.find_initializer("pos_with_segment_0") != nullptr);
  // LayerNormalization(sum, gamma) without beta: a zero beta is written for the operator.
  std::vector<Node> plain = {gather("word", "ids", "w"), gather("pos", "positions", "p"), node("Add", {"w", "p"}, {"sum"})};
  const Model no_beta = optimized(embeddings(plain, {i64("ids", {"batch", "seq"}), i64("positions", {"batch", "seq"})}, {},
                                             node("LayerNormalization", {"sum", "gamma"}, {"y"}, {}, "/LayerNorm")),
                                  {"embed-layer-norm"});
  CHECK(count_ops(no_beta, "EmbedLayerNormalization") == 1);
}

TEST_CASE("embed-layer-norm: look-alikes are refused, each named") {
  const std::string pass = "embed-layer-norm";
  auto at = [&](const std::string& reason) { return line(pass, "/LayerNorm", reason); };
  const ValueInfo ids = i64("ids", {"batch", "seq"}), positions = i64("positions", {"batch", "seq"}), types = i64("types", {"batch", "seq"});
  const Node wp = node("Add", {"w", "p"}, {"sum"});
  // Four lookups: word, position, segment and a second word-sized table (a language embedding).
  CHECK(why(embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), gather("seg", "types", "t"), gather("lang", "ids", "l"),
                        node("Add", {"w", "p"}, {"a"}), node("Add", {"t", "l"}, {"b"}), node("Add", {"a", "b"}, {"sum"})},
                       {ids, positions, types}, {{"lang", ramp({100, 8}, 0.1f, 0.01f)}}),
            pass) == at("4 table lookups are summed, more than word, position and segment"));
  // The word ids shifted by one first: no lookup reads a graph input.
  CHECK(why(embeddings({node("Add", {"ids", "one"}, {"ids1"}), gather("word", "ids1", "w"), gather("pos", "ids1", "p"), wp}, {ids},
                       {{"one", Tensor::scalar<int64_t>(1)}}),
            pass) == at("no lookup is indexed by a graph input (the token ids)"));
  // Two tables sliced to their first rows (tf2onnx's positions, twice).
  CHECK(why(embeddings({gather("word", "ids", "w"), node("Slice", {"pos", "zero1", "three1"}, {"p"}), node("Slice", {"seg", "zero1", "three1"}, {"t"}),
                        node("Add", {"w", "p"}, {"a"}), node("Add", {"a", "t"}, {"sum"})},
                       {i64("ids", {"batch", 3})}, {{"zero1", Tensor::from_vector<int64_t>({1}, {0})}, {"three1", Tensor::from_vector<int64_t>({1}, {3})}}),
            pass) == at("two sliced tables"));
  // A position table of another width (16, 4).
  Model narrow = embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), wp}, {ids, positions});
  for (Initializer& i : narrow.graph.initializers)
    if (i.name == "pos") i.value = ramp({16, 4}, 0.3f, -0.02f);
  CHECK(why(narrow, pass) == at("the tables differ in width or type, or are not float32/float16"));
  // 1-D token ids (one unbatched sequence).
  CHECK(why(embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), wp}, {i64("ids", {"seq"}), i64("positions", {"seq"})}), pass) ==
        at("the token ids 'ids' are not known to be (B, S)"));
  // Segment ids of one column, broadcast over the sequence.
  CHECK(why(embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), gather("seg", "types", "t"), node("Add", {"w", "p"}, {"a"}),
                        node("Add", {"a", "t"}, {"sum"})},
                       {ids, positions, i64("types", {"batch", 1})}),
            pass) == at("the segment ids 'types' are not known to have the token ids' shape"));
  // The first 5 position rows for a sequence of symbolic length.
  CHECK(why(embeddings({gather("word", "ids", "w"), node("Slice", {"pos", "zero1", "five1"}, {"p"}), wp}, {ids},
                       {{"zero1", Tensor::from_vector<int64_t>({1}, {0})}, {"five1", Tensor::from_vector<int64_t>({1}, {5})}}),
            pass) == at("the position rows 'p' are not known to be as many as the tokens"));
  // Position ids of 2 rows for a batch of any size.
  CHECK(why(embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), wp}, {ids, i64("positions", {2, "seq"})}), pass) ==
        at("the position ids 'positions' are not (B, S) or (1, S) of the token ids' S"));
  // gamma of 2-D shape (1, 8), and a norm from axis 1.
  Model wide_gamma = embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), wp}, {ids, positions});
  for (Initializer& i : wide_gamma.graph.initializers)
    if (i.name == "gamma") i.value = ramp({1, 8}, 0.8f, 0.05f);
  CHECK(why(wide_gamma, pass) == at("gamma or beta is not a 1-D constant over the hidden size"));
  CHECK(why(embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), wp}, {ids, positions}, {},
                       node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}, {attr("axis", int64_t(1))}, "/LayerNorm")),
            pass) == at("the norm starts at axis 1, not the hidden axis"));
  // SkipLayerNormalization(word + position, segment, gamma, beta, bias).
  CHECK(why(embeddings({gather("word", "ids", "w"), gather("pos", "positions", "p"), gather("seg", "types", "t"), wp}, {ids, positions, types},
                       {{"bias", ramp({8}, 0.0f, 0.01f)}},
                       node("SkipLayerNormalization", {"sum", "t", "gamma", "beta", "bias"}, {"y"}, {}, "/LayerNorm", "com.microsoft")),
            pass) == at("the SkipLayerNormalization also adds a bias"));
}
