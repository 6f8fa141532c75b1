// The embed-layer-norm pass on the forms its other tests do not feed: the position table's first
// rows sliced by Slices of other input forms (and the look-alikes that are no such Slice), ids
// behind Casts, positions 0..S-1 proved through Unsqueezes, Expands and Slices of a buffer in each
// input form, zero segments through ConstantOfShape without a value, Unsqueeze and Reshape, the
// int32 cast shared by ids read twice, norms in the other domain, sums or lookups read elsewhere,
// float16 and double tables, ids of unknown shape, and gamma / beta / statistics outputs in every
// form. Each fused result is checked equal to the original with the evaluator (optimized(),
// optimize_test_util.h); each refusal by its exact `--explain` line; a sum that is not an
// embedding (no candidate) by an empty explanation and no fused operator.
#include <doctest/doctest.h>

#include <algorithm>

#include "optimize_test_util.h"
#include "refeval/compute_vector.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::ramp;
using refeval::testing::refusals;

namespace {

const std::string kPass = "embed-layer-norm";

ValueInfo i64(const std::string& name, std::vector<DimSpec> dims) { return tensor_info(name, DType::Int64, std::move(dims)); }
Node gather(const std::string& table, const std::string& ids, const std::string& out) { return node("Gather", {table, ids}, {out}, {}, "/Gather_" + table); }
Node cast(const std::string& in, const std::string& out, DType to = DType::Int64) { return node("Cast", {in}, {out}, {attr("to", int64_t(to))}); }

// Tables word (100, 8), pos (16, 8), seg (5, 8), gamma and beta (8) unless `inits` gives one of
// those names; `nodes` compute "sum", normalised by `norm`.
struct Emb {
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<Initializer> inits;
  Node norm = node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}, {attr("epsilon", 1e-12f)}, "/LayerNorm");
  std::vector<ValueInfo> extra_outputs;
  DType out_type = DType::Float;

  Model model() const {
    std::vector<Initializer> all = inits;
    const auto add = [&](const std::string& name, Tensor t) {
      if (std::none_of(all.begin(), all.end(), [&](const Initializer& i) { return i.name == name; })) all.push_back({name, std::move(t)});
    };
    add("word", ramp({100, 8}, -0.5f, 0.05f));
    add("pos", ramp({16, 8}, 0.3f, -0.02f));
    add("seg", ramp({5, 8}, -0.1f, 0.03f));
    add("gamma", ramp({8}, 0.8f, 0.05f));
    add("beta", ramp({8}, -0.1f, 0.02f));
    std::vector<Node> n = nodes;
    n.push_back(norm);
    std::vector<ValueInfo> outs = {tensor_info(norm.outputs[0], out_type, {})};
    for (const ValueInfo& o : extra_outputs) outs.push_back(o);
    return build::model(graph("emb", n, inputs, outs, all), {{"", 17}, {"com.microsoft", 1}});
  }
};

// word[ids] + pos[positions] with both ids (batch, seq).
Emb basic() {
  Emb e;
  e.nodes = {gather("word", "ids", "w"), gather("pos", "positions", "p"), node("Add", {"w", "p"}, {"sum"})};
  e.inputs = {i64("ids", {"batch", "seq"}), i64("positions", {"batch", "seq"})};
  return e;
}

// word[ids] + pos[positions] with `positions` computed by `nodes` from the ids (batch, seq).
Emb computed_positions(std::vector<Node> nodes, std::vector<Initializer> inits = {}) {
  Emb e;
  e.nodes = std::move(nodes);
  e.nodes.push_back(gather("word", "ids", "w"));
  e.nodes.push_back(gather("pos", "positions", "p"));
  e.nodes.push_back(node("Add", {"w", "p"}, {"sum"}));
  e.inputs = {i64("ids", {"batch", "seq"})};
  e.inits = std::move(inits);
  e.inits.push_back({"zero", Tensor::scalar<int64_t>(0)});
  e.inits.push_back({"one", Tensor::scalar<int64_t>(1)});
  e.inits.push_back({"zero1", ints({0})});
  e.inits.push_back({"one1", ints({1})});
  return e;
}

// S = Shape(ids)[1:2] (1-D) and Range(0, S, 1) as "range".
std::vector<Node> seq_and_range() {
  return {node("Shape", {"ids"}, {"S1"}, {attr("start", int64_t(1)), attr("end", int64_t(2))}), node("Squeeze", {"S1", "zero1"}, {"S"}),
          node("Range", {"zero", "S", "one"}, {"range"})};
}

std::string line(const std::string& reason, const std::string& at = "/LayerNorm") { return "not fused: " + kPass + " at '" + at + "': " + reason + "\n"; }
std::string why(const Model& m) { return refusals(m, {kPass}); }

// The pass alone, without the evaluator's check (for graphs the evaluator cannot run).
Model unverified(const Model& m) {
  optimize::OptimizeOptions o;
  o.only = {kPass};
  return optimize::optimize(m, Registry::builtin(), o).model;
}

const Node& only(const Model& m, const std::string& op) {
  const auto it = std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  REQUIRE(it != m.graph.nodes.end());
  return *it;
}

// Fused, equivalent to the original; the fused node's inputs.
std::vector<std::string> fused(const Model& m) {
  const Model out = optimized(m, {kPass});
  REQUIRE_MESSAGE(count_ops(out, "EmbedLayerNormalization") == 1, why(m));
  return only(out, "EmbedLayerNormalization").inputs;
}

// Not an embedding sum: no candidate, so no explanation, and the graph left as it was.
void not_candidate(const Model& m, bool evaluate = true) {
  CHECK(why(m) == "");
  CHECK(count_ops(evaluate ? optimized(m, {kPass}) : unverified(m), "EmbedLayerNormalization") == 0);
}

}  // namespace

TEST_CASE("embed-layer-norm branches: position rows sliced from the table with axis -2 or with empty axes and steps are positions 0..S-1") {
  for (const bool negative : {true, false}) {
    CAPTURE(negative);
    // pos[:S] as Slice(pos, [0], [S], [-2]) or Slice(pos, [0], [S], "", "").
    const std::vector<std::string> in = negative ? std::vector<std::string>{"pos", "zero1", "S1", "minus2"} : std::vector<std::string>{"pos", "zero1", "S1", "", ""};
    Emb e;
    e.nodes = {node("Shape", {"ids"}, {"S1"}, {attr("start", int64_t(1)), attr("end", int64_t(2))}), node("Slice", in, {"p"}), gather("word", "ids", "w"),
               node("Add", {"w", "p"}, {"sum"})};
    e.inputs = {i64("ids", {"batch", "seq"})};
    e.inits = {{"zero1", ints({0})}, {"minus2", ints({-2})}};
    const std::vector<std::string> inputs = fused(e.model());
    CHECK(inputs.size() == 7u);  // no position ids: the operator's 0..S-1
    CHECK(inputs[3] == "pos");
  }
}

TEST_CASE("embed-layer-norm branches: rows sliced from 1, with step 2, from a 3-D table or from a non-constant table are no embedding lookup") {
  // ids (batch, 3): pos[1:4], pos[0:6:2], pos3[:, 0:3] of a (1, 16, 8) table, and rows of a table fed as an input.
  const auto with = [](Node slice, std::vector<Initializer> inits, std::vector<ValueInfo> extra = {}) {
    Emb e;
    e.nodes = {gather("word", "ids", "w"), std::move(slice), node("Add", {"w", "p"}, {"sum"})};
    e.inputs = {i64("ids", {"batch", 3})};
    for (ValueInfo& v : extra) e.inputs.push_back(v);
    e.inits = std::move(inits);
    return e.model();
  };
  not_candidate(with(node("Slice", {"pos", "one1", "four1"}, {"p"}), {{"one1", ints({1})}, {"four1", ints({4})}}));
  not_candidate(with(node("Slice", {"pos", "zero1", "six1", "zero1", "two1"}, {"p"}), {{"zero1", ints({0})}, {"six1", ints({6})}, {"two1", ints({2})}}));
  not_candidate(with(node("Slice", {"pos3", "zero1", "three1", "one1"}, {"p"}),
                     {{"pos3", ramp({1, 16, 8}, 0.3f, -0.02f)}, {"zero1", ints({0})}, {"three1", ints({3})}, {"one1", ints({1})}}));
  not_candidate(with(node("Slice", {"pos_in", "zero1", "three1"}, {"p"}), {{"zero1", ints({0})}, {"three1", ints({3})}}, {f32("pos_in", {16, 8})}));
}

TEST_CASE("embed-layer-norm branches: token ids behind two Casts are the graph's; behind three they are not found") {
  for (const int casts : {2, 3}) {
    CAPTURE(casts);
    std::vector<Node> nodes = seq_and_range();
    nodes.push_back(node("Unsqueeze", {"range", "zero1"}, {"positions"}));
    std::string ids = "ids";
    for (int k = 0; k < casts; ++k) nodes.push_back(cast(ids, "ids_" + std::to_string(k))), ids = "ids_" + std::to_string(k);
    Emb e = computed_positions(nodes);
    e.nodes[e.nodes.size() - 3].inputs[1] = ids;  // the word Gather reads the cast ids
    if (casts == 2) {
      CHECK(fused(e.model()).size() == 7u);
    } else {
      CHECK(why(e.model()) == line("no lookup is indexed by a graph input (the token ids)"));
      CHECK(count_ops(optimized(e.model(), {kPass}), "EmbedLayerNormalization") == 0);
    }
  }
}

TEST_CASE("embed-layer-norm branches: Range positions five values back are proved 0..S-1, six values back they are passed as position ids") {
  // Range(0, S) -> Unsqueeze -> Expand(Shape(ids)) repeated: the proof looks six values back.
  for (const int expands : {3, 4}) {
    CAPTURE(expands);
    std::vector<Node> nodes = seq_and_range();
    nodes.push_back(node("Shape", {"ids"}, {"ids_shape"}));
    nodes.push_back(node("Unsqueeze", {"range", "zero1"}, {"e0"}));
    for (int k = 0; k < expands; ++k) nodes.push_back(node("Expand", {"e" + std::to_string(k), "ids_shape"}, {"e" + std::to_string(k + 1)}));
    nodes.push_back(node("Identity", {"e" + std::to_string(expands)}, {"positions"}));
    nodes.back() = node("Expand", {"e" + std::to_string(expands), "ids_shape"}, {"positions"});
    CHECK(fused(computed_positions(nodes).model()).size() == (expands == 3 ? 7u : 9u));
  }
}

TEST_CASE("embed-layer-norm branches: a scalar position id is not (B, S) positions") {
  Emb e = basic();
  e.inputs[1] = i64("positions", {});
  CHECK(why(e.model()) == line("the position ids 'positions' are not (B, S) or (1, S) of the token ids' S"));
  CHECK(count_ops(optimized(e.model(), {kPass}), "EmbedLayerNormalization") == 0);
}

TEST_CASE("embed-layer-norm branches: a 1-D arange buffer sliced without axes, with empty axes and steps, or on axis -1 is 0..S-1") {
  std::vector<int64_t> arange(16);
  for (int64_t i = 0; i < 16; ++i) arange[size_t(i)] = i;
  const std::vector<Initializer> buffers = {
      {"buffer1", Tensor::from_vector<int64_t>({16}, arange)}, {"buffer2", Tensor::from_vector<int64_t>({1, 16}, arange)}, {"minus1", ints({-1})}};
  const auto sliced = [&](std::vector<std::string> in) {
    std::vector<Node> nodes = {node("Shape", {"ids"}, {"S1"}, {attr("start", int64_t(1)), attr("end", int64_t(2))}), node("Slice", in, {"positions"})};
    return computed_positions(nodes, buffers).model();
  };
  CHECK(fused(sliced({"buffer1", "zero1", "S1"})).size() == 7u);              // buffer[:S], no axes
  CHECK(fused(sliced({"buffer1", "zero1", "S1", "", ""})).size() == 7u);      // axes and steps named empty
  CHECK(fused(sliced({"buffer2", "zero1", "S1", "minus1"})).size() == 7u);   // buffer[:, :S] on axis -1, no steps
}

TEST_CASE("embed-layer-norm branches: positions sliced from a fed buffer, by two starts, or from a buffer of two rows are passed or refused") {
  // A buffer fed as an input: its values are not known, the positions are passed.
  {
    Emb e = computed_positions({node("Shape", {"ids"}, {"S1"}, {attr("start", int64_t(1)), attr("end", int64_t(2))}),
                                node("Slice", {"buffer", "zero1", "S1", "one1"}, {"positions"})});
    e.inputs.push_back(i64("buffer", {1, 16}));
    CHECK(fused(e.model()).size() == 9u);
  }
  // buffer[0:1, 0:S] by starts [0, 0]: one start per axis, not the one the proof reads.
  {
    Tensor row = Tensor::from_vector<int64_t>({1, 16}, [] {
      std::vector<int64_t> v(16);
      for (int64_t i = 0; i < 16; ++i) v[size_t(i)] = i;
      return v;
    }());
    Emb e = computed_positions({node("Shape", {"ids"}, {"S1"}, {attr("start", int64_t(1)), attr("end", int64_t(2))}),
                                node("Concat", {"one1", "S1"}, {"ends"}, {attr("axis", int64_t(0))}),
                                node("Slice", {"buffer", "zeros2", "ends", "axes2"}, {"positions"})},
                               {{"buffer", row}, {"zeros2", ints({0, 0})}, {"axes2", ints({0, 1})}});
    CHECK(fused(e.model()).size() == 9u);
  }
  // Two rows of 0..15: the positions are (2, S), not 0..S-1 of one row, and not (B, S) either.
  {
    std::vector<int64_t> v(32);
    for (int64_t i = 0; i < 32; ++i) v[size_t(i)] = i % 16;
    Emb e = computed_positions({node("Shape", {"ids"}, {"S1"}, {attr("start", int64_t(1)), attr("end", int64_t(2))}),
                                node("Slice", {"buffer", "zero1", "S1", "one1"}, {"positions"})},
                               {{"buffer", Tensor::from_vector<int64_t>({2, 16}, v)}});
    CHECK(why(e.model()) == line("the position ids 'positions' are not (B, S) or (1, S) of the token ids' S"));
  }
}

namespace {

// word[ids] + pos[positions] + seg[types] with types computed by `nodes` from the ids.
Emb computed_types(std::vector<Node> nodes, std::vector<Initializer> inits = {}) {
  Emb e = basic();
  e.nodes.back().outputs[0] = "wp";
  e.nodes.insert(e.nodes.begin(), nodes.begin(), nodes.end());
  e.nodes.push_back(gather("seg", "types", "t"));
  e.nodes.push_back(node("Add", {"wp", "t"}, {"sum"}));
  e.inits = std::move(inits);
  e.inits.push_back({"zero1", ints({0})});
  return e;
}

}  // namespace

TEST_CASE("embed-layer-norm branches: segment ids of zeros through Casts, Unsqueeze and Reshape fold; ones, or zeros behind eight steps, stay a segment") {
  const Node shape = node("Shape", {"ids"}, {"ids_shape"});
  const Tensor zero = Tensor::from_vector<int64_t>({1}, {0}), one = Tensor::from_vector<int64_t>({1}, {1});
  // ConstantOfShape without a value: float zeros, cast to int64.
  {
    const std::vector<std::string> in = fused(computed_types({shape, node("ConstantOfShape", {"ids_shape"}, {"fzeros"}), cast("fzeros", "types")}).model());
    CHECK(in.size() == 9u);
    CHECK(in[1] == "");                     // no segment ids
    CHECK(in[3] == "pos_with_segment_0");  // row 0 of seg folded into the positions
  }
  // Zeros of (S,) unsqueezed to (1, S) and reshaped to (1, -1).
  {
    const std::vector<Node> nodes = {shape,
                                     node("Gather", {"ids_shape", "one1"}, {"S1"}),
                                     node("ConstantOfShape", {"S1"}, {"z"}, {attr("value", zero)}),
                                     node("Unsqueeze", {"z", "zero1"}, {"z2"}),
                                     node("Reshape", {"z2", "flat"}, {"types"})};
    const std::vector<std::string> in = fused(computed_types(nodes, {{"one1", ints({1})}, {"flat", ints({1, -1})}}).model());
    CHECK(in[1] == "");
    CHECK(in[3] == "pos_with_segment_0");
  }
  // Ones: a real segment.
  {
    const std::vector<std::string> in = fused(computed_types({shape, node("ConstantOfShape", {"ids_shape"}, {"types"}, {attr("value", one)})}).model());
    CHECK(in[1] != "");
    CHECK(in[4] == "seg");
  }
  // Zeros behind eight Casts: the search stops before it reaches them; a segment lookup stays.
  {
    std::vector<Node> nodes = {shape, node("ConstantOfShape", {"ids_shape"}, {"c0"}, {attr("value", zero)})};
    for (int k = 0; k < 8; ++k) nodes.push_back(cast("c" + std::to_string(k), k == 7 ? "types" : "c" + std::to_string(k + 1)));
    const std::vector<std::string> in = fused(computed_types(nodes).model());
    CHECK(in[1] != "");
    CHECK(in[4] == "seg");
  }
}

TEST_CASE("embed-layer-norm branches: ids read as tokens, positions and segments are cast to int32 once") {
  Emb e = basic();
  e.nodes = {gather("word", "ids", "w"), gather("pos", "ids", "p"), gather("seg", "ids", "t"), node("Add", {"w", "p"}, {"wp"}), node("Add", {"wp", "t"}, {"sum"})};
  e.inputs = {i64("ids", {"batch", "seq"})};
  const Model out = optimized(e.model(), {kPass});
  REQUIRE(count_ops(out, "EmbedLayerNormalization") == 1);
  CHECK(count_ops(out, "Cast") == 1);
  const Node& n = only(out, "EmbedLayerNormalization");
  REQUIRE(n.inputs.size() == 9u);
  CHECK(n.inputs[0] == n.inputs[1]);
  CHECK(n.inputs[0] == n.inputs[8]);
}

TEST_CASE("embed-layer-norm branches: a LayerNormalization of com.microsoft is no candidate") {
  Emb ms = basic();
  ms.norm = node("LayerNormalization", {"sum", "gamma", "beta"}, {"y"}, {}, "/LayerNorm", "com.microsoft");
  not_candidate(ms.model(), false);
}

TEST_CASE("embed-layer-norm branches: sums or lookups read elsewhere, and tables that are inputs or 3-D, are no embedding sum") {
  {  // the sum w + p is also a graph output
    Emb e = basic();
    e.nodes = {gather("word", "ids", "w"), gather("pos", "positions", "p"), gather("seg", "types", "t"), node("Add", {"w", "p"}, {"wp"}),
               node("Add", {"wp", "t"}, {"sum"})};
    e.inputs.push_back(i64("types", {"batch", "seq"}));
    e.extra_outputs = {f32("wp", {})};
    not_candidate(e.model());
  }
  {  // the word lookup is also a graph output
    Emb e = basic();
    e.extra_outputs = {f32("w", {})};
    not_candidate(e.model());
  }
  {  // the position table is fed
    Emb e = basic();
    e.nodes[1].inputs[0] = "pos_in";
    e.inputs.push_back(f32("pos_in", {16, 8}));
    not_candidate(e.model());
  }
  {  // a (16, 1, 8) position table: (B, S, 1, 8) lookups
    Emb e = basic();
    e.inits = {{"pos", ramp({16, 1, 8}, 0.3f, -0.02f)}};
    not_candidate(e.model());
  }
  // pos[:3] read twice, or also a graph output.
  for (const bool output : {false, true}) {
    Emb e;
    e.nodes = {gather("word", "ids", "w"), node("Slice", {"pos", "zero1", "three1"}, {"p"}), node("Add", {"w", "p"}, {"sum"})};
    if (!output) e.nodes.push_back(node("Add", {"p", "p"}, {"p2"}));
    e.extra_outputs = {f32(output ? "p" : "p2", {})};
    e.inputs = {i64("ids", {"batch", 3})};
    e.inits = {{"zero1", ints({0})}, {"three1", ints({3})}};
    not_candidate(e.model());
  }
}

TEST_CASE("embed-layer-norm branches: a refusal at an unnamed norm names its output; gamma fed, gamma or beta of 1 or beta (1, 8) are refused") {
  const std::string reason = "gamma or beta is not a 1-D constant over the hidden size";
  {
    Emb e = basic();
    e.norm.name = "";
    e.norm.inputs[1] = "gamma_in";
    e.inputs.push_back(f32("gamma_in", {8}));
    CHECK(why(e.model()) == line(reason, "y"));
    CHECK(count_ops(optimized(e.model(), {kPass}), "EmbedLayerNormalization") == 0);
  }
  for (const char* form : {"gamma1", "beta_in", "beta1x8", "beta1"}) {
    CAPTURE(form);
    Emb e = basic();
    const std::string f = form;
    if (f == "gamma1") e.inits = {{"gamma", ramp({1}, 0.8f, 0.05f)}};
    if (f == "beta_in") e.norm.inputs[2] = "beta_in", e.inputs.push_back(f32("beta_in", {8}));
    if (f == "beta1x8") e.inits = {{"beta", ramp({1, 8}, -0.1f, 0.02f)}};
    if (f == "beta1") e.inits = {{"beta", ramp({1}, -0.1f, 0.02f)}};
    CHECK(why(e.model()) == line(reason));
    CHECK(count_ops(unverified(e.model()), "EmbedLayerNormalization") == 0);
  }
}

TEST_CASE("embed-layer-norm branches: an empty beta, the norm on axis 2, a SkipLayerNormalization with an empty bias, unread statistics all fuse") {
  {  // LayerNormalization(sum, gamma, ""): a zero beta written
    Emb e = basic();
    e.norm.inputs[2] = "";
    const Model out = optimized(e.model(), {kPass});
    REQUIRE(count_ops(out, "EmbedLayerNormalization") == 1);
    CHECK(out.graph.find_initializer("gamma_zero_beta") != nullptr);
  }
  {
    Emb e = basic();
    e.norm.attributes.push_back(attr("axis", int64_t(2)));
    CHECK(fused(e.model()).size() == 9u);
  }
  {  // SkipLayerNormalization(w + p, seg[types], gamma, beta, "")
    Emb e = basic();
    e.nodes.push_back(gather("seg", "types", "t"));
    e.inputs.push_back(i64("types", {"batch", "seq"}));
    e.norm = node("SkipLayerNormalization", {"sum", "t", "gamma", "beta", ""}, {"y"}, {attr("epsilon", 1e-12f)}, "/LayerNorm", "com.microsoft");
    const std::vector<std::string> in = fused(e.model());
    CHECK(in[4] == "seg");
  }
  {  // LayerNormalization's mean output named but unread
    Emb e = basic();
    e.norm.outputs.push_back("mean");
    CHECK(fused(e.model()).size() == 9u);
  }
  {  // ... and read: refused
    Emb e = basic();
    e.norm.outputs.push_back("mean");
    e.extra_outputs = {f32("mean", {})};
    CHECK(why(e.model()) == line("the norm's statistics or sum outputs are read"));
    CHECK(count_ops(optimized(e.model(), {kPass}), "EmbedLayerNormalization") == 0);
  }
}

TEST_CASE("embed-layer-norm branches: double tables are refused; ids of unknown shape, segments of unknown shape, positions of another S or batch are refused") {
  {
    Emb e = basic();
    e.inits = {{"word", Tensor::from_vector<double>({100, 8}, std::vector<double>(800, 0.25))}, {"pos", Tensor::from_vector<double>({16, 8}, std::vector<double>(128, 0.5))},
               {"gamma", Tensor::from_vector<double>({8}, std::vector<double>(8, 1.0))}, {"beta", Tensor::from_vector<double>({8}, std::vector<double>(8, 0.0))}};
    e.out_type = DType::Double;
    CHECK(why(e.model()) == line("the tables differ in width or type, or are not float32/float16"));
    CHECK(count_ops(optimized(e.model(), {kPass}), "EmbedLayerNormalization") == 0);
  }
  {
    Emb e = basic();
    e.inputs[0] = tensor_info_unknown_rank("ids", DType::Int64);
    CHECK(why(e.model()) == line("the token ids 'ids' are not known to be (B, S)"));
  }
  {
    Emb e = basic();
    e.nodes.back().outputs[0] = "wp";
    e.nodes.push_back(gather("seg", "types", "t"));
    e.nodes.push_back(node("Add", {"wp", "t"}, {"sum"}));
    e.inputs.push_back(tensor_info_unknown_rank("types", DType::Int64));
    CHECK(why(e.model()) == line("the segment ids 'types' are not known to have the token ids' shape"));
  }
  for (const bool other_batch : {false, true}) {
    CAPTURE(other_batch);
    Emb e = basic();
    e.inputs[1] = other_batch ? i64("positions", {"other", "seq"}) : i64("positions", {"batch", 5});
    CHECK(why(e.model()) == line("the position ids 'positions' are not (B, S) or (1, S) of the token ids' S"));
    CHECK(count_ops(unverified(e.model()), "EmbedLayerNormalization") == 0);
  }
}

TEST_CASE("embed-layer-norm branches: float16 tables fuse in float16") {
  const auto half = [](Tensor t) {
    std::vector<float> v = t.to_vector<float>();
    return from_doubles(DType::Float16, t.shape(), std::vector<double>(v.begin(), v.end()));
  };
  Emb e = basic();
  e.inits = {{"word", half(ramp({100, 8}, -0.5f, 0.05f))}, {"pos", half(ramp({16, 8}, 0.3f, -0.02f))}, {"gamma", half(ramp({8}, 0.8f, 0.05f))},
             {"beta", half(ramp({8}, -0.1f, 0.02f))}};
  e.out_type = DType::Float16;
  const Model m = e.model();
  const Model out = unverified(m);
  REQUIRE_MESSAGE(count_ops(out, "EmbedLayerNormalization") == 1, why(m));
  CHECK(out.graph.find_initializer("word")->value.dtype() == DType::Float16);
}

TEST_CASE("embed-layer-norm branches: a float16 position table beside a float word table is refused") {
  Emb e = basic();
  const std::vector<float> v = ramp({16, 8}, 0.3f, -0.02f).to_vector<float>();
  e.inits = {{"pos", from_doubles(DType::Float16, {16, 8}, std::vector<double>(v.begin(), v.end()))}};
  CHECK(why(e.model()) == line("the tables differ in width or type, or are not float32/float16"));
  CHECK(count_ops(unverified(e.model()), "EmbedLayerNormalization") == 0);
}
