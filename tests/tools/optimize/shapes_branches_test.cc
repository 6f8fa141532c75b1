// Symbolic shapes (symbolic_shapes.h) on the forms that stop its propagation: a dim or a shape
// element unknown, an operand of the wrong rank, an attention operator missing the input that
// sizes its output, bounds and indices that are not constants; and the polynomial texts exporters
// write that are not our own.
#include <doctest/doctest.h>

#include "graph_index.h"
#include "optimize_test_util.h"
#include "refeval/builder.h"
#include "shape_inference.h"
#include "symbolic_shapes.h"

using namespace refeval;
using namespace refeval::build;
using refeval::optimize::dim_difference;
using refeval::optimize::dims_equal;
using refeval::optimize::linear_terms;
using refeval::testing::dims_text;
using refeval::testing::f32;

namespace {

Initializer int_vec(const std::string& name, std::vector<int64_t> v) { return {name, Tensor::from_vector<int64_t>({int64_t(v.size())}, v)}; }
Initializer int_scalar(const std::string& name, int64_t v) { return {name, Tensor::scalar<int64_t>(v)}; }
ValueInfo i64(const std::string& name, std::vector<DimSpec> dims) { return tensor_info(name, DType::Int64, std::move(dims)); }

// Inference of a graph of `nodes` whose outputs are `outs` (declared of no type).
optimize::Inference infer_nodes(std::vector<Node> nodes, std::vector<ValueInfo> inputs, std::vector<std::string> outs, std::vector<Initializer> inits = {},
                                OpsetMap opsets = {{"", 17}}) {
  std::vector<ValueInfo> outputs;
  for (const std::string& o : outs) outputs.push_back(untyped_info(o));
  return optimize::infer(model(graph("g", std::move(nodes), std::move(inputs), std::move(outputs), std::move(inits)), std::move(opsets)));
}

// One node `op` (of `domain`) writing "y", y's inferred dims.
std::string one_node(const std::string& op, const std::string& domain, std::vector<std::string> in, std::vector<ValueInfo> inputs,
                     std::vector<Attribute> attrs = {}, std::vector<Initializer> inits = {}, int64_t opset = 17) {
  OpsetMap opsets = {{"", opset}};
  if (!domain.empty() && domain != "ai.onnx") opsets[domain] = 1;
  return dims_text(infer_nodes({node(op, std::move(in), {"y"}, std::move(attrs), "/" + op, domain)}, std::move(inputs), {"y"}, std::move(inits), opsets), "y");
}

const std::string ms = "com.microsoft";

// `v`'s inferred dims as dims_text gives them, ONNX's placeholders (unk__N) shown as "?".
std::string dims_of(const optimize::Inference& inf, const std::string& v) {
  std::string t = dims_text(inf, v), out;
  for (size_t at = 0;;) {
    const size_t comma = t.find(',', at);
    const std::string d = t.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    out += (out.empty() ? "" : ",") + (d.rfind("unk__", 0) == 0 ? std::string("?") : d);
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

// ONNX's own placeholder or no dim at all: nothing the propagation found.
bool unknown(const std::string& dims) { return dims == "?" || dims.rfind("unk__", 0) == 0; }

}  // namespace

TEST_CASE("shapes branches: com.microsoft Attention without the input that sizes its output is left unknown") {
  const std::vector<Attribute> heads = {attr("num_heads", int64_t(2))};
  // The packed weight gives a third of its width: (16, 48) -> 16.
  CHECK(one_node("Attention", ms, {"x", "w"}, {f32("x", {"batch", "seq", 16}), f32("w", {16, 48})}, heads) == "batch,seq,16");
  // x of rank 4, no weight, a weight of rank 3, a weight of unknown width: unknown.
  CHECK(one_node("Attention", ms, {"x", "w"}, {f32("x", {"batch", "seq", 2, 8}), f32("w", {16, 48})}, heads) == "?");
  CHECK(one_node("Attention", ms, {"x"}, {f32("x", {"batch", "seq", 16})}, heads) == "?");
  CHECK(one_node("Attention", ms, {"x", "w"}, {f32("x", {"batch", "seq", 16}), f32("w", {1, 16, 48})}, heads) == "?");
  CHECK(one_node("Attention", ms, {"x", "w"}, {f32("x", {"batch", "seq", 16}), f32("w", {16, "width"})}, heads) == "?");
}

TEST_CASE("shapes branches: MultiHeadAttention's output from v, a packed q, or nothing it can size") {
  const std::vector<Attribute> heads = {attr("num_heads", int64_t(4))};
  // v in BSNH with its head size unknown; v of rank 2: nothing.
  CHECK(one_node("MultiHeadAttention", ms, {"q", "k", "v"}, {f32("q", {"batch", "seq", 16}), f32("k", {"batch", "kv", 16}), f32("v", {"batch", "kv", 4, ""})},
                 heads) == "?");
  CHECK(one_node("MultiHeadAttention", ms, {"q", "k", "v"}, {f32("q", {"batch", "seq", 16}), f32("k", {"batch", "kv", 16}), f32("v", {"kv", 16})}, heads) == "?");
  // q packed on its hidden axis of unknown size, or of 3 h with h symbolic.
  CHECK(one_node("MultiHeadAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", ""})}, heads) == "?");
  CHECK(one_node("MultiHeadAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", "3*h"})}, heads) == "batch,seq,h");
  // k and v given by name as "": q packed all the same.
  CHECK(one_node("MultiHeadAttention", ms, {"qkv", "", ""}, {f32("qkv", {"batch", "seq", 48})}, heads) == "batch,seq,16");
  // q as (B, S, N, 3, H) with N or H unknown.
  CHECK(one_node("MultiHeadAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", "", 3, 8})}, heads) == "?");
  CHECK(one_node("MultiHeadAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", 4, 3, ""})}, heads) == "?");
}

TEST_CASE("shapes branches: GroupQueryAttention's packed hidden size must split into whole heads") {
  const std::vector<Attribute> heads = {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))};
  CHECK(one_node("GroupQueryAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", 64})}, heads) == "batch,seq,32");
  // 65 is no multiple of 4 + 2 x 2 heads; a rank-4 q; an unknown hidden size; no num_heads.
  CHECK(one_node("GroupQueryAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", 65})}, heads) == "?");
  CHECK(one_node("GroupQueryAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", 8, 8})}, heads) == "?");
  CHECK(one_node("GroupQueryAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", ""})}, heads) == "?");
  CHECK(one_node("GroupQueryAttention", ms, {"qkv"}, {f32("qkv", {"batch", "seq", 64})}, {attr("kv_num_heads", int64_t(2))}) == "?");
}

TEST_CASE("shapes branches: ONNX's Attention-23 without v, or with q and v of different ranks, is left unknown") {
  const std::vector<Attribute> heads = {attr("q_num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))};
  auto att = [&](std::vector<std::string> in, std::vector<ValueInfo> inputs, std::vector<Attribute> a) {
    return one_node("Attention", "", std::move(in), std::move(inputs), std::move(a), {}, 23);
  };
  CHECK(att({"q", "k"}, {f32("q", {"batch", "seq", 32}), f32("k", {"batch", "kv", 16})}, heads) == "?");
  CHECK(att({"q", "k", "v"}, {f32("q", {"batch", 4, "seq", 8}), f32("k", {"batch", "kv", 16}), f32("v", {"batch", "kv", 16})}, heads) == "?");
  CHECK(att({"q", "k", "v"}, {f32("q", {"batch", "seq", 32}), f32("k", {"batch", 2, "kv", 8}), f32("v", {"batch", 2, "kv", 8})}, heads) == "?");
  CHECK(att({"q", "k", "v"}, {f32("q", {"batch", "seq", 32}), f32("k", {"batch", "kv", 16}), f32("v", {"batch", "kv", ""})}, heads) == "?");
  CHECK(att({"q", "k", "v"}, {f32("q", {"batch", "seq", 32}), f32("k", {"batch", "kv", 16}), f32("v", {"batch", "kv", 16})}, {attr("q_num_heads", int64_t(4))}) == "?");
  // v's 15 over 2 kv heads is no whole head size.
  CHECK(att({"q", "k", "v"}, {f32("q", {"batch", "seq", 32}), f32("k", {"batch", "kv", 15}), f32("v", {"batch", "kv", 15})}, heads) == "?");
}

TEST_CASE("shapes branches: EmbedLayerNormalization needs 2-D ids and a 1-D gamma; beta is optional") {
  const ValueInfo ids = tensor_info("ids", DType::Int32, {"batch", "seq"});
  const std::vector<ValueInfo> weights = {f32("word", {100, 8}), f32("pos", {64, 8}), f32("gamma", {8}), f32("beta", {8})};
  auto with = [&](ValueInfo i, std::vector<std::string> in) {
    std::vector<ValueInfo> inputs = weights;
    inputs.push_back(std::move(i));
    return one_node("EmbedLayerNormalization", ms, std::move(in), inputs);
  };
  CHECK(with(ids, {"ids", "", "word", "pos", "", "gamma", "beta"}) == "batch,seq,8");
  CHECK(with(ids, {"ids", "", "word", "pos", "", "gamma"}) == "batch,seq,8");
  CHECK(with(ids, {"ids", "", "word", "pos", "", "", "beta"}) == "?");
  CHECK(with(tensor_info("ids", DType::Int32, {"batch", "seq", 1}), {"ids", "", "word", "pos", "", "gamma", "beta"}) == "?");
  CHECK(with(ids, {"ids", "", "word", "pos", "", "word", "beta"}) == "?");
}

TEST_CASE("shapes branches: operators ONNX has no shape for, read through a com.microsoft FastGelu") {
  // FastGelu keeps x's shape; ONNX 1.12 knows no schema for it, so what follows is ours alone.
  std::vector<Node> nodes = {
      node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms),
      // A fixed 4 against an unknown dim: 4.
      node("Add", {"g", "u"}, {"sum"}),
      // Gemm with transA: (3, 4)^T (3, 5) -> (4, 5).
      node("Gemm", {"g", "w"}, {"gemm"}, {attr("transA", int64_t(1))}),
      node("ReduceMax", {"g"}, {"rmax"}, {attr("axes", std::vector<int64_t>{1}), attr("keepdims", int64_t(0))}),
      node("ReduceMin", {"g"}, {"rmin"}, {attr("axes", std::vector<int64_t>{0})}),
      node("IsNaN", {"g"}, {"nan"}),
      // FastGelu of a value of no shape: nothing.
      node("FastGelu", {"free"}, {"g2"}, {}, "/FastGelu2", ms),
      // A Gemm whose right operand has no shape: nothing.
      node("Gemm", {"g", "free"}, {"gemm2"}),
      // FusedMatMul with transA over a vector left operand: the vector stays a vector.
      node("FusedMatMul", {"v", "m"}, {"vm"}, {attr("transA", int64_t(1))}, "/FusedMatMul", ms),
      // FusedMatMul of one input: no product to size.
      node("FusedMatMul", {"m"}, {"fm1"}, {}, "/FusedMatMul1", ms),
  };
  const optimize::Inference inf =
      infer_nodes(nodes, {f32("x", {3, 4}), f32("u", {3, ""}), f32("w", {3, 5}), tensor_info_unknown_rank("free", DType::Float), f32("v", {4}), f32("m", {4, 6})},
                  {"sum", "gemm", "rmax", "rmin", "nan", "g2", "gemm2", "vm", "fm1"}, {}, {{"", 13}, {ms, 1}});
  CHECK(dims_of(inf, "g") == "3,4");
  CHECK(dims_of(inf, "sum") == "3,4");
  CHECK(dims_of(inf, "gemm") == "4,5");
  CHECK(dims_of(inf, "rmax") == "3");
  CHECK(dims_of(inf, "rmin") == "1,4");
  CHECK(dims_of(inf, "nan") == "3,4");
  CHECK(dims_of(inf, "g2") == "?");
  CHECK(dims_of(inf, "gemm2") == "?");
  CHECK(dims_of(inf, "vm") == "6");
  CHECK(dims_of(inf, "fm1") == "?");
}

TEST_CASE("shapes branches: a node without outputs, or with its output unnamed, is skipped without harm") {
  std::vector<Node> nodes = {
      node("FastGelu", {"x"}, {}, {}, "/FastGelu", ms),
      node("FastGelu", {"x"}, {""}, {}, "/FastGelu1", ms),
      node("GroupQueryAttention", {"q"}, {""}, {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}, "/GQA", ms),
      node("GroupQueryAttention", {"q"}, {}, {attr("num_heads", int64_t(4)), attr("kv_num_heads", int64_t(2))}, "/GQA2", ms),
      node("Relu", {"x"}, {}),
      // A standard operator's domain spelled "ai.onnx": seq + seq as with "".
      node("Shape", {"q"}, {"shape"}),
      node("Gather", {"shape", "one"}, {"s"}, {attr("axis", int64_t(0))}),
      node("Add", {"s", "s"}, {"r"}, {}, "/Add", "ai.onnx"),
  };
  const optimize::Inference inf = infer_nodes(nodes, {f32("x", {3, 4}), f32("q", {"batch", "seq", 64})}, {"r"}, {int_scalar("one", 1)}, {{"", 17}, {ms, 1}});
  REQUIRE(inf.shape_data.count("r"));
  REQUIRE(inf.shape_data.at("r").size() == 1);
  CHECK(inf.shape_data.at("r")[0].param == "2*seq");
}

namespace {

// `v`'s shape data as "batch,seq + 1,?" ("none" when there is none).
std::string data_text(const optimize::Inference& inf, const std::string& v) {
  const auto it = inf.shape_data.find(v);
  if (it == inf.shape_data.end()) return "none";
  std::string out;
  for (const Dim& d : it->second) out += (out.empty() ? "" : ",") + (d.fixed() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
  return out.empty() ? "empty" : out;
}

// x (batch, seq, ?, 4): its shape, and its dims seq, ? and 4 as 1-element vectors s1, u1, f1.
std::vector<Node> shape_parts() {
  return {node("Shape", {"x"}, {"shape"}),
          node("Gather", {"shape", "i1"}, {"s1"}, {attr("axis", int64_t(0))}),
          node("Gather", {"shape", "i2"}, {"u1"}, {attr("axis", int64_t(0))}),
          node("Gather", {"shape", "i3"}, {"f1"}, {attr("axis", int64_t(0))})};
}
std::vector<Initializer> shape_inits() { return {int_vec("i1", {1}), int_vec("i2", {2}), int_vec("i3", {3})}; }

optimize::Inference infer_parts(std::vector<Node> more, std::vector<std::string> outs, std::vector<Initializer> inits = {}, std::vector<ValueInfo> extra = {}) {
  std::vector<Node> nodes = shape_parts();
  nodes.insert(nodes.end(), more.begin(), more.end());
  std::vector<Initializer> all = shape_inits();
  all.insert(all.end(), inits.begin(), inits.end());
  std::vector<ValueInfo> inputs = {f32("x", {"batch", "seq", "", 4})};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  return infer_nodes(std::move(nodes), std::move(inputs), std::move(outs), std::move(all));
}

}  // namespace

TEST_CASE("shapes branches: arithmetic on shape values, elementwise, with unknown and mismatched operands") {
  const optimize::Inference inf = infer_parts(
      {node("Neg", {"u1"}, {"neg_u"}),
       // [seq] + shape broadcasts the one element; its ? stays unknown.
       node("Add", {"s1", "shape"}, {"grown"}),
       // A shape plus the empty shape of a scalar: nothing.
       node("Shape", {"scalar"}, {"empty"}), node("Add", {"shape", "empty"}, {"bad"}),
       // Sizes 4 and 2 do not broadcast: nothing.
       node("Add", {"shape", "pair"}, {"bad2"}),
       // 4 / seq, seq / 0 and seq / -2 are no sizes; 4 / 2 is.
       node("Div", {"f1", "s1"}, {"q1"}), node("Div", {"s1", "zero1"}, {"q2"}), node("Div", {"s1", "minus_two1"}, {"q3"}),
       node("Div", {"f1", "two1"}, {"q4"})},
      {"neg_u", "grown", "bad", "bad2", "q1", "q2", "q3", "q4"},
      {int_vec("pair", {1, 2}), int_vec("zero1", {0}), int_vec("minus_two1", {-2}), int_vec("two1", {2})}, {f32("scalar", {})});
  CHECK(data_text(inf, "neg_u") == "?");
  CHECK(data_text(inf, "grown") == "batch + seq,2*seq,?,seq + 4");
  CHECK(data_text(inf, "bad") == "none");
  CHECK(data_text(inf, "bad2") == "none");
  CHECK(data_text(inf, "q1") == "?");
  CHECK(data_text(inf, "q2") == "?");
  CHECK(data_text(inf, "q3") == "?");
  CHECK(data_text(inf, "q4") == "2");
}

TEST_CASE("shapes branches: Equal on shape values: equal symbols, a negative against a size, and what cannot be decided") {
  const optimize::Inference inf = infer_parts(
      {node("Equal", {"s1", "s1"}, {"same"}),             // seq == seq
       node("Equal", {"s1", "minus_one1"}, {"neg"}),      // a size is never -1
       node("Equal", {"minus_one1", "s1"}, {"neg2"}),
       node("Equal", {"f1", "s1"}, {"open"}),             // 4 == seq: undecided
       node("Equal", {"s1", "three1"}, {"open2"}),        // seq == 3: undecided
       node("Equal", {"u1", "minus_one1"}, {"unknown"}),  // ? == -1
       node("Equal", {"minus_one1", "u1"}, {"unknown2"}),
       node("Equal", {"shape", "pair"}, {"mismatch"}),    // 4 against 2 elements
       node("Equal", {"shape", "minus_one1"}, {"all"})},  // 4 against 1: ? stops it
      {"same", "neg", "neg2", "open", "open2", "unknown", "unknown2", "mismatch", "all"},
      {int_vec("minus_one1", {-1}), int_vec("three1", {3}), int_vec("pair", {1, 2})});
  CHECK(data_text(inf, "same") == "1");
  CHECK(data_text(inf, "neg") == "0");
  CHECK(data_text(inf, "neg2") == "0");
  CHECK(data_text(inf, "open") == "none");
  CHECK(data_text(inf, "open2") == "none");
  CHECK(data_text(inf, "unknown") == "none");
  CHECK(data_text(inf, "unknown2") == "none");
  CHECK(data_text(inf, "mismatch") == "none");
  CHECK(data_text(inf, "all") == "none");
}

TEST_CASE("shapes branches: Where on shape values picks by a known condition only") {
  const optimize::Inference inf = infer_parts(
      {node("Equal", {"s1", "s1"}, {"yes"}),                 // [1]
       node("Equal", {"shape", "shape"}, {"yes4"}),          // batch, seq, ?, 4 each equal itself... but ? stops it
       node("Equal", {"pair", "pair"}, {"yes2"}),            // [1, 1]
       node("Where", {"yes", "shape", "ones4"}, {"picked"}),  // one condition for all: the shape
       node("Where", {"yes2", "shape", "ones4"}, {"short_c"}),
       node("Where", {"yes", "pair", "ones4"}, {"short_x"}),
       node("Where", {"yes", "ones4", "pair"}, {"short_y"}),
       node("Where", {"yes", "free", "ones4"}, {"no_x"}),
       node("Where", {"yes", "ones4", "free"}, {"no_y"}),
       node("Where", {"u1", "shape", "ones4"}, {"unknown_c"}),
       node("Where", {"s1", "shape", "ones4"}, {"symbolic_c"})},
      {"picked", "short_c", "short_x", "short_y", "no_x", "no_y", "unknown_c", "symbolic_c", "yes4"},
      {int_vec("pair", {1, 2}), int_vec("ones4", {1, 1, 1, 1})}, {i64("free", {4})});
  CHECK(data_text(inf, "picked") == "batch,seq,?,4");
  CHECK(data_text(inf, "short_c") == "none");
  CHECK(data_text(inf, "short_x") == "none");
  CHECK(data_text(inf, "short_y") == "none");
  CHECK(data_text(inf, "no_x") == "none");
  CHECK(data_text(inf, "no_y") == "none");
  CHECK(data_text(inf, "unknown_c") == "none");
  CHECK(data_text(inf, "symbolic_c") == "none");
}

TEST_CASE("shapes branches: ConstantOfShape's elements: no value is 0, an int32 value, a float or a two-element value none") {
  auto filled = [](std::vector<Attribute> a) {
    return data_text(infer_nodes({node("ConstantOfShape", {"three"}, {"y"}, std::move(a))}, {}, {"y"}, {int_vec("three", {3})}), "y");
  };
  CHECK(filled({}) == "0,0,0");
  CHECK(filled({attr("value", Tensor::from_vector<int32_t>({1}, {7}))}) == "7,7,7");
  CHECK(filled({attr("value", Tensor::from_vector<float>({1}, {1.0f}))}) == "none");
  CHECK(filled({attr("value", Tensor::from_vector<int64_t>({2}, {1, 2}))}) == "none");
  // A value attribute that is no tensor (invalid): read as no value.
  CHECK(filled({attr("value", int64_t(5))}) == "0,0,0");
}

TEST_CASE("shapes branches: Range needs a known start, limit and a delta of 1") {
  auto range = [](const std::string& start, const std::string& limit, const std::string& delta) {
    return dims_of(infer_parts({node("Range", {start, limit, delta}, {"y"})}, {"y"},
                                 {int_scalar("zero", 0), int_scalar("one", 1), int_vec("pair", {0, 1})}, {i64("free", {})}),
                     "y");
  };
  CHECK(range("zero", "s1", "one") == "seq");
  CHECK(unknown(range("free", "s1", "one")));
  CHECK(unknown(range("pair", "s1", "one")));
  CHECK(unknown(range("zero", "pair", "one")));
  CHECK(unknown(range("u1", "s1", "one")));
  CHECK(unknown(range("zero", "u1", "one")));
  CHECK(unknown(range("zero", "s1", "free")));
  CHECK(unknown(range("zero", "s1", "pair")));
  CHECK(unknown(range("zero", "s1", "u1")));
}

TEST_CASE("shapes branches: Reshape with unknown or zero elements, allowzero, and a shape value reshaped to 2-D") {
  // g = FastGelu(x): (3, 0) and (3, seq, 4), shapes ONNX does not know, so every dim is ours.
  auto reshaped = [](DimSpec d1, std::vector<int64_t> target, std::vector<Attribute> a = {}, std::vector<Node> more = {}, std::string out = "y") {
    std::vector<Node> nodes = {node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms)};
    nodes.insert(nodes.end(), more.begin(), more.end());
    nodes.push_back(node("Reshape", {"g", "t"}, {"y"}, std::move(a)));
    return infer_nodes(nodes, {f32("x", {3, d1, 4})}, {out}, {int_vec("t", target)}, {{"", 17}, {ms, 1}});
  };
  // (3, 0, 4) -> [0, 3, 4]: 0 copies the 3 unless allowzero.
  CHECK(dims_of(reshaped(0, {0, 3, 4}), "y") == "3,3,4");
  CHECK(dims_of(reshaped(0, {0, 3, 4}, {attr("allowzero", int64_t(1))}), "y") == "0,3,4");
  // (3, past + seq, 4) -> [-1, 12]: past + seq; -1 with the rest a sum: no monomial to divide by.
  CHECK(dims_of(reshaped("past + seq", {-1, 12}), "y") == "past + seq,12");
  std::vector<Node> rest = {node("Shape", {"g"}, {"gs"}), node("Slice", {"gs", "one", "two"}, {"mid"}), node("Concat", {"minus", "mid"}, {"t2"}, {attr("axis", int64_t(0))}),
                            node("Reshape", {"g", "t2"}, {"z"})};
  {
    std::vector<Node> nodes = {node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms)};
    nodes.insert(nodes.end(), rest.begin(), rest.end());
    const optimize::Inference inf = infer_nodes(nodes, {f32("x", {3, "past + seq", 4})}, {"z"},
                                                {int_vec("one", {1}), int_vec("two", {2}), int_vec("minus", {-1})}, {{"", 17}, {ms, 1}});
    CHECK(dims_of(inf, "z") == "?,past + seq");
  }
  // Target elements unknown: x's ? dim read through its shape.
  {
    const optimize::Inference inf = infer_parts({node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms), node("Concat", {"u1", "s1"}, {"t"}, {attr("axis", int64_t(0))}),
                                                 node("Reshape", {"g", "t"}, {"y"}),
                                                 // The 4 elements of the shape as a 2 x 2 value: no shape data of it.
                                                 node("Reshape", {"shape", "two_two"}, {"square"})},
                                                {"y", "square"}, {int_vec("two_two", {2, 2})});
    CHECK(dims_of(inf, "y") == "?,seq");
    CHECK(data_text(inf, "square") == "none");
  }
}

TEST_CASE("shapes branches: Slice bounds unknown, symbolic, negative, or read from a shape value") {
  // g = FastGelu(x), x (batch, total, ?): dims ONNX does not know.
  auto sliced = [](std::vector<std::string> in, std::vector<Node> more = {}) {
    std::vector<Node> nodes = {node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms), node("Shape", {"q"}, {"qs"}),
                               node("Gather", {"qs", "i1"}, {"qlen1"}, {attr("axis", int64_t(0))}), node("Neg", {"qlen1"}, {"minus_q"}),
                               node("Gather", {"qs", "i2"}, {"unk1"}, {attr("axis", int64_t(0))})};
    nodes.insert(nodes.end(), more.begin(), more.end());
    nodes.push_back(node("Slice", std::move(in), {"y"}));
    return dims_of(infer_nodes(nodes, {f32("x", {"batch", "total", ""}), f32("q", {"batch", "seq", ""}), i64("free", {1})}, {"y"},
                                 {int_vec("i1", {1}), int_vec("i2", {2}), int_vec("zero", {0}), int_vec("one", {1}), int_vec("two", {2}), int_vec("big", {INT64_MAX}),
                                  int_vec("minus_two", {-2}), int_vec("minus_five", {-5})},
                                 {{"", 17}, {ms, 1}}),
                     "y");
  };
  // x[:, -seq:]: total - (total - seq) = seq.
  CHECK(sliced({"g", "minus_q", "big", "one"}) == "batch,seq,?");
  // The same on the unknown axis: unknown.
  CHECK(sliced({"g", "minus_q", "big", "two"}) == "batch,total,?");
  // On the unknown axis: from 1 to 2 is 1; from -2 to the end is unknown.
  CHECK(sliced({"g", "one", "two", "two"}) == "batch,total,1");
  CHECK(sliced({"g", "minus_two", "big", "two"}) == "batch,total,?");
  // A bound of unknown value (q's ? dim): the axis unknown.
  CHECK(sliced({"g", "unk1", "big", "one"}) == "batch,?,?");
  CHECK(sliced({"g", "zero", "unk1", "one"}) == "batch,?,?");
  // Axes and steps given as "": the default.
  CHECK(sliced({"g", "zero", "one", ""}) == "1,total,?");
  CHECK(sliced({"g", "zero", "one", "one", ""}) == "batch,1,?");
  // Axes from a graph input; starts from a graph input without axes: nothing.
  CHECK(unknown(sliced({"g", "zero", "one", "free"})));
  CHECK(unknown(sliced({"g", "free", "one"})));
  // Starts not known and an axis out of range: nothing.
  CHECK(unknown(sliced({"g", "free", "one", "minus_five"})));
  // Axes read from a shape with an unknown or a symbolic element: nothing.
  CHECK(unknown(sliced({"g", "zero", "one", "unk1"})));
  CHECK(unknown(sliced({"g", "zero", "one", "qlen1"})));
}

TEST_CASE("shapes branches: a shape value sliced by unknown bounds gives no elements") {
  const optimize::Inference inf =
      infer_parts({node("Slice", {"shape", "zero", "u1"}, {"b"}), node("Slice", {"shape", "zero", "two"}, {"c"})},
                  {"b", "c"}, {int_vec("zero", {0}), int_vec("two", {2})});
  CHECK(data_text(inf, "b") == "none");
  CHECK(data_text(inf, "c") == "batch,seq");
}

TEST_CASE("shapes branches: Concat, Split, Gather and Squeeze over unknown dims and inputs given as \"\"") {
  std::vector<Node> nodes = {
      node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms),  // (3, seq, ?, 1)
      node("Concat", {"g", "g"}, {"cat_unknown"}, {attr("axis", int64_t(2))}),
      node("Concat", {"g", "g"}, {"cat"}, {attr("axis", int64_t(1))}),
      node("Split", {"g", ""}, {"first", "second"}, {attr("axis", int64_t(1))}),
      node("Split", {"g"}, {"u_a", "u_b"}, {attr("axis", int64_t(2))}),
      node("Split", {"g", "sizes"}, {"kept", ""}, {attr("axis", int64_t(0))}),
      node("Split", {"g", "sizes"}, {"a3", "b3", "c3"}, {attr("axis", int64_t(0))}),
      node("Squeeze", {"g"}, {"squeezed"}),
      node("Squeeze", {"g", ""}, {"squeezed2"}),
      node("Shape", {"x"}, {"shape"}),
      node("Gather", {"shape", "free"}, {"picked"}, {attr("axis", int64_t(0))}),
  };
  const optimize::Inference inf =
      infer_nodes(nodes, {f32("x", {3, "seq", "", 1}), i64("free", {2})},
                  {"cat_unknown", "cat", "first", "u_a", "kept", "a3", "squeezed", "squeezed2", "picked"}, {int_vec("sizes", {1, 2})}, {{"", 17}, {ms, 1}});
  CHECK(dims_of(inf, "cat_unknown") == "3,seq,?,1");
  CHECK(dims_of(inf, "cat") == "3,2*seq,?,1");
  CHECK(dims_of(inf, "first") == "3,?,?,1");  // seq / 2: no polynomial
  CHECK(dims_of(inf, "u_a") == "3,seq,?,1");
  CHECK(dims_of(inf, "kept") == "1,seq,?,1");
  CHECK(unknown(dims_of(inf, "a3")));  // two sizes for three outputs (invalid)
  CHECK(dims_of(inf, "squeezed") == "3,seq,?");
  CHECK(dims_of(inf, "squeezed2") == "3,seq,?");
  CHECK(data_text(inf, "picked") == "none");
}

TEST_CASE("shapes branches: MatMul with a scalar operand has no shape") {
  std::vector<Node> nodes = {node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms), node("MatMul", {"s", "g"}, {"left"}), node("MatMul", {"g", "s"}, {"right"}),
                             node("MatMul", {"g", "g"}, {"both"})};
  const optimize::Inference inf = infer_nodes(nodes, {f32("x", {4, 4}), f32("s", {})}, {"left", "right", "both"}, {}, {{"", 17}, {ms, 1}});
  CHECK(unknown(dims_of(inf, "left")));
  CHECK(unknown(dims_of(inf, "right")));
  CHECK(dims_of(inf, "both") == "4,4");
}

TEST_CASE("shapes branches: MatMul over two symbolic batch dims takes them as equal, as ORT's symbolic inference does") {
  // (a, 4, 4) @ (b, 4, 6): a and b are equal, or one is 1, when the model runs; no export
  // broadcasts a batch by a symbol that is 1.
  std::vector<Node> nodes = {node("FastGelu", {"x"}, {"g"}, {}, "/FastGelu", ms), node("MatMul", {"g", "w"}, {"y"}), node("MatMul", {"g", "v"}, {"z"})};
  const optimize::Inference inf = infer_nodes(nodes, {f32("x", {"a", 4, 4}), f32("w", {"b", 4, 6}), f32("v", {1, 4, 6})}, {"y", "z"}, {}, {{"", 17}, {ms, 1}});
  CHECK(dims_of(inf, "y") == "a,4,6");
  CHECK(dims_of(inf, "z") == "a,4,6");
}

TEST_CASE("shapes branches: dims named by exporters: a sum then a difference, numbers too long, odd characters") {
  // "a + b - c": the " - " found after the " + ".
  CHECK(dims_equal(Dim{-1, "a + b - c"}, Dim{-1, "b - c + a"}));
  CHECK(dim_difference(Dim{-1, "a + b - c"}, Dim{-1, "a"})->param == "b - c");
  // A number of 18 digits or more, a name starting with '(' and an empty factor are symbols.
  CHECK(linear_terms(Dim{-1, "123456789012345678901"})->at("123456789012345678901") == 1);
  CHECK(linear_terms(Dim{-1, "2*(n)"})->at("(n)") == 2);
  CHECK(!linear_terms(Dim{-1, "2*n*"}));  // n times the symbol "": a product
  CHECK(!linear_terms(Dim{-1, "batch*seq"}));
  const auto terms = linear_terms(Dim{-1, "2*seq - 1"});
  REQUIRE(terms);
  CHECK(terms->at("seq") == 2);
  CHECK(terms->at("") == -1);
  // Unknown dims: no difference, no terms.
  CHECK(!dim_difference(Dim{}, Dim{-1, "a"}));
  CHECK(!dim_difference(Dim{-1, "a"}, Dim{}));
  CHECK(!linear_terms(Dim{}));
}

// ---------------------------------------------------------------------------------------------
// Shape inference around operators ONNX has no schema for (shape_inference.cc).

TEST_CASE("shapes branches: a schema-less operator over an untyped input is taken as float") {
  const optimize::Inference inf =
      infer_nodes({node("FastGelu", {"u"}, {"y"}, {}, "/FastGelu", ms)}, {untyped_info("u")}, {"y"}, {}, {{"", 17}, {ms, 1}});
  REQUIRE(inf.types.count("y"));
  CHECK(inf.types.at("y").dtype == DType::Float);
}

TEST_CASE("shapes branches: an earlier inference's shape of a custom output is used; without an element type it is not") {
  // Mystery (a custom domain) writes m; Flatten(m) has a shape only if m's does.
  const Model m = model(graph("g", {node("Mystery", {"x"}, {"m"}, {}, "/Mystery", "my.domain"), node("Flatten", {"m"}, {"f"}, {attr("axis", int64_t(1))})},
                              {f32("x", {2, 3, 4})}, {untyped_info("f")}),
                        {{"", 17}, {"my.domain", 1}});
  optimize::Inference earlier;
  earlier.types["m"] = ValueType::tensor(DType::Float, {Dim{2, ""}, Dim{3, ""}, Dim{4, ""}});
  CHECK(dims_of(optimize::infer(m, &earlier), "f") == "2,12");
  // No element type: m is taken as x's float, which the earlier shape does not say.
  earlier.types["m"] = ValueType::tensor(DType::Undefined, {Dim{2, ""}, Dim{3, ""}, Dim{4, ""}});
  CHECK(unknown(dims_of(optimize::infer(m, &earlier), "f")));
}

TEST_CASE("shapes branches: inference runs again while schema-less outputs gain shapes, up to 8 rounds") {
  // FastGelu -> Flatten -> FastGelu -> Flatten ...: each round ONNX shapes one Flatten, whose
  // FastGelu the propagation then shapes for the next round.
  auto chain = [](int links) {
    std::vector<Node> nodes;
    std::string v = "x";
    for (int i = 0; i < links; ++i) {
      const std::string g = "g" + std::to_string(i), f = "f" + std::to_string(i);
      nodes.push_back(node("FastGelu", {v}, {g}, {}, "/FastGelu" + std::to_string(i), ms));
      nodes.push_back(node("Flatten", {g}, {f}, {attr("axis", int64_t(1))}, "/Flatten" + std::to_string(i)));
      v = f;
    }
    return infer_nodes(nodes, {f32("x", {2, 3})}, {v}, {}, {{"", 17}, {ms, 1}});
  };
  CHECK(dims_of(chain(3), "f2") == "2,3");
  const optimize::Inference long_chain = chain(10);
  CHECK(dims_of(long_chain, "f5") == "2,3");
  CHECK(unknown(dims_of(long_chain, "f9")));
}

TEST_CASE("shapes branches: an earlier inference that typed a schema-less output without a shape counts its shape as new") {
  const Model m = model(graph("g", {node("FastGelu", {"x"}, {"y"}, {}, "/FastGelu", ms), node("Flatten", {"y"}, {"f"}, {attr("axis", int64_t(1))})},
                              {f32("x", {2, 3, 4})}, {untyped_info("f")}),
                        {{"", 17}, {ms, 1}});
  optimize::Inference earlier;
  earlier.types["y"] = ValueType::tensor_of_unknown_rank(DType::Float);
  CHECK(dims_of(optimize::infer(m, &earlier), "f") == "2,12");
}
