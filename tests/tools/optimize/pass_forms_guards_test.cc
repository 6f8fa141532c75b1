// Checks of the smaller passes that no other test makes them take, each on the graph form that
// needs it: embed-layer-norm's proof that position ids are 0..S-1 (a buffer sliced from another
// start, with a step, of other values) and its zeros test of segment ids; gemm-reshape's copied
// batch dim; layer-norm's Add after a LayerNorm without beta; constant sharing of byte-equal
// constants of other types; the no-op rules' constants. Each accepted form is checked equal to the
// original with the evaluator (optimized(), optimize_test_util.h); each refusal by its exact line.
#include <doctest/doctest.h>

#include <cstring>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
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

// positions = Slice(Cast(buffer) when `cast`, [start], [S * step + start], [1], [step]) of the ids'
// S: Hugging Face's `self.position_ids[:, :seq_length]` with buffer (1, 16) when start 0, step 1.
Model sliced_buffer(Tensor buffer, int64_t start, int64_t step = 1, bool cast = false) {
  std::vector<Node> nodes = {node("Shape", {"ids"}, {"S"}, {attr("start", int64_t(1)), attr("end", int64_t(2))}), node("Mul", {"S", "step"}, {"length"}),
                             node("Add", {"length", "start"}, {"end"}), node("Slice", {cast ? "buffer_int" : "buffer", "start", "end", "axis", "step"}, {"positions"})};
  if (cast) nodes.insert(nodes.begin(), node("Cast", {"buffer"}, {"buffer_int"}, {attr("to", int64_t(DType::Int64))}));
  return embeddings(nodes, {i64("ids", {"batch", "seq"})}, {{"buffer", std::move(buffer)}, {"start", ints({start})}, {"axis", ints({1})}, {"step", ints({step})}});
}

Tensor row(int64_t first, DType dtype = DType::Int64) {
  std::vector<int64_t> v(16);
  for (int64_t i = 0; i < 16; ++i) v[size_t(i)] = first + i;
  Tensor t = Tensor::from_vector<int64_t>({1, 16}, v);
  if (dtype == DType::Float) {
    std::vector<float> f(v.begin(), v.end());
    t = Tensor::from_vector<float>({1, 16}, f);
  }
  return t;
}

}  // namespace

TEST_CASE("embed-layer-norm: a position buffer sliced as [0, S) of 0..15 is the default; other starts, steps and values are passed") {
  // The buffer arange(16) sliced [0, S): the operator's default positions.
  CHECK(fused_inputs(sliced_buffer(row(0), 0)) == 7);
  // RoBERTa-style offset positions 2..17 sliced [0, S): not 0..S-1.
  CHECK(fused_inputs(sliced_buffer(row(2), 0)) == 9);
  // arange(16) sliced [2, S + 2): positions 2..S+1.
  CHECK(fused_inputs(sliced_buffer(row(0), 2)) == 9);
  // arange(16) sliced [0, 6) with step 2: 0, 2, 4 for an S fixed at 3.
  CHECK(fused_inputs(embeddings({node("Slice", {"buffer", "zero", "six", "axis", "two"}, {"positions"})}, {i64("ids", {2, 3})},
                                {{"buffer", row(0)}, {"zero", ints({0})}, {"six", ints({6})}, {"axis", ints({1})}, {"two", ints({2})}})) == 9);
  // A float buffer of offset positions cast to int64 (TensorFlow's range in float).
  CHECK(fused_inputs(sliced_buffer(row(2, DType::Float), 0, 1, true)) == 9);
}

TEST_CASE("embed-layer-norm: constant float positions cast to int64, and a Range over another input's length") {
  // An export with S fixed at 3 and the positions folded to float [[2, 3, 4]] then cast.
  const Model cast = embeddings({node("Cast", {"float_positions"}, {"positions"}, {attr("to", int64_t(DType::Int64))})}, {i64("ids", {2, 3})},
                                {{"float_positions", Tensor::from_vector<float>({1, 3}, {2, 3, 4})}});
  CHECK(fused_inputs(cast) == 9);
  // positions = Range(0, T) with T the mask's length, not known to be the ids' S (a mask over past
  // and new tokens): 1-D and not the ids' length, refused.
  const Model other_length = embeddings({node("Shape", {"mask"}, {"mask_shape"}), node("Gather", {"mask_shape", "one"}, {"T"}, {attr("axis", int64_t(0))}),
                                         node("Range", {"zero", "T", "one"}, {"positions"})},
                                        {i64("ids", {"batch", "seq"}), i64("mask", {"batch", "total"})},
                                        {{"zero", Tensor::scalar<int64_t>(0)}, {"one", Tensor::scalar<int64_t>(1)}});
  CHECK(refusals(other_length, {"embed-layer-norm"}) ==
        "not fused: embed-layer-norm at '/LayerNorm': the position ids 'positions' are not (B, S) or (1, S) of the token ids' S\n");
}

TEST_CASE("embed-layer-norm: segment ids of a zeros block then a ones block are not zeros") {
  // token_type_ids = cat(zeros(1, 2), ones(1, 2)): a fixed split into two segments. Their first
  // operand is zeros; the segment lookup stays a lookup.
  const Model m = embeddings({node("ConstantOfShape", {"half"}, {"zeros"}, {attr("value", Tensor::from_vector<int64_t>({1}, {0}))}),
                              node("ConstantOfShape", {"half"}, {"ones"}, {attr("value", Tensor::from_vector<int64_t>({1}, {1}))}),
                              node("Concat", {"zeros", "ones"}, {"types"}, {attr("axis", int64_t(1))})},
                             {i64("ids", {1, 4}), i64("positions", {1, 4})}, {{"half", ints({1, 2})}}, true);
  const Model out = optimized(m, {"embed-layer-norm"});
  REQUIRE_MESSAGE(count_ops(out, "EmbedLayerNormalization") == 1, refusals(m, {"embed-layer-norm"}));
  CHECK(only(out, "EmbedLayerNormalization").inputs[4] == "seg");
}

TEST_CASE("embed-layer-norm: position 0 broadcast over the sequence is not 0..S-1") {
  // positions = Expand([[0]], Shape(ids)): every token reads position row 0. The constant is an
  // arange of its own length 1, and the Expand makes it (B, S); the positions must be passed.
  const Model zero = embeddings({node("Shape", {"ids"}, {"ids_shape"}), node("Expand", {"first", "ids_shape"}, {"positions"})}, {i64("ids", {"batch", "seq"})},
                                {{"first", Tensor::from_vector<int64_t>({1, 1}, {0})}});
  CHECK(fused_inputs(zero) == 9);
}

// ---- gemm-reshape: Hugging Face's Conv1D, Reshape(x, (-1, 16)) -> Gemm -> Reshape(out) ----

TEST_CASE("gemm-reshape: a second Reshape to (0, -1, N) stays when the sequence is not known to be 1") {
  // 0 copies the Gemm's rows B * S, not x's batch: the result is (B * S, 1, 24), not (B, S, 24).
  const Model m = model(graph("conv1d",
                              {node("Reshape", {"x", "flat"}, {"rows"}, {}, "/Reshape"), node("Gemm", {"rows", "w", "b"}, {"h"}, {}, "/Gemm"),
                               node("Reshape", {"h", "out"}, {"y"}, {}, "/Reshape_1")},
                              {f32("x", {"batch", "seq", 16})}, {f32("y", {})},
                              {{"flat", ints({-1, 16})}, {"out", ints({0, -1, 24})}, {"w", ramp({16, 24}, -0.3f, 0.03f)}, {"b", ramp({24}, 0.1f, 0.02f)}}));
  CHECK(refusals(m, {"gemm-reshape"}) == "not fused: gemm-reshape at '/Gemm': the second Reshape's dim 0 is not the input's\n");
  CHECK(count_ops(optimized(m, {"gemm-reshape"}), "Gemm") == 1);
}

// ---- layer-norm: (x - mean) / sqrt(var + eps) * gamma, no beta, then `reader` ----

// x (2, 3, 8); `reader` (Add or Mul) combines the normalised "g" with `other` into y.
Model layer_norm_then(const std::string& reader, const std::string& other, Tensor eps = Tensor::scalar<float>(1e-5f)) {
  std::vector<Initializer> inits = {{"two", Tensor::scalar<float>(2.0f)}, {"eps", std::move(eps)}, {"gamma", ramp({8}, 0.8f, 0.05f)}};
  std::vector<ValueInfo> inputs = {f32("x", {2, 3, 8})};
  if (other == "residual") inputs.push_back(f32("residual", {2, 3, 8}));
  else inits.push_back({other, ramp({8}, 0.5f, 0.1f)});
  const std::vector<int64_t> last = {-1};
  return model(graph("ln",
                     {node("ReduceMean", {"x"}, {"mean"}, {attr("axes", last)}), node("Sub", {"x", "mean"}, {"d"}), node("Pow", {"d", "two"}, {"sq"}),
                      node("ReduceMean", {"sq"}, {"var"}, {attr("axes", last)}), node("Add", {"var", "eps"}, {"ve"}), node("Sqrt", {"ve"}, {"std"}),
                      node("Div", {"d", "std"}, {"n"}), node("Mul", {"n", "gamma"}, {"g"}), node(reader, {"g", other}, {"y"}, {}, "/reader")},
                     inputs, {f32("y", {})}, inits));
}

TEST_CASE("layer-norm: a LayerNorm without beta read by a residual Add or a per-channel Mul fuses without them") {
  // The Add adds a residual, not a beta; the Mul scales each channel (a layer scale).
  for (const auto& [reader, other] : {std::pair{"Add", "residual"}, std::pair{"Mul", "scale"}}) {
    const std::string op = reader;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(op);
    const Model out = optimized(layer_norm_then(reader, other), {"layer-norm"});
    CHECK(count_ops(out, "LayerNormalization") == 1);
    CHECK(count_ops(out, reader) == 1);
  }
}

TEST_CASE("layer-norm: an epsilon of one value per channel stays") {
  const Model m = layer_norm_then("Add", "residual", ramp({8}, 1e-5f, 1e-6f));
  CHECK(refusals(m, {"layer-norm"}) == "not fused: layer-norm at 'std': epsilon 'eps' is not a scalar constant\n");
  CHECK(count_ops(optimized(m, {"layer-norm"}), "LayerNormalization") == 0);
}

// ---- cse and constant-sharing ----

TEST_CASE("cse: a LayerNormalization whose Mean is read is not merged into an equal one that leaves it out") {
  const Model m = model(graph("two_norms",
                              {node("LayerNormalization", {"x", "gamma"}, {"y1", ""}), node("LayerNormalization", {"x", "gamma"}, {"y2", "mean2"}),
                               node("Add", {"y1", "y2"}, {"y"}), node("Identity", {"mean2"}, {"mean"})},
                              {f32("x", {2, 8})}, {f32("y", {}), f32("mean", {})}, {{"gamma", ramp({8}, 0.8f, 0.05f)}}));
  CHECK(count_ops(optimized(m, {"cse"}), "LayerNormalization") == 2);
}

TEST_CASE("cse: a LayerNormalization that leaves its Mean out merges into an equal one that reads it; omitted inputs stay omitted") {
  // The second norm's output is the first's; its unnamed Mean is no value to rename, and the Clip's
  // omitted min ("") stays omitted.
  const Model m = model(graph("two_norms",
                              {node("LayerNormalization", {"x", "gamma"}, {"y1", "mean1"}), node("LayerNormalization", {"x", "gamma"}, {"y2", ""}),
                               node("Add", {"y1", "y2"}, {"s"}), node("Clip", {"s", "", "top"}, {"y"}), node("Identity", {"mean1"}, {"mean"})},
                              {f32("x", {2, 8})}, {f32("y", {}), f32("mean", {})}, {{"gamma", ramp({8}, 0.8f, 0.05f)}, {"top", Tensor::scalar<float>(1.5f)}}));
  const Model out = optimized(m, {"cse"});
  CHECK(count_ops(out, "LayerNormalization") == 1);
  CHECK(only(out, "Clip").inputs[1].empty());
  // Both Means left out: the two norms are one as well.
  const Model neither = model(graph("two_norms", {node("LayerNormalization", {"x", "gamma"}, {"y1", ""}), node("LayerNormalization", {"x", "gamma"}, {"y2", ""}),
                                                  node("Add", {"y1", "y2"}, {"y"})},
                                    {f32("x", {2, 8})}, {f32("y", {})}, {{"gamma", ramp({8}, 0.8f, 0.05f)}}));
  CHECK(count_ops(optimized(neither, {"cse"}), "LayerNormalization") == 1);
}

TEST_CASE("cse: two If nodes on one condition with different branches are not merged") {
  // Bodies have no key of their own: two Ifs reading the same condition look alike but for them.
  const auto branch = [](const std::string& name, float v) {
    return graph(name, {node("Constant", {}, {name + "_out"}, {attr("value", Tensor::from_vector<float>({2}, {v, v}))})}, {},
                 {f32(name + "_out", {2})});
  };
  const Model m = model(graph("two_ifs",
                              {node("If", {"c"}, {"a"}, {attr("then_branch", branch("then1", 1)), attr("else_branch", branch("else1", 2))}),
                               node("If", {"c"}, {"b"}, {attr("then_branch", branch("then2", 3)), attr("else_branch", branch("else2", 4))}),
                               node("Add", {"a", "b"}, {"y"})},
                              {tensor_info("c", DType::Bool, {})}, {f32("y", {2})}));
  for (const bool c : {true, false}) {
    CAPTURE(c);
    CHECK(count_ops(optimized(m, {"cse"}, "", "all", {{"c", Tensor::scalar<bool>(c)}}), "If") == 2);
  }
}

TEST_CASE("constant-sharing: constants whose hashes collide but whose types differ stay two") {
  // The key hashes the bytes and the type text ("2:3" for uint8 (3,)) and xors them: a uint8
  // constant holding the text "3:3" and an int8 one holding "2:3" have one key.
  const auto bytes = [](DType dtype, const std::string& text) {
    Tensor t(dtype, {3});
    std::memcpy(t.raw_data(), text.data(), 3);
    return t;
  };
  const Model m = model(graph("bytes",
                              {node("Cast", {"u"}, {"y1"}, {attr("to", int64_t(DType::Float))}), node("Cast", {"s"}, {"y2"}, {attr("to", int64_t(DType::Float))})},
                              {}, {f32("y1", {3}), f32("y2", {3})}, {{"u", bytes(DType::UInt8, "3:3")}, {"s", bytes(DType::Int8, "2:3")}}));
  CHECK(optimized(m, {"constant-sharing"}).graph.initializers.size() == 2);
}

// ---- noop and constant-folding ----

TEST_CASE("noop: a Slice with run-time steps and a uint8 Mul stay") {
  // x[::step] with step fed (1 when run): the steps are not a constant.
  const Model slice = model(graph("slice", {node("Slice", {"x", "zero", "big", "axis", "step"}, {"y"})}, {f32("x", {4, 8}), i64("step", {1})}, {f32("y", {})},
                                  {{"zero", ints({0})}, {"big", ints({100})}, {"axis", ints({0})}}));
  CHECK(count_ops(optimized(slice, {"noop"}, "", "all", {{"step", ints({1})}}), "Slice") == 1);
  // An image in uint8 times 3.
  const Tensor pixels = Tensor::from_vector<uint8_t>({4}, {1, 2, 3, 4});
  const Model mul = model(graph("mul", {node("Mul", {"x", "three"}, {"y"})}, {tensor_info("x", DType::UInt8, {4})}, {tensor_info("y", DType::UInt8, {4})},
                                {{"three", Tensor::scalar<uint8_t>(3)}}));
  CHECK(count_ops(optimized(mul, {"noop"}, "", "all", {{"x", pixels}}), "Mul") == 1);
}

TEST_CASE("constant-folding: a Constant of strings stays a Constant node") {
  // value_strings (a label list): not a tensor the optimizer reads as a constant.
  const Model m = model(graph("labels", {node("Constant", {}, {"labels"}, {attr("value_strings", std::vector<std::string>{"cat", "dog"})})}, {},
                              {tensor_info("labels", DType::String, {2})}));
  CHECK(count_ops(optimized(m, {"constant-folding"}), "Constant") == 1);
}

// ---- reshape-fusion: a Reshape's run-time shape (B, S, 8) of x's own dims -> the constant (0, 0, 8) ----

namespace {

// `op`(y, Concat(Shape(x)[0:2], [8])) with x (batch, seq, 8) and y (`y_dims`).
Model computed_shape(const std::string& op, std::vector<DimSpec> y_dims, int64_t allowzero = 0) {
  std::vector<Attribute> attrs;
  if (op == "Reshape") attrs.push_back(attr("allowzero", allowzero));
  return model(graph("shaped",
                     {node("Shape", {"x"}, {"bs"}, {attr("start", int64_t(0)), attr("end", int64_t(2))}), node("Concat", {"bs", "eight"}, {"target"}, {attr("axis", int64_t(0))}),
                      node(op, {"y", "target"}, {"z"}, attrs), node("Add", {"z", "x"}, {"out"})},
                     {f32("x", {"batch", "seq", 8}), f32("y", std::move(y_dims))}, {f32("out", {})}, {{"eight", ints({8})}}),
               {{"", 17}});
}

}  // namespace

TEST_CASE("reshape-fusion: a Reshape to its input's own dims takes (0, 0, 8); an Expand, or a Reshape with allowzero, keeps its computed shape") {
  const std::map<std::string, Value> fed = {{"x", ramp({2, 3, 8}, -0.5f, 0.02f)}, {"y", ramp({2, 3, 8}, 0.1f, 0.01f)}};
  const Model reshape = optimized(computed_shape("Reshape", {"batch", "seq", 8}), {"reshape-fusion"}, "", "all", fed);
  CHECK(reshape.graph.find_initializer(only(reshape, "Reshape").inputs[1]) != nullptr);
  // Expand's 0 would be a dim of size 0, not a copy; allowzero's 0 too
  const std::map<std::string, Value> small = {{"x", ramp({2, 3, 8}, -0.5f, 0.02f)}, {"y", ramp({1, 1, 8}, 0.1f, 0.01f)}};
  const Model expand = optimized(computed_shape("Expand", {1, 1, 8}), {"reshape-fusion"}, "", "all", small);
  CHECK(only(expand, "Expand").inputs[1] == "target");
  const Model allowzero = optimized(computed_shape("Reshape", {"batch", "seq", 8}, 1), {"reshape-fusion"}, "", "all", fed);
  CHECK(only(allowzero, "Reshape").inputs[1] == "target");
}

TEST_CASE("noop: a Cast to the type its input has goes; a Cast to another type stays") {
  const auto cast = [](DType to) {
    return model(graph("cast", {node("Cast", {"x"}, {"c"}, {attr("to", int64_t(to))}), node("Relu", {"c"}, {"y"})}, {f32("x", {4})},
                       {tensor_info("y", to, {4})}));
  };
  CHECK(count_ops(optimized(cast(DType::Float), {"noop"}), "Cast") == 0);
  CHECK(count_ops(optimized(cast(DType::Double), {"noop"}), "Cast") == 1);
}

TEST_CASE("noop: a Reshape that keeps the shape goes; one that changes it stays") {
  const auto reshape = [](std::vector<int64_t> to) {
    return model(graph("reshape", {node("Reshape", {"x", "to"}, {"r"}), node("Relu", {"r"}, {"y"})}, {f32("x", {2, 4})}, {f32("y", {})}, {{"to", ints(to)}}));
  };
  CHECK(count_ops(optimized(reshape({2, 4}), {"noop"}), "Reshape") == 0);
  CHECK(count_ops(optimized(reshape({4, 2}), {"noop"}), "Reshape") == 1);
}
