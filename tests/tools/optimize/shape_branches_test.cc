// Symbolic shapes (symbolic_shapes.h) on the forms the other shape tests do not feed: the outputs
// of the attention operators the optimizer writes (ONNX 1.12 has no schema for them), FusedMatMul's
// transposed operands, and shape arithmetic torch exports (a halved sequence, a negated size, an
// even Split of a symbolic axis, Slice axes computed from a shape, ConstantOfShape of sizes); and
// the shape-source pass, which rewrites a Shape of scores from those dims.
#include <doctest/doctest.h>

#include "graph_index.h"
#include "optimize_test_util.h"
#include "refeval/builder.h"
#include "shape_inference.h"
#include "symbolic_shapes.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::f32;
using refeval::testing::dims_text;

namespace {

Initializer ints(const std::string& name, std::vector<int64_t> v) { return {name, Tensor::from_vector<int64_t>({int64_t(v.size())}, v)}; }


// One com.microsoft (or ONNX-23) node `op` over the given inputs, its output "y" declared of no
// shape, inferred.
std::string inferred(const std::string& op, const std::string& domain, std::vector<std::string> in, std::vector<ValueInfo> inputs,
                     std::vector<Attribute> attrs = {}, std::vector<Initializer> inits = {}, int64_t opset = 17) {
  OpsetMap opsets = {{"", opset}};
  if (!domain.empty()) opsets[domain] = 1;
  const Model m = model(graph("g", {node(op, std::move(in), {"y"}, std::move(attrs), "/" + op, domain)}, std::move(inputs), {untyped_info("y")}, std::move(inits)),
                        opsets);
  return dims_text(optimize::infer(m), "y");
}

}  // namespace

TEST_CASE("symbolic shapes: the attention operators' first output, each form of their inputs") {
  const std::vector<Attribute> heads4 = {attr("num_heads", int64_t(4))};
  // com.microsoft Attention: the hidden size from qkv_hidden_sizes (v's size last), or a third of
  // the packed weight's width.
  CHECK(inferred("Attention", "com.microsoft", {"x", "w", "b"}, {f32("x", {"batch", "seq", 16}), f32("w", {16, 40}), f32("b", {40})},
                 {attr("num_heads", int64_t(2)), attr("qkv_hidden_sizes", std::vector<int64_t>{16, 16, 8})}) == "batch,seq,8");
  CHECK(inferred("Attention", "com.microsoft", {"x", "w", "b"}, {f32("x", {"batch", "seq", 16}), f32("w", {16, 48}), f32("b", {48})}, heads4) == "batch,seq,16");
  // A weight width not a multiple of 3 without qkv_hidden_sizes: unknown.
  CHECK(inferred("Attention", "com.microsoft", {"x", "w", "b"}, {f32("x", {"batch", "seq", 16}), f32("w", {16, 40}), f32("b", {40})}, heads4) == "?");
  // MultiHeadAttention: v in BSNH (batch, kv_seq, heads, head) -> heads x head; q packed with k and
  // v on the hidden axis (no k, v): a third; q packed as (B, S, N, 3, H): N x H.
  CHECK(inferred("MultiHeadAttention", "com.microsoft", {"q", "k", "v"},
                 {f32("q", {"batch", "seq", 16}), f32("k", {"batch", 4, "kv", 6}), f32("v", {"batch", 4, "kv", 6})}, heads4) == "batch,seq,24");
  CHECK(inferred("MultiHeadAttention", "com.microsoft", {"qkv"}, {f32("qkv", {"batch", "seq", 48})}, heads4) == "batch,seq,16");
  CHECK(inferred("MultiHeadAttention", "com.microsoft", {"qkv"}, {f32("qkv", {"batch", "seq", 4, 3, 8})}, heads4) == "batch,seq,32");
  // GroupQueryAttention with q, k and v packed in one (B, S, (N + 2 kv) H) input: N H.
  CHECK(inferred("GroupQueryAttention", "com.microsoft", {"qkv"}, {f32("qkv", {"batch", "seq", 64})},
                 {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}) == "batch,seq,32");
  // ... and with separate k and v: q's hidden size.
  CHECK(inferred("GroupQueryAttention", "com.microsoft", {"q", "k", "v"}, {f32("q", {"batch", "seq", 32}), f32("k", {"batch", "seq", 16}), f32("v", {"batch", "seq", 16})},
                 {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}) == "batch,seq,32");
  // ONNX's Attention-23 on 3-D inputs: v's hidden over kv_num_heads is the head size, times
  // q_num_heads; on 4-D inputs, q's (B, N, S) with v's head size.
  CHECK(inferred("Attention", "", {"q", "k", "v"}, {f32("q", {"batch", "seq", 32}), f32("k", {"batch", "kv", 16}), f32("v", {"batch", "kv", 16})},
                 {attr("q_num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}, {}, 23) == "batch,seq,32");
  CHECK(inferred("Attention", "", {"q", "k", "v"}, {f32("q", {"batch", 4, "seq", 8}), f32("k", {"batch", 4, "kv", 8}), f32("v", {"batch", 4, "kv", 6})}, {}, {},
                 23) == "batch,4,seq,6");
  // EmbedLayerNormalization: (batch, seq) ids and a gamma of 8.
  const ValueInfo ids = tensor_info("ids", DType::Int32, {"batch", "seq"});
  CHECK(inferred("EmbedLayerNormalization", "com.microsoft", {"ids", "", "word", "pos", "", "gamma", "beta"},
                 {ids, f32("word", {100, 8}), f32("pos", {64, 8}), f32("gamma", {8}), f32("beta", {8})}) == "batch,seq,8");
}

TEST_CASE("symbolic shapes: FusedMatMul's transposed operands, and a transposed batch left unknown") {
  const std::vector<ValueInfo> ab = {f32("a", {"batch", 8, "seq"}), f32("b", {"batch", 5, 8})};
  CHECK(inferred("FusedMatMul", "com.microsoft", {"a", "b"}, ab, {attr("transA", int64_t(1)), attr("transB", int64_t(1))}) == "batch,seq,5");
  CHECK(inferred("FusedMatMul", "com.microsoft", {"a", "b"}, ab, {attr("transBatchA", int64_t(1))}) == "?");
  // A vector right operand: (batch, seq, 8) . (8) -> (batch, seq).
  CHECK(inferred("FusedMatMul", "com.microsoft", {"a", "v"}, {f32("a", {"batch", "seq", 8}), f32("v", {8})}) == "batch,seq");
}

TEST_CASE("symbolic shapes: a halved sequence, a negated size, an even Split and ConstantOfShape's sizes") {
  // x (batch, 2*seq, 8) -> Reshape(x, [batch, (2*seq) / 2, 2, 8]) with the sizes from Shape:
  // torch's x.view(b, s // 2, 2, h) of a length known to be even.
  std::vector<Node> nodes = {
      node("Shape", {"x"}, {"shape"}),
      node("Gather", {"shape", "zero"}, {"b"}, {attr("axis", int64_t(0))}),
      node("Gather", {"shape", "one"}, {"s"}, {attr("axis", int64_t(0))}),
      node("Div", {"s", "two"}, {"half"}),
      node("Unsqueeze", {"b", "axis0"}, {"b1"}),
      node("Unsqueeze", {"half", "axis0"}, {"h1"}),
      node("Concat", {"b1", "h1", "two_eight"}, {"view"}, {attr("axis", int64_t(0))}),
      node("Reshape", {"x", "view"}, {"halves"}),
      // -s: torch's x[:, -s:] bound; Range(-s, 0) has s elements.
      node("Neg", {"s"}, {"minus_s"}),
      node("Range", {"minus_s", "zero", "one"}, {"offsets"}),
      // x split in two on the sequence axis (torch.chunk(x, 2, dim=1)).
      node("Split", {"x"}, {"first", "second"}, {attr("axis", int64_t(1))}),
      // ConstantOfShape([3]) of int64 ones, added to the shape: (batch + 1, 2*seq + 1, 9) as data.
      node("ConstantOfShape", {"three"}, {"ones"}, {attr("value", Tensor::from_vector<int64_t>({1}, {1}))}),
      node("Add", {"shape", "ones"}, {"grown"}),
      node("ConstantOfShape", {"grown"}, {"z"}),
  };
  const Model m = model(graph("g", nodes, {f32("x", {"batch", "2*seq", 8})}, {untyped_info("halves"), untyped_info("offsets"), untyped_info("first"), untyped_info("z")},
                              {{"zero", Tensor::scalar<int64_t>(0)}, {"one", Tensor::scalar<int64_t>(1)}, {"two", Tensor::scalar<int64_t>(2)},
                               ints("axis0", {0}), ints("two_eight", {2, 8}), ints("three", {3})}));
  const optimize::Inference inf = optimize::infer(m);
  CHECK(dims_text(inf, "halves") == "batch,seq,2,8");
  CHECK(dims_text(inf, "offsets") == "2*seq");
  CHECK(dims_text(inf, "first") == "batch,seq,8");
  CHECK(dims_text(inf, "z") == "batch + 1,2*seq + 1,9");
}

TEST_CASE("symbolic shapes: Slice axes computed from a shape, and a symbolic length that is odd") {
  // axes = Shape(pick) with pick of shape (2): the value [2], known although not a constant; the
  // slice [0:4] of axis 2 gives (batch, seq, 4).
  std::vector<Node> nodes = {node("Shape", {"pick"}, {"axes"}), node("Slice", {"x", "zero1", "four1", "axes"}, {"y"}),
                             // A size of unknown parity halved: seq / 2 is not a polynomial.
                             node("Shape", {"x"}, {"shape"}), node("Gather", {"shape", "one"}, {"s"}, {attr("axis", int64_t(0))}),
                             node("Div", {"s", "two"}, {"half"}), node("Unsqueeze", {"half", "axis0"}, {"h1"}), node("ConstantOfShape", {"h1"}, {"z"})};
  const Model m = model(graph("g", nodes, {f32("x", {"batch", "seq", 8}), f32("pick", {2})}, {untyped_info("y"), untyped_info("z")},
                              {ints("zero1", {0}), ints("four1", {4}), {"one", Tensor::scalar<int64_t>(1)}, {"two", Tensor::scalar<int64_t>(2)}, ints("axis0", {0})}));
  const optimize::Inference inf = optimize::infer(m);
  CHECK(dims_text(inf, "y") == "batch,seq,4");
  CHECK(dims_text(inf, "z").find("seq") == std::string::npos);  // ONNX's own unknown (unk__N)
}

// ---------------------------------------------------------------------------------------------
// shape-source: a Shape of attention scores rewritten to read the graph inputs' dims.

TEST_CASE("shape-source: fixed lengths become one constant; 2 S and S + 2 are computed; an empty range stays") {
  // Scores x keys^T (1, S, T) before a Softmax with keys = Concat(x, x) (T = 2 S) or
  // Concat(x, two learned memory rows) (T = S + 2), x (1, S, 4); Shape(scores, start = -1) reads T.
  // With S fixed at 3 every dim is a constant: the Shape becomes an initializer of that name.
  auto scores = [](std::vector<DimSpec> x_dims, bool memory, std::vector<Attribute> shape_attrs) {
    std::vector<Initializer> inits = {{"mem", testing::ramp({1, 2, 4}, -0.5f, 0.1f)}};
    return model(graph("scores",
                       {node("Concat", {"x", memory ? "mem" : "x"}, {"keys"}, {attr("axis", int64_t(1))}),
                        node("Transpose", {"keys"}, {"keys_t"}, {attr("perm", std::vector<int64_t>{0, 2, 1})}), node("MatMul", {"x", "keys_t"}, {"scores"}),
                        node("Softmax", {"scores"}, {"probs"}, {attr("axis", int64_t(-1))}), node("Shape", {"scores"}, {"len"}, std::move(shape_attrs), "/Shape")},
                       {f32("x", std::move(x_dims))}, {tensor_info_unknown_rank("probs", DType::Float), tensor_info_unknown_rank("len", DType::Int64)}, inits));
  };
  const std::vector<Attribute> last = {attr("start", int64_t(-1))};
  // S fixed: len = [6] is a constant now.
  const Model fixed = testing::optimized(scores({1, 3, 4}, false, last), {"shape-source"});
  CHECK(testing::count_ops(fixed, "Shape") == 0);
  REQUIRE(fixed.graph.find_initializer("len") != nullptr);
  CHECK(fixed.graph.find_initializer("len")->value.data<int64_t>()[0] == 6);
  // S symbolic: 2 S is x's axis 1 times 2; S + 2 is x's axis 1 plus 2.
  const Model twice = testing::optimized(scores({1, "S", 4}, false, last), {"shape-source"});
  CHECK(testing::count_ops(twice, "Mul") == 1);
  for (const Node& n : twice.graph.nodes)
    if (n.op_type == "Shape") CHECK(n.inputs[0] == "x");
  const Model memory = testing::optimized(scores({1, "S", 4}, true, last), {"shape-source"});
  CHECK(testing::count_ops(memory, "Add") == 1);
  // Shape(scores, start = 2, end = 1): an empty range, left for the folding.
  const Model empty = testing::optimized(scores({1, "S", 4}, false, {attr("start", int64_t(2)), attr("end", int64_t(1))}), {"shape-source"});
  REQUIRE(testing::count_ops(empty, "Shape") == 1);
  CHECK(empty.graph.nodes.back().inputs[0] == "scores");
}

TEST_CASE("symbolic shapes: negative indices into a shape (read and computed), Squeeze without axes, Shape(end = -2) + [-1]") {
  // torch's x.shape[-1], x.shape[-2:], x.reshape(*x.shape[:-2], -1) and x.squeeze() on
  // x (batch, seq, 1, 8): Gather(Shape(x), -1), Slice(Shape(x), -3, -1), Shape(x, end = -2) + [-1],
  // Squeeze(x) drops the fixed 1 only.
  std::vector<Node> nodes = {
      node("Shape", {"x"}, {"shape"}),
      node("Gather", {"shape", "minus_one"}, {"hidden"}, {attr("axis", int64_t(0))}),
      node("Slice", {"shape", "minus_three", "minus_one1"}, {"middle"}),
      node("Shape", {"x"}, {"lead"}, {attr("end", int64_t(-2))}),
      node("Concat", {"lead", "minus_one1"}, {"flat_shape"}, {attr("axis", int64_t(0))}),
      node("Reshape", {"x", "flat_shape"}, {"flat"}),
      node("Squeeze", {"x"}, {"squeezed"}),
      node("Unsqueeze", {"hidden", "axis0"}, {"hidden1"}),
      node("Concat", {"middle", "hidden1"}, {"tail_shape"}, {attr("axis", int64_t(0))}),
      node("ConstantOfShape", {"tail_shape"}, {"tail"}),
      // (x.shape + x.shape)[-3]: 2 seq, arithmetic ONNX's own data propagation does not do.
      node("Add", {"shape", "shape"}, {"doubled"}),
      node("Gather", {"doubled", "minus_three1"}, {"two_seq"}, {attr("axis", int64_t(0))}),
      node("ConstantOfShape", {"two_seq"}, {"pairs"}),
  };
  const Model m = model(graph("g", nodes, {f32("x", {"batch", "seq", 1, 8})}, {untyped_info("flat"), untyped_info("squeezed"), untyped_info("tail"), untyped_info("pairs")},
                              {{"minus_one", Tensor::scalar<int64_t>(-1)}, ints("minus_three", {-3}), ints("minus_one1", {-1}), ints("axis0", {0}), ints("minus_three1", {-3})}));
  const optimize::Inference inf = optimize::infer(m);
  CHECK(dims_text(inf, "flat") == "batch,seq,8");
  CHECK(dims_text(inf, "squeezed") == "batch,seq,8");
  CHECK(dims_text(inf, "tail") == "seq,1,8");
  CHECK(dims_text(inf, "pairs") == "2*seq");
}
