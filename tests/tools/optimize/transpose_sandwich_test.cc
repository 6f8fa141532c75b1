// transpose-sandwich: row-wise nodes between a Transpose that keeps the last axis and the
// Transposes undoing it read the untransposed rows, and the Transposes go: the out-projection
// chain, and nn.MultiheadAttention's packed in-projection whose three slices each go back to
// batch-first. Checked against the original with the evaluator (optimized()).
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::ramp;
using refeval::testing::optimized;

namespace {

Attribute perm() { return attr("perm", std::vector<int64_t>{1, 0, 2}); }

// x (S, B, 8) -> Transpose -> MatMul (8, 24) -> Add(bias, .) -> three Slices of the last axis,
// each transposed back; `leak`: the first slice is also a graph output as it is; `axis`: the axis
// sliced (the last, or the batch axis, which the rows do not commute with); `shape`: the
// transposed rows' Shape is also read, by nothing ("dead", as shape folding leaves it) or as a
// graph output ("read").
Model packed_projection(bool leak, int64_t axis = -1, const std::string& shape = "") {
  std::vector<Node> nodes = {node("Transpose", {"x"}, {"xt"}, {perm()}), node("MatMul", {"xt", "w"}, {"p"}), node("Add", {"b", "p"}, {"pb"})};
  std::vector<ValueInfo> outputs;
  for (int j = 0; j < 3; ++j) {
    const std::string s = "s" + std::to_string(j), y = "y" + std::to_string(j);
    nodes.push_back(node("Slice", {"pb", "start" + std::to_string(j), "start" + std::to_string(j + 1), "last"}, {s}));
    nodes.push_back(node("Transpose", {s}, {y}, {perm()}));
    outputs.push_back(tensor_info(y, DType::Float, {"S", "B", 8}));
  }
  if (leak) outputs.push_back(tensor_info("s0", DType::Float, {"B", "S", 8}));
  if (!shape.empty()) {
    nodes.push_back(node("Shape", {"xt"}, {"xt_shape"}));
    nodes.push_back(node("Gather", {"xt_shape", "start0"}, {"batch"}));
    if (shape == "read") outputs.push_back(tensor_info("batch", DType::Int64, {1}));
  }
  std::vector<Initializer> inits = {{"w", ramp({8, 24}, -0.3f, 0.03f)}, {"b", ramp({24}, -0.1f, 0.01f)},
                                    {"last", Tensor::from_vector<int64_t>({1}, {axis})}};
  for (int j = 0; j < 4; ++j) inits.push_back({"start" + std::to_string(j), Tensor::from_vector<int64_t>({1}, {axis == -1 ? 8 * j : j})});
  return model(graph("packed", nodes, {tensor_info("x", DType::Float, {"S", "B", 8})}, outputs, inits), {{"", 17}});
}

}  // namespace

TEST_CASE("transpose-sandwich: a packed in-projection whose slices all go back loses every Transpose") {
  const Model out = optimized(packed_projection(false), {"transpose-sandwich"});
  CHECK(count_ops(out, "Transpose") == 0);
  CHECK(count_ops(out, "Slice") == 3);
  CHECK(count_ops(out, "MatMul") == 1);
}

TEST_CASE("transpose-sandwich: a dead Shape of the transposed rows does not keep the Transposes; a read one does") {
  // The pass alone, as the extended level meets it: a fusion before it left the Shape unread.
  Model dead = packed_projection(false, -1, "dead");
  const optimize::Inference inference = optimize::infer(dead);
  optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
  CHECK(optimize::transpose_sandwich_pass().run(dead, ctx) == 1);
  CHECK(count_ops(dead, "Transpose") == 1);  // the opening one stays for the dead Shape, until dead-code
  for (const Node& n : dead.graph.nodes)
    if (n.op_type == "MatMul") CHECK(n.inputs[0] == "x");
  CHECK(count_ops(optimized(packed_projection(false, -1, "dead"), {"transpose-sandwich"}), "Transpose") == 0);
  CHECK(count_ops(optimized(packed_projection(false, -1, "read"), {"transpose-sandwich"}), "Transpose") == 4);
}

TEST_CASE("transpose-sandwich: a slice read in the transposed layout, or of another axis, keeps the Transposes") {
  CHECK(count_ops(optimized(packed_projection(true), {"transpose-sandwich"}), "Transpose") == 4);
  CHECK(count_ops(optimized(packed_projection(false, 0), {"transpose-sandwich"}), "Transpose") == 4);
}

TEST_CASE("transpose-sandwich: the out-projection chain Transpose -> MatMul -> Add -> Transpose") {
  const Model m = model(graph("chain",
                              {node("Transpose", {"x"}, {"xt"}, {perm()}), node("MatMul", {"xt", "w"}, {"p"}), node("Add", {"p", "b"}, {"pb"}),
                               node("Transpose", {"pb"}, {"y"}, {perm()})},
                              {tensor_info("x", DType::Float, {"S", "B", 8})}, {tensor_info("y", DType::Float, {"S", "B", 8})},
                              {{"w", ramp({8, 8}, -0.3f, 0.03f)}, {"b", ramp({8}, -0.1f, 0.01f)}}),
                        {{"", 17}});
  const Model out = optimized(m, {"transpose-sandwich"});
  CHECK(count_ops(out, "Transpose") == 0);
}

TEST_CASE("transpose-sandwich: a Transpose that moves the last axis keeps its chain, whose product runs over the other axis") {
  // x (2, 8, 8) transposed 0 2 1: the MatMul multiplies columns, not rows, and cannot move past it.
  const std::vector<int64_t> swap = {0, 2, 1};
  const Model m = model(graph("chain",
                              {node("Transpose", {"x"}, {"xt"}, {attr("perm", swap)}), node("MatMul", {"xt", "w"}, {"p"}), node("Add", {"p", "b"}, {"pb"}),
                               node("Transpose", {"pb"}, {"y"}, {attr("perm", swap)})},
                              {tensor_info("x", DType::Float, {2, 8, 8})}, {tensor_info("y", DType::Float, {2, 8, 8})},
                              {{"w", ramp({8, 8}, -0.3f, 0.03f)}, {"b", ramp({8}, -0.1f, 0.01f)}}),
                        {{"", 17}});
  CHECK(count_ops(optimized(m, {"transpose-sandwich"}), "Transpose") == 2);
}
