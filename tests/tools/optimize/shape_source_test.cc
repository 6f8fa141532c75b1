// shape-source: a Shape of attention scores reads the graph inputs' dims instead, so what is sized
// by it (MixFormer's causal mask) no longer depends on the products the attention fusion replaces. The
// rewritten shapes are checked against the original's with the evaluator on inputs whose dims all
// differ (batch 2, 3 new tokens, 5 past), so an axis read from the wrong input would show.
#include <doctest/doctest.h>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;

namespace {

Tensor ramp(const Shape& shape) {
  std::vector<float> v(size_t(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 7) - 3.0f;
  return Tensor::from_vector<float>(shape, v);
}

// Shapes of the scores x keys^T (B, S, P + S) before a Softmax, keys = Concat(past (B, P, 4), x),
// read whole and in part, and of the keys and x themselves.
Model scores_shapes() {
  return model(graph("scores", {node("Concat", {"past", "x"}, {"keys"}, {attr("axis", int64_t(1))}),
                                node("Transpose", {"keys"}, {"keys_t"}, {attr("perm", std::vector<int64_t>{0, 2, 1})}),
                                node("MatMul", {"x", "keys_t"}, {"scores"}),
                                node("Softmax", {"scores"}, {"probs"}, {attr("axis", int64_t(-1))}),
                                node("Shape", {"scores"}, {"scores_shape"}),
                                node("Shape", {"scores"}, {"lengths"}, {attr("start", int64_t(-2))}),
                                node("Shape", {"keys"}, {"keys_shape"}, {attr("end", int64_t(2))}),
                                node("Shape", {"x"}, {"x_shape"})},
                     {tensor_info("x", DType::Float, {"B", "S", 4}), tensor_info("past", DType::Float, {"B", "P", 4})},
                     {tensor_info_unknown_rank("probs", DType::Float), tensor_info_unknown_rank("scores_shape", DType::Int64), tensor_info_unknown_rank("lengths", DType::Int64),
                      tensor_info_unknown_rank("keys_shape", DType::Int64), tensor_info_unknown_rank("x_shape", DType::Int64)}),
               {{"", 17}});
}

}  // namespace

TEST_CASE("shape-source: the scores' shape is read from the inputs, with the same values") {
  const Model m = scores_shapes();
  optimize::OptimizeOptions o;
  o.only = {"shape-source"};
  const Model out = optimize::optimize(m, Registry::builtin(), o).model;
  // No Shape reads the scores; the keys' Shape stays (they are not scores), as does x's.
  for (const Node& n : out.graph.nodes)
    if (n.op_type == "Shape") CHECK_MESSAGE(n.inputs[0] != "scores", n.name << " reads the scores");
  CHECK(count_ops(out, "Shape") >= 4);
  // P + S is the sum of past's axis 1 and x's axis 1
  CHECK(count_ops(out, "Add") >= 1);

  fusion::CheckOptions check;
  check.repeat = 1;
  const std::map<std::string, Value> feeds = {{"x", ramp({2, 3, 4})}, {"past", ramp({2, 5, 4})}};
  const fusion::FusionReport r = optimize::verify(m, out, Registry::builtin(), feeds, check);
  CHECK_MESSAGE(r.equivalent(), "the rewritten shapes differ from the original's");
}

TEST_CASE("shape-source: a dim the inputs do not give stays read from the value") {
  // NonZero's count is known only by running it
  const Model m = model(graph("nonzero", {node("NonZero", {"x"}, {"nz"}), node("Shape", {"nz"}, {"nz_shape"})},
                              {tensor_info("x", DType::Float, {"B", 4})}, {tensor_info_unknown_rank("nz_shape", DType::Int64)}),
                        {{"", 17}});
  optimize::OptimizeOptions o;
  o.only = {"shape-source"};
  const Model out = optimize::optimize(m, Registry::builtin(), o).model;
  REQUIRE(count_ops(out, "Shape") == 1);
  CHECK(out.graph.nodes.back().inputs[0] == "nz");
}
