// The pattern language and matcher on their own: commutative operands, captures bound once,
// scalar constants within tolerance, optional inputs, intermediates read elsewhere, and the reason
// --explain gives for a candidate that does not match.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "pattern.h"
#include "rewrite.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::optimize;

namespace {

Graph scaled_sum(std::vector<Node> nodes, std::vector<ValueInfo> outputs) {
  return graph("g", std::move(nodes), {tensor_info("x", DType::Float, {4}), tensor_info("y", DType::Float, {4})}, std::move(outputs),
               {{"half", Tensor::scalar<float>(0.5f)}, {"third", Tensor::scalar<float>(0.333f)}});
}

// (x + y) * 0.5, the constant on either side.
const Pattern kHalfSum{{{"sum", "Add", {cap("a"), cap("b")}}, {"out", "Mul", {node("sum"), val(0.5)}}}};

}  // namespace

TEST_CASE("pattern: a commutative operator matches with its operands in either order") {
  for (bool constant_first : {false, true}) {
    const Graph g = scaled_sum({node("Add", {"x", "y"}, {"s"}), node("Mul", constant_first ? std::vector<std::string>{"half", "s"}
                                                                                           : std::vector<std::string>{"s", "half"},
                                                             {"z"})},
                               {tensor_info("z", DType::Float, {4})});
    const GraphIndex index(g);
    const auto m = match(kHalfSum, index, 1, std::vector<bool>(2, false));
    REQUIRE(m);
    CHECK(m->value("a") == "x");
    CHECK(m->nodes.at("sum") == 0);
    CHECK(only_root_escapes(*m, index));
  }
}

TEST_CASE("pattern: constants must match within tolerance; a capture used twice must be one value") {
  const Graph g = scaled_sum({node("Add", {"x", "y"}, {"s"}), node("Mul", {"s", "third"}, {"z"})}, {tensor_info("z", DType::Float, {4})});
  CHECK_FALSE(match(kHalfSum, GraphIndex(g), 1, std::vector<bool>(2, false)));
  const Pattern square{{{"sq", "Mul", {cap("v"), cap("v")}}}};
  const Graph xy = scaled_sum({node("Mul", {"x", "y"}, {"z"})}, {tensor_info("z", DType::Float, {4})});
  const Graph xx = scaled_sum({node("Mul", {"x", "x"}, {"z"})}, {tensor_info("z", DType::Float, {4})});
  CHECK_FALSE(match(square, GraphIndex(xy), 0, {false}));
  CHECK(match(square, GraphIndex(xx), 0, {false}));
}

TEST_CASE("pattern: an intermediate read elsewhere or a graph output blocks the rewrite") {
  const Graph used = scaled_sum({node("Add", {"x", "y"}, {"s"}), node("Mul", {"s", "half"}, {"z"}), node("Neg", {"s"}, {"n"})},
                                {tensor_info("z", DType::Float, {4}), tensor_info("n", DType::Float, {4})});
  const GraphIndex a(used);
  const auto m = match(kHalfSum, a, 1, std::vector<bool>(3, false));
  REQUIRE(m);
  CHECK_FALSE(only_root_escapes(*m, a));
  const Graph output = scaled_sum({node("Add", {"x", "y"}, {"s"}), node("Mul", {"s", "half"}, {"z"})},
                                  {tensor_info("z", DType::Float, {4}), tensor_info("s", DType::Float, {4})});
  const GraphIndex b(output);
  CHECK_FALSE(only_root_escapes(*match(kHalfSum, b, 1, {false, false}), b));
  // ... unless the pattern says the replacement writes it too.
  Pattern escaping = kHalfSum;
  escaping.may_escape = {"sum"};
  CHECK(only_root_escapes(*match(escaping, a, 1, std::vector<bool>(3, false)), a));
}

TEST_CASE("pattern: a node claimed by an earlier rewrite never matches; optional trailing inputs") {
  const Graph g = scaled_sum({node("Add", {"x", "y"}, {"s"}), node("Mul", {"s", "half"}, {"z"})}, {tensor_info("z", DType::Float, {4})});
  CHECK_FALSE(match(kHalfSum, GraphIndex(g), 1, {true, false}));
  const Pattern split{{{"sp", "Split", {cap("v"), opt()}}}};
  const Graph one = scaled_sum({node("Split", {"x"}, {"a", "b"})}, {tensor_info("a", DType::Float, {2})});
  const Graph two = scaled_sum({node("Split", {"x", "half"}, {"a", "b"})}, {tensor_info("a", DType::Float, {2})});
  CHECK(match(split, GraphIndex(one), 0, {false}));
  CHECK(match(split, GraphIndex(two), 0, {false}));
}

TEST_CASE("pattern: --explain says why a candidate did not match") {
  // Each rewrite runs on its graph with --explain; the "not fused" line gives the deepest failure.
  auto why = [](const Pattern& p, const Graph& g) {
    Model m = model(g);
    Explain explain;
    const Rewrite r{"test", {p}, [](const Match&, RewriteContext&) -> std::optional<Replacement> { return std::nullopt; }};
    CHECK(apply(r, m, nullptr, &explain, "test") == 0);
    return testing::not_fused_lines(explain);
  };
  // the Mul's operand is a graph input, where the pattern wants an Add's output
  const Graph input = scaled_sum({node("Mul", {"x", "half"}, {"z"})}, {tensor_info("z", DType::Float, {4})});
  MatchFailure failure;
  CHECK(why(kHalfSum, input).find("input 0 of 'z' (Mul) ('x') is not computed by a node; the pattern has Add there") != std::string::npos);
  // a Split with its sizes, where the pattern has the data only: at the root no pattern node is
  // bound yet, so --explain has nothing deeper to say than that no pattern reaches it ...
  const Graph sized = scaled_sum({node("Split", {"x", "half"}, {"a", "b"}, {}, "/split")}, {tensor_info("a", DType::Float, {2})});
  CHECK_FALSE(match(Pattern{{{"sp", "Split", {cap("v")}}}}, GraphIndex(sized), 0, {false}, &failure));
  CHECK(failure.why.find("has 2 inputs, the pattern 1") != std::string::npos);
  // ... below the root, the candidate's line names the node with too many inputs
  const Graph negated = scaled_sum({node("Split", {"x", "half"}, {"a", "b"}, {}, "/split"), node("Neg", {"a"}, {"z"}, {}, "/neg")},
                                   {tensor_info("z", DType::Float, {2})});
  const Pattern negated_half{{{"sp", "Split", {cap("v")}}, {"out", "Neg", {node("sp")}}}};
  CHECK(why(negated_half, negated) == "not fused: test at '/neg': '/split' (Split) has 2 inputs, the pattern 1\n");
  // a pattern whose Neg no path from the root reaches: a defect of the pattern, named as such
  const Graph scaled = scaled_sum({node("Mul", {"x", "half"}, {"z"})}, {tensor_info("z", DType::Float, {4})});
  const Pattern lonely{{{"neg", "Neg", {cap("a")}}, {"out", "Mul", {cap("v"), val(0.5)}}}};
  CHECK(why(lonely, scaled).find("the pattern has a node no input path reaches") != std::string::npos);
}
