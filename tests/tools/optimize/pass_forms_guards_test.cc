// Checks of the smaller passes that no other test makes them take, each on the graph form that
// needs it. Each accepted form is checked equal to the original with the evaluator (optimized(),
// optimize_test_util.h); each refusal by its exact line.
#include <doctest/doctest.h>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::optimized;
using refeval::testing::ramp;
using refeval::testing::refusals;

namespace {

ValueInfo i64(const std::string& name, std::vector<DimSpec> dims) { return tensor_info(name, DType::Int64, std::move(dims)); }

const Node& only(const Model& m, const std::string& op) {
  const auto it = std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  REQUIRE(it != m.graph.nodes.end());
  return *it;
}

// ---- embed-layer-norm: LayerNormalization(word[ids] + pos[positions] (+ seg[types])) ----
// word (100, 8), pos (16, 8), seg (2, 8); `nodes` compute "positions" (and "types" when
// `segments`) from the ids and `inits`.
Model embeddings(std::vector<Node> nodes, std::vector<ValueInfo> inputs, std::vector<Initializer> inits, bool segments = false) {
  inits.push_back({"word", ramp({100, 8}, -0.5f, 0.05f)});
  inits.push_back({"pos", ramp({16, 8}, 0.3f, -0.02f)});
  inits.push_back({"seg", ramp({2, 8}, -0.1f, 0.03f)});
  inits.push_back({"gamma", ramp({8}, 0.8f, 0.05f)});
  inits.push_back({"beta", ramp({8}, -0.1f, 0.02f)});
  nodes.push_back(node("Gather", {"word", "ids"}, {"w"}, {}, "/Gather_word"));
  nodes.push_back(node("Gather", {"pos", "positions"}, {"p"}, {}, "/Gather_pos"));
  nodes.push_back(node("Add", {"w", "p"}, {segments ? "wp" : "sum"}));
  if (segments) {
    nodes.push_back(node("Gather", {"seg", "types"}, {"t"}, {}, "/Gather_seg"));
    nodes.push_back(node("Add", {"wp", "t"}, {"sum"}));
  }
  nodes.push_back(node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}, {attr("epsilon", 1e-12f)}, "/LayerNorm"));
  return model(graph("emb", std::move(nodes), std::move(inputs), {f32("y", {})}, std::move(inits)), {{"", 17}, {"com.microsoft", 1}});
}

// Fused into one EmbedLayerNormalization, equivalent to the original; the number of its inputs
// (9 when the position ids are passed, 7 when they are the operator's default 0..S-1).
size_t fused_inputs(const Model& m) {
  const Model out = optimized(m, {"embed-layer-norm"});
  REQUIRE_MESSAGE(count_ops(out, "EmbedLayerNormalization") == 1, refusals(m, {"embed-layer-norm"}));
  return only(out, "EmbedLayerNormalization").inputs.size();
}

}  // namespace

TEST_CASE("embed-layer-norm: position 0 broadcast over the sequence is not 0..S-1") {
  // positions = Expand([[0]], Shape(ids)): every token reads position row 0. The constant is an
  // arange of its own length 1, and the Expand makes it (B, S); the positions must be passed.
  const Model zero = embeddings({node("Shape", {"ids"}, {"ids_shape"}), node("Expand", {"first", "ids_shape"}, {"positions"})}, {i64("ids", {"batch", "seq"})},
                                {{"first", Tensor::from_vector<int64_t>({1, 1}, {0})}});
  CHECK(fused_inputs(zero) == 9);
}
