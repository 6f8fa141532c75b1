// check-fusion catches subtle wrong fusions, and passes right ones: the model form on fused /
// unfused pairs, the node form on a kernel against a built-in decomposition or a model-local
// function.
#include "model_check.h"
#include "my_fused_gelu.h"
#include "node_check.h"
#include "refeval/address.h"
#include "refeval/elementwise.h"
#include "test_util.h"
#include "tools/fusion/fusion_models.h"

#include <cmath>

using namespace refeval;
using namespace refeval::fusion;
using namespace refeval::testing;

namespace {

// Generated the way the CLI generates inputs it is not given: uniform in [0, 1).
std::map<std::string, Value> unit_feeds(const Model& m) {
  std::map<std::string, Value> feeds;
  uint64_t state = 1;
  for (const ValueInfo* in : m.graph.feed_inputs()) {
    Shape shape;
    for (const Dim& d : in->type.dims) shape.push_back(d.value);
    std::vector<float> v(size_t(shape_size(shape)));
    for (float& x : v) x = float((state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 40) / float(1 << 24);
    feeds[in->name] = Tensor::from_vector<float>(shape, v);
  }
  return feeds;
}

FusionReport check_pair(const Model& fused, const Model& unfused) {
  return check_models(fused, unfused, Registry::builtin(), unit_feeds(fused), {});
}

std::string first_failing_set(const FusionReport& r) { return r.first_failure() ? r.first_failure()->set : "none"; }

// A wrong kernel for com.microsoft Gelu: the tanh approximation passed off as the erf form.
struct TanhGelu : OpRun {
  explicit TanhGelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {map_unary<float>(input_tensor(in, 0), [](auto x) {
      return 0.5f * x * (1 + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
    })};
  }
};

// A wrong kernel for com.microsoft Gelu that loses the second half of each row's columns.
struct HalfWidthGelu : OpRun {
  explicit HalfWidthGelu(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    const int64_t rows = x.dim(0), half = x.dim(1) / 2;
    std::vector<float> y;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < half; ++c) y.push_back(x.data<float>()[r * x.dim(1) + c]);
    return {Tensor::from_vector<float>({rows, half}, y)};
  }
};

// check-fusion's node form on one com.microsoft Gelu over (4, 16) inputs, run by Kernel.
template <class Kernel>
FusionReport check_gelu_kernel() {
  Registry reg(&Registry::builtin(), "test");
  reg.add("com.microsoft", "Gelu", {1}, make<Kernel>);
  using namespace refeval::build;
  const Model m = model(graph("g", {node("Gelu", {"X"}, {"Y"}, {}, "ms_gelu", "com.microsoft")},
                              {tensor_info("X", DType::Float, {4, 16})}, {tensor_info("Y", DType::Float, {4, 16})}),
                        {{"", 17}, {"com.microsoft", 1}});
  return check_node(m, find_nodes(m.graph, "ms_gelu")[0], reg, unit_feeds(m), {});
}

}  // namespace

TEST_CASE("tanh-GELU passed off as erf-GELU passes on [0, 1) inputs but fails on the edge-case sets") {
  const FusionReport r = check_pair(gelu_model("tanh"), gelu_erf_unfused());
  CHECK_FALSE(r.equivalent());
  CHECK(r.sets[0].equal());  // the given inputs in [0, 1) alone would not catch it
  CHECK_FALSE(r.sets[4].equal());
  CHECK(r.sets[4].set == "negative");
  CHECK(r.outputs == std::vector<std::string>{"Y"});
}

TEST_CASE("erf-GELU against its exported form is equivalent, and both sides are timed") {
  const FusionReport r = check_pair(gelu_model("none"), gelu_erf_unfused());
  CHECK(r.equivalent());
  CHECK(r.sets.size() == 7);
  CHECK(r.runs == 5);
  CHECK(r.fused_ms > 0);
  CHECK(r.unfused_ms > 0);
}

TEST_CASE("LayerNorm with epsilon outside the square root is caught by the tiny-magnitude set") {
  const FusionReport wrong = check_pair(layer_norm_model(), layer_norm_unfused(true));
  CHECK(first_failing_set(wrong) == "tiny");
  CHECK(check_pair(layer_norm_model(), layer_norm_unfused(false)).equivalent());
}

TEST_CASE("an attention mask off by one position is caught on the given inputs") {
  CHECK(first_failing_set(check_pair(causal_attention_model(), causal_attention_unfused(1))) == "given");
  CHECK(check_pair(causal_attention_model(), causal_attention_unfused(0)).equivalent());
}

TEST_CASE("the model form compares every value name the models share, outputs first") {
  const FusionReport r = check_pair(layer_norm_model(), layer_norm_unfused(false));
  CHECK(r.outputs == std::vector<std::string>{"Y"});
  Model renamed = layer_norm_unfused(false);
  renamed.graph.outputs[0].name = renamed.graph.nodes.back().outputs[0] = "Z";
  for (Node& n : renamed.graph.nodes)
    for (std::string& o : n.outputs) o = "_" + o;
  CHECK_THROWS_WITH_AS(check_pair(layer_norm_model(), renamed), doctest::Contains("share no output or value name"), Error);
}

TEST_CASE("node form: a wrong com.microsoft Gelu kernel fails against the built-in decomposition") {
  const FusionReport r = check_gelu_kernel<TanhGelu>();
  CHECK(r.unfused == "built-in decomposition");
  CHECK(r.fused == "com.microsoft:Gelu kernel (test)");
  CHECK(first_failing_set(r) == "random 1");
}

TEST_CASE("node form: a plugin kernel against the model-local function of the same operator") {
  Registry reg(&Registry::builtin(), "example");
  example::register_my_fused_gelu(reg);
  using namespace refeval::build;
  Function f;
  f.domain = example::kDomain;
  f.name = "MyFusedGelu";
  f.inputs = {"a", "b"};
  f.outputs = {"y"};
  f.opsets = {{"", 20}};
  f.nodes = {node("Add", {"a", "b"}, {"z"}), node("Gelu", {"z"}, {"y"})};
  const Model m = model(graph("g", {node("MyFusedGelu", {"X", "B"}, {"Y"}, {}, "fg", example::kDomain)},
                              {tensor_info("X", DType::Float, {4, 8})}, {tensor_info("Y", DType::Float, {4, 8})},
                              {{"B", tensor<float>({8}, {-1, -0.5f, 0, 0.5f, 1, 1.5f, 2, 2.5f})}}),
                        {{"", 20}, {example::kDomain, 1}}, 8, {f});
  const FusionReport r = check_node(m, find_nodes(m.graph, "op:MyFusedGelu")[0], reg, unit_feeds(m), {});
  CHECK(r.unfused == "model-local function");
  CHECK(r.equivalent());
  // Without a kernel the node form refuses, naming the node and the fix.
  CHECK_THROWS_WITH_AS(check_node(m, find_nodes(m.graph, "fg")[0], Registry::builtin(), unit_feeds(m), {}),
                       doctest::Contains("node 'fg' (example.fused:MyFusedGelu): no kernel is registered for example.fused:MyFusedGelu"), Error);
}

TEST_CASE("node form: a node inside a body is refused, naming the body it sits in") {
  using namespace refeval::build;
  const Graph then_g = graph("then", {node("Gelu", {"X"}, {"T"}, {}, "inner_gelu", "com.microsoft")}, {}, {tensor_info("T", DType::Float, {4})});
  const Graph else_g = graph("else", {node("Neg", {"X"}, {"E"}, {}, "neg")}, {}, {tensor_info("E", DType::Float, {4})});
  const Model m = model(graph("g", {node("If", {"C"}, {"Y"}, {attr("then_branch", then_g), attr("else_branch", else_g)}, "if")},
                              {tensor_info("C", DType::Bool, {}), tensor_info("X", DType::Float, {4})}, {tensor_info("Y", DType::Float, {4})}),
                        {{"", 20}, {"com.microsoft", 1}});
  const std::vector<NodeMatch> found = find_nodes(m.graph, "if/then_branch/inner_gelu");
  REQUIRE(found.size() == 1);
  CHECK_THROWS_WITH_AS(check_node(m, found[0], Registry::builtin(), {}, {}),
                       "node 'inner_gelu' (com.microsoft:Gelu) is inside a body (if/then_branch/inner_gelu); check-fusion checks nodes of the main graph",
                       Error);
}

TEST_CASE("node form: a kernel whose output has the wrong shape fails, and no oracle error is measured for it") {
  const FusionReport r = check_gelu_kernel<HalfWidthGelu>();
  CHECK_FALSE(r.equivalent());
  for (const SetResult& set : r.sets) {
    CAPTURE(set.set);
    CHECK_FALSE(set.outputs[0].equal);
    REQUIRE(set.oracle.size() == 1);
    CHECK_FALSE(set.oracle[0].has_value());  // the float64 oracle ran, but a (4, 8) and a (4, 16) have no element error
  }
}

TEST_CASE("check_equivalence refuses sides that return different numbers of values") {
  const Runner two = [](const std::map<std::string, Value>&) { return Values{Tensor::scalar<float>(1), Tensor::scalar<float>(2)}; };
  const Runner one = [](const std::map<std::string, Value>&) { return Values{Tensor::scalar<float>(1)}; };
  CHECK_THROWS_WITH_AS(check_equivalence(two, one, {InputSet{"given", {}}}, {}),
                       "input set 'given': the fused side returned 2 values, the unfused 1", Error);
}
