// transpose-chain: Transpose(Transpose(x, p), q) becomes one Transpose of x by the composed
// permutation (an Identity when that is no permutation at all), and Unsqueeze then Squeeze of the
// same axes becomes x; other axes, negative ones (their meaning changes with the rank) or a
// Squeeze of every unit axis stay. Each result is checked against the original with the
// evaluator (optimized()).
#include <algorithm>
#include <optional>

#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::optimized;

namespace {

using I64s = std::vector<int64_t>;

// x [2, 3, 4] -> Transpose(p) -> Transpose(q) -> Relu -> y.
Model two_transposes(const I64s& p, const I64s& q, const std::vector<DimSpec>& y_shape) {
  return model(graph("g",
                     {node("Transpose", {"x"}, {"xp"}, {attr("perm", p)}), node("Transpose", {"xp"}, {"xq"}, {attr("perm", q)}),
                      node("Relu", {"xq"}, {"y"})},
                     {tensor_info("x", DType::Float, {2, 3, 4})}, {tensor_info("y", DType::Float, y_shape)}));
}

// x [2, 3] -> Unsqueeze(axes) -> Squeeze(squeeze_axes) -> Relu -> y, the axes as inputs (opset 13
// on) or as attributes (opset 11).
Model unsqueeze_squeeze(const I64s& axes, const std::optional<I64s>& squeeze_axes, int64_t opset, const std::vector<DimSpec>& y_shape) {
  std::vector<Initializer> inits;
  Node u = node("Unsqueeze", {"x"}, {"u"}), s = node("Squeeze", {"u"}, {"s"});
  if (opset >= 13) {
    inits.push_back({"axes", Tensor::from_vector<int64_t>({int64_t(axes.size())}, axes)});
    u.inputs.push_back("axes");
    if (squeeze_axes) {
      inits.push_back({"squeeze_axes", Tensor::from_vector<int64_t>({int64_t(squeeze_axes->size())}, *squeeze_axes)});
      s.inputs.push_back("squeeze_axes");
    }
  } else {
    u.attributes.push_back(attr("axes", axes));
    if (squeeze_axes) s.attributes.push_back(attr("axes", *squeeze_axes));
  }
  return model(graph("g", {u, s, node("Relu", {"s"}, {"y"})}, {tensor_info("x", DType::Float, {2, 3})}, {tensor_info("y", DType::Float, y_shape)},
                     inits),
               {{"", opset}});
}

const Node& only(const Model& m, const std::string& op) {
  REQUIRE(count_ops(m, op) == 1);
  return *std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
}

}  // namespace

TEST_CASE("transpose-chain: two Transposes become one by the composed permutation") {
  // out[i] = (x transposed by p)[q[i]] = x[p[q[i]]]: p = [1, 0, 2], q = [0, 2, 1] -> [1, 2, 0].
  const Model out = optimized(two_transposes({1, 0, 2}, {0, 2, 1}, {3, 4, 2}), {"transpose-chain"});
  const Node& t = only(out, "Transpose");
  CHECK(t.inputs == std::vector<std::string>{"x"});
  CHECK(t.outputs == std::vector<std::string>{"xq"});
  CHECK(t.attributes.at(0).ints == I64s{1, 2, 0});
}

TEST_CASE("transpose-chain: a Transpose and its inverse become an Identity, which the identity pass removes") {
  // p = [2, 0, 1] then q = [1, 2, 0] compose to [0, 1, 2].
  const Model chained = optimized(two_transposes({2, 0, 1}, {1, 2, 0}, {2, 3, 4}), {"transpose-chain"});
  CHECK(count_ops(chained, "Transpose") == 0);
  CHECK(only(chained, "Identity").inputs == std::vector<std::string>{"x"});
  const Model out = optimized(two_transposes({2, 0, 1}, {1, 2, 0}, {2, 3, 4}), {"transpose-chain", "identity"});
  CHECK(out.graph.nodes.size() == 1);
  CHECK(only(out, "Relu").inputs == std::vector<std::string>{"x"});
}

TEST_CASE("transpose-chain: a Transpose without a perm (reversing the axes) is left alone") {
  Model m = two_transposes({1, 0, 2}, {0, 2, 1}, {4, 2, 3});
  m.graph.nodes[1].attributes.clear();  // [3, 2, 4] reversed: [4, 2, 3]
  const Model out = optimized(m, {"transpose-chain"});
  CHECK(count_ops(out, "Transpose") == 2);
}

TEST_CASE("transpose-chain: Unsqueeze then Squeeze of the same axes is x, axes as inputs or attributes") {
  for (int64_t opset : {11, 13}) {
    CAPTURE(opset);
    const Model out = optimized(unsqueeze_squeeze({0, 2}, I64s{0, 2}, opset, {2, 3}), {"transpose-chain", "identity"});
    CHECK(out.graph.nodes.size() == 1);
    CHECK(only(out, "Relu").inputs == std::vector<std::string>{"x"});
  }
}

TEST_CASE("transpose-chain: Unsqueeze then Squeeze of other axes, negative axes or every unit axis stays") {
  struct Case {
    const char* what;
    I64s axes;
    std::optional<I64s> squeeze;
    std::vector<DimSpec> y;
  };
  const std::vector<Case> cases = {
      {"other axes", {0, 1}, I64s{1}, {1, 2, 3}},
      {"negative axes", {-1}, I64s{-1}, {2, 3}},
      {"a Squeeze of every unit axis", {0}, std::nullopt, {2, 3}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    for (int64_t opset : {11, 13}) {
      CAPTURE(opset);
      Model m = unsqueeze_squeeze(c.axes, c.squeeze, opset, c.y);
      const optimize::Inference inference = optimize::infer(m);
      optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
      CHECK(optimize::transpose_chain_pass().run(m, ctx) == 0);
      CHECK(count_ops(m, "Squeeze") == 1);
    }
  }
}
