// The basic removals (identity, dropout, noop: passes/eliminate.cc) on the forms their guards
// check: unnamed and unread extra outputs, a chain of hand-overs to graph outputs, a producer of
// several outputs, inputs given as "", zeros whose shape is a run-time value, half-precision
// constants, and the opset-1 Slice of attributes.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "model_type.h"
#include "pass.h"
#include "pattern.h"
#include "refeval/compute_vector.h"
#include "refeval/builder.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::to_standard;

namespace {

int run_pass(Model& m, const optimize::Pass& pass) {
  const optimize::Inference inference = optimize::infer(m);
  optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
  return pass.run(m, ctx);
}

}  // namespace

TEST_CASE("passes branches: a Dropout whose mask output is unnamed, or whose ratio and training_mode are given as \"\", is removed") {
  Model unnamed = model(graph("drop", {node("Dropout", {"x"}, {"d", ""}), node("Neg", {"d"}, {"y"})}, {f32("x", {2, 3})}, {f32("y", {2, 3})}), {{"", 13}});
  CHECK(count_ops(optimized(unnamed, {"dropout"}), "Dropout") == 0);
  Model blanks = model(graph("drop", {node("Dropout", {"x", "", ""}, {"d"}), node("Neg", {"d"}, {"y"})}, {f32("x", {2, 3})}, {f32("y", {2, 3})}), {{"", 13}});
  const Model out = optimized(blanks, {"dropout"});
  CHECK(count_ops(out, "Dropout") == 0);
  REQUIRE(count_ops(out, "Neg") == 1);
  CHECK(out.graph.nodes[0].inputs == std::vector<std::string>{"x"});
}

TEST_CASE("passes branches: an Identity with its output unnamed, or of two inputs (invalid), or no outputs, stays") {
  Model unnamed = model(graph("ids", {node("Identity", {"x"}, {""}), node("Neg", {"x"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})}));
  CHECK(run_pass(unnamed, optimize::identity_elimination_pass()) == 0);
  CHECK(count_ops(unnamed, "Identity") == 1);
  Model two = model(graph("ids", {node("Identity", {"x", "x"}, {"i"}), node("Neg", {"i"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})}));
  CHECK(run_pass(two, optimize::identity_elimination_pass()) == 0);
  Model none = model(graph("ids", {node("Identity", {"x"}, {}), node("Neg", {"x"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})}));
  CHECK(run_pass(none, optimize::identity_elimination_pass()) == 0);
  CHECK(count_ops(none, "Identity") == 1);
}

TEST_CASE("passes branches: an Identity, Dropout or Cast of another domain is someone's custom operator and stays") {
  // A plugin's "Identity" may scale, a "Dropout" may be training-time noise: the names mean the
  // standard operators only in the default domain.
  for (const char* op : {"Identity", "Dropout", "Cast"}) {
    CAPTURE(op);
    Model m = model(graph("custom", {node(op, {"x"}, {"c"}, {attr("to", int64_t(DType::Float))}, "/custom", "my.ops"), node("Neg", {"c"}, {"y"})},
                          {f32("x", {4})}, {f32("y", {4})}),
                    {{"", 13}, {"my.ops", 1}});
    CHECK(run_pass(m, optimize::identity_elimination_pass()) == 0);
    CHECK(run_pass(m, optimize::dropout_elimination_pass()) == 0);
    CHECK(run_pass(m, optimize::noop_elimination_pass()) == 0);
    CHECK(count_ops(m, op) == 1);
  }
}

TEST_CASE("passes branches: identity hands a graph output's name over once; the next Identity on that output stays") {
  // Neg -> n -> Identity -> a (graph output) -> Identity -> b (graph output): Neg writes a; the
  // second Identity reads a, whose producer was just taken out, and stays.
  const Model out = optimized(model(graph("ids", {node("Neg", {"x"}, {"n"}), node("Identity", {"n"}, {"a"}), node("Identity", {"a"}, {"b"})}, {f32("x", {4})},
                                          {f32("a", {4}), f32("b", {4})})),
                              {"identity"});
  REQUIRE(out.graph.nodes.size() == 2);
  CHECK(out.graph.nodes[0].op_type == "Neg");
  CHECK(out.graph.nodes[0].outputs == std::vector<std::string>{"a"});
  CHECK(out.graph.nodes[1].op_type == "Identity");
  CHECK(out.graph.nodes[1].inputs == std::vector<std::string>{"a"});
}

TEST_CASE("passes branches: identity renames one output of a Split, its other output kept") {
  const Model out = optimized(model(graph("ids", {node("Split", {"x"}, {"p", "q"}, {attr("axis", int64_t(0))}), node("Identity", {"p"}, {"y"}), node("Neg", {"q"}, {"z"})},
                                          {f32("x", {4})}, {f32("y", {2}), f32("z", {2})})),
                              {"identity"});
  CHECK(count_ops(out, "Identity") == 0);
  REQUIRE(count_ops(out, "Split") == 1);
  CHECK(out.graph.nodes[0].outputs == std::vector<std::string>{"y", "q"});
}

TEST_CASE("passes branches: noop drops x * 1 in float16 and bfloat16, and x + zeros of ConstantOfShape without a value") {
  for (const DType t : {DType::Float16, DType::BFloat16}) {
    CAPTURE(int(t));
    Model m = model(graph("mul", {node("Cast", {"x"}, {"h"}, {attr("to", int64_t(t))}), node("Mul", {"h", "one"}, {"m"}),
                                  node("Cast", {"m"}, {"y"}, {attr("to", int64_t(DType::Float))})},
                          {f32("x", {2, 3})}, {f32("y", {2, 3})}, {{"one", from_doubles(t, {}, {1.0})}}));
    const Model out = optimized(m, {"noop"});
    CHECK(count_ops(out, "Mul") == 0);
    CHECK(count_ops(out, "Cast") == 2);
  }
  // ConstantOfShape with no value attribute: float zeros.
  Model zeros = model(graph("zeros", {node("ConstantOfShape", {"shape"}, {"z"}), node("Add", {"z", "x"}, {"s"}), node("Neg", {"s"}, {"y"})}, {f32("x", {2, 3})},
                            {f32("y", {})}, {{"shape", ints({2, 3})}}));
  CHECK(count_ops(optimized(zeros, {"noop"}), "Add") == 0);
  // Zeros of a shape fed at run time, of any rank, or of rank 2 against x (1, 3): they may
  // broadcast x larger; the Add stays. (Against x (2, 3), rank-2 zeros cannot: removed.)
  auto fed = [](std::vector<DimSpec> x, DimSpec rank) {
    return model(graph("zeros", {node("ConstantOfShape", {"shape"}, {"z"}, {attr("value", Tensor::from_vector<float>({1}, {0.0f}))}), node("Add", {"x", "z"}, {"s"}),
                                 node("Neg", {"s"}, {"y"})},
                       {f32("x", std::move(x)), tensor_info("shape", DType::Int64, {rank})}, {f32("y", {})}));
  };
  Model any_rank = fed({2, 3}, "n");
  CHECK(run_pass(any_rank, optimize::noop_elimination_pass()) == 0);
  CHECK(count_ops(any_rank, "Add") == 1);
  Model row = fed({1, 3}, 2);
  CHECK(run_pass(row, optimize::noop_elimination_pass()) == 0);
  CHECK(count_ops(row, "Add") == 1);
  Model full = fed({2, 3}, 2);
  CHECK(run_pass(full, optimize::noop_elimination_pass()) == 1);
  CHECK(count_ops(full, "Add") == 0);
}

TEST_CASE("passes branches: noop drops a Slice of everything with its steps given as \"\"; the opset-1 Slice of attributes stays") {
  Model blank = model(graph("slice", {node("Slice", {"x", "zero", "big", "axis", ""}, {"t"}), node("Neg", {"t"}, {"y"})}, {f32("x", {2, 4})}, {f32("y", {})},
                            {{"zero", ints({0})}, {"big", ints({100})}, {"axis", ints({1})}}));
  CHECK(count_ops(optimized(blank, {"noop"}), "Slice") == 0);
  // Slice-1 (starts and ends as attributes) of everything: not this rule's form.
  Model old = model(graph("slice", {node("Slice", {"x"}, {"t"}, {attr("starts", std::vector<int64_t>{0}), attr("ends", std::vector<int64_t>{100}), attr("axes", std::vector<int64_t>{1})}),
                                    node("Neg", {"t"}, {"y"})},
                          {f32("x", {2, 4})}, {f32("y", {})}),
                    {{"", 9}});
  CHECK(run_pass(old, optimize::noop_elimination_pass()) == 0);
  CHECK(count_ops(old, "Slice") == 1);
}

// ---------------------------------------------------------------------------------------------
// standard-ops (--target onnx): com.microsoft operators rewritten into ONNX's.

namespace {

Model ms_graph(std::vector<Node> nodes, std::vector<ValueInfo> inputs, std::vector<ValueInfo> outputs, std::vector<Initializer> inits = {}) {
  return model(graph("g", std::move(nodes), std::move(inputs), std::move(outputs), std::move(inits)), {{"", 17}, {"com.microsoft", 1}, {"my.domain", 1}});
}

Node ms_node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out, std::vector<Attribute> attrs = {}) {
  return node(op, std::move(in), std::move(out), std::move(attrs), op, "com.microsoft");
}

// The rewritten model, checked free of com.microsoft operators and equal to `m` on ramp inputs.
Model standard_equal(const Model& m, std::map<std::string, Value> feeds = {}) {
  auto [out, why] = to_standard(m);
  CHECK(why == "");
  for (const Node& n : out.graph.nodes) CHECK_MESSAGE(n.domain.empty(), n.describe());
  CHECK(out.opsets.count("com.microsoft") == 0);
  if (feeds.empty()) feeds = testing::ramp_feeds(m);
  fusion::CheckOptions check;
  check.repeat = 1;
  check.tolerance.atol = 5e-4;
  check.sets.edge_cases = false;
  CHECK_MESSAGE(optimize::verify(m, out, Registry::builtin(), feeds, check).equivalent(), "the standard model differs from the original");
  return out;
}

bool says(const std::string& why, const std::string& part) {
  CAPTURE(why);
  return why.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("passes branches: standard-ops writes QuickGelu's alpha through CastLike when the input's type is unknown, and leaves other domains alone") {
  // x from a custom operator: no type known, so alpha follows x's type at run time.
  const Model m = ms_graph({node("Mystery", {"x"}, {"m"}, {}, "/Mystery", "my.domain"), ms_node("QuickGelu", {"m"}, {"y"})}, {f32("x", {2, 4})}, {f32("y", {})});
  const auto [out, why] = to_standard(m);
  CHECK(why == "");
  CHECK(count_ops(out, "CastLike") == 1);
  CHECK(count_ops(out, "Sigmoid") == 1);
  CHECK(count_ops(out, "Mystery") == 1);  // another domain's operator is not this pass's
  CHECK(out.opsets.count("com.microsoft") == 0);
}

TEST_CASE("passes branches: standard-ops refuses RotaryEmbedding without num_heads when the hidden size or the cache width is unknown") {
  auto rotary = [](ValueInfo x, ValueInfo cos, std::vector<Initializer> inits = {}) {
    std::vector<ValueInfo> inputs = {std::move(x), tensor_info("pos", DType::Int64, {1, 3})};
    if (cos.type.kind != ValueType::Kind::Unknown) inputs.push_back(cos);
    inputs.push_back(f32("sin", {16, 4}));
    return to_standard(ms_graph({ms_node("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"})}, inputs, {f32("y", {})}, std::move(inits))).second;
  };
  const std::string why = "num_heads is not given and the input's hidden size or the cache width is unknown";
  // x of unknown rank; a cos constant of rank 1 or of width 0; a cos of unknown rank; a 1-D cos input.
  CHECK(says(rotary(tensor_info_unknown_rank("x", DType::Float), f32("cos", {16, 4})), why));
  CHECK(says(rotary(f32("x", {1, 3, 16}), untyped_info("unused"), {{"cos", testing::ramp({64}, 0.0f, 0.01f)}}), why));
  CHECK(says(rotary(f32("x", {1, 3, 16}), untyped_info("unused"), {{"cos", Tensor(DType::Float, {16, 0})}}), why));
  CHECK(says(rotary(f32("x", {1, 3, 16}), tensor_info_unknown_rank("cos", DType::Float)), why));
  CHECK(says(rotary(f32("x", {1, 3, 16}), f32("cos", {64})), why));
  // x of rank 0 (no last axis): the same.
  CHECK(says(rotary(f32("x", {}), f32("cos", {16, 4})), why));
}

TEST_CASE("passes branches: standard-ops on SimplifiedLayerNormalization with an InvStdDev output nobody reads, and TransposeMatMul") {
  const Model sln = ms_graph({ms_node("SimplifiedLayerNormalization", {"x", "g"}, {"y", "inv"}, {attr("epsilon", 1e-5f)})}, {f32("x", {2, 8})}, {f32("y", {2, 8})},
                             {{"g", testing::ramp({8}, 0.5f, 0.05f)}});
  CHECK(count_ops(standard_equal(sln), "RMSNormalization") == 1);
  const Model tmm = ms_graph({ms_node("TransposeMatMul", {"a", "b"}, {"y"}, {attr("transA", int64_t(1))})}, {f32("a", {4, 2}), f32("b", {4, 3})}, {f32("y", {2, 3})});
  const Model out = standard_equal(tmm);
  CHECK(count_ops(out, "MatMul") == 1);
  CHECK(count_ops(out, "Transpose") == 1);
}

TEST_CASE("passes branches: standard-ops refuses MultiHeadAttention forms Attention-23 does not take, each with its reason") {
  auto mha = [](std::vector<std::string> in, std::vector<ValueInfo> extra = {}, std::vector<Initializer> inits = {}) {
    std::vector<ValueInfo> inputs = {f32("q", {2, "seq", 8}), f32("k", {2, "seq", 8}), f32("v", {2, "seq", 8})};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    return to_standard(ms_graph({ms_node("MultiHeadAttention", std::move(in), {"y"}, {attr("num_heads", int64_t(2))})}, inputs, {f32("y", {})}, std::move(inits))).second;
  };
  CHECK(says(mha({"q", "k", "v", "", "", "", "", "", "", "ci"}, {tensor_info("ci", DType::Int32, {2, 1})}), "past_sequence_length / cache_indirection"));
  CHECK(says(mha({"q", "k"}), "packed QKV or KV"));
  CHECK(says(mha({"q", "k2", "v"}, {f32("k2", {2, 8})}), "the key is not known to be 3-D or 4-D"));
  CHECK(says(mha({"q", "k", "v", "bias"}, {f32("bias", {24})}), "the bias is not a 1-D constant"));
  CHECK(says(mha({"q", "k", "v", "bias"}, {}, {{"bias", testing::ramp({2, 12}, 0.0f, 0.01f)}}), "the bias is not a 1-D constant"));
  CHECK(says(mha({"q", "k", "v", "", "mask"}, {tensor_info_unknown_rank("mask", DType::Int32)}), "is not (B, T) or (B, S, T)"));
}

TEST_CASE("passes branches: standard-ops converts a (B, S, T) key padding mask, and com.microsoft Attention without a bias") {
  // MultiHeadAttention with a 3-D mask: one row of keys per query.
  const Model m3 = ms_graph({ms_node("MultiHeadAttention", {"q", "k", "v", "", "mask"}, {"y"}, {attr("num_heads", int64_t(2))})},
                            {f32("q", {2, 3, 8}), f32("k", {2, 3, 8}), f32("v", {2, 3, 8}), tensor_info("mask", DType::Int32, {2, 3, 3})}, {f32("y", {2, 3, 8})});
  std::map<std::string, Value> feeds = testing::ramp_feeds(m3);
  std::vector<int32_t> mask(18, 1);
  mask[2] = mask[5] = 0;  // batch 0: key 2 hidden from queries 0 and 1
  feeds["mask"] = Tensor::from_vector<int32_t>({2, 3, 3}, mask);
  const Model out = standard_equal(m3, feeds);
  CHECK(count_ops(out, "Attention") == 1);
  CHECK(count_ops(out, "Unsqueeze") == 1);
  // com.microsoft Attention with no bias input: no Add after the MatMul.
  const Model packed = ms_graph({ms_node("Attention", {"x", "w"}, {"y"}, {attr("num_heads", int64_t(2))})}, {f32("x", {2, 3, 8})}, {f32("y", {2, 3, 8})},
                                {{"w", testing::ramp({8, 24}, -0.5f, 0.045f)}});
  const Model p = standard_equal(packed);
  CHECK(count_ops(p, "Add") == 0);
  CHECK(count_ops(p, "Split") == 1);
}

TEST_CASE("passes branches: standard-ops writes a causal MultiHeadAttention over keys of another length with an explicit mask, not is_causal") {
  const Model m = ms_graph({ms_node("MultiHeadAttention", {"q", "k", "v"}, {"y"}, {attr("num_heads", int64_t(2)), attr("unidirectional", int64_t(1))})},
                           {f32("q", {2, 3, 8}), f32("k", {2, 5, 8}), f32("v", {2, 5, 8})}, {f32("y", {2, 3, 8})});
  const Model out = standard_equal(m);
  REQUIRE(count_ops(out, "Attention") == 1);
  for (const Node& n : out.graph.nodes)
    if (n.op_type == "Attention") CHECK(n.find_attribute("is_causal") == nullptr);
  CHECK(count_ops(out, "Range") == 2);
}

TEST_CASE("passes branches: standard-ops keeps com.microsoft imported when a node of it is refused") {
  const Model m = ms_graph({ms_node("BiasAdd", {"x", "b", "s"}, {"y"}), ms_node("FastGelu", {"y"}, {"z"})}, {f32("x", {1, 3, 8}), f32("s", {1, 3, 8})}, {f32("z", {1, 3, 8})},
                           {{"b", testing::ramp({8}, 0, 0.1f)}});
  const auto [out, why] = to_standard(m);
  CHECK(says(why, "no standard form is written for com.microsoft BiasAdd"));
  CHECK(count_ops(out, "Gelu") == 1);
  CHECK(out.opsets.count("com.microsoft") == 1);
}

// ---------------------------------------------------------------------------------------------
// The pattern matcher and its attribute and Slice readers (pattern.h), as the passes use them.

namespace {

namespace pat = refeval::optimize;
using refeval::optimize::GraphIndex;

Graph two_inputs(std::vector<Node> nodes, std::vector<Initializer> inits = {}) {
  return graph("g", std::move(nodes), {f32("x", {4}), f32("y", {4})}, {f32("z", {4})}, std::move(inits));
}

}  // namespace

TEST_CASE("passes branches: a pattern node read twice must be one graph node; a pattern node no path reaches never matches") {
  // (-a) + (-a): both Add operands one Neg.
  const pat::Pattern twice{{{"neg", "Neg", {pat::cap("a")}}, {"out", "Add", {pat::node("neg"), pat::node("neg")}}}};
  const Graph same = two_inputs({node("Neg", {"x"}, {"n"}), node("Add", {"n", "n"}, {"z"})});
  CHECK(pat::match(twice, GraphIndex(same), 1, std::vector<bool>(2, false)));
  const Graph two = two_inputs({node("Neg", {"x"}, {"n"}), node("Neg", {"x"}, {"m"}), node("Add", {"n", "m"}, {"z"})});
  pat::MatchFailure failure;
  CHECK(!pat::match(twice, GraphIndex(two), 2, std::vector<bool>(3, false), &failure));
  CHECK(failure.why == "pattern node 'neg' would be two different nodes");
  // A pattern whose "lonely" node no operand reaches: a defect of the pattern, said as such.
  const pat::Pattern lonely{{{"lonely", "Neg", {pat::cap("a")}}, {"out", "Relu", {pat::cap("b")}}}};
  const Graph relu = two_inputs({node("Relu", {"x"}, {"z"})});
  CHECK(!pat::match(lonely, GraphIndex(relu), 0, std::vector<bool>(1, false)));
  pat::MatchFailure why;
  CHECK(!pat::match(lonely, GraphIndex(relu), 0, std::vector<bool>(1, false), &why));
  CHECK(why.why == "the pattern has a node no input path reaches");
}

TEST_CASE("passes branches: an Add pattern of three operands is tried in its own order only; any() takes every value") {
  const pat::Pattern three{{{"out", "Add", {pat::konst("c"), pat::cap("x"), pat::opt()}}}};
  const pat::Pattern two{{{"out", "Add", {pat::konst("c"), pat::cap("x")}}}};
  const Graph g = two_inputs({node("Add", {"x", "half"}, {"z"})}, {{"half", Tensor::scalar<float>(0.5f)}});
  const GraphIndex index(g);
  CHECK(!pat::match(three, index, 0, std::vector<bool>(1, false)));
  const auto m = pat::match(two, index, 0, std::vector<bool>(1, false));
  REQUIRE(m);
  CHECK(m->value("c") == "half");
  const pat::Pattern anything{{{"out", "Add", {pat::any(), pat::val(0.5)}}}};
  CHECK(pat::match(anything, index, 0, std::vector<bool>(1, false)));
}

TEST_CASE("passes branches: a constant capture used twice must be the same constant") {
  const pat::Pattern doubled{{{"out", "Mul", {pat::konst("c"), pat::konst("c")}}}};
  const std::vector<Initializer> inits = {{"half", Tensor::scalar<float>(0.5f)}, {"other", Tensor::scalar<float>(0.5f)}};
  const Graph same = two_inputs({node("Mul", {"half", "half"}, {"z"})}, inits);
  CHECK(pat::match(doubled, GraphIndex(same), 0, std::vector<bool>(1, false)));
  const Graph different = two_inputs({node("Mul", {"half", "other"}, {"z"})}, inits);
  CHECK(!pat::match(doubled, GraphIndex(different), 0, std::vector<bool>(1, false)));
}

TEST_CASE("passes branches: an intermediate's unnamed output does not escape the match") {
  const pat::Pattern p{{{"drop", "Dropout", {pat::cap("x")}}, {"out", "Neg", {pat::node("drop")}}}};
  const Graph g = two_inputs({node("Dropout", {"x"}, {"d", ""}), node("Neg", {"d"}, {"z"})});
  const GraphIndex index(g);
  const auto m = pat::match(p, index, 1, std::vector<bool>(2, false));
  REQUIRE(m);
  CHECK(pat::escaping_intermediate(*m, index) == "");
}

TEST_CASE("passes branches: attribute readers give the fallback for an attribute of another type; Squeeze axes \"\" read the attribute") {
  const Node n = node("Op", {"x", ""}, {"y"}, {attr("i", 1.5f), attr("f", int64_t(2)), attr("l", int64_t(3)), attr("axes", std::vector<int64_t>{1})});
  CHECK(pat::int_attr(n, "i", 7) == 7);
  CHECK(pat::float_attr(n, "f", 0.25f) == 0.25f);
  CHECK(pat::ints_attr(n, "l").empty());
  const Graph g = two_inputs({});
  CHECK(pat::axes_of(n, GraphIndex(g)) == std::vector<int64_t>{1});
}

TEST_CASE("passes branches: Slice bounds are read in both opset forms and refused when unknown, mismatched or out of range") {
  const Graph g = graph("g", {}, {f32("x", {4, 6}), tensor_info("free", DType::Int64, {1})}, {},
                        {{"zero", ints({0})}, {"two", ints({2})}, {"pair", ints({0, 1})}, {"one", ints({1})}, {"minus_three", ints({-3})}, {"three", ints({3})}});
  const GraphIndex index(g);
  auto bounds = [&](std::vector<std::string> in, std::vector<Attribute> a = {}) { return pat::slice_bounds(node("Slice", std::move(in), {"y"}, std::move(a)), index, 2); };
  // Opset 1: without starts or ends, nothing; without axes, axes 0, 1, ...
  CHECK(!bounds({"x"}, {attr("ends", std::vector<int64_t>{2})}));
  CHECK(!bounds({"x"}, {attr("starts", std::vector<int64_t>{0})}));
  const auto old = bounds({"x"}, {attr("starts", std::vector<int64_t>{0}), attr("ends", std::vector<int64_t>{2})});
  REQUIRE(old);
  CHECK(old->axes == std::vector<int64_t>{0});
  // Two inputs: neither form.
  CHECK(!bounds({"x", "zero"}));
  // Starts or ends fed at run time.
  CHECK(!bounds({"x", "free", "two"}));
  CHECK(!bounds({"x", "zero", "free"}));
  // Axes and steps given as "": the defaults; fed at run time: nothing.
  const auto blank = bounds({"x", "zero", "two", "", ""});
  REQUIRE(blank);
  CHECK(blank->steps == std::vector<int64_t>{1});
  CHECK(!bounds({"x", "zero", "two", "free"}));
  CHECK(!bounds({"x", "zero", "two", "one", "free"}));
  // Two axes for one bound; two steps for one bound.
  CHECK(!bounds({"x", "zero", "two", "pair"}));
  CHECK(!bounds({"x", "zero", "two", "one", "pair"}));
  // Axis -3 and 3 of a rank-2 input; axis 1 twice.
  CHECK(!bounds({"x", "zero", "two", "minus_three"}));
  CHECK(!bounds({"x", "zero", "two", "three"}));
  CHECK(bounds({"x", "pair", "pair", "pair"}));  // axes 0 and 1: read
  CHECK(!bounds({"x"}, {attr("starts", std::vector<int64_t>{0, 0}), attr("ends", std::vector<int64_t>{2, 2}), attr("axes", std::vector<int64_t>{1, 1})}));
}

// ---------------------------------------------------------------------------------------------
// Model type detection (model_type.h) on unfused attention blocks and on ORT-fused ones.

namespace {

constexpr int64_t kHeads = 2, kHead = 8, kHidden = kHeads * kHead;

class Block : public testing::GraphUnderConstruction {
 public:
  std::string scalar(float v) { return c(Tensor::scalar<float>(v)); }
  // x W (+ b).
  std::string proj(const std::string& x, float start, bool bias = true) {
    const std::string y = add("MatMul", {x, c(testing::ramp({kHidden, kHidden}, start, 0.013f))});
    return bias ? add("Add", {y, c(testing::ramp({kHidden}, -0.1f, 0.01f))}) : y;
  }
  std::string heads(const std::string& p, std::vector<int64_t> perm = {0, 2, 1, 3}) {
    return add("Transpose", {add("Reshape", {p, c(ints({0, 0, kHeads, kHead}))})}, {attr("perm", perm)});
  }
  // Softmax(q kT / sqrt(8)) v, heads merged, a graph output.
  void attend(const std::string& q, const std::string& kT, const std::string& v, const std::string& name = "/attn/Softmax") {
    const std::string s = add("Div", {add("MatMul", {q, kT}), scalar(std::sqrt(float(kHead)))});
    const std::string p = add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, name);
    out(add("Reshape", {add("Transpose", {add("MatMul", {p, v})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), c(ints({0, 0, kHidden}))}));
  }
  Model model() const {
    Model m = build::model(graph("block", nodes_, inputs_, outputs_, inits_), {{"", 17}});
    for (const Node& n : m.graph.nodes)
      if (!n.domain.empty()) m.opsets[n.domain] = 1;
    return m;
  }
};

optimize::ModelKind kind(const Model& m) {
  const optimize::Inference inference = optimize::infer(m);
  return optimize::detect_model_kind(GraphIndex(m.graph, &inference));
}

}  // namespace

TEST_CASE("passes branches: model type reads a query scaled before its head split (BART's q * scaling) as self-attention") {
  for (const bool scalar_first : {false, true})
    for (const std::string op : {"Mul", "Div"}) {
      if (op == "Div" && scalar_first) continue;
      CAPTURE(scalar_first);
      CAPTURE(op);
      Block b;
      const std::string x = b.input(f32("x", {"batch", "seq", kHidden}));
      const std::string q_proj = b.proj(x, -0.2f), scale = b.scalar(0.35f);
      const std::string scaled = b.add(op, scalar_first ? std::vector<std::string>{scale, q_proj} : std::vector<std::string>{q_proj, scale});
      b.attend(b.heads(scaled), b.heads(b.proj(x, 0.2f), {0, 2, 3, 1}), b.heads(b.proj(x, -0.1f)));
      const optimize::ModelKind k = kind(b.model());
      CHECK(k.type == "bert");
      CHECK(k.reason == "bidirectional self-attention in 1 layer");
    }
}

TEST_CASE("passes branches: model type: a MatMul reading the norm's output as its right operand is no parallel MLP") {
  Block b;
  const std::string x = b.input(f32("x", {"batch", "seq", kHidden}));
  b.attend(b.heads(b.proj(x, -0.2f)), b.heads(b.proj(x, 0.2f), {0, 2, 3, 1}), b.heads(b.proj(x, -0.1f)));
  // (B, 4, S) x (B, S, 16): x on the right.
  b.out(b.add("MatMul", {b.input(f32("w", {"batch", 4, "seq"})), x}));
  const optimize::ModelKind k = kind(b.model());
  CHECK(k.type == "bert");
  CHECK(k.reason.find("side by side") == std::string::npos);
}

TEST_CASE("passes branches: model type: cross-attention beside audio frames is Whisper's; beside nothing, with unbiased keys, too") {
  for (const bool audio : {true, false}) {
    CAPTURE(audio);
    Block b;
    const std::string x = b.input(f32("x", {"batch", "seq", kHidden}));
    std::string enc;
    if (audio) {
      const std::string frames = b.input(f32("frames", {1, 3, 8}));
      const std::string conv = b.add("Conv", {frames, b.c(testing::ramp({kHidden, 3, 3}, -0.2f, 0.02f))}, {attr("pads", std::vector<int64_t>{1, 1})});
      enc = b.add("Transpose", {conv}, {attr("perm", std::vector<int64_t>{0, 2, 1})});
    } else {
      enc = b.input(f32("enc", {"batch", "frames", kHidden}));
    }
    // Keys without a bias (Whisper's k_proj) when there is no Conv to tell.
    b.attend(b.heads(b.proj(x, -0.2f)), b.heads(b.proj(enc, 0.2f, audio), {0, 2, 3, 1}), b.heads(b.proj(enc, -0.1f)));
    const optimize::ModelKind k = kind(b.model());
    CHECK(k.family == "encoder-decoder");
    CHECK(k.type == "whisper");
    CHECK((k.reason.find("key projections without bias") != std::string::npos) == !audio);
  }
}

TEST_CASE("passes branches: model type on fused graphs: unidirectional 0, a Conv over an input of unknown rank, RMSNormalization, other squares") {
  auto fused = [](std::vector<Attribute> a, std::vector<Node> extra = {}, std::vector<ValueInfo> more_inputs = {}, std::vector<Initializer> more_inits = {}) {
    std::vector<Node> nodes = {node("Attention", {"x", "w", "b"}, {"att"}, std::move(a), "/Attention", "com.microsoft")};
    nodes.insert(nodes.end(), extra.begin(), extra.end());
    std::vector<ValueInfo> inputs = {f32("x", {1, 4, 8})};
    inputs.insert(inputs.end(), more_inputs.begin(), more_inputs.end());
    std::vector<Initializer> inits = {{"w", testing::ramp({8, 24}, -0.3f, 0.03f)}, {"b", testing::ramp({24}, 0.0f, 0.01f)}, {"gamma", testing::ramp({8}, 0.5f, 0.1f)},
                                      {"two", Tensor::scalar<float>(2.0f)}, {"three", Tensor::scalar<float>(3.0f)}};
    inits.insert(inits.end(), more_inits.begin(), more_inits.end());
    std::vector<ValueInfo> outputs = {f32("att", {})};
    for (const Node& n : extra) outputs.push_back(f32(n.outputs[0], {}));
    return kind(model(graph("fused", std::move(nodes), std::move(inputs), std::move(outputs), std::move(inits)), {{"", 23}, {"com.microsoft", 1}}));
  };
  const Attribute heads = attr("num_heads", int64_t(2));
  // unidirectional = 0 says bidirectional.
  CHECK(fused({heads, attr("unidirectional", int64_t(0))}).type == "bert");
  // A Conv over a graph input of unknown rank: no image patches.
  CHECK(fused({heads}, {node("Conv", {"pixels", "patch"}, {"p"})}, {tensor_info_unknown_rank("pixels", DType::Float)}, {{"patch", testing::ramp({8, 3, 2, 2}, 0.0f, 0.01f)}})
            .type == "bert");
  // ONNX's RMSNormalization: norms without the mean.
  CHECK(fused({heads}, {node("RMSNormalization", {"att", "gamma"}, {"n"})}).type == "t5");
  // ReduceMean of a cube, or of a product of two values: no mean of squares.
  CHECK(fused({heads}, {node("Pow", {"att", "three"}, {"cube"}), node("ReduceMean", {"cube"}, {"m"})}).type == "bert");
  CHECK(fused({heads}, {node("Mul", {"att", "x"}, {"prod"}), node("ReduceMean", {"prod"}, {"m"})}).type == "bert");
  // ReduceMean(Pow(x, 2)) of a graph input: not centred, so RMS.
  CHECK(fused({heads}, {node("Pow", {"x", "two"}, {"sq"}), node("ReduceMean", {"sq"}, {"m"})}).type == "t5");
  // A com.microsoft-domain Softmax alone is not counted as one.
  const Model ms_softmax = model(graph("s", {node("Softmax", {"x"}, {"y"}, {}, "/S", "com.microsoft")}, {f32("x", {1, 10})}, {f32("y", {})}), {{"", 17}, {"com.microsoft", 1}});
  CHECK(kind(ms_softmax).reason == "");
}

TEST_CASE("passes branches: model type on vision graphs: a Sigmoid of a graph input or of no product is no QuickGelu") {
  auto vision = [](std::vector<Node> extra) {
    std::vector<Node> nodes = {node("Conv", {"pixels", "patch"}, {"p"}, {attr("strides", std::vector<int64_t>{2, 2})}), node("Reshape", {"p", "to_rows"}, {"pr"}),
                               node("Transpose", {"pr"}, {"x"}, {attr("perm", std::vector<int64_t>{0, 2, 1})}),
                               node("Attention", {"x", "w", "b"}, {"att"}, {attr("num_heads", int64_t(2))}, "/Attention", "com.microsoft")};
    nodes.insert(nodes.end(), extra.begin(), extra.end());
    const std::string last = nodes.back().outputs[0];
    return kind(model(graph("vit", std::move(nodes), {f32("pixels", {1, 3, 4, 4})}, {f32(last, {})},
                            {{"patch", testing::ramp({8, 3, 2, 2}, -0.2f, 0.02f)}, {"to_rows", ints({1, 8, 4})}, {"w", testing::ramp({8, 24}, -0.3f, 0.03f)},
                             {"b", testing::ramp({24}, 0.0f, 0.01f)}}),
                      {{"", 17}, {"com.microsoft", 1}}));
  };
  CHECK(vision({node("Sigmoid", {"pixels"}, {"s"})}).type == "vit");
  CHECK(vision({node("Relu", {"att"}, {"r"}), node("Sigmoid", {"r"}, {"s"})}).type == "vit");
}

TEST_CASE("passes branches: --model-type t5 on a decoder, and clip on an encoder, are mismatches") {
  const optimize::ModelKind gpt2{"gpt2", "decoder", "causal self-attention in 1 layer"};
  CHECK(optimize::type_mismatch("t5", gpt2) ==
        "--model-type t5, but the graph shows gpt2 (decoder: causal self-attention in 1 layer); every fusion the graph allows is applied");
  const optimize::ModelKind bert{"bert", "encoder", "bidirectional self-attention in 1 layer"};
  CHECK_FALSE(optimize::type_mismatch("clip", bert).empty());
}

namespace {

// Self-attention on x (B, S, 16) with `mask` added to the scores before the Softmax.
Model masked_block(const std::function<std::string(Block&, const std::string&)>& mask, DimSpec seq = "seq") {
  Block b;
  const std::string x = b.input(f32("x", {"batch", seq, kHidden}));
  const std::string q = b.heads(b.proj(x, -0.2f)), kT = b.heads(b.proj(x, 0.2f), {0, 2, 3, 1}), v = b.heads(b.proj(x, -0.1f));
  std::string s = b.add("Div", {b.add("MatMul", {q, kT}), b.scalar(std::sqrt(float(kHead)))});
  s = b.add("Add", {s, mask(b, x)});
  const std::string p = b.add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, "/attn/Softmax");
  b.out(b.add("Reshape", {b.add("Transpose", {b.add("MatMul", {p, v})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), b.c(ints({0, 0, kHidden}))}));
  return b.model();
}

// Positions 0 .. S-1 of x's sequence axis: Range(0, S, 1).
std::string positions(Block& b, const std::string& x) {
  const std::string len = b.add("Gather", {b.add("Shape", {x}), b.c(Tensor::scalar<int64_t>(1))}, {attr("axis", int64_t(0))});
  return b.add("Range", {b.c(Tensor::scalar<int64_t>(0)), len, b.c(Tensor::scalar<int64_t>(1))});
}

}  // namespace

TEST_CASE("passes branches: model type: a bias from comparing run-time positions is a triangle (a decoder); against a constant it is not") {
  // HF's arange(T) < (arange(T) + 1).view(T, 1): key j visible to query i when j < i + 1; the
  // row positions through a Clip with no minimum ("" input).
  const Model tri = masked_block([](Block& b, const std::string& x) {
    const std::string r = positions(b, x);
    const std::string rows = b.add("Unsqueeze", {b.add("Clip", {b.add("Add", {r, b.c(Tensor::scalar<int64_t>(1))}), "", b.c(Tensor::scalar<int64_t>(1000))}),
                                                 b.c(ints({1}))});
    const std::string keep = b.add("Less", {r, rows});
    return b.add("Where", {keep, b.scalar(0.0f), b.scalar(-10000.0f)});
  });
  const optimize::ModelKind k = kind(tri);
  CHECK(k.family == "decoder");
  CHECK(k.reason.find("a mask computed from a triangle") != std::string::npos);
  // T5's buckets: positions compared with a constant; a run-time bias, no triangle.
  const Model buckets = masked_block([](Block& b, const std::string& x) {
    const std::string r = positions(b, x);
    const std::string distance = b.add("Sub", {b.add("Unsqueeze", {r, b.c(ints({0}))}), b.add("Unsqueeze", {r, b.c(ints({1}))})});
    const std::string near = b.add("Less", {b.c(Tensor::scalar<int64_t>(2)), distance});
    return b.add("Where", {near, b.scalar(0.5f), b.scalar(-0.5f)});
  });
  const optimize::ModelKind e = kind(buckets);
  CAPTURE(e.reason);
  CHECK(e.type == "bert");
  CHECK(e.reason.find("with a run-time mask or bias") != std::string::npos);
}

TEST_CASE("passes branches: model type: heads split straight from the states (no projection) are self-attention") {
  Block b;
  const std::string x = b.input(f32("x", {"batch", "seq", kHidden}));
  b.attend(b.heads(x), b.heads(x, {0, 2, 3, 1}), b.heads(x));
  const optimize::ModelKind k = kind(b.model());
  CHECK(k.type == "bert");
  CHECK(k.reason == "bidirectional self-attention in 1 layer");
}

TEST_CASE("passes branches: model type: causal self-attention beside cross-attention is an encoder-decoder with a causal decoder") {
  Block b;
  const std::string x = b.input(f32("x", {1, 3, kHidden}));
  const std::string enc = b.input(f32("enc", {1, "frames", kHidden}));
  {  // causal self-attention: a 4 x 4 lower-triangular buffer sliced [0, 3) on both axes
    std::vector<float> tril(16);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) tril[size_t(i * 4 + j)] = j <= i;
    const std::string q = b.heads(b.proj(x, -0.2f)), kT = b.heads(b.proj(x, 0.2f), {0, 2, 3, 1}), v = b.heads(b.proj(x, -0.1f));
    const std::string s = b.add("Div", {b.add("MatMul", {q, kT}), b.scalar(std::sqrt(float(kHead)))});
    const std::string keep = b.add("Cast", {b.add("Slice", {b.c(Tensor::from_vector<float>({1, 1, 4, 4}, tril)), b.c(ints({0, 0})), b.c(ints({3, 3})), b.c(ints({2, 3}))})},
                                   {attr("to", int64_t(DType::Bool))});
    const std::string masked = b.add("Where", {keep, s, b.scalar(-1e9f)});
    const std::string p = b.add("Softmax", {masked}, {attr("axis", int64_t(-1))}, 1, "/self/Softmax");
    b.out(b.add("Reshape", {b.add("Transpose", {b.add("MatMul", {p, v})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), b.c(ints({0, 0, kHidden}))}));
  }
  b.attend(b.heads(b.proj(x, -0.25f)), b.heads(b.proj(enc, 0.25f), {0, 2, 3, 1}), b.heads(b.proj(enc, -0.15f)), "/cross/Softmax");
  const optimize::ModelKind k = kind(b.model());
  CHECK(k.family == "encoder-decoder");
  CHECK(k.type == "bart");
  CHECK(k.reason.find("causal self-attention in 1 layer") != std::string::npos);
}
