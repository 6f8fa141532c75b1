// The optimizer's basic passes on the forms the other optimizer tests do not feed: look-alikes each
// pass must leave as they are (one condition of the pass failing), and accepted variants (another
// exporter's form, dtype, opset, fixed or dynamic shapes). A rewrite is checked equivalent to the
// original with the evaluator (optimize_test_util.h), and against literal values where the
// arithmetic is short. Graphs the evaluator cannot run (an invalid operator the pass must still
// not touch) run the pass alone, without the check.
#include <doctest/doctest.h>

#include "optimize_test_util.h"
#include "pass.h"
#include "refeval/compute_vector.h"
#include "shape_inference.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::ramp;

namespace {

Tensor floats(Shape shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), std::move(v)); }

// `pass` alone on `m`, inference from `m` itself; returns how many rewrites it made. No check
// with the evaluator: for graphs it does not run.
int run_alone(Model& m, const optimize::Pass& pass) {
  const optimize::Inference inference = optimize::infer(m);
  optimize::PassContext ctx{Registry::builtin(), &inference, nullptr};
  return pass.run(m, ctx);
}

const Node& only(const Model& m, const std::string& op) {
  REQUIRE(count_ops(m, op) == 1);
  return *std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
}

std::vector<float> values_of(const Model& m, const std::string& initializer) {
  const Initializer* i = m.graph.find_initializer(initializer);
  REQUIRE(i != nullptr);
  const Tensor* t = &i->value;
  REQUIRE(t != nullptr);
  REQUIRE(t->dtype() == DType::Float);
  return std::vector<float>(t->data<float>(), t->data<float>() + t->size());
}

// Conv (x, w, bias?) -> BatchNormalization with the statistics given, over x (1, 2, 3, 3).
Model conv_bn(Tensor w, std::optional<Tensor> bias, Tensor scale, Tensor shift, Tensor mean, Tensor var, std::vector<Attribute> bn_attrs = {},
              std::vector<std::string> bn_outputs = {"y"}, int64_t opset = 17) {
  std::vector<Initializer> inits = {{"w", std::move(w)}, {"scale", std::move(scale)}, {"shift", std::move(shift)}, {"mean", std::move(mean)},
                                    {"var", std::move(var)}};
  std::vector<std::string> conv_in = {"x", "w"};
  if (bias) conv_in.push_back("b"), inits.push_back({"b", *bias});
  const int64_t M = inits[0].value.dim(0), C = inits[0].value.rank() > 1 ? inits[0].value.dim(1) : 1;
  return model(graph("cbn", {node("Conv", conv_in, {"c"}, {}, "/Conv"), node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, bn_outputs, bn_attrs, "/BN")},
                     {f32("x", {1, C, 3, 3})}, {f32("y", {1, M, 3, 3})}, std::move(inits)),
               {{"", opset}});
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// conv-bn: Conv + inference BatchNormalization -> one Conv with folded weights and bias.

TEST_CASE("conv-bn: a Conv without bias folds into the literal weights W * s and bias (0 - mean) * s + shift") {
  // torchvision's conv(bias=False) + bn: w = [2, 3] (2 output channels of 1x1), scale [1, 2],
  // shift [0.5, -1], mean [1, 0], var [3, 0], epsilon 1: s = [1/2, 2/1] = [0.5, 2].
  const Model m = conv_bn(floats({2, 1, 1, 1}, {2, 3}), std::nullopt, floats({2}, {1, 2}), floats({2}, {0.5f, -1}), floats({2}, {1, 0}),
                          floats({2}, {3, 0}), {attr("epsilon", 1.0f)});
  const Model out = optimized(m, {"conv-bn"});
  REQUIRE(out.graph.nodes.size() == 1);
  const Node& conv = only(out, "Conv");
  REQUIRE(conv.inputs.size() == 3);
  CHECK(values_of(out, conv.inputs[1]) == std::vector<float>{1, 6});   // 2 * 0.5, 3 * 2
  CHECK(values_of(out, conv.inputs[2]) == std::vector<float>{0, -1});  // (0 - 1) * 0.5 + 0.5, (0 - 0) * 2 - 1
  CHECK(conv.outputs == std::vector<std::string>{"y"});
}

TEST_CASE("conv-bn: a Conv with bias folds B into the bias; double weights stay double") {
  // Same folding with a bias B = [1, -2]: ((1 - 1) * 0.5 + 0.5, (-2 - 0) * 2 - 1) = (0.5, -5).
  const Model m = conv_bn(floats({2, 1, 1, 1}, {2, 3}), floats({2}, {1, -2}), floats({2}, {1, 2}), floats({2}, {0.5f, -1}), floats({2}, {1, 0}),
                          floats({2}, {3, 0}), {attr("epsilon", 1.0f)});
  const Model out = optimized(m, {"conv-bn"});
  CHECK(values_of(out, only(out, "Conv").inputs[2]) == std::vector<float>{0.5f, -5});
  // A float64 model (ONNX's Conv and BatchNormalization take double): the folded tensors keep it.
  auto d = [](Shape s, std::vector<double> v) { return Tensor::from_vector<double>(std::move(s), std::move(v)); };
  Model dbl = model(graph("cbn", {node("Conv", {"x", "w"}, {"c"}), node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, {attr("epsilon", 1.0f)})},
                          {tensor_info("x", DType::Double, {1, 1, 2, 2})}, {tensor_info("y", DType::Double, {1, 2, 2, 2})},
                          {{"w", d({2, 1, 1, 1}, {2, 3})}, {"scale", d({2}, {1, 2})}, {"shift", d({2}, {0.5, -1})}, {"mean", d({2}, {1, 0})}, {"var", d({2}, {3, 0})}}));
  REQUIRE(run_alone(dbl, optimize::conv_bn_pass()) == 1);
  const Initializer* wi = dbl.graph.find_initializer(only(dbl, "Conv").inputs[1]);
  REQUIRE(wi != nullptr);
  const Tensor* w = &wi->value;
  REQUIRE(w != nullptr);
  CHECK(w->dtype() == DType::Double);
  CHECK(w->data<double>()[1] == 6.0);
}

TEST_CASE("conv-bn: a BatchNormalization in training mode, or with its running statistics read, stays") {
  const Tensor w = ramp({2, 1, 1, 1}, 0.5f, 0.25f), v = floats({2}, {1, 2});
  // training_mode = 1 (opset 15): the batch's own statistics, not the constants.
  Model training = conv_bn(w, std::nullopt, v, v, v, v, {attr("training_mode", int64_t(1))}, {"y"}, 15);
  CHECK(run_alone(training, optimize::conv_bn_pass()) == 0);
  CHECK(count_ops(training, "BatchNormalization") == 1);
  // An opset-9 export that names running_mean (a training graph): output 1 present.
  Model stats = conv_bn(w, std::nullopt, v, v, v, v, {}, {"y", "running_mean"}, 9);
  CHECK(run_alone(stats, optimize::conv_bn_pass()) == 0);
  // The same with output 1 left empty and only output 2 named: still the inference form by the
  // pass's reading (output 1 empty), folded.
  Model empty_first = conv_bn(w, std::nullopt, v, v, v, v, {}, {"y", ""}, 9);
  CHECK(run_alone(empty_first, optimize::conv_bn_pass()) == 1);
  CHECK(count_ops(empty_first, "BatchNormalization") == 0);
}

TEST_CASE("conv-bn: a bias read from a graph input, a non-float or 2-D weight, or statistics of another length stay") {
  const Tensor v = floats({2}, {1, 2});
  // The Conv's bias is a graph input (overridable): nothing to fold it with.
  Model fed = conv_bn(ramp({2, 1, 1, 1}, 0.5f, 0.25f), std::nullopt, v, v, v, v);
  fed.graph.nodes[0].inputs.push_back("b");
  fed.graph.inputs.push_back(f32("b", {2}));
  CHECK(run_alone(fed, optimize::conv_bn_pass()) == 0);
  // An int32 weight (a hand-made graph no evaluator runs): not folded in float.
  Model int_w = conv_bn(Tensor::from_vector<int32_t>({2, 1, 1, 1}, {2, 3}), std::nullopt, v, v, v, v);
  CHECK(run_alone(int_w, optimize::conv_bn_pass()) == 0);
  // A 2-D weight: not a convolution kernel of any spatial rank.
  Model flat_w = conv_bn(floats({2, 1}, {2, 3}), std::nullopt, v, v, v, v);
  CHECK(run_alone(flat_w, optimize::conv_bn_pass()) == 0);
  // Statistics of 3 channels for a Conv of 2 output channels: each of the four, in turn.
  for (int wrong = 0; wrong < 4; ++wrong) {
    CAPTURE(wrong);
    std::vector<Tensor> stats(4, v);
    stats[size_t(wrong)] = floats({3}, {1, 2, 3});
    Model mismatched = conv_bn(ramp({2, 1, 1, 1}, 0.5f, 0.25f), std::nullopt, stats[0], stats[1], stats[2], stats[3]);
    CHECK(run_alone(mismatched, optimize::conv_bn_pass()) == 0);
    CHECK(count_ops(mismatched, "BatchNormalization") == 1);
  }
}

// ---------------------------------------------------------------------------------------------
// matmul-add-gemm: MatMul(A 2-D, B const) + C -> Gemm when C broadcasts to (M, N) one way.

TEST_CASE("matmul-add-gemm: C of (N), (1, N) and (M, N) with M fixed fuse; (M, N) with M dynamic, or a 3-D A, stay") {
  auto mm_add = [](std::vector<DimSpec> a_dims, Tensor c) {
    std::vector<DimSpec> out = a_dims;
    out.back() = 3;
    return model(graph("gemm", {node("MatMul", {"a", "b"}, {"mm"}), node("Add", {"mm", "c"}, {"y"})}, {f32("a", a_dims)}, {f32("y", out)},
                       {{"b", ramp({4, 3}, -0.3f, 0.05f)}, {"c", std::move(c)}}));
  };
  // A bias vector (N): torch's nn.Linear on a 2-D input.
  CHECK(count_ops(optimized(mm_add({"batch", 4}, ramp({3}, 0.1f, 0.1f)), {"matmul-add-gemm"}), "Gemm") == 1);
  // A (1, N) row: broadcasts over any number of rows, M dynamic.
  CHECK(count_ops(optimized(mm_add({"batch", 4}, ramp({1, 3}, 0.1f, 0.1f)), {"matmul-add-gemm"}), "Gemm") == 1);
  // A full (M, N) matrix with M = 2 fixed (batch 2).
  CHECK(count_ops(optimized(mm_add({2, 4}, ramp({2, 3}, 0.1f, 0.1f)), {"matmul-add-gemm"}), "Gemm") == 1);
  // (M, N) with M a symbol: the Add is only valid for batch 2 (or 1), which Gemm's C does not
  // allow for 1; not known here.
  Model dynamic = mm_add({"batch", 4}, ramp({2, 3}, 0.1f, 0.1f));
  CHECK(run_alone(dynamic, optimize::matmul_add_gemm_pass()) == 0);
  // (M, N) with M fixed at 1 but C of 2 rows: the Add broadcasts A's single row (Gemm would not).
  CHECK(count_ops(optimized(mm_add({1, 4}, ramp({2, 3}, 0.1f, 0.1f)), {"matmul-add-gemm"}), "Gemm") == 0);
  // (N') of another width, and a 3-D C, do not fit.
  Model wide = mm_add({2, 4}, ramp({1, 2, 3}, 0.1f, 0.1f));
  CHECK(run_alone(wide, optimize::matmul_add_gemm_pass()) == 0);
  Model wrong_n = mm_add({2, 4}, ramp({2, 1}, 0.1f, 0.1f));
  CHECK(run_alone(wrong_n, optimize::matmul_add_gemm_pass()) == 0);
  // A 3-D A (batch, seq, K): MatMul broadcasts, Gemm is 2-D only.
  CHECK(count_ops(optimized(mm_add({2, 2, 4}, ramp({3}, 0.1f, 0.1f)), {"matmul-add-gemm"}), "Gemm") == 0);
}

// ---------------------------------------------------------------------------------------------
// identity / dropout / noop: nodes that pass their input through.

TEST_CASE("dropout: removed at opset >= 7 with training_mode absent or a constant false; kept when its mask is read, trained or before opset 7") {
  auto dropout = [](std::vector<std::string> in, std::vector<std::string> out, int64_t opset, std::vector<Initializer> inits = {},
                    std::vector<ValueInfo> extra_in = {}) {
    std::vector<ValueInfo> inputs = {f32("x", {2, 3})};
    for (ValueInfo& v : extra_in) inputs.push_back(std::move(v));
    std::vector<ValueInfo> outputs = {f32("y", {2, 3})};
    std::vector<Node> nodes = {node("Dropout", std::move(in), out, {}, "/Dropout"), node("Neg", {out[0]}, {"y"})};
    if (out.size() > 1 && out[1] == "mask") nodes.push_back(node("Not", {out[1]}, {"kept"})), outputs.push_back(tensor_info("kept", DType::Bool, {2, 3}));
    return model(graph("drop", std::move(nodes), std::move(inputs), std::move(outputs), std::move(inits)), {{"", opset}});
  };
  // Opset 13 with the ratio given and training_mode absent: the identity.
  CHECK(count_ops(optimized(dropout({"x", "ratio"}, {"d"}, 13, {{"ratio", Tensor::scalar<float>(0.5f)}}), {"dropout"}), "Dropout") == 0);
  // training_mode = true, or a graph input: the drop happens (or may).
  Model on = dropout({"x", "ratio", "training"}, {"d"}, 13, {{"ratio", Tensor::scalar<float>(0.5f)}, {"training", Tensor::scalar<bool>(true)}});
  CHECK(run_alone(on, optimize::dropout_elimination_pass()) == 0);
  Model fed = dropout({"x", "", "training"}, {"d"}, 13, {}, {tensor_info("training", DType::Bool, {})});
  CHECK(run_alone(fed, optimize::dropout_elimination_pass()) == 0);
  // The mask read by another node: the Dropout stays (its second output is needed).
  CHECK(count_ops(optimized(dropout({"x"}, {"d", "mask"}, 13), {"dropout"}), "Dropout") == 1);
  // The mask named but read by nobody: removed.
  CHECK(count_ops(optimized(dropout({"x"}, {"d", "unread_mask"}, 13), {"dropout"}), "Dropout") == 0);
  // Opset 6 (is_test semantics): not taken for the identity.
  Model old = dropout({"x"}, {"d"}, 6);
  CHECK(run_alone(old, optimize::dropout_elimination_pass()) == 0);
}

// Torch exports model.eval() with training_mode a constant false (a bool tensor, Dropout-12's T2).
TEST_CASE("dropout: a constant false training_mode (torch's eval export) is the identity") {
  Model m = model(graph("drop", {node("Dropout", {"x", "ratio", "training"}, {"d"}, {}, "/Dropout"), node("Neg", {"d"}, {"y"})}, {f32("x", {2, 3})},
                        {f32("y", {2, 3})}, {{"ratio", Tensor::scalar<float>(0.5f)}, {"training", Tensor::scalar<bool>(false)}}),
                  {{"", 13}});
  CHECK(count_ops(optimized(m, {"dropout"}), "Dropout") == 0);
}

// A custom arg-max (float in, int64 out, declared nowhere) followed by Cast(to = FLOAT): inference
// cannot know the custom output's type, so the Cast is no known no-op and stays.
TEST_CASE("noop: a Cast to float of a custom operator's output, whose type nothing declares, stays") {
  Model m = model(graph("noop", {node("CustomArgMax", {"x"}, {"idx"}, {}, "/CustomArgMax", "my.domain"), node("Cast", {"idx"}, {"y"}, {attr("to", int64_t(DType::Float))}),
                                 node("Neg", {"y"}, {"z"})},
                        {f32("x", {4})}, {f32("z", {})}),
                  {{"", 17}, {"my.domain", 1}});
  CHECK(run_alone(m, optimize::noop_elimination_pass()) == 0);
  CHECK(count_ops(m, "Cast") == 1);
}

TEST_CASE("identity: a chain ending in a graph output hands the name over once; a graph input or a shared value keeps the Identity") {
  // x -> Identity -> a -> Identity -> y (graph output): the first goes, the second reads x now and
  // x is a graph input, so it stays as the output's node.
  const Model chain = optimized(model(graph("ids", {node("Identity", {"x"}, {"a"}), node("Identity", {"a"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})})),
                                {"identity"});
  REQUIRE(chain.graph.nodes.size() == 1);
  CHECK(chain.graph.nodes[0].inputs == std::vector<std::string>{"x"});
  // Neg -> n -> Identity -> y, with n also read by another node: n cannot take the name y.
  const Model shared = optimized(model(graph("ids", {node("Neg", {"x"}, {"n"}), node("Identity", {"n"}, {"y"}), node("Abs", {"n"}, {"z"})},
                                             {f32("x", {4})}, {f32("y", {4}), f32("z", {4})})),
                                 {"identity"});
  CHECK(count_ops(shared, "Identity") == 1);
  // Neg -> n (a graph output too) -> Identity -> y: n keeps its own name.
  const Model both = optimized(model(graph("ids", {node("Neg", {"x"}, {"n"}), node("Identity", {"n"}, {"y"})}, {f32("x", {4})}, {f32("n", {4}), f32("y", {4})})),
                               {"identity"});
  CHECK(count_ops(both, "Identity") == 1);
  // Neg -> n -> Identity -> y alone: Neg writes y directly.
  const Model handed = optimized(model(graph("ids", {node("Neg", {"x"}, {"n"}), node("Identity", {"n"}, {"y"})}, {f32("x", {4})}, {f32("y", {4})})),
                                 {"identity"});
  REQUIRE(handed.graph.nodes.size() == 1);
  CHECK(handed.graph.nodes[0].outputs == std::vector<std::string>{"y"});
}

TEST_CASE("noop: x * 1 in double and float16, x + zeros of ConstantOfShape; a non-zero fill or a broadcasting zeros stays") {
  // torch's `x * 1.0` on a float64 tensor, and on a half one.
  for (const DType t : {DType::Double, DType::Float16}) {
    CAPTURE(int(t));
    const Tensor one = t == DType::Double ? Tensor::scalar<double>(1.0) : from_doubles(DType::Float16, {}, {1.0});
    Model m = model(graph("mul", {node("Mul", {"x", "one"}, {"m"}), node("Neg", {"m"}, {"y"})}, {tensor_info("x", t, {2, 3})}, {tensor_info("y", t, {2, 3})},
                          {{"one", one}}));
    CHECK(run_alone(m, optimize::noop_elimination_pass()) == 1);
    CHECK(count_ops(m, "Mul") == 0);
  }
  // x + ConstantOfShape(shape(x)) of value 0 (GPT-NeoX's baddbmm with zeros, beta 1); of value 2 it
  // is a real Add; zeros of (2, 2, 3) broadcast x (2, 3) larger.
  auto zeros_add = [](float fill, std::vector<int64_t> shape) {
    std::vector<int64_t> out = shape;
    return model(graph("zeros", {node("ConstantOfShape", {"shape"}, {"z"}, {attr("value", Tensor::from_vector<float>({1}, {fill}))}), node("Add", {"x", "z"}, {"s"}),
                                 node("Neg", {"s"}, {"y"})},
                       {f32("x", {2, 3})}, {f32("y", {})}, {{"shape", ints(std::move(shape))}}));
  };
  CHECK(count_ops(optimized(zeros_add(0.0f, {2, 3}), {"noop"}), "Add") == 0);
  CHECK(count_ops(optimized(zeros_add(2.0f, {2, 3}), {"noop"}), "Add") == 1);
  CHECK(count_ops(optimized(zeros_add(0.0f, {2, 2, 3}), {"noop"}), "Add") == 1);
}

TEST_CASE("noop: Slice with unit steps keeping the shape, identity Transpose, Concat of one value; other forms stay") {
  auto one = [](Node n, std::vector<DimSpec> in, std::vector<Initializer> inits = {}) {
    return model(graph("noop", {std::move(n), node("Neg", {"t"}, {"y"})}, {f32("x", std::move(in))}, {f32("y", {})}, std::move(inits)));
  };
  const std::vector<Initializer> bounds = {{"zero", ints({0})}, {"big", ints({100})}, {"last", ints({-1})}, {"one", ints({1})}, {"past_start", ints({-100})}};
  // q[..., 0:100:1] with explicit unit steps: everything.
  CHECK(count_ops(optimized(one(node("Slice", {"x", "zero", "big", "last", "one"}, {"t"}), {2, 4}, bounds), {"noop"}), "Slice") == 0);
  // Steps of -1 from the end: the columns reversed, of the same shape; kept.
  CHECK(count_ops(optimized(one(node("Slice", {"x", "last", "past_start", "last", "last"}, {"t"}), {2, 4}, bounds), {"noop"}), "Slice") == 1);
  // Transpose with perm (0, 1): the identity; with no perm (a reversal): kept.
  CHECK(count_ops(optimized(one(node("Transpose", {"x"}, {"t"}, {attr("perm", std::vector<int64_t>{0, 1})}), {2, 4}), {"noop"}), "Transpose") == 0);
  CHECK(count_ops(optimized(one(node("Transpose", {"x"}, {"t"}), {2, 4}), {"noop"}), "Transpose") == 1);
  // Concat(x, empty (2, 0)) on the last axis is x; Concat(x, x) is not; a one-input Concat is not
  // this rule's (it is a copy the identity-like rules do not take).
  const std::vector<Initializer> empty = {{"e", Tensor(DType::Float, {2, 0})}};
  CHECK(count_ops(optimized(one(node("Concat", {"x", "e"}, {"t"}, {attr("axis", int64_t(-1))}), {2, 4}, empty), {"noop"}), "Concat") == 0);
  CHECK(count_ops(optimized(one(node("Concat", {"x", "x"}, {"t"}, {attr("axis", int64_t(-1))}), {2, 4}), {"noop"}), "Concat") == 1);
  CHECK(count_ops(optimized(one(node("Concat", {"x"}, {"t"}, {attr("axis", int64_t(0))}), {2, 4}), {"noop"}), "Concat") == 1);
  // x (4) * ones (1, 1): the product is (1, 4), a rank more than x; kept.
  CHECK(count_ops(optimized(one(node("Mul", {"x", "ones"}, {"t"}), {4}, {{"ones", Tensor::from_vector<float>({1, 1}, {1.0f})}}), {"noop"}), "Mul") == 1);
  // A Concat with a custom operator's output (of unknown shape): kept.
  Model unknown = model(graph("noop", {node("Mystery", {"x"}, {"m"}, {}, "", "my.domain"), node("Concat", {"x", "m"}, {"y"}, {attr("axis", int64_t(0))})},
                              {f32("x", {4})}, {f32("y", {})}),
                        {{"", 17}, {"my.domain", 1}});
  CHECK(run_alone(unknown, optimize::noop_elimination_pass()) == 0);
  // A Cast to float of a float input: gone; a Cast to int32: kept.
  CHECK(count_ops(optimized(one(node("Cast", {"x"}, {"t"}, {attr("to", int64_t(DType::Float))}), {2, 4}), {"noop"}), "Cast") == 0);
  CHECK(count_ops(optimized(one(node("Cast", {"x"}, {"t"}, {attr("to", int64_t(DType::Int32))}), {2, 4}), {"noop"}), "Cast") == 1);
}

// ---------------------------------------------------------------------------------------------
// cse and constant-sharing.

TEST_CASE("cse: equal nodes with float-list and string attributes merge; random nodes and graph outputs do not") {
  // Float lists: Constant's value_floats, equal then different: x + c1, times c2.
  auto two_constants = [](std::vector<float> c1, std::vector<float> c2) {
    return model(graph("cse", {node("Constant", {}, {"c1"}, {attr("value_floats", c1)}), node("Constant", {}, {"c2"}, {attr("value_floats", c2)}),
                               node("Add", {"x", "c1"}, {"a"}), node("Mul", {"a", "c2"}, {"y"})},
                       {f32("x", {2})}, {f32("y", {2})}));
  };
  CHECK(count_ops(optimized(two_constants({1.5f, 2.5f}, {1.5f, 2.5f}), {"cse"}), "Constant") == 1);
  CHECK(count_ops(optimized(two_constants({1.5f, 2.5f}, {1.5f, 3.5f}), {"cse"}), "Constant") == 2);
  // String lists: Constant's value_strings, twice the same.
  const Model strings = optimized(model(graph("cse", {node("Constant", {}, {"s1"}, {attr("value_strings", std::vector<std::string>{"a", "b"})}),
                                                      node("Constant", {}, {"s2"}, {attr("value_strings", std::vector<std::string>{"a", "b"})}),
                                                      node("Concat", {"s1", "s2"}, {"y"}, {attr("axis", int64_t(0))})},
                                                {}, {tensor_info("y", DType::String, {4})})),
                                  {"cse"});
  CHECK(count_ops(strings, "Constant") == 1);
  // Two RandomNormalLike of x: never one.
  // (Run alone: two runs of a random graph never agree.)
  Model random = model(graph("cse", {node("RandomNormalLike", {"x"}, {"a"}), node("RandomNormalLike", {"x"}, {"b"}), node("Add", {"a", "b"}, {"y"})},
                             {f32("x", {2})}, {f32("y", {2})}));
  CHECK(run_alone(random, optimize::cse_pass()) == 0);
  // Two Neg(x) that are both graph outputs: each keeps its node.
  const Model outputs = model(graph("cse", {node("Neg", {"x"}, {"a"}), node("Neg", {"x"}, {"b"})}, {f32("x", {2})}, {f32("a", {2}), f32("b", {2})}));
  CHECK(count_ops(optimized(outputs, {"cse"}), "Neg") == 2);
}

TEST_CASE("cse: TopKs with the first's indices unnamed, or Splits into other counts, do not merge; the second's indices unnamed does") {
  // TopK(x, k) twice; the indices of each named or not (torch's topk(...).values).
  auto two = [](std::vector<std::string> first, std::vector<std::string> second) {
    std::vector<Node> nodes = {node("TopK", {"x", "k"}, first), node("TopK", {"x", "k"}, second), node("Add", {first[0], second[0]}, {"y"})};
    std::vector<ValueInfo> outputs = {f32("y", {2})};
    for (const auto* outs : {&first, &second})
      if (outs->size() > 1 && !(*outs)[1].empty()) outputs.push_back(tensor_info((*outs)[1], DType::Int64, {2}));
    return model(graph("cse", std::move(nodes), {f32("x", {4})}, std::move(outputs), {{"k", ints({2})}}));
  };
  const Model first_unnamed = optimized(two({"a", ""}, {"b", "ib"}), {"cse"});
  CHECK(count_ops(first_unnamed, "TopK") == 2);
  const Model second_unnamed = optimized(two({"a", "ia"}, {"b", ""}), {"cse"});
  CHECK(count_ops(second_unnamed, "TopK") == 1);
  // Split(x) into 2 and into 4 at opset 13 (the outputs say how many): the same inputs and
  // attributes, other results.
  const Model splits = optimized(model(graph("cse", {node("Split", {"x"}, {"a", "b"}), node("Split", {"x"}, {"c", "d", "e", "f"}), node("Concat", {"a", "c", "f"}, {"y"}, {attr("axis", int64_t(0))})},
                                             {f32("x", {4})}, {f32("y", {4})}),
                                       {{"", 13}}),
                                 {"cse"});
  CHECK(count_ops(splits, "Split") == 2);
}

TEST_CASE("cse: nodes with a graph attribute, and operators of no registered domain, are never merged") {
  // Two equal If nodes (their branches are graphs): not compared.
  const Graph then_g = graph("then", {node("Neg", {"x"}, {"o"})}, {}, {f32("o", {2})});
  const Graph else_g = graph("else", {node("Abs", {"x"}, {"o"})}, {}, {f32("o", {2})});
  Model ifs = model(graph("cse",
                          {node("If", {"c"}, {"a"}, {attr("then_branch", then_g), attr("else_branch", else_g)}),
                           node("If", {"c"}, {"b"}, {attr("then_branch", then_g), attr("else_branch", else_g)}), node("Add", {"a", "b"}, {"y"})},
                          {f32("x", {2}), tensor_info("c", DType::Bool, {})}, {f32("y", {2})}));
  CHECK(run_alone(ifs, optimize::cse_pass()) == 0);
  // A custom domain's operator the registry does not know: not known to be deterministic.
  Model custom = model(graph("cse", {node("Mystery", {"x"}, {"a"}, {}, "", "my.domain"), node("Mystery", {"x"}, {"b"}, {}, "", "my.domain"),
                                     node("Add", {"a", "b"}, {"y"})},
                             {f32("x", {2})}, {f32("y", {2})}),
                       {{"", 17}, {"my.domain", 1}});
  CHECK(run_alone(custom, optimize::cse_pass()) == 0);
}

TEST_CASE("constant-sharing: string initializers and overridable ones are not shared; equal bytes of another shape are") {
  // s1 and s2 equal strings: never compared (their bytes are pointers). w1 (2, 2) and w2 (4) hold
  // the same bytes in other shapes: two tensors. w3 is a graph input too: kept.
  Tensor s(DType::String, {1});
  Model m = model(graph("share",
                        {node("Add", {"x", "w1"}, {"a"}), node("Add", {"v", "w2"}, {"b"}), node("Add", {"v", "w3"}, {"c"}), node("Add", {"v", "w4"}, {"d"}),
                         node("Identity", {"s1"}, {"t1"}), node("Identity", {"s2"}, {"t2"})},
                        {f32("x", {2, 2}), f32("v", {4}), f32("w3", {4})},
                        {f32("a", {2, 2}), f32("b", {4}), f32("c", {4}), f32("d", {4}), tensor_info("t1", DType::String, {1}), tensor_info("t2", DType::String, {1})},
                        {{"w1", floats({2, 2}, {1, 2, 3, 4})}, {"w2", floats({4}, {1, 2, 3, 4})}, {"w3", floats({4}, {1, 2, 3, 4})},
                         {"w4", floats({4}, {1, 2, 3, 4})}, {"s1", s}, {"s2", s}}));
  CHECK(run_alone(m, optimize::constant_sharing_pass()) == 1);  // w4 reads w2
  CHECK(m.graph.nodes[3].inputs[1] == "w2");
  CHECK(m.graph.nodes[2].inputs[1] == "w3");
  CHECK(m.graph.find_initializer("s2") != nullptr);
}

// ---------------------------------------------------------------------------------------------
// constant-folding.

// Torch's topk(...).values on constants: a TopK whose indices output is left unnamed folds.
TEST_CASE("constant-folding: a TopK of constants with its indices unnamed folds") {
  Model m = model(graph("fold", {node("TopK", {"c", "k"}, {"top", ""}, {attr("axis", int64_t(0))}), node("Add", {"x", "top"}, {"y"})}, {f32("x", {2})},
                        {f32("y", {2})}, {{"c", floats({2}, {1, 5})}, {"k", ints({2})}}));
  const Model out = optimized(m, {"constant-folding"});
  CHECK(out.graph.nodes.size() == 1);
  CHECK(count_ops(out, "TopK") == 0);
}

TEST_CASE("constant-folding: an optional input left empty folds; an error leaves the node") {
  // Clip(c, "", max): min omitted (torch's clamp(max=3) on a constant).
  Model m = model(graph("fold", {node("Clip", {"c", "", "hi"}, {"clipped"}), node("Add", {"x", "clipped"}, {"y"})}, {f32("x", {2})}, {f32("y", {2})},
                        {{"c", floats({2}, {1, 5})}, {"hi", Tensor::scalar<float>(3)}}));
  const Model out = optimized(m, {"constant-folding"});
  CHECK(out.graph.nodes.size() == 1);
  CHECK(values_of(out, "clipped") == std::vector<float>{1, 3});
  // A Reshape of 4 constants to (3): the evaluator's error; the node stays for the user to see.
  Model bad = model(graph("fold", {node("Reshape", {"c", "shape"}, {"r"}), node("Add", {"x", "r"}, {"y"})}, {f32("x", {3})}, {f32("y", {3})},
                          {{"c", floats({4}, {1, 2, 3, 4})}, {"shape", ints({3})}}));
  CHECK(run_alone(bad, optimize::constant_folding_pass()) == 0);
  CHECK(count_ops(bad, "Reshape") == 1);
}

TEST_CASE("constant-folding: random operators, sequences, bodies, overridable initializers and custom operators are not folded") {
  auto folds = [](Model m) { return run_alone(m, optimize::constant_folding_pass()); };
  const std::vector<Initializer> c = {{"c", floats({2}, {1, 2})}};
  // RandomUniformLike of a constant: a new draw each run.
  CHECK(folds(model(graph("f", {node("RandomUniformLike", {"c"}, {"r"}), node("Add", {"x", "r"}, {"y"})}, {f32("x", {2})}, {f32("y", {2})}, c))) == 0);
  // SequenceConstruct of constants: a sequence is not an initializer.
  CHECK(folds(model(graph("f", {node("SequenceConstruct", {"c", "c"}, {"s"}), node("SequenceAt", {"s", "i"}, {"e"}), node("Add", {"x", "e"}, {"y"})},
                          {f32("x", {2})}, {f32("y", {2})}, {{"c", floats({2}, {1, 2})}, {"i", Tensor::scalar<int64_t>(0)}}))) == 0);
  // An If on a constant condition: it has bodies.
  const Graph then_g = graph("then", {node("Neg", {"c"}, {"o"})}, {}, {f32("o", {2})});
  CHECK(folds(model(graph("f", {node("If", {"cond"}, {"i"}, {attr("then_branch", then_g), attr("else_branch", then_g)}), node("Add", {"x", "i"}, {"y"})},
                          {f32("x", {2})}, {f32("y", {2})}, {{"c", floats({2}, {1, 2})}, {"cond", Tensor::scalar<bool>(true)}}))) == 0);
  // c is also a graph input (a default the caller may override): Neg(c) is not a constant.
  CHECK(folds(model(graph("f", {node("Neg", {"c"}, {"n"}), node("Add", {"x", "n"}, {"y"})}, {f32("x", {2}), f32("c", {2})}, {f32("y", {2})}, c))) == 0);
  // A custom operator the registry does not know.
  CHECK(folds(model(graph("f", {node("Mystery", {"c"}, {"n"}, {}, "", "my.domain"), node("Add", {"x", "n"}, {"y"})}, {f32("x", {2})}, {f32("y", {2})}, c),
                    {{"", 17}, {"my.domain", 1}})) == 0);
  // A Constant node of a custom domain is not ONNX's Constant.
  CHECK(folds(model(graph("f", {node("Constant", {}, {"k"}, {attr("value", floats({2}, {1, 2}))}, "", "my.domain"), node("Add", {"x", "k"}, {"y"})},
                          {f32("x", {2})}, {f32("y", {2})}),
                    {{"", 17}, {"my.domain", 1}})) == 0);
}

TEST_CASE("constant-folding: a Transpose of a large constant read twice is left to the fusions; read once, it folds") {
  // A (1024, 1024) embedding read by a Gather and transposed for the tied LM head (GPT-2): folding
  // would store it twice.
  const Tensor table = Tensor(DType::Float, {1024, 1024});
  auto lm_head = [&](bool tied) {
    std::vector<Node> nodes = {node("Transpose", {"emb"}, {"emb_t"}, {attr("perm", std::vector<int64_t>{1, 0})}), node("MatMul", {"x", "emb_t"}, {"y"})};
    std::vector<ValueInfo> outputs = {f32("y", {1, 1024})};
    if (tied) nodes.push_back(node("Gather", {"emb", "ids"}, {"g"})), outputs.push_back(f32("g", {1, 1024}));
    return model(graph("tied", nodes, {f32("x", {1, 1024}), tensor_info("ids", DType::Int64, {1})}, outputs, {{"emb", table}}));
  };
  Model tied = lm_head(true), untied = lm_head(false);
  CHECK(run_alone(tied, optimize::constant_folding_pass()) == 0);
  CHECK(run_alone(untied, optimize::constant_folding_pass()) == 1);
}

TEST_CASE("optimize: a check refusing a basic pass's or a fusion's rewrite stops the optimizer there (--verify-each)") {
  // conv-bn folds (its rounding differs from the two nodes'); the check refuses it: nothing after
  // it runs, and the result names it.
  const Model m = conv_bn(floats({2, 1, 1, 1}, {2, 3}), std::nullopt, floats({2}, {1, 2}), floats({2}, {0.5f, -1}), floats({2}, {1, 0}),
                          floats({2}, {3, 0}), {attr("epsilon", 1.0f)});
  optimize::OptimizeOptions o;
  o.check_each = [](const Model&, const Model&, const std::string& pass) { return pass != "conv-bn"; };
  const optimize::OptimizeResult r = optimize::optimize(m, Registry::builtin(), o);
  CHECK(r.broken_by == "conv-bn");
  REQUIRE(!r.passes.empty());
  CHECK(r.passes.back().pass == "conv-bn");
  // The same for a fusion: the erf GELU fused into Gelu, refused, and nothing after it.
  const Model gelu = model(graph("gelu",
                                 {node("Div", {"x", "sqrt2"}, {"d"}), node("Erf", {"d"}, {"e"}), node("Add", {"e", "one"}, {"e1"}),
                                  node("Mul", {"x", "e1"}, {"m"}), node("Mul", {"m", "half"}, {"y"})},
                                 {f32("x", {2, 16})}, {f32("y", {2, 16})},
                                 {{"sqrt2", Tensor::scalar<float>(1.4142135f)}, {"one", Tensor::scalar<float>(1.0f)}, {"half", Tensor::scalar<float>(0.5f)}}));
  o.check_each = [](const Model&, const Model&, const std::string& pass) { return pass != "gelu"; };
  const optimize::OptimizeResult fused = optimize::optimize(gelu, Registry::builtin(), o);
  CHECK(fused.broken_by == "gelu");
  REQUIRE(!fused.passes.empty());
  CHECK(fused.passes.back().pass == "gelu");
}

TEST_CASE("optimize --explain: a pass run in several rounds has one count line, its candidates and fusions added up") {
  // The erf GELU fuses in the first extended round, so a second round runs every fusion again.
  const Model gelu = model(graph("gelu",
                                 {node("Div", {"x", "sqrt2"}, {"d"}), node("Erf", {"d"}, {"e"}), node("Add", {"e", "one"}, {"e1"}),
                                  node("Mul", {"x", "e1"}, {"m"}), node("Mul", {"m", "half"}, {"y"})},
                                 {f32("x", {2, 16})}, {f32("y", {2, 16})},
                                 {{"sqrt2", Tensor::scalar<float>(1.4142135f)}, {"one", Tensor::scalar<float>(1.0f)}, {"half", Tensor::scalar<float>(0.5f)}}));
  optimize::OptimizeOptions o;
  o.explain = true;
  const optimize::OptimizeResult r = optimize::optimize(gelu, Registry::builtin(), o);
  int gelu_runs = 0, lines = 0;
  for (const optimize::PassStats& p : r.passes) gelu_runs += p.pass == "gelu";
  REQUIRE(gelu_runs >= 2);
  for (const auto& c : r.explain.counts)
    if (c.pass == "gelu") {
      ++lines;
      CHECK(c.fused == 1);
    }
  CHECK(lines == 1);
}
