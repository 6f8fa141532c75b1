// The attention passes on exporter forms and look-alikes their other tests do not feed. First the
// split-qkv pass, which writes packed q/k/v projections as three: GPT-NeoX's heads interleaving
// q, k and v (a (B, S, N, 3h) view cut by Slices or one Split), timm's
// reshape(B, S, 3, N, h).permute(2, 0, 3, 1, 4) unbound by Split + Squeeze or Gather, and
// MixFormer's view(B, S, 3, N, h)[:, :, j]; each near miss stays one product. x is (B, S, 16)
// with B and S dynamic, 2 heads of 8; every result is checked against the original with the
// evaluator (optimized(), optimize_test_util.h).
#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <limits>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::ramp;

namespace {

constexpr int64_t kHeads = 2, kHead = 8, kHidden = kHeads * kHead;
constexpr int64_t kBig = std::numeric_limits<int64_t>::max();

// A graph under construction on x (B, S, 16); outputs named by out().
class G : public testing::GraphUnderConstruction {
 public:
  explicit G(int opset = 17) : opset_(opset) {}
  std::string unsqueeze0(const std::string& v) { return add("Unsqueeze", {v, c(ints({0}))}); }
  Model model() {
    std::vector<ValueInfo> in = {testing::f32("x", {"batch", "seq", kHidden})};
    in.insert(in.end(), inputs_.begin(), inputs_.end());
    return refeval::build::model(graph("qkv", nodes_, in, outputs_, inits_), {{"", opset_}});
  }

 private:
  int opset_;
};

// The packed product x W (+ b) of 3 * 16 columns.
struct Packed {
  bool bias = true;
  bool bias_first = false;    // Add(b, x W)
  bool runtime_bias = false;  // b a graph input: not a constant projection
  bool runtime_w = false;     // W a graph input
};

std::string packed(G& g, const Packed& p) {
  const std::string w = p.runtime_w ? "W" : g.c(ramp({kHidden, 3 * kHidden}, -0.4f, 0.035f));
  if (p.runtime_w) g.input(testing::f32("W", {kHidden, 3 * kHidden}));
  const std::string y = g.add("MatMul", {"x", w});
  if (!p.bias) return y;
  const std::string b = p.runtime_bias ? "b" : g.c(ramp({3 * kHidden}, -0.3f, 0.03f));
  if (p.runtime_bias) g.input(testing::f32("b", {3 * kHidden}));
  return g.add("Add", p.bias_first ? std::vector<std::string>{b, y} : std::vector<std::string>{y, b});
}

// GPT-NeoX: the product viewed as (B, S, N, 3h), q/k/v cut from the last axis by `cut`.
enum class NeoxCut { Slices, SlicesAxis3Step1, SplitSizes, SplitAttribute, SplitNumOutputs, SplitUneven, SliceStep2, SliceAxis2, SliceOffHead };

Model neox(NeoxCut cut, Packed p = {}, std::vector<int64_t> view = {0, 0, kHeads, 3 * kHead}) {
  const int opset = cut == NeoxCut::SplitAttribute ? 11 : cut == NeoxCut::SplitNumOutputs ? 18 : 17;
  G g(opset);
  const std::string v = g.add("Reshape", {packed(g, p), g.c(ints(view))});
  const int64_t h = view[3] / 3;
  const auto slice = [&](int64_t start, int64_t end, std::vector<std::string> extra = {}, std::string name = "") {
    std::vector<std::string> in = {v, g.c(ints({start})), g.c(ints({end}))};
    for (std::string& e : extra) in.push_back(e);
    if (in.size() == 3) in.push_back(g.c(ints({-1})));
    return g.add("Slice", in, {}, 1, name);
  };
  switch (cut) {
    case NeoxCut::Slices:  // the third Slice unnamed: its parts are named after its output
      g.out(slice(0, h)), g.out(slice(h, 2 * h)), g.out(slice(2 * h, kBig, {}, "-"));
      break;
    case NeoxCut::SlicesAxis3Step1:  // axis 3 and an explicit step of 1
      for (int64_t j = 0; j < 3; ++j) g.out(slice(j * h, (j + 1) * h, {g.c(ints({3})), g.c(ints({1}))}));
      break;
    case NeoxCut::SliceStep2:  // x[..., 0:16:2]: every other column, not q
      g.out(slice(0, 2 * h, {g.c(ints({-1})), g.c(ints({2}))}));
      break;
    case NeoxCut::SliceAxis2:  // a cut of the heads axis
      g.out(slice(0, 1, {g.c(ints({2}))}));
      break;
    case NeoxCut::SliceOffHead:  // x[..., 4:12]: straddles q and k
      g.out(slice(h / 2, h / 2 + h));
      break;
    case NeoxCut::SplitSizes:
    case NeoxCut::SplitUneven: {
      const std::vector<int64_t> sizes = cut == NeoxCut::SplitSizes ? std::vector<int64_t>{h, h, h} : std::vector<int64_t>{h / 2, h, h + h / 2};
      const std::string q = g.add("Split", {v, g.c(ints(sizes))}, {attr("axis", int64_t(-1))}, 3);
      g.out(q), g.out(q + "_1"), g.out(q + "_2");
      break;
    }
    case NeoxCut::SplitAttribute: {  // opset 11: the sizes in the split attribute
      const std::string q = g.add("Split", {v}, {attr("axis", int64_t(3)), attr("split", std::vector<int64_t>{h, h, h})}, 3);
      g.out(q), g.out(q + "_1"), g.out(q + "_2");
      break;
    }
    case NeoxCut::SplitNumOutputs: {  // opset 18: equal parts by num_outputs
      const std::string q = g.add("Split", {v}, {attr("axis", int64_t(-1)), attr("num_outputs", int64_t(3))}, 3);
      g.out(q), g.out(q + "_1"), g.out(q + "_2");
      break;
    }
  }
  return g.model();
}

// timm's unbind of the (3, B, N, S, h) permuted view, or MixFormer's view[:, :, j].
enum class Unbind { SplitSqueeze, SplitSqueezeAll, GatherVector, OtherPerm, MixFormerAxisMinus3, MixFormerFirst, MixFormerNegativeIndex, MixFormerRuntimeIndex };

Model unbound(Unbind form, std::vector<int64_t> view = {0, 0, 3, kHeads, kHead}) {
  G g;
  const std::string v = g.add("Reshape", {packed(g, {}), g.c(ints(view))});
  switch (form) {
    case Unbind::SplitSqueeze:  // q, k, v = qkv.unbind(0) as Split + Squeeze
    case Unbind::SplitSqueezeAll:  // squeeze() without axes: it would drop a batch of 1 as well
    case Unbind::OtherPerm: {
      const std::vector<int64_t> perm = form == Unbind::OtherPerm ? std::vector<int64_t>{2, 0, 1, 3, 4} : std::vector<int64_t>{2, 0, 3, 1, 4};
      const std::string t = g.add("Transpose", {v}, {attr("perm", perm)});
      const std::string s = g.add("Split", {t, g.c(ints({1, 1, 1}))}, {attr("axis", int64_t(0))}, 3);
      const std::string axes = g.c(ints({0}));
      for (const std::string& part : {s, s + "_1", s + "_2"})
        g.out(form == Unbind::SplitSqueezeAll ? g.add("Squeeze", {part}) : g.add("Squeeze", {part, axes}));
      break;
    }
    case Unbind::GatherVector: {  // qkv[[0]]: a (1, B, N, S, h) slice, not a part
      const std::string t = g.add("Transpose", {v}, {attr("perm", std::vector<int64_t>{2, 0, 3, 1, 4})});
      g.out(g.add("Gather", {t, g.c(ints({0}))}, {attr("axis", int64_t(0))}));
      break;
    }
    case Unbind::MixFormerAxisMinus3:
      for (int64_t j = 0; j < 3; ++j) g.out(g.add("Gather", {v, g.c(Tensor::scalar<int64_t>(j))}, {attr("axis", int64_t(-3))}));
      break;
    case Unbind::MixFormerFirst:  // q = qkv[:, :, 0] alone
      g.out(g.add("Gather", {v, g.c(Tensor::scalar<int64_t>(0))}, {attr("axis", int64_t(2))}));
      break;
    case Unbind::MixFormerNegativeIndex:  // qkv[:, :, -1]: v, read from the end
      g.out(g.add("Gather", {v, g.c(Tensor::scalar<int64_t>(-1))}, {attr("axis", int64_t(2))}));
      break;
    case Unbind::MixFormerRuntimeIndex:
      g.input(tensor_info("j", DType::Int64, {}));
      g.out(g.add("Gather", {v, "j"}, {attr("axis", int64_t(2))}));
      break;
  }
  return g.model();
}

// The products after the pass: 3 when split, 1 when the packed one stayed.
int products(const Model& m) { return count_ops(optimized(m, {"split-qkv"}), "MatMul"); }

// The parts the pass cut from an unbound product: a Slice of its columns each (the graphs have none).
int parts(const Model& m) { return count_ops(optimized(m, {"split-qkv"}), "Slice"); }

}  // namespace

TEST_CASE("split-qkv: GPT-NeoX's interleaved heads cut by Slices or one Split (sizes input, attribute or num_outputs) become three products") {
  struct Case {
    const char* name;
    NeoxCut cut;
    Packed packed;
  };
  const std::vector<Case> cases = {
      {"three Slices, one unnamed", NeoxCut::Slices, {}},
      {"Slices of axis 3 with step 1", NeoxCut::SlicesAxis3Step1, {}},
      {"Split sizes input", NeoxCut::SplitSizes, {}},
      {"Split sizes attribute (opset 11)", NeoxCut::SplitAttribute, {}},
      {"Split num_outputs (opset 18)", NeoxCut::SplitNumOutputs, {}},
      {"bias added first: Add(b, x W)", NeoxCut::Slices, {.bias_first = true}},
      {"no bias", NeoxCut::SplitSizes, {.bias = false}},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Model out = optimized(neox(c.cut, c.packed), {"split-qkv"});
    CHECK(count_ops(out, "MatMul") == 3);
    CHECK(count_ops(out, "Add") == (c.packed.bias ? 3 : 0));
    CHECK(count_ops(out, "Split") + count_ops(out, "Slice") == 0);
    CHECK(count_ops(out, "Reshape") == 3);
  }
}

TEST_CASE("split-qkv: cuts that are not q, k and v, or a projection that is not constant, stay one product") {
  CHECK(products(neox(NeoxCut::SplitUneven)) == 1);                    // split([4, 8, 12])
  CHECK(products(neox(NeoxCut::SliceStep2)) == 1);                     // every other column
  CHECK(products(neox(NeoxCut::SliceAxis2)) == 1);                     // the heads axis
  CHECK(products(neox(NeoxCut::SliceOffHead)) == 1);                   // [4, 12): half of q, half of k
  CHECK(products(neox(NeoxCut::Slices, {.runtime_bias = true})) == 1); // the bias an input
  CHECK(products(neox(NeoxCut::Slices, {.runtime_w = true})) == 1);    // the weights an input
  // (B, S, 3, 16): 3h = 16 is not three head sizes
  CHECK(products(neox(NeoxCut::Slices, {}, {0, 0, 3, kHidden})) == 1);
}

// The unbound parts become Slices of the packed product's columns (as an attention's packed
// projection reads them), each viewed as heads.
TEST_CASE("split-qkv: timm's permuted view unbound by Split + Squeeze becomes three column Slices, transposed to heads") {
  const Model out = optimized(unbound(Unbind::SplitSqueeze), {"split-qkv"});
  CHECK(count_ops(out, "Slice") == 3);
  CHECK(count_ops(out, "Transpose") == 3);  // each part (B, S, N, h) -> (B, N, S, h)
  CHECK(count_ops(out, "Split") + count_ops(out, "Squeeze") == 0);
}

TEST_CASE("split-qkv: MixFormer's view[:, :, j] gathered on axis -3 becomes three column Slices, untransposed") {
  const Model out = optimized(unbound(Unbind::MixFormerAxisMinus3), {"split-qkv"});
  CHECK(count_ops(out, "Slice") == 3);
  CHECK(count_ops(out, "Transpose") + count_ops(out, "Gather") == 0);
  CHECK(parts(unbound(Unbind::MixFormerNegativeIndex)) == 1);  // qkv[:, :, -1]: v, counted from the end as Gather does
}

TEST_CASE("split-qkv: unbinds that are not the three parts of a (B, S, 3, N, h) view stay") {
  CHECK(parts(unbound(Unbind::SplitSqueezeAll)) == 0);         // squeeze() of every unit axis
  CHECK(parts(unbound(Unbind::GatherVector)) == 0);            // qkv[[0]]
  CHECK(parts(unbound(Unbind::OtherPerm)) == 0);               // permute(2, 0, 1, 3, 4): (3, B, S, N, h)
  CHECK(parts(unbound(Unbind::MixFormerRuntimeIndex)) == 0);   // an index only known at run time
  // q of a (B, S, 3, N, h) view is split off; of a (B, S, 2, 3, 8) view it is not q
  CHECK(parts(unbound(Unbind::MixFormerFirst)) == 1);
  CHECK(parts(unbound(Unbind::MixFormerFirst, {0, 0, 2, 3, kHead})) == 0);
  CHECK(parts(unbound(Unbind::MixFormerAxisMinus3, {0, 0, 3, 4, 4})) == 3);  // (3, 4, 4) is 48 too: 4 heads of 4
}

// ---- attention ----
// BERT's self-attention on x (B, S, 16): q, k and v by three biased products split into 2 heads
// of 8, softmax(q k^T / sqrt(8) + masks) v, the heads merged back.
namespace {

// The additive mask terms of the scores.
enum class Mask {
  None,
  Keeps,         // BERT: (1 - float(mask)) * -10000 of a (B, T) int64 mask whose 1 keeps a key
  HidesInt,      // float(mask) * -10000: 1 hides a key, an int64 mask (torch's key_padding_mask as integers)
  TwoBiases,     // two constant (S, T) position biases, summed
};

struct Att {
  DimSpec batch = "batch";
  DimSpec seq = "seq";
  Mask mask = Mask::None;
  float scale = 0;  // a Mul by this instead of the Div by sqrt(8)
  bool scale_first = false;  // Mul(scale, scores)
  float q_scale = 0;         // q_proj(x) * q_scale before the head split (BART, CLIP)
  bool q_scale_first = false;  // Mul(q_scale, q_proj(x))
  int64_t softmax_axis = -1;
  bool scores_output = false;  // the scaled scores also a graph output
  std::vector<int64_t> view = {0, 0, kHeads, kHead};  // the head split's target
  float head_scale = 0;        // q's heads scaled between the split and the transpose, Mul(head_scale, split)
  bool stacked_past = false;   // ORT's (2, B, N, P, h) past, read by Gather(past, 0 or 1, axis 0)
  bool packed = false;         // q, k and v split from one (B, S, 48) biased product
  bool present = false;        // with stacked_past: present = Concat(Unsqueeze(K, 0), Unsqueeze(V, 0), 0) an output
  bool grouped = false;        // one key/value head of 8 after per-layer pasts, repeated for the 2 query heads (Llama's GQA)
};

Model bert(const Att& a) {
  G g;
  std::string qkv;  // the packed projection's three parts
  if (a.packed) qkv = g.add("Split", {packed(g, {}), g.c(ints({kHidden, kHidden, kHidden}))}, {attr("axis", int64_t(-1))}, 3);
  int part = 0;
  const auto heads = [&](const std::string& w, std::vector<int64_t> perm, float scale = 0, float head_scale = 0) {
    std::string p = a.packed ? qkv + (part ? "_" + std::to_string(part) : "") : g.add("Add", {g.add("MatMul", {"x", w}), g.c(ramp({kHidden}, -0.1f, 0.01f))});
    ++part;
    if (scale) {
      const std::string c = g.c(Tensor::scalar<float>(scale));
      p = g.add("Mul", a.q_scale_first ? std::vector<std::string>{c, p} : std::vector<std::string>{p, c});
    }
    std::string split = g.add("Reshape", {p, g.c(ints(a.view))});
    if (head_scale) split = g.add("Mul", {g.c(Tensor::scalar<float>(head_scale)), split});
    return g.add("Transpose", {split}, {attr("perm", perm)});
  };
  const std::string q = heads(g.c(ramp({kHidden, kHidden}, -0.2f, 0.02f)), {0, 2, 1, 3}, a.q_scale, a.head_scale);
  std::string k, v;
  if (a.grouped) {  // K = repeat(Concat(past_key, k, 2)), V likewise, the concats the presents
    for (std::string* kv : {&k, &v}) {
      const std::string name = kv == &k ? "past_key" : "past_value";
      g.input(testing::f32(name, {a.batch, 1, "past_seq", kHead}));
      const std::string p = g.add("Add", {g.add("MatMul", {"x", g.c(ramp({kHidden, kHead}, kv == &k ? 0.2f : -0.1f, 0.01f))}), g.c(ramp({kHead}, -0.1f, 0.01f))});
      const std::string h = g.add("Transpose", {g.add("Reshape", {p, g.c(ints({0, 0, 1, kHead}))})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
      const std::string present = g.add("Concat", {name, h}, {attr("axis", int64_t(2))});
      g.out(present);
      const std::string expanded = g.add("Expand", {g.add("Unsqueeze", {present, g.c(ints({2}))}), g.c(ints({1, 1, kHeads, 1, 1}))});
      *kv = g.add("Reshape", {expanded, g.c(ints({0, kHeads, -1, kHead}))});
    }
    k = g.add("Transpose", {k}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})});
  } else {
    k = heads(g.c(ramp({kHidden, kHidden}, 0.2f, -0.015f)), a.stacked_past ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{0, 2, 3, 1});
    v = heads(g.c(ramp({kHidden, kHidden}, -0.1f, 0.01f)), {0, 2, 1, 3});
  }
  if (a.stacked_past) {  // K = Concat(past[0], k, 2), V = Concat(past[1], v, 2), then K^T
    g.input(testing::f32("past", {2, a.batch, kHeads, "past_seq", kHead}));
    const auto past = [&](int64_t i) { return g.add("Gather", {"past", g.c(Tensor::scalar<int64_t>(i))}, {attr("axis", int64_t(0))}); };
    k = g.add("Concat", {past(0), k}, {attr("axis", int64_t(2))});
    v = g.add("Concat", {past(1), v}, {attr("axis", int64_t(2))});
    if (a.present) g.out(g.add("Concat", {g.unsqueeze0(k), g.unsqueeze0(v)}, {attr("axis", int64_t(0))}));
    k = g.add("Transpose", {k}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})});
  }
  std::string s = g.add("MatMul", {q, k});
  if (a.scale) {
    const std::string c = g.c(Tensor::scalar<float>(a.scale));
    s = g.add("Mul", a.scale_first ? std::vector<std::string>{c, s} : std::vector<std::string>{s, c});
  } else {
    s = g.add("Div", {s, g.c(Tensor::scalar<float>(std::sqrt(float(kHead))))});
  }
  if (a.scores_output) g.out(s);
  switch (a.mask) {
    case Mask::None:
      break;
    case Mask::Keeps:
    case Mask::HidesInt: {
      g.input(tensor_info("mask", DType::Int64, {a.batch, a.seq}));
      std::string m = g.add("Cast", {g.add("Unsqueeze", {"mask", g.c(ints({1, 2}))})}, {attr("to", int64_t(DType::Float))});
      if (a.mask == Mask::Keeps) m = g.add("Sub", {g.c(Tensor::scalar<float>(1)), m});
      s = g.add("Add", {s, g.add("Mul", {m, g.c(Tensor::scalar<float>(-10000))})});
      break;
    }
    case Mask::TwoBiases:
      s = g.add("Add", {g.add("Add", {s, g.c(ramp({a.seq.value, a.seq.value}, -0.5f, 0.1f))}), g.c(ramp({a.seq.value, a.seq.value}, 0.3f, -0.05f))});
      break;
  }
  const std::string ctx = g.add("MatMul", {g.add("Softmax", {s}, {attr("axis", a.softmax_axis)}, 1, "/attn/Softmax"), v});
  g.out(g.add("Reshape", {g.add("Transpose", {ctx}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), g.c(ints({0, 0, kHidden}))}));
  Model m = g.model();
  m.graph.inputs[0] = testing::f32("x", {a.batch, a.seq, kHidden});
  return m;
}

// The attention pass alone on `m`, checked against the original on ramp_feeds with the mask, if
// any, replaced by `mask` (3, 3): a padding mask holds 0 and 1 only.
Model fused(const Model& m, std::vector<int64_t> mask = {}, const std::string& forms = "all") {
  std::map<std::string, Value> fed;
  if (!mask.empty()) fed.emplace("mask", Tensor::from_vector<int64_t>({3, 3}, mask));
  return optimized(m, {"attention"}, "", forms, fed);
}

const Node& attention_node(const Model& m) {
  const auto it = std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [](const Node& n) { return n.op_type.find("Attention") != std::string::npos; });
  REQUIRE(it != m.graph.nodes.end());
  return *it;
}

}  // namespace

TEST_CASE("attention: a padding mask whose 1 keeps a key, or an int64 one whose 1 hides it (cast to bool, negated), is ORT's mask_index") {
  // BERT's (1 - mask) * -10000: the mask itself, as int32
  const Model keeps = fused(bert({.mask = Mask::Keeps}), {1, 1, 1, 1, 1, 0, 1, 0, 0});
  CHECK(count_ops(keeps, "Attention") == 1);
  CHECK(count_ops(keeps, "Not") == 0);
  // mask * -10000 of an int64 mask: Not(Cast(mask, bool)), as int32
  const Model hides = fused(bert({.mask = Mask::HidesInt}), {0, 0, 0, 0, 0, 1, 0, 1, 1});
  CHECK(count_ops(hides, "Attention") == 1);
  CHECK(count_ops(hides, "Not") == 1);
  CHECK(count_ops(hides, "Cast") == 2);
  CHECK(attention_node(hides).inputs[3] == "mask_int32");
}

TEST_CASE("attention: two constant (S, T) position biases become one summed bias, unsqueezed to 4-D") {
  const Model out = fused(bert({.batch = 2, .seq = 3, .mask = Mask::TwoBiases}));
  CHECK(count_ops(out, "Attention") == 1);
  CHECK(count_ops(out, "Add") == 1);
  CHECK(count_ops(out, "Unsqueeze") == 1);
  const Node& att = attention_node(out);
  REQUIRE(att.inputs.size() == 6);
  CHECK(att.inputs[5].find("bias_4d") != std::string::npos);
}

TEST_CASE("attention: a scale on the query projection (either operand of its Mul) joins the fused scale; a negative one stays outside") {
  for (const bool first : {false, true}) {
    CAPTURE(first);
    const Model out = fused(bert({.q_scale = 0.5f, .q_scale_first = first}));
    REQUIRE(count_ops(out, "Attention") == 1);
    CHECK(count_ops(out, "Mul") == 0);
    CHECK(attention_node(out).find_attribute("scale")->f == doctest::Approx(0.5 / std::sqrt(8.0)));
  }
  // q_proj(x) * -0.5: not a scale the operators take; the product stays as MultiHeadAttention's query
  const Model negative = fused(bert({.q_scale = -0.5f}));
  CHECK(count_ops(negative, "MultiHeadAttention") == 1);
  CHECK(count_ops(negative, "Mul") == 1);
}

TEST_CASE("attention: Softmax over axis 3 of the 4-D scores is over the keys") {
  CHECK(count_ops(fused(bert({.softmax_axis = 3})), "Attention") == 1);
}

TEST_CASE("attention: scaled scores that are also a graph output stay, explained") {
  const Model m = bert({.scores_output = true});
  CHECK(testing::refusals(m, {"attention"}) == "not fused: attention at '/attn/Softmax': the scores 'Div_13' are read elsewhere\n");
  CHECK(count_ops(fused(m), "Softmax") == 1);
}

// `0.25 * scores` exports the scale's constant first: Mul(c, scores) is the same scale.
TEST_CASE("attention: Mul(scale, scores) with the constant first fuses like Mul(scores, scale)") {
  const Model out = fused(bert({.scale = 0.25f, .scale_first = true}));
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(attention_node(out).find_attribute("scale")->f == doctest::Approx(0.25));
}

namespace {

// com.microsoft's MultiHeadAttention (2 heads) on `inputs`, the graph's output: the model.
Model with_mha(G& g, std::vector<std::string> inputs) {
  g.out(g.add("MultiHeadAttention", std::move(inputs), {attr("num_heads", kHeads)}, 1, "/mha"));
  Model m = g.model();
  m.graph.nodes.back().domain = "com.microsoft";
  m.opsets["com.microsoft"] = 1;
  return m;
}

// MultiHeadAttention (2 heads of 8) on q, k and v cut from one biased (B, S, 48) product by one
// Split of the last axis, its sizes given as `how`: "attribute" (opset 11-12), "num_outputs"
// (opset 18), "equal" (no sizes: equal parts, opset 13) or "runtime" (a graph input).
Model mha_on_split(const std::string& how, Packed p = {}, bool bias_2d = false) {
  G g(how == "attribute" ? 11 : how == "num_outputs" ? 18 : 13);
  std::vector<Attribute> a = {attr("axis", int64_t(-1))};
  if (how == "attribute") a.push_back(attr("split", std::vector<int64_t>{kHidden, kHidden, kHidden}));
  if (how == "num_outputs") a.push_back(attr("num_outputs", int64_t(3)));
  std::vector<std::string> in = {bias_2d ? g.add("Add", {packed(g, {.bias = false}), g.c(ramp({1, 3 * kHidden}, -0.3f, 0.03f))}) : packed(g, p)};
  if (how == "runtime") g.input(tensor_info("sizes", DType::Int64, {3})), in.push_back("sizes");
  const std::string q = g.add("Split", in, a, 3);
  return with_mha(g, {q, q + "_1", q + "_2"});
}

}  // namespace

TEST_CASE("mha-projections: a packed product split by the split attribute, num_outputs or equal parts becomes three products (--forms cpu)") {
  for (const std::string how : {"attribute", "num_outputs", "equal"}) {
    CAPTURE(how);
    const Model cpu = optimized(mha_on_split(how), {"mha-projections"}, "", "cpu");
    CHECK(count_ops(cpu, "MatMul") == 3);
    CHECK(count_ops(cpu, "Split") + count_ops(cpu, "Add") == 0);
  }
}

TEST_CASE("mha-projections: a MultiHeadAttention that already has its bias is left as it is (optimizing an optimized model)") {
  const Model once = optimized(mha_on_split("equal"), {"mha-projections"}, "", "cpu");
  const Model twice = optimized(once, {"mha-projections"}, "", "cpu");
  CHECK(twice.graph.nodes.size() == once.graph.nodes.size());
  CHECK(twice.graph.initializers.size() == once.graph.initializers.size());
  CHECK(count_ops(twice, "MatMul") == 3);
  CHECK(testing::refusals(once, {"mha-projections"}).empty());  // not a candidate: nothing to explain
  // Three plain products x Wq, x Wk, x Wv: nothing to gain, no zero bias added.
  G g(13);
  std::vector<std::string> qkv;
  for (float start : {-0.2f, 0.2f, -0.1f}) qkv.push_back(g.add("MatMul", {"x", g.c(ramp({kHidden, kHidden}, start, 0.013f))}));
  const Model plain = with_mha(g, qkv);
  const Model kept = optimized(plain, {"mha-projections"}, "", "cpu");
  CHECK(kept.graph.nodes.size() == plain.graph.nodes.size());
  CHECK(kept.graph.nodes.back().inputs.size() == 3);
}

TEST_CASE("mha-projections: a MultiHeadAttention given its own bias keeps it, whatever its projections add") {
  // An ORT-optimized model's MultiHeadAttention with a bias input, on q, k, v that are x W + b:
  // the projections' biases are not the operator's, which already adds one.
  G g(13);
  std::vector<std::string> in;
  for (float start : {-0.2f, 0.2f, -0.1f})
    in.push_back(g.add("Add", {g.add("MatMul", {"x", g.c(ramp({kHidden, kHidden}, start, 0.013f))}), g.c(ramp({kHidden}, start, 0.01f))}));
  in.push_back(g.c(ramp({3 * kHidden}, 0.05f, -0.002f)));
  const Model m = with_mha(g, in);
  const Model out = optimized(m, {"mha-projections"}, "", "cpu");
  CHECK(count_ops(out, "Add") == 3);
  CHECK(out.graph.nodes.back().inputs[3] == in[3]);
}

TEST_CASE("attention: head splits written view(B, S, -1, h) or view(B, S, N, -1), and a scale between the split and the transpose, fuse") {
  CHECK(count_ops(fused(bert({.view = {0, 0, -1, kHead}})), "Attention") == 1);
  CHECK(count_ops(fused(bert({.view = {0, 0, kHeads, -1}})), "Attention") == 1);
  // Transpose(0.5 * view(q), 0 2 1 3): the scale joins the fused one
  const Model scaled = fused(bert({.head_scale = 0.5f}));
  REQUIRE(count_ops(scaled, "Attention") == 1);
  CHECK(attention_node(scaled).find_attribute("scale")->f == doctest::Approx(0.5 / std::sqrt(8.0)));
}

TEST_CASE("attention: ORT's stacked past read by Gather, with separate projections, is refused, named") {
  // Concat(past[0], k) and Concat(past[1], v) of a (2, B, N, P, h) past: MultiHeadAttention takes
  // per-layer past inputs, and only a packed projection becomes ORT's Attention with the stack.
  const Model m = bert({.stacked_past = true});
  CHECK(testing::refusals(m, {"attention"}) ==
        "not fused: attention at '/attn/Softmax': the past keys and values are not graph inputs (ORT's stacked past is not supported here)\n");
  CHECK(count_ops(fused(m), "Softmax") == 1);
}

TEST_CASE("attention: ORT's GPT-2 with a stacked past read by Gather and a packed projection becomes Attention with the stacked present") {
  // past[0] and past[1] by Gather (ORT's gpt2_helper writes Split + Squeeze as well); present =
  // stack([K, V]) an output, written by the fused node.
  const Model out = fused(bert({.stacked_past = true, .packed = true, .present = true}));
  REQUIRE(count_ops(out, "Attention") == 1);
  const Node& att = attention_node(out);
  REQUIRE(att.inputs.size() >= 5);
  CHECK(att.inputs[4] == "past");
  CHECK(att.outputs.size() == 2);
  CHECK(count_ops(out, "Gather") + count_ops(out, "Concat") + count_ops(out, "Unsqueeze") == 0);
}

TEST_CASE("attention: grouped-query keys after per-layer pasts become GroupQueryAttention (--forms cpu), another scale kept") {
  // Llama's repeat_kv of one key/value head for 2 query heads, scores times 0.25 (not 1/sqrt(8)); a
  // decoding step (S = 1: ORT's kernel takes a longer prompt after a past only at batch 1)
  const Model out = fused(bert({.seq = 1, .scale = 0.25f, .grouped = true}), {}, "cpu");
  REQUIRE(count_ops(out, "GroupQueryAttention") == 1);
  const Node& gqa = attention_node(out);
  CHECK(gqa.find_attribute("kv_num_heads")->i == 1);
  CHECK(gqa.find_attribute("scale")->f == doctest::Approx(0.25));
  // --forms all: MultiHeadAttention over the repeated keys and values
  CHECK(count_ops(fused(bert({.seq = 1, .scale = 0.25f, .grouped = true})), "MultiHeadAttention") == 1);
}

// ONNX Runtime's GroupQueryAttention takes a query of several tokens after a non-empty past (a
// chunked prompt) at batch 1 only, where the original computes any batch: written all the same
// (prefills and decoding steps run at any batch), with a warning unless the batch or the query
// length is fixed at 1.
TEST_CASE("attention: GroupQueryAttention over a free batch and query length warns of ORT's batch-1 limit on chunked prompts") {
  auto optimized_cpu = [](const Model& m) {
    optimize::OptimizeOptions o;
    o.forms = "cpu";
    o.only = {"attention"};
    return optimize::optimize(m, Registry::builtin(), o);
  };
  const optimize::OptimizeResult free = optimized_cpu(bert({.scale = 0.25f, .grouped = true}));
  CHECK(count_ops(free.model, "GroupQueryAttention") == 1);
  REQUIRE(free.notes.size() == 1);
  CHECK(free.notes[0].find("more than one token after a non-empty past at batch 1 only") != std::string::npos);
  CHECK(optimized_cpu(bert({.seq = 1, .scale = 0.25f, .grouped = true})).notes.empty());
  CHECK(optimized_cpu(bert({.batch = 1, .scale = 0.25f, .grouped = true})).notes.empty());
}

TEST_CASE("mha-projections: the bias added first fuses; split sizes known only at run time, or a 2-D bias, stay, explained") {
  CHECK(count_ops(optimized(mha_on_split("equal", {.bias_first = true}), {"mha-projections"}, "", "cpu"), "MatMul") == 3);  // Add(b, x W)
  // sizes fed at run time: the parts' columns are not known
  Model runtime = mha_on_split("runtime");
  CHECK(testing::refusals(runtime, {"mha-projections"}) ==
        "not fused: mha-projections at '/mha': 'Split_2' is not MatMul(x, W) [+ b] [sliced on the last axis] with a constant 2-D W and 1-D b\n");
  // a (1, 48) bias: not the 1-D bias MultiHeadAttention's bias input holds
  CHECK(testing::refusals(mha_on_split("equal", {}, true), {"mha-projections"}) ==
        "not fused: mha-projections at '/mha': 'Split_2' is not MatMul(x, W) [+ b] [sliced on the last axis] with a constant 2-D W and 1-D b\n");
}

TEST_CASE("mha-projections: opset 9's Slices with attribute bounds are read as column ranges too") {
  // Slice-1 keeps starts, ends and axes in attributes (rotary_common.cc's last_axis_range reads them).
  G g(9);
  const std::string p = packed(g, {});
  std::vector<std::string> parts;
  for (int64_t j = 0; j < 3; ++j)
    parts.push_back(g.add("Slice", {p}, {attr("starts", std::vector<int64_t>{j * kHidden}), attr("ends", std::vector<int64_t>{(j + 1) * kHidden}),
                                         attr("axes", std::vector<int64_t>{-1})}));
  const Model m = with_mha(g, parts);
  const Model cpu = optimized(m, {"mha-projections"}, "", "cpu");
  CHECK(count_ops(cpu, "MatMul") == 3);
  CHECK(count_ops(cpu, "Slice") + count_ops(cpu, "Add") == 0);
}

// ---- attention branches: the reader's checks one form at a time ----
// A layer built piece by piece: q, k^T and v each from a head split the test chooses, the scores
// masked by a test's function, the context merged back unless the test merges it.
namespace {

const std::string kAtSm = "not fused: attention at '/attn/Softmax': ";

struct Layer {
  G g;
  explicit Layer(int opset = 17) : g(opset) {}
  std::string w(float start, int64_t width = kHidden) { return g.c(ramp({kHidden, width}, start, 0.013f)); }
  // x W + b of 16 columns.
  std::string proj(float start) { return g.add("Add", {g.add("MatMul", {"x", w(start)}), g.c(ramp({kHidden}, -0.1f, 0.01f))}); }
  std::string split(const std::string& p, std::vector<int64_t> perm = {0, 2, 1, 3}, const std::string& view = "", const std::string& name = "") {
    return g.add("Transpose", {g.add("Reshape", {p, view.empty() ? g.c(ints({0, 0, kHeads, kHead})) : view}, {}, 1, name.empty() ? "" : name + "_view")},
                 {attr("perm", perm)}, 1, name);
  }
  std::string q() { return split(proj(-0.2f)); }
  std::string kT() { return split(proj(0.2f), {0, 2, 3, 1}); }
  std::string v() { return split(proj(-0.1f)); }
  Model attend(const std::string& q, const std::string& kT, const std::string& v, const std::function<std::string(const std::string&)>& mask = {},
               const std::function<void(const std::string&)>& merge = {}) {
    std::string s = g.add("Div", {g.add("MatMul", {q, kT}), g.c(Tensor::scalar<float>(std::sqrt(float(kHead))))});
    if (mask) s = mask(s);
    const std::string ctx = g.add("MatMul", {g.add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, "/attn/Softmax"), v});
    const std::string t = g.add("Transpose", {ctx}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
    if (merge) merge(t);
    else g.out(g.add("Reshape", {t, g.c(ints({0, 0, kHidden}))}, {}, 1, "/attn/Merge"));
    return g.model();
  }
};

std::string explained(const Model& m) { return testing::refusals(m, {"attention"}); }

Model with_x(Model m, DimSpec b, DimSpec s, int64_t d = kHidden);

}  // namespace

TEST_CASE("attention branches: keys, queries and values not split into heads the way their role needs are refused, named") {
  {  // K^T (B, 2, 8, 3) given as an input: not a head split (keys are never taken as given K^T,
     // which would read as 2 heads of 3)
    Layer l;
    const std::string kT = l.g.input(testing::f32("kT", {"batch", kHeads, kHead, 3}));
    const std::string q = l.q(), v = l.v();
    CHECK(explained(with_x(l.attend(q, kT, v), "batch", 3)) == kAtSm + "'kT' is not the Transpose of a head split\n");
  }
  {  // V scaled between its head split and the transpose: a scale of V would scale the context
    Layer l;
    const std::string q = l.q(), kT = l.kT();
    const std::string split = l.g.add("Reshape", {l.proj(-0.1f), l.g.c(ints({0, 0, kHeads, kHead}))});
    const std::string v = l.g.add("Transpose", {l.g.add("Mul", {split, l.g.c(Tensor::scalar<float>(0.5f))})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}, 1,
                                  "/v/Transpose");
    const Model m = l.attend(q, kT, v);
    CHECK(explained(m) == kAtSm + "'/v/Transpose' does not transpose a Reshape into heads\n");
    CHECK(count_ops(fused(m), "Softmax") == 1);
  }
}

TEST_CASE("attention branches: values given as a graph input are heads only as (B, N, T, h) with N and h known") {
  const auto layer = [](ValueInfo v) {
    Layer l;
    const std::string q = l.q(), kT = l.kT();
    return l.attend(q, kT, l.g.input(std::move(v)));
  };
  const std::string not_heads = kAtSm + "'v' is not the Transpose of a head split\n";
  CHECK(explained(layer(testing::f32("v", {"batch", "seq", kHead}))) == not_heads);
  CHECK(explained(layer(testing::f32("v", {"batch", "heads", "seq", kHead}))) == not_heads);
}

TEST_CASE("attention branches: a Div by a scalar between q's split and its transpose joins the scale; a Div by a tensor is not a scale") {
  const auto layer = [](bool scalar) {
    Layer l;
    const std::string split = l.g.add("Reshape", {l.proj(-0.2f), l.g.c(ints({0, 0, kHeads, kHead}))});
    const std::string by = scalar ? l.g.c(Tensor::scalar<float>(2.0f)) : l.g.c(ramp({1, 1, 1, kHead}, 1.0f, 0.1f));
    const std::string q = l.g.add("Transpose", {l.g.add("Div", {split, by})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}, 1, "/q/Transpose");
    const std::string kT = l.kT(), v = l.v();
    return l.attend(q, kT, v);
  };
  const Model out = fused(layer(true));
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(attention_node(out).find_attribute("scale")->f == doctest::Approx(0.5 / std::sqrt(8.0)));
  CHECK(explained(layer(false)) == kAtSm + "'/q/Transpose' does not transpose a Reshape into heads\n");
}

TEST_CASE("attention branches: a scale before the 4-D queries, Mul(0.5, q), joins the fused scale") {
  Layer l;
  const std::string q = l.g.add("Mul", {l.g.c(Tensor::scalar<float>(0.5f)), l.q()});
  const std::string kT = l.kT(), v = l.v();
  const Model out = fused(l.attend(q, kT, v));
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(attention_node(out).find_attribute("scale")->f == doctest::Approx(0.5 / std::sqrt(8.0)));
}

TEST_CASE("attention branches: a scale on K transposed after its head split, k.transpose(-1, -2) * 0.5, joins the fused scale") {
  Layer l;
  const std::string q = l.q();
  const std::string kT = l.g.add("Mul", {l.g.add("Transpose", {l.split(l.proj(0.2f))}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), l.g.c(Tensor::scalar<float>(0.5f))});
  const std::string v = l.v();
  const Model out = fused(l.attend(q, kT, v));
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(attention_node(out).find_attribute("scale")->f == doctest::Approx(0.5 / std::sqrt(8.0)));
}

TEST_CASE("attention branches: a run-time Where mask must end in (S, T) and have one head row, else it is refused, named") {
  const auto layer = [](ValueInfo cond) {
    Layer l;
    const std::string q = l.q(), kT = l.kT(), v = l.v();
    const std::string c = l.g.input(std::move(cond));
    return l.attend(q, kT, v, [&](const std::string& s) { return l.g.add("Where", {c, s, l.g.c(Tensor::scalar<float>(-1e9f))}, {}, 1, "/attn/Mask"); });
  };
  const std::string refused =
      kAtSm + "the mask of '/attn/Mask' is not causal (key j <= query i + past) and its shape is not (.., 1, S, T) with S = seq, T = seq\n";
  CHECK(explained(layer(tensor_info("cond", DType::Bool, {"seq"}))) == refused);
  CHECK(explained(layer(tensor_info("cond", DType::Bool, {"batch", "seq"}))) == refused);
  CHECK(explained(layer(tensor_info("cond", DType::Bool, {"batch", "heads", "seq", "seq"}))) == refused);
  // (B, 1, S, T), cast from floats: an additive bias Where(cond, 0, -1e9)
  Layer l;
  const std::string q = l.q(), kT = l.kT(), v = l.v();
  const std::string c = l.g.add("Cast", {l.g.input(testing::f32("keep", {"batch", 1, "seq", "seq"}))}, {attr("to", int64_t(DType::Bool))});
  const Model ok = l.attend(q, kT, v, [&](const std::string& s) { return l.g.add("Where", {c, s, l.g.c(Tensor::scalar<float>(-1e9f))}, {}, 1, "/attn/Mask"); });
  CHECK(explained(ok).empty());
  const Model out = fused(ok);
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(count_ops(out, "Where") == 1);
}

// ---- attention branches: Attention's packed or three projections, or MultiHeadAttention ----
namespace {

// Self-attention on q, k and v given as (B, S, 16) values, each split into heads here.
Model on_values(Layer& l, const std::string& q, const std::string& k, const std::string& v) {
  const std::string qh = l.split(q), kh = l.split(k, {0, 2, 3, 1}), vh = l.split(v);
  return l.attend(qh, kh, vh);
}

// The fused operator's type (Attention, MultiHeadAttention), "" when none.
std::string fused_as(const Model& m) {
  const Model out = fused(m);
  for (const Node& n : out.graph.nodes)
    if (n.domain == "com.microsoft") return n.op_type;
  return "";
}

// x W + b of 48 (or `width`) columns; `b` and `w` given replace the constants.
std::string packed_product(Layer& l, int64_t width = 3 * kHidden) {
  return l.g.add("Add", {l.g.add("MatMul", {"x", l.w(-0.4f, width)}), l.g.c(ramp({width}, -0.3f, 0.03f))});
}

// Columns [from, to) of `whole` by a Slice on the last axis, `steps` when given.
std::string cols(Layer& l, const std::string& whole, int64_t from, int64_t to, std::vector<std::string> extra = {}) {
  std::vector<std::string> in = {whole, l.g.c(ints({from})), l.g.c(ints({to})), l.g.c(ints({-1}))};
  in.insert(in.end(), extra.begin(), extra.end());
  return l.g.add("Slice", in);
}

}  // namespace

TEST_CASE("attention branches: a packed product's thirds cut by Slices with an explicit unit step, or an empty step input, are Attention's weight") {
  for (const bool empty : {false, true}) {
    CAPTURE(empty);
    Layer l;
    const std::string whole = packed_product(l);
    std::vector<std::string> parts;
    for (int64_t i = 0; i < 3; ++i) parts.push_back(cols(l, whole, i * kHidden, (i + 1) * kHidden, {empty ? std::string() : l.g.c(ints({1}))}));
    const Model out = fused(on_values(l, parts[0], parts[1], parts[2]));
    CHECK(count_ops(out, "Attention") == 1);
    CHECK(count_ops(out, "Slice") + count_ops(out, "MatMul") == 0);
  }
}

TEST_CASE("attention branches: Slices that are not the packed product's thirds in order leave q, k and v to MultiHeadAttention") {
  const auto thirds = [](const std::function<std::array<std::string, 3>(Layer&, const std::string&)>& cut, int64_t width = 3 * kHidden) {
    Layer l;
    const std::string whole = packed_product(l, width);
    const auto p = cut(l, whole);
    return fused_as(on_values(l, p[0], p[1], p[2]));
  };
  const auto third = [](Layer& l, const std::string& whole, int64_t i) { return cols(l, whole, i * kHidden, (i + 1) * kHidden); };
  // in order: Attention
  CHECK(thirds([&](Layer& l, const std::string& w) { return std::array{third(l, w, 0), third(l, w, 1), third(l, w, 2)}; }) == "Attention");
  // k first, then q
  CHECK(thirds([&](Layer& l, const std::string& w) { return std::array{third(l, w, 1), third(l, w, 0), third(l, w, 2)}; }) == "MultiHeadAttention");
  // q sliced without axes (all three axes bounded)
  CHECK(thirds([&](Layer& l, const std::string& w) {
          const std::string q = l.g.add("Slice", {w, l.g.c(ints({0, 0, 0})), l.g.c(ints({kBig, kBig, kHidden}))});
          return std::array{q, third(l, w, 1), third(l, w, 2)};
        }) == "MultiHeadAttention");
  // k a third of another product
  CHECK(thirds([&](Layer& l, const std::string& w) { return std::array{third(l, w, 0), third(l, packed_product(l), 1), third(l, w, 2)}; }) ==
        "MultiHeadAttention");
  // k its own projection
  CHECK(thirds([&](Layer& l, const std::string& w) { return std::array{third(l, w, 0), l.proj(0.2f), third(l, w, 2)}; }) == "MultiHeadAttention");
  // the first three quarters of a 64-column product
  CHECK(thirds([&](Layer& l, const std::string& w) { return std::array{third(l, w, 0), third(l, w, 1), third(l, w, 2)}; }, 4 * kHidden) ==
        "MultiHeadAttention");
}

TEST_CASE("attention branches: thirds of a value that is not x W + b with a constant (D, 3D) W and (3D) b are MultiHeadAttention's q, k, v") {
  // `whole(l)`: the (B, S, 48) value cut into thirds
  const auto layer = [](const std::function<std::string(Layer&)>& whole) {
    Layer l;
    const std::string w = whole(l);
    return fused_as(on_values(l, cols(l, w, 0, kHidden), cols(l, w, kHidden, 2 * kHidden), cols(l, w, 2 * kHidden, 3 * kHidden)));
  };
  const auto b = [](Layer& l) { return l.g.c(ramp({3 * kHidden}, -0.3f, 0.03f)); };
  CHECK(layer([](Layer& l) { return l.g.input(testing::f32("qkv", {"batch", "seq", 3 * kHidden})); }) == "MultiHeadAttention");
  CHECK(layer([&](Layer& l) { return l.g.add("Add", {l.g.input(testing::f32("y", {"batch", "seq", 3 * kHidden})), b(l)}); }) == "MultiHeadAttention");
  CHECK(layer([&](Layer& l) { return l.g.add("Add", {l.g.add("Relu", {l.g.add("MatMul", {"x", l.w(-0.4f, 3 * kHidden)})}), b(l)}); }) == "MultiHeadAttention");
  // a (1, 48) bias, a (1, 16, 48) weight
  CHECK(layer([](Layer& l) { return l.g.add("Add", {l.g.add("MatMul", {"x", l.w(-0.4f, 3 * kHidden)}), l.g.c(ramp({1, 3 * kHidden}, -0.3f, 0.03f))}); }) ==
        "MultiHeadAttention");
  CHECK(layer([&](Layer& l) { return l.g.add("Add", {l.g.add("MatMul", {"x", l.g.c(ramp({1, kHidden, 3 * kHidden}, -0.4f, 0.013f))}), b(l)}); }) ==
        "MultiHeadAttention");
  // x W + b as written: Attention
  CHECK(layer([&](Layer& l) { return l.g.add("Add", {l.g.add("MatMul", {"x", l.w(-0.4f, 3 * kHidden)}), b(l)}); }) == "Attention");
}

TEST_CASE("attention branches: a Split by the split attribute or in equal parts is Attention's packed weight; four parts, or k from elsewhere, are not") {
  const auto layer = [](int opset, std::vector<int64_t> sizes, bool attribute, int k_from = 1) {
    Layer l(opset);
    const int64_t width = int64_t(sizes.empty() ? 3 : sizes.size()) * kHidden;
    std::vector<Attribute> a = {attr("axis", int64_t(-1))};
    std::vector<std::string> in = {packed_product(l, width)};
    if (attribute) a.push_back(attr("split", sizes));
    else if (!sizes.empty()) in.push_back(l.g.c(ints(sizes)));
    const int outputs = sizes.empty() ? 3 : int(sizes.size());
    const std::string s = l.g.add("Split", in, a, outputs);
    const auto part = [&](int i) { return i ? s + "_" + std::to_string(i) : s; };
    const std::string k = k_from < 0 ? l.proj(0.2f) : part(k_from);
    return fused_as(on_values(l, part(0), k, part(2)));
  };
  CHECK(layer(11, {kHidden, kHidden, kHidden}, true) == "Attention");
  CHECK(layer(13, {}, false) == "Attention");
  CHECK(layer(13, {kHidden, kHidden, kHidden, kHidden}, false) == "MultiHeadAttention");  // the fourth part unread
  CHECK(layer(13, {}, false, -1) == "MultiHeadAttention");                               // k its own projection
}

TEST_CASE("attention branches: three projections pack into one Attention weight only as x W + b each, read once, W (16, 16) and b (16) constants") {
  // `q(l)`: the query's (B, S, 16) projection
  const auto layer = [](const std::function<std::string(Layer&)>& q) {
    Layer l;
    const std::string qp = q(l);
    return fused_as(on_values(l, qp, l.proj(0.2f), l.proj(-0.1f)));
  };
  const auto b = [](Layer& l) { return l.g.c(ramp({kHidden}, -0.1f, 0.01f)); };
  CHECK(layer([](Layer& l) { return l.proj(-0.2f); }) == "Attention");
  CHECK(layer([](Layer& l) { return l.g.add("MatMul", {"x", l.w(-0.2f)}); }) == "Attention");  // no bias
  // the projection also read by another node
  CHECK(layer([](Layer& l) {
          const std::string p = l.proj(-0.2f);
          l.g.out(l.g.add("Relu", {p}));
          return p;
        }) == "MultiHeadAttention");
  // x W also read by another node
  CHECK(layer([&](Layer& l) {
          const std::string mm = l.g.add("MatMul", {"x", l.w(-0.2f)});
          l.g.out(l.g.add("Relu", {mm}));
          return l.g.add("Add", {mm, b(l)});
        }) == "MultiHeadAttention");
  // queries given as an input, W fed at run time, a (1, 16, 16) W, a (1, 1, 16) bias
  CHECK(layer([](Layer& l) { return l.g.input(testing::f32("xq", {"batch", "seq", kHidden})); }) == "MultiHeadAttention");
  CHECK(layer([&](Layer& l) { return l.g.add("Add", {l.g.add("MatMul", {"x", l.g.input(testing::f32("Wq", {kHidden, kHidden}))}), b(l)}); }) ==
        "MultiHeadAttention");
  CHECK(layer([&](Layer& l) { return l.g.add("Add", {l.g.add("MatMul", {"x", l.g.c(ramp({1, kHidden, kHidden}, -0.2f, 0.013f))}), b(l)}); }) ==
        "MultiHeadAttention");
  CHECK(layer([](Layer& l) { return l.g.add("Add", {l.g.add("MatMul", {"x", l.w(-0.2f)}), l.g.c(ramp({1, 1, kHidden}, -0.1f, 0.01f))}); }) ==
        "MultiHeadAttention");
}

// ---- attention branches: ORT's stacked past (2, B, N, P, h) and its stacked present ----
namespace {

// GPT-2 with a stacked past: q, k, v from one packed Split, K = Concat(past_k, k, 2) and V =
// Concat(past_v, v, 2); `pasts` reads past_k and past_v from "past" (default: Squeeze(Split(past,
// axis 0)[i], 0)), `present` writes the outputs from K and V (default: Concat(Unsqueeze(K, 0),
// Unsqueeze(V, 0), 0)).
Model stacked_gpt2(std::vector<DimSpec> past_dims = {2, "batch", kHeads, "past_seq", kHead},
                   const std::function<std::array<std::string, 2>(Layer&)>& pasts = {},
                   const std::function<void(Layer&, const std::string&, const std::string&)>& present = {}) {
  Layer l;
  const std::string s = l.g.add("Split", {packed_product(l), l.g.c(ints({kHidden, kHidden, kHidden}))}, {attr("axis", int64_t(-1))}, 3);
  const std::string q = l.split(s), k = l.split(s + "_1"), v = l.split(s + "_2");
  l.g.input(testing::f32("past", std::move(past_dims)));
  std::array<std::string, 2> p;
  if (pasts) {
    p = pasts(l);
  } else {
    const std::string halves = l.g.add("Split", {"past", l.g.c(ints({1, 1}))}, {attr("axis", int64_t(0))}, 2);
    p = {l.g.add("Squeeze", {halves, l.g.c(ints({0}))}), l.g.add("Squeeze", {halves + "_1", l.g.c(ints({0}))})};
  }
  const std::string K = l.g.add("Concat", {p[0], k}, {attr("axis", int64_t(2))}), V = l.g.add("Concat", {p[1], v}, {attr("axis", int64_t(2))});
  if (present) present(l, K, V);
  else l.g.out(l.g.add("Concat", {l.g.unsqueeze0(K), l.g.unsqueeze0(V)}, {attr("axis", int64_t(0))}));
  return l.attend(q, l.g.add("Transpose", {K}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), V);
}

std::array<std::string, 2> gathered(Layer& l, int64_t k_index) {
  const auto at = [&](int64_t i) { return l.g.add("Gather", {"past", l.g.c(Tensor::scalar<int64_t>(i))}, {attr("axis", int64_t(0))}); };
  return {at(k_index), at(1 - k_index)};
}

const std::string kStackedRefused = kAtSm + "the past keys and values are not graph inputs (ORT's stacked past is not supported here)\n";

}  // namespace

TEST_CASE("attention branches: ORT's stacked past read by Split + Squeeze becomes Attention with the past and the stacked present") {
  const Model out = fused(stacked_gpt2());
  REQUIRE(count_ops(out, "Attention") == 1);
  const Node& att = attention_node(out);
  REQUIRE(att.inputs.size() >= 5);
  CHECK(att.inputs[4] == "past");
  CHECK(att.outputs.size() == 2);
  CHECK(count_ops(out, "Squeeze") + count_ops(out, "Concat") + count_ops(out, "Unsqueeze") == 0);
}

TEST_CASE("attention branches: a stacked past and present written with axis -5 (indices -2 and -1) are the same stack as with axis 0") {
  const std::vector<DimSpec> dims = {2, "batch", kHeads, "past_seq", kHead};
  const auto present_at_minus5 = [](Layer& l, const std::string& K, const std::string& V) {
    const auto lead = [&](const std::string& t) { return l.g.add("Unsqueeze", {t, l.g.c(ints({-5}))}); };
    l.g.out(l.g.add("Concat", {lead(K), lead(V)}, {attr("axis", int64_t(-5))}));
  };
  const auto split_minus5 = [](Layer& l) {
    const std::string halves = l.g.add("Split", {"past", l.g.c(ints({1, 1}))}, {attr("axis", int64_t(-5))}, 2);
    return std::array{l.g.add("Squeeze", {halves, l.g.c(ints({-5}))}), l.g.add("Squeeze", {halves + "_1", l.g.c(ints({-5}))})};
  };
  const auto gather_negative = [](Layer& l) {
    const auto at = [&](int64_t i) { return l.g.add("Gather", {"past", l.g.c(Tensor::scalar<int64_t>(i))}, {attr("axis", int64_t(-5))}); };
    return std::array{at(-2), at(-1)};
  };
  for (const Model& m : {stacked_gpt2(dims, split_minus5, present_at_minus5), stacked_gpt2(dims, gather_negative)}) {
    const Model out = fused(m);
    REQUIRE(count_ops(out, "Attention") == 1);
    const Node& att = attention_node(out);
    REQUIRE(att.inputs.size() >= 5);
    CHECK(att.inputs[4] == "past");
    CHECK(att.outputs.size() == 2);
  }
  // index -1 for the keys is the values' half: refused as any other swap
  CHECK(explained(stacked_gpt2(dims, [](Layer& l) {
          const auto at = [&](int64_t i) { return l.g.add("Gather", {"past", l.g.c(Tensor::scalar<int64_t>(i))}, {attr("axis", int64_t(-5))}); };
          return std::array{at(-1), at(-2)};
        })) == kStackedRefused);
}

TEST_CASE("attention branches: a stacked past read other than keys at 0 and values at 1 of a (2, ...) stack is refused, named") {
  // values at 0, keys at 1
  CHECK(explained(stacked_gpt2({2, "batch", kHeads, "past_seq", kHead}, [](Layer& l) { return gathered(l, 1); })) == kStackedRefused);
  // a stack of unknown length, or of 3
  CHECK(explained(stacked_gpt2({"two", "batch", kHeads, "past_seq", kHead}, [](Layer& l) { return gathered(l, 0); })) == kStackedRefused);
  CHECK(explained(stacked_gpt2({3, "batch", kHeads, "past_seq", kHead}, [](Layer& l) { return gathered(l, 0); })) == kStackedRefused);
  // split in three, keys and values the first two
  CHECK(explained(stacked_gpt2({3, "batch", kHeads, "past_seq", kHead}, [](Layer& l) {
          const std::string parts = l.g.add("Split", {"past", l.g.c(ints({1, 1, 1}))}, {attr("axis", int64_t(0))}, 3);
          return std::array{l.g.add("Squeeze", {parts, l.g.c(ints({0}))}), l.g.add("Squeeze", {parts + "_1", l.g.c(ints({0}))})};
        })) == kStackedRefused);
}

TEST_CASE("attention branches: a present that is not Concat(Unsqueeze(K, 0), Unsqueeze(V, 0), 0) is not the stacked present, refused") {
  const auto with_present = [](const std::function<void(Layer&, const std::string&, const std::string&)>& present) {
    return explained(stacked_gpt2({2, "batch", kHeads, "past_seq", kHead}, {}, present));
  };
  CHECK(with_present([](Layer& l, const std::string& K, const std::string& V) {  // values first
          l.g.out(l.g.add("Concat", {l.g.unsqueeze0(V), l.g.unsqueeze0(K)}, {attr("axis", int64_t(0))}));
        }) == kStackedRefused);
  CHECK(with_present([](Layer& l, const std::string& K, const std::string& V) {  // on axis 1
          l.g.out(l.g.add("Concat", {l.g.unsqueeze0(K), l.g.unsqueeze0(V)}, {attr("axis", int64_t(1))}));
        }) == kStackedRefused);
  CHECK(with_present([](Layer& l, const std::string& K, const std::string& V) {  // three parts
          const std::string uk = l.g.unsqueeze0(K);
          l.g.out(l.g.add("Concat", {uk, l.g.unsqueeze0(V), uk}, {attr("axis", int64_t(0))}));
        }) == kStackedRefused);
  CHECK(with_present([](Layer& l, const std::string& K, const std::string& V) {  // the keys' Unsqueeze read by an Identity
          l.g.out(l.g.add("Concat", {l.g.add("Identity", {l.g.unsqueeze0(K)}), l.g.unsqueeze0(V)}, {attr("axis", int64_t(0))}));
        }) == kStackedRefused);
}

// ---- attention branches: constant causal look-alikes on fixed S = T = 3 ----
namespace {

Model with_x(Model m, DimSpec b, DimSpec s, int64_t d) {
  m.graph.inputs[0] = testing::f32("x", {b, s, d});
  return m;
}

// Where(Cast(`cond`, bool), scores, -1e9) with `cond` a float constant (or a Slice of it).
Model where_constant(const std::function<std::string(Layer&)>& cond, DimSpec seq = 3) {
  Layer l;
  const std::string q = l.q(), kT = l.kT(), v = l.v();
  const std::string c = l.g.add("Cast", {cond(l)}, {attr("to", int64_t(DType::Bool))});
  return with_x(l.attend(q, kT, v, [&](const std::string& s) { return l.g.add("Where", {c, s, l.g.c(Tensor::scalar<float>(-1e9f))}, {}, 1, "/attn/Causal"); }), 1,
                seq);
}

Tensor tril(Shape shape) {
  const int64_t W = shape.back(), H = shape[shape.size() - 2];
  std::vector<float> v(size_t(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int64_t(i) % W <= (int64_t(i) / W) % H);
  return Tensor::from_vector<float>(std::move(shape), v);
}

}  // namespace

TEST_CASE("attention branches: a constant condition that is not an S x T (or square, sliced) lower triangle is not causal, refused") {
  const std::string refused = kAtSm + "the mask of '/attn/Causal' slices a constant buffer that is not causal (key j <= query i + past) over S = 3, T = 3\n";
  // the exact (1, 1, 3, 3) lower triangle: causal
  CHECK(count_ops(fused(where_constant([](Layer& l) { return l.g.c(tril({1, 1, 3, 3})); })), "Attention") == 1);
  // one row (3), (1, 1, 1, 3) or one column (1, 1, 3, 1) broadcast to every query or key
  for (const Shape& shape : {Shape{3}, Shape{1, 1, 1, 3}, Shape{1, 1, 3, 1}}) {
    const Model m = where_constant([&](Layer& l) { return l.g.c(Tensor::from_vector<float>(shape, std::vector<float>(3, 1.0f))); });
    CHECK(explained(m) == refused);
    CHECK(count_ops(fused(m), "Softmax") == 1);
  }
  // the triangle twice, (2, 1, 3, 3): S x T per batch row, not one block (the batch is 1)
  CHECK(explained(where_constant([](Layer& l) { return l.g.c(tril({2, 1, 3, 3})); })) == refused);
  // rows [0, 3) and columns [1, 4) of a 4 x 4 triangle: the columns do not start at 0
  const Model cols = where_constant([](Layer& l) {
    return l.g.add("Slice", {l.g.c(tril({1, 1, 4, 4})), l.g.c(ints({0, 1})), l.g.c(ints({3, 4})), l.g.c(ints({2, 3}))});
  });
  CHECK(explained(cols) == refused);
  CHECK(count_ops(fused(cols), "Softmax") == 1);
  // an unsliced 4 x 4 triangle over a free sequence length: no slice takes its (S, T) block
  CHECK(explained(where_constant([](Layer& l) { return l.g.c(tril({1, 1, 4, 4})); }, "seq")) ==
        kAtSm + "the mask of '/attn/Causal' slices a constant buffer that is not causal (key j <= query i + past) over S = seq, T = seq\n");
}

// ---- attention branches: the context merged back ----

TEST_CASE("attention branches: a head merge to a shape fed at run time is refused; view(-1, S, N*h) fuses") {
  {
    Layer l;
    const std::string q = l.q(), kT = l.kT(), v = l.v();
    const std::string shape = l.g.input(tensor_info("shape", DType::Int64, {3}));
    CHECK(explained(l.attend(q, kT, v, {}, [&](const std::string& t) { l.g.out(l.g.add("Reshape", {t, shape}, {}, 1, "/attn/Merge")); })) ==
          kAtSm + "the head merge '/attn/Merge' has an unknown or non-3-D target\n");
  }
  Layer l;
  const std::string q = l.q(), kT = l.kT(), v = l.v();
  const Model m = l.attend(q, kT, v, {}, [&](const std::string& t) { l.g.out(l.g.add("Reshape", {t, l.g.c(ints({-1, 0, kHidden}))})); });
  CHECK(count_ops(fused(m), "Attention") == 1);
}

namespace {

// torch's nn.MultiheadAttention on x (S, B, 16) = (8, 2, 16): heads (B*N, S, h) by Reshape (8, 4, 8)
// and Transpose 1 0 2 (1 2 0 for K^T); `merge` takes the context transposed back to (S, B*N, h).
Model seq_first(const std::function<void(Layer&, const std::string&)>& merge) {
  Layer l;
  const auto split = [&](float start, std::vector<int64_t> perm) {
    return l.g.add("Transpose", {l.g.add("Reshape", {l.proj(start), l.g.c(ints({8, 4, kHead}))})}, {attr("perm", perm)});
  };
  const std::string q = split(-0.2f, {1, 0, 2}), k = split(0.2f, {1, 2, 0}), v = split(-0.1f, {1, 0, 2});
  const std::string s = l.g.add("Div", {l.g.add("MatMul", {q, k}), l.g.c(Tensor::scalar<float>(std::sqrt(float(kHead))))});
  const std::string ctx = l.g.add("MatMul", {l.g.add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, "/attn/Softmax"), v});
  merge(l, l.g.add("Transpose", {ctx}, {attr("perm", std::vector<int64_t>{1, 0, 2})}));
  return with_x(l.g.model(), 8, 2);
}

}  // namespace

TEST_CASE("attention branches: nn.MultiheadAttention's context merged to (S*B, N*h) fuses; left (S, B*N, h), or reshaped other than (S, B, N*h), is refused") {
  const Model flat = seq_first([](Layer& l, const std::string& t) { l.g.out(l.g.add("Reshape", {t, l.g.c(ints({16, kHidden}))})); });
  CHECK(count_ops(fused(flat), "Softmax") == 0);
  const std::string refused = kAtSm + "the (S, B*N, h) context is not merged to (S*B, N*h) or (S, B, N*h)\n";
  CHECK(explained(seq_first([](Layer& l, const std::string& t) { l.g.out(l.g.add("Relu", {t})); })) == refused);
  CHECK(explained(seq_first([](Layer& l, const std::string& t) {
          l.g.out(l.g.add("Reshape", {t, l.g.input(tensor_info("shape", DType::Int64, {3}))}));
        })) == refused);
  CHECK(explained(seq_first([](Layer& l, const std::string& t) { l.g.out(l.g.add("Reshape", {t, l.g.c(ints({2, 8, kHidden}))})); })) == refused);
}

// ---- attention branches: masks together, scales on projections, Q, K and V that do not match ----

TEST_CASE("attention branches: a bool causal buffer with a padding mask becomes one exact bias, the buffer read without a Cast") {
  // Where(tril (1, 1, 3, 3) as bool, scores, -1e9) + (1 - mask) * -10000 on S = T = 3
  Layer l;
  const std::string q = l.q(), kT = l.kT(), v = l.v();
  std::vector<bool> keep(9);
  for (int i = 0; i < 9; ++i) keep[size_t(i)] = i % 3 <= i / 3;
  l.g.input(tensor_info("mask", DType::Int64, {1, 3}));
  const Model m = with_x(l.attend(q, kT, v, [&](const std::string& s) {
    const std::string causal = l.g.add("Where", {l.g.c(Tensor::from_vector<bool>({1, 1, 3, 3}, keep)), s, l.g.c(Tensor::scalar<float>(-1e9f))});
    const std::string f = l.g.add("Cast", {l.g.add("Unsqueeze", {"mask", l.g.c(ints({1, 2}))})}, {attr("to", int64_t(DType::Float))});
    return l.g.add("Add", {causal, l.g.add("Mul", {l.g.add("Sub", {l.g.c(Tensor::scalar<float>(1)), f}), l.g.c(Tensor::scalar<float>(-10000))})});
  }), 1, 3);
  const Model out = optimized(m, {"attention"}, "", "all", {{"mask", Tensor::from_vector<int64_t>({1, 3}, {1, 1, 0})}});
  REQUIRE(count_ops(out, "Attention") == 1);
  const Node& att = attention_node(out);
  CHECK(att.find_attribute("unidirectional") == nullptr);
  REQUIRE(att.inputs.size() == 6);
  CHECK(att.inputs[3].empty());  // no mask_index: the padding is in the bias
  CHECK(count_ops(out, "Where") == 1);
  CHECK(count_ops(out, "Cast") == 1);  // the padding mask's own; the bool buffer is the keep condition itself
}

TEST_CASE("attention branches: a Div of the query projection before its head split joins the scale; read elsewhere too, it stays outside") {
  const auto layer = [](bool read_elsewhere) {
    Layer l;
    const std::string scaled = l.g.add("Div", {l.proj(-0.2f), l.g.c(Tensor::scalar<float>(2.0f))});
    if (read_elsewhere) l.g.out(l.g.add("Relu", {scaled}));
    const std::string q = l.split(scaled), kT = l.kT(), v = l.v();
    return fused(l.attend(q, kT, v));
  };
  const Model joined = layer(false);
  REQUIRE(count_ops(joined, "Attention") == 1);
  CHECK(attention_node(joined).find_attribute("scale")->f == doctest::Approx(0.5 / std::sqrt(8.0)));
  CHECK(count_ops(joined, "Div") == 0);
  const Model outside = layer(true);
  REQUIRE(count_ops(outside, "MultiHeadAttention") == 1);
  CHECK(attention_node(outside).find_attribute("scale") == nullptr);
  CHECK(count_ops(outside, "Div") == 1);
}

TEST_CASE("attention branches: repeated queries, a past on the keys only, or values in other heads are refused, named") {
  {  // Q of one head of 8 repeated for two: Reshape(Expand(Unsqueeze(q, 2)))
    Layer l;
    const std::string q1 = l.g.add("Transpose", {l.g.add("Reshape", {l.g.add("MatMul", {"x", l.w(-0.2f, kHead)}), l.g.c(ints({0, 0, 1, kHead}))})},
                                   {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
    const std::string expanded = l.g.add("Expand", {l.g.add("Unsqueeze", {q1, l.g.c(ints({2}))}), l.g.c(ints({1, 1, kHeads, 1, 1}))});
    const std::string q = l.g.add("Reshape", {expanded, l.g.c(ints({0, kHeads, -1, kHead}))});
    const std::string kT = l.kT(), v = l.v();
    CHECK(explained(l.attend(q, kT, v)) == kAtSm + "Q has a past or repeats\n");
  }
  {  // K after a past, V without one
    Layer l;
    const std::string q = l.q();
    const std::string K = l.g.add("Concat", {l.g.input(testing::f32("past_key", {"batch", kHeads, "past_seq", kHead})), l.split(l.proj(0.2f))},
                                  {attr("axis", int64_t(2))});
    const std::string kT = l.g.add("Transpose", {K}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), v = l.v();
    CHECK(explained(l.attend(q, kT, v)) == kAtSm + "K and V differ in past or repeats\n");
  }
  {  // V one head of 16, broadcast over Q's two: a (B, S, 2, 16) context
    Layer l;
    const std::string q = l.q(), kT = l.kT();
    const std::string v = l.split(l.proj(-0.1f), {0, 2, 1, 3}, l.g.c(ints({0, 0, 1, kHidden})));
    const Model m = l.attend(q, kT, v, {}, [&](const std::string& t) { l.g.out(l.g.add("Reshape", {t, l.g.c(ints({0, 0, 2 * kHidden}))})); });
    CHECK(explained(m) == kAtSm + "K or V has other heads than Q\n");
    CHECK(count_ops(fused(m), "Softmax") == 1);
  }
}

// ---- attention branches: sequence-first layouts ----
namespace {

// nn.MultiheadAttention's 3-D scores (B*N, S, T) = (4, 8, 8) on x (8, 2, 16), `mask` adding to them.
Model seq_first_masked(const std::function<std::string(Layer&, const std::string&)>& mask) {
  Layer l;
  const auto split = [&](float start, std::vector<int64_t> perm) {
    return l.g.add("Transpose", {l.g.add("Reshape", {l.proj(start), l.g.c(ints({8, 4, kHead}))})}, {attr("perm", perm)});
  };
  const std::string q = split(-0.2f, {1, 0, 2}), k = split(0.2f, {1, 2, 0}), v = split(-0.1f, {1, 0, 2});
  const std::string s = mask(l, l.g.add("Div", {l.g.add("MatMul", {q, k}), l.g.c(Tensor::scalar<float>(std::sqrt(float(kHead))))}));
  const std::string ctx = l.g.add("MatMul", {l.g.add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, "/attn/Softmax"), v});
  l.g.out(l.g.add("Reshape", {l.g.add("Transpose", {ctx}, {attr("perm", std::vector<int64_t>{1, 0, 2})}), l.g.c(ints({8, 2, kHidden}))}));
  return with_x(l.g.model(), 8, 2);
}

// fairseq: x read as (S, B, 16), each projection viewed (S, B, N, h) and permuted 1 2 0 3 to
// (B, N, S, h), K^T by a Transpose 0 1 3 2; `q_of` makes the (S, B, ...) value q is viewed from.
Model fairseq(const std::function<std::string(Layer&)>& q_of) {
  Layer l;
  const auto heads = [&](const std::string& p, const std::string& name = "") {
    return l.g.add("Transpose", {l.g.add("Reshape", {p, l.g.c(ints({0, 0, kHeads, kHead}))}, {}, 1, name)}, {attr("perm", std::vector<int64_t>{1, 2, 0, 3})});
  };
  const std::string q = heads(q_of(l), "/q_view");
  const std::string kT = l.g.add("Transpose", {heads(l.proj(0.2f))}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), v = heads(l.proj(-0.1f));
  return l.attend(q, kT, v);
}

}  // namespace

TEST_CASE("attention branches: a bias on nn.MultiheadAttention's 3-D scores must be the same for every batch row and head: (S, T) or (1, S, T)") {
  const auto with_bias = [](Shape shape, std::string* name = nullptr) {
    return seq_first_masked([&](Layer& l, const std::string& s) {
      const std::string b = l.g.c(ramp(shape, -0.5f, 0.05f));
      if (name) *name = b;
      return l.g.add("Add", {s, b});
    });
  };
  for (const Shape& shape : {Shape{8, 8}, Shape{1, 8, 8}}) {
    const Model out = fused(with_bias(shape));
    CHECK(count_ops(out, "Softmax") == 0);
    CHECK(count_ops(out, "Add") == 0);  // the projections' biases packed, the position bias an input of the fused node
  }
  std::string b;
  const Model per_head = with_bias({4, 8, 8}, &b);
  CHECK(explained(per_head) == kAtSm + "the added '" + b + "' (shape (4, 8, 8)) is neither a padding mask nor a bias of shape (S, T), (1|B, S, T), "
                                       "(B|1, N|1, S, T) or (B|1, N|1, 1, T) with S = 8, T = 8\n");
}

TEST_CASE("attention branches: fairseq's view(S, B, N, h).permute(1, 2, 0, 3) fuses; of a 4-D value or an unknown width, refused, named") {
  CHECK(count_ops(fused(fairseq([](Layer& l) { return l.proj(-0.2f); })), "Softmax") == 0);
  const std::string refused = kAtSm + "the head split '/q_view' is not (S, B, N, h) of an (S, B, N*h) input\n";
  CHECK(explained(fairseq([](Layer& l) { return l.g.input(testing::f32("q4", {"batch", "seq", kHeads, kHead})); })) == refused);
  CHECK(explained(fairseq([](Layer& l) { return l.g.input(testing::f32("q3", {"batch", "seq", "width"})); })) == refused);
}

TEST_CASE("attention branches: a context whose size() a Shape reads for the head merge (HF's view(*size()[:-2], all_head_size)) fuses") {
  Layer l;
  const std::string q = l.q(), kT = l.kT(), v = l.v();
  const Model m = with_x(l.attend(q, kT, v, {}, [&](const std::string& t) {
    const std::string size = l.g.add("Shape", {t});
    const auto dim = [&](int64_t i) { return l.g.add("Unsqueeze", {l.g.add("Gather", {size, l.g.c(Tensor::scalar<int64_t>(i))}), l.g.c(ints({0}))}); };
    const std::string target = l.g.add("Concat", {dim(0), dim(1), l.g.c(ints({kHidden}))}, {attr("axis", int64_t(0))});
    l.g.out(l.g.add("Reshape", {t, target}, {}, 1, "/attn/Merge"));
  }), "batch", "seq");
  const Model out = fused(m);
  CHECK(count_ops(out, "Softmax") == 0);
  CHECK(count_ops(out, "Shape") == 0);  // the size computation goes with the merge it fed
}

TEST_CASE("attention branches: a padding mask expanded to the scores' shape known only at run time is mask_index") {
  // (1 - mask) * -10000, (B, 1, 1, T), Expand to Abs(Shape(scores)): a 4-D shape whose dims no
  // inference follows (an Expand keeps every axis where it is whatever its target)
  const auto model = [](bool grows) {
    Layer l;
    const std::string q = l.q(), kT = l.kT(), v = l.v();
    return with_x(l.attend(q, kT, v, [&](const std::string& s) {
      l.g.input(tensor_info("mask", DType::Int64, {"batch", "seq"}));
      const std::string f = l.g.add("Cast", {"mask"}, {attr("to", int64_t(DType::Float))});
      const std::string bias = l.g.add("Mul", {l.g.add("Sub", {l.g.c(Tensor::scalar<float>(1)), f}), l.g.c(Tensor::scalar<float>(-10000))});
      // grows: Expand of the (B, T) mask itself to rank 4, which puts B on axis 2 (not a padding mask)
      const std::string view = grows ? bias : l.g.add("Unsqueeze", {bias, l.g.c(ints({1, 2}))});
      const std::string target = l.g.add("Abs", {l.g.add("Shape", {s})});
      return l.g.add("Add", {s, l.g.add("Expand", {view, target})});
    }), "batch", "seq");
  };
  const Model out = fused(model(false), {1, 1, 1, 1, 1, 0, 1, 0, 0});
  REQUIRE(count_ops(out, "Softmax") == 0);
  CHECK(attention_node(out).inputs[3] == "mask_int32");
  CHECK(count_ops(out, "Expand") == 0);
  CHECK(count_ops(fused(model(true), {1, 1, 1, 1, 1, 0, 1, 0, 0}), "Softmax") == 1);
}

TEST_CASE("attention branches: a key padding mask viewed (B*N, 1, T) on nn.MultiheadAttention's 3-D scores, added or by masked_fill, is mask_index") {
  // mask (B, T) = (2, 8) int64 -> Unsqueeze (B, 1, 1, T) -> Expand (B, N, 1, T) -> Reshape (B*N, 1, T)
  const auto merged = [](Layer& l, const std::string& m) {
    const std::string e = l.g.add("Expand", {l.g.add("Unsqueeze", {m, l.g.c(ints({1, 2}))}), l.g.c(ints({2, kHeads, 1, 8}))});
    return l.g.add("Reshape", {e, l.g.c(ints({2 * kHeads, 1, 8}))});
  };
  const auto model = [&](bool where) {
    Model m = seq_first_masked([&](Layer& l, const std::string& s) {
      l.g.input(tensor_info("mask", DType::Int64, {2, 8}));
      if (where) {  // masked_fill(key_padding_mask, -1e9): 1 hides
        const std::string hides = merged(l, l.g.add("Cast", {"mask"}, {attr("to", int64_t(DType::Bool))}));
        return l.g.add("Where", {hides, l.g.c(Tensor::scalar<float>(-1e9f)), s});
      }
      const std::string f = l.g.add("Cast", {"mask"}, {attr("to", int64_t(DType::Float))});  // (1 - m) * -10000: 1 keeps
      return l.g.add("Add", {s, merged(l, l.g.add("Mul", {l.g.add("Sub", {l.g.c(Tensor::scalar<float>(1)), f}), l.g.c(Tensor::scalar<float>(-10000))}))});
    });
    return m;
  };
  const std::map<std::string, Value> fed = {{"mask", Tensor::from_vector<int64_t>({2, 8}, {0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0})}};
  const std::map<std::string, Value> keeps = {{"mask", Tensor::from_vector<int64_t>({2, 8}, {1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1})}};
  for (const bool where : {false, true}) {
    CAPTURE(where);
    const Model out = optimized(model(where), {"attention"}, "", "all", where ? fed : keeps);
    REQUIRE(count_ops(out, "Softmax") == 0);
    const Node& att = attention_node(out);
    REQUIRE(att.inputs.size() > 3);
    CHECK(att.inputs[3] == "mask_int32");
    CHECK(count_ops(out, "Not") == int(where));  // 1 hides: negated into ORT's keep mask
    CHECK(count_ops(out, "Expand") == 0);
  }
}

namespace {

// The axes the first Unsqueeze of `m` takes, from its constant input.
std::vector<int64_t> unsqueeze_axes(const Model& m) {
  for (const Node& n : m.graph.nodes)
    if (n.op_type == "Unsqueeze")
      for (const Initializer& i : m.graph.initializers)
        if (n.inputs.size() > 1 && i.name == n.inputs[1]) return i.value.to_vector<int64_t>();
  return {};
}

// Self-attention on S = T = 3 adding constant biases of `shapes` to the scores, one by one.
Model with_biases(std::vector<Shape> shapes) {
  Layer l;
  const std::string q = l.q(), kT = l.kT(), v = l.v();
  return with_x(l.attend(q, kT, v, [&](std::string s) {
    float start = -0.5f;
    for (const Shape& shape : shapes) s = l.g.add("Add", {s, l.g.c(ramp(shape, start, 0.05f))}), start += 0.3f;
    return s;
  }), 1, 3);
}

}  // namespace

TEST_CASE("attention branches: (1, S, T) biases, one or summed, are unsqueezed on axis 1; (1, 1, S, T) ones are summed as they are") {
  const Model one = fused(with_biases({{1, 3, 3}}));
  REQUIRE(count_ops(one, "Attention") == 1);
  CHECK(count_ops(one, "Unsqueeze") == 1);
  CHECK(unsqueeze_axes(one) == std::vector<int64_t>{1});
  const Model two = fused(with_biases({{1, 3, 3}, {1, 3, 3}}));
  REQUIRE(count_ops(two, "Attention") == 1);
  CHECK(count_ops(two, "Add") == 1);  // the sum of the two
  CHECK(unsqueeze_axes(two) == std::vector<int64_t>{1});
  const Model four = fused(with_biases({{1, 1, 3, 3}, {1, 1, 3, 3}}));
  REQUIRE(count_ops(four, "Attention") == 1);
  CHECK(count_ops(four, "Add") == 1);
  CHECK(count_ops(four, "Unsqueeze") + count_ops(four, "Expand") == 0);  // a row per query already
}

TEST_CASE("attention branches: keys after a past input and values after a computed past are refused, named") {
  Layer l;
  const std::string q = l.q();
  const auto after = [&](const std::string& past, const std::string& heads) { return l.g.add("Concat", {past, heads}, {attr("axis", int64_t(2))}); };
  const std::string K = after(l.g.input(testing::f32("past_key", {"batch", kHeads, "past_seq", kHead})), l.split(l.proj(0.2f)));
  const std::string V = after(l.g.add("Identity", {l.g.input(testing::f32("past_value", {"batch", kHeads, "past_seq", kHead}))}), l.v());
  l.g.out(K), l.g.out(V);
  const Model m = l.attend(q, l.g.add("Transpose", {K}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), V);
  CHECK(explained(m) == kStackedRefused);
  CHECK(count_ops(fused(m), "Softmax") == 1);
}

TEST_CASE("attention branches: head splits view(B, -1, 2, 4) of (B, S, 16), every token cut in two, are not (B, S, N, h), refused, named") {
  // q, k and v viewed (B, 2S, 2, 4): a valid graph of twice the tokens, merged back to (B, 2S, 8)
  Layer l;
  const auto half_tokens = [&](float start, std::vector<int64_t> perm, const std::string& name) {
    return l.split(l.proj(start), perm, l.g.c(ints({0, -1, kHeads, 4})), name);
  };
  const std::string q = half_tokens(-0.2f, {0, 2, 1, 3}, "/q"), kT = half_tokens(0.2f, {0, 2, 3, 1}, "/k"), v = half_tokens(-0.1f, {0, 2, 1, 3}, "/v");
  const Model m = l.attend(q, kT, v, {}, [&](const std::string& t) { l.g.out(l.g.add("Reshape", {t, l.g.c(ints({0, 0, 2 * 4}))})); });
  CHECK(explained(m) == kAtSm + "the head split '/q_view' is not (B, S, N, h) of a (B, S, N*h) input\n");
  CHECK(count_ops(fused(m), "Softmax") == 1);
}

TEST_CASE("attention branches: a stacked past read by Gather on axis 1 is not ORT's stack, refused") {
  CHECK(explained(stacked_gpt2({2, 2, kHeads, "past_seq", kHead}, [](Layer& l) {
          const auto at = [&](int64_t i) { return l.g.add("Gather", {"past", l.g.c(Tensor::scalar<int64_t>(i))}, {attr("axis", int64_t(1))}); };
          return std::array{at(0), at(1)};
        })) == kStackedRefused);
}

// ---- attention branches: grouped-query attention ----
namespace {

// Llama's grouped-query attention: one key/value head of 8 after per-layer pasts (batch, 1, `past`,
// 8) (read through an Identity when `computed_past`), repeated for Q's 2 heads.
Model grouped(DimSpec past = "past_seq", bool computed_past = false, DimSpec batch = "batch") {
  Layer l;
  const std::string q = l.q();
  std::string kv[2];
  for (int i = 0; i < 2; ++i) {
    std::string p = l.g.input(testing::f32(i ? "past_value" : "past_key", {batch, 1, past, kHead}));
    if (computed_past) p = l.g.add("Identity", {p});
    const std::string proj = l.g.add("Add", {l.g.add("MatMul", {"x", l.w(i ? -0.1f : 0.2f, kHead)}), l.g.c(ramp({kHead}, -0.1f, 0.01f))});
    const std::string present = l.g.add("Concat", {p, l.split(proj, {0, 2, 1, 3}, l.g.c(ints({0, 0, 1, kHead})))}, {attr("axis", int64_t(2))});
    l.g.out(present);
    const std::string expanded = l.g.add("Expand", {l.g.add("Unsqueeze", {present, l.g.c(ints({2}))}), l.g.c(ints({1, 1, kHeads, 1, 1}))});
    kv[i] = l.g.add("Reshape", {expanded, l.g.c(ints({0, kHeads, -1, kHead}))});
  }
  return with_x(l.attend(q, l.g.add("Transpose", {kv[0]}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), kv[1]), batch, "seq");
}

}  // namespace

TEST_CASE("attention branches: grouped-query keys after a past of fixed length are GroupQueryAttention (batch 1); after a computed past, MultiHeadAttention, explained") {
  CHECK(count_ops(fused(grouped(4, false, 1), {}, "cpu"), "GroupQueryAttention") == 1);
  const Model computed = grouped("past_seq", true);
  CHECK(count_ops(fused(computed, {}, "cpu"), "MultiHeadAttention") == 1);
  optimize::OptimizeOptions o;
  o.only = {"attention"};
  o.explain = true;
  o.forms = "cpu";
  CHECK(testing::not_fused_lines(optimize::optimize(computed, Registry::builtin(), o).explain) ==
        "not fused: attention at '/attn/Attention': MultiHeadAttention over the repeated keys, not GroupQueryAttention: no per-layer past to append to\n");
}

namespace {

// Meta's llama: keys and values after per-layer pasts (batch, 1, P, 8), repeated for Q's 2 heads
// in (B, T, N, h) between transposes of the cache: Transpose(Reshape(Expand(Unsqueeze(
// Transpose(kv, 0 2 1 3), `axis`)), (B, T, 2, 8)), 0 2 1 3) (0 2 3 1 for K^T); with
// `v_in_heads`, V repeated in (B, N, T, h) as grouped() does.
Model llama(int64_t axis, bool v_in_heads = false) {
  Layer l;
  const std::string q = l.q();
  std::string kv[2];
  for (int i = 0; i < 2; ++i) {
    const std::string past = l.g.input(testing::f32(i ? "past_value" : "past_key", {"batch", 1, "past_seq", kHead}));
    const std::string proj = l.g.add("Add", {l.g.add("MatMul", {"x", l.w(i ? -0.1f : 0.2f, kHead)}), l.g.c(ramp({kHead}, -0.1f, 0.01f))});
    const std::string present = l.g.add("Concat", {past, l.split(proj, {0, 2, 1, 3}, l.g.c(ints({0, 0, 1, kHead})))}, {attr("axis", int64_t(2))});
    l.g.out(present);
    if (i == 1 && v_in_heads) {
      const std::string expanded = l.g.add("Expand", {l.g.add("Unsqueeze", {present, l.g.c(ints({2}))}), l.g.c(ints({1, 1, kHeads, 1, 1}))});
      kv[i] = l.g.add("Reshape", {expanded, l.g.c(ints({0, kHeads, -1, kHead}))});
      continue;
    }
    const std::string back = l.g.add("Transpose", {present}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
    const std::string expanded = l.g.add("Expand", {l.g.add("Unsqueeze", {back, l.g.c(ints({axis}))}), l.g.c(ints({1, 1, 1, kHeads, 1}))});
    const std::string repeated = l.g.add("Reshape", {expanded, l.g.c(ints({0, 0, kHeads, kHead}))});
    kv[i] = l.g.add("Transpose", {repeated}, {attr("perm", i ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{0, 2, 3, 1})});
  }
  return l.attend(q, kv[0], kv[1]);
}

}  // namespace

TEST_CASE("attention branches: llama's repeat between cache transposes, unsqueezed at -2 or 3, is MultiHeadAttention; V repeated in heads instead is refused") {
  for (const int64_t axis : {3, -2}) {
    CAPTURE(axis);
    const Model out = fused(llama(axis));
    CHECK(count_ops(out, "MultiHeadAttention") == 1);
    CHECK(count_ops(out, "Softmax") == 0);
  }
  CHECK(explained(llama(3, true)) == kAtSm + "K and V differ in past or repeats\n");
}

TEST_CASE("attention branches: keys and values given in heads after a past are refused, named") {
  Layer l;
  const std::string q = l.q();
  const auto after = [&](const std::string& past, const std::string& given) {
    return l.g.add("Concat", {l.g.input(testing::f32(past, {"batch", kHeads, "past_seq", kHead})), l.g.input(testing::f32(given, {"batch", kHeads, "seq", kHead}))},
                   {attr("axis", int64_t(2))});
  };
  const std::string K = after("past_key", "k"), V = after("past_value", "v");
  const Model m = l.attend(q, l.g.add("Transpose", {K}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), V);
  CHECK(explained(m) == kAtSm + "K and V are not both given in heads (B, N, T, h) with no past, repeat or rotation\n");
}

TEST_CASE("attention branches: a decoder's first step outputting its keys in heads but not its values is refused, the keys' heads named") {
  // K = Transpose(view(k), 0 2 1 3) a graph output (a present), K^T its Transpose 0 1 3 2; V's heads not an output
  Layer l;
  const std::string q = l.q();
  const std::string K = l.split(l.proj(0.2f), {0, 2, 1, 3}, "", "/k/Transpose");
  l.g.out(K);
  const Model m = l.attend(q, l.g.add("Transpose", {K}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})}), l.v());
  CHECK(explained(m) == kAtSm + "an intermediate is read elsewhere: '" + K + "' is a graph output\n");
  CHECK(count_ops(fused(m), "Softmax") == 1);
}

TEST_CASE("attention branches: GroupQueryAttention at a fixed batch of 2 over several tokens warns of ORT's batch-1 limit") {
  optimize::OptimizeOptions o;
  o.only = {"attention"};
  o.forms = "cpu";
  const optimize::OptimizeResult r = optimize::optimize(grouped("past_seq", false, 2), Registry::builtin(), o);
  CHECK(count_ops(r.model, "GroupQueryAttention") == 1);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("batch 1 only") != std::string::npos);
}

TEST_CASE("attention branches: a (1, 1, 1, T) bias on grouped-query scores is GroupQueryAttention's attention_bias, expanded to the query rows") {
  // batch 1, 3 new tokens after a past of 4: T = 7
  Model m = grouped(4, false, 1);
  m.graph.inputs[0] = testing::f32("x", {1, 3, kHidden});
  Node& sm = *std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [](const Node& n) { return n.op_type == "Softmax"; });
  const std::string scores = sm.inputs[0];
  sm.inputs[0] = "biased_scores";
  m.graph.nodes.insert(std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [](const Node& n) { return n.op_type == "Softmax"; }),
                       node("Add", {scores, "bias"}, {"biased_scores"}, {}, "/attn/Bias"));
  m.graph.inputs.push_back(testing::f32("bias", {1, 1, 1, 7}));
  const Model out = fused(m, {}, "cpu");
  REQUIRE(count_ops(out, "GroupQueryAttention") == 1);
  const Node& gqa = attention_node(out);
  REQUIRE(gqa.inputs.size() == 11);
  // attention_bias: Expand(bias, (1, 1, S, 1)), a row per query (the other Expand is seqlens_k's; the repeats go)
  const auto rows = std::find_if(out.graph.nodes.begin(), out.graph.nodes.end(), [&](const Node& n) { return n.outputs[0] == gqa.inputs[10]; });
  REQUIRE(rows != out.graph.nodes.end());
  CHECK(rows->op_type == "Expand");
  CHECK(rows->inputs[0] == "bias");
  CHECK(count_ops(out, "Expand") == 2);
}

TEST_CASE("attention branches: a Where on a mask that hides nothing (mask == 5), or a second padding Where, is a run-time mask of the wrong shape, refused") {
  const auto refused = [](const std::string& where) {
    return kAtSm + "the mask of '" + where + "' is not causal (key j <= query i + past) and its shape is not (.., 1, S, T) with S = seq, T = seq\n";
  };
  const auto layer = [](bool two) {
    Layer l;
    const std::string q = l.q(), kT = l.kT(), v = l.v();
    l.g.input(tensor_info("mask", DType::Int64, {"batch", "seq"}));
    return l.attend(q, kT, v, [&](std::string s) {
      const std::string m4 = l.g.add("Unsqueeze", {"mask", l.g.c(ints({1, 2}))});
      const std::string fill = l.g.c(Tensor::scalar<float>(-1e9f));
      // masked_fill(mask == 0, -1e9): a padding mask
      if (two) s = l.g.add("Where", {l.g.add("Equal", {m4, l.g.c(Tensor::scalar<int64_t>(0))}), fill, s}, {}, 1, "/attn/Mask1");
      // mask == 5: false for 0 and 1 alike
      const std::string cond = two ? l.g.add("Cast", {m4}, {attr("to", int64_t(DType::Bool))}) : l.g.add("Equal", {m4, l.g.c(Tensor::scalar<int64_t>(5))});
      return l.g.add("Where", {cond, fill, s}, {}, 1, "/attn/Mask2");
    });
  };
  CHECK(explained(layer(false)) == refused("/attn/Mask2"));
  // read from the Softmax, the outer Where is the padding and the inner one the second
  CHECK(explained(layer(true)) == refused("/attn/Mask1"));
}

TEST_CASE("attention branches: Add(bias * 0.5, scores) with the scaled (1, S, T) bias first reads the scores from its second operand") {
  Layer l;
  const std::string q = l.q(), kT = l.kT(), v = l.v();
  const std::string b = l.g.input(testing::f32("bias", {1, 3, 3}));
  const Model m = with_x(l.attend(q, kT, v, [&](const std::string& s) {
    return l.g.add("Add", {l.g.add("Mul", {b, l.g.c(Tensor::scalar<float>(0.5f))}), s});
  }), 1, 3);
  const Model out = fused(m);
  REQUIRE(count_ops(out, "Attention") == 1);
  CHECK(count_ops(out, "Mul") == 1);  // the bias's scale stays, its result the fused node's bias
  CHECK(count_ops(out, "Unsqueeze") == 1);
}

TEST_CASE("attention branches: pasts gathered at a run-time index, or squeezed from inputs, are not ORT's stack, refused") {
  using Pasts = std::function<std::array<std::string, 2>(Layer&)>;
  const std::vector<std::pair<const char*, Pasts>> forms = {
      {"a run-time index", [](Layer& l) {
         const std::string i = l.g.input(tensor_info("i", DType::Int64, {}));
         const auto at = [&](const std::string& idx) { return l.g.add("Gather", {"past", idx}, {attr("axis", int64_t(0))}); };
         return std::array{at(i), at(l.g.c(Tensor::scalar<int64_t>(1)))};
       }},
      {"Squeeze of inputs", [](Layer& l) {
         const auto squeezed = [&](const char* name) {
           return l.g.add("Squeeze", {l.g.input(testing::f32(name, {1, "batch", kHeads, "past_seq", kHead})), l.g.c(ints({0}))});
         };
         return std::array{squeezed("past_k1"), squeezed("past_v1")};
       }},
  };
  for (const auto& [what, pasts] : forms) {
    const std::string form = what;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(form);
    CHECK(explained(stacked_gpt2({2, "batch", kHeads, "past_seq", kHead}, pasts)) == kStackedRefused);
  }
}

TEST_CASE("attention branches: probabilities read only by a Shape (their size, no product with V) are refused, explained") {
  Layer l;
  const std::string q = l.q(), kT = l.kT();
  const std::string s = l.g.add("Div", {l.g.add("MatMul", {q, kT}), l.g.c(Tensor::scalar<float>(std::sqrt(float(kHead))))});
  l.g.out(l.g.add("Shape", {l.g.add("Softmax", {s}, {attr("axis", int64_t(-1))}, 1, "/attn/Softmax")}));
  CHECK(explained(l.g.model()) == kAtSm + "the probabilities are not only multiplied by V\n");
}
