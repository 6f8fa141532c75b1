// The rotary-embedding pass on the exporter forms and look-alikes its other tests do not feed:
// rotations written pair by pair (Meta's llama on neighbours, MixFormer's Phi on halves) with the
// pair parts cut by Split or Slice then Squeeze; frequencies written with an implicit Einsum
// output, a Cos of an already unsqueezed argument, an unsqueezed or double inv_freq; opset-9
// Slices with attribute bounds; and near misses, each with the `--explain` reason. q is (B, 2, S, 8)
// (B, S dynamic), cos/sin tables have 32 rows; every fused result is checked against the original
// with the evaluator (optimized(), optimize_test_util.h).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::refusals;

namespace {

constexpr int64_t kHeads = 2, kHead = 8, kHalf = kHead / 2, kRows = 32;
constexpr int64_t kBig = std::numeric_limits<int64_t>::max();

// cos or sin tables of kRows positions (rope_table, optimize_test_util.h).
Tensor table(bool cosine, int64_t width, int64_t rotated = kHead) { return testing::rope_table(cosine, kRows, width, rotated); }
std::vector<float> inv_freq(int64_t rotated = kHead) { return testing::rope_inv_freq(rotated); }

// A graph under construction: q (B, 2, S, 8) and position_ids (B, S) as inputs, one output y.
class G : public testing::GraphUnderConstruction {
 public:
  explicit G(int opset = 17, DimSpec batch = "batch", DimSpec seq = "seq") : opset_(opset), batch_(batch), seq_(seq) {}

  std::string unsqueeze(const std::string& v, std::vector<int64_t> axes) {
    if (opset_ < 13) return add("Unsqueeze", {v}, {attr("axes", axes)});
    return add("Unsqueeze", {v, c(ints(axes))});
  }
  std::string slice(const std::string& v, int64_t start, int64_t end, int64_t axis = -1, int64_t step = 1) {
    if (opset_ < 10) return add("Slice", {v}, {attr("starts", std::vector<int64_t>{start}), attr("ends", std::vector<int64_t>{end}), attr("axes", std::vector<int64_t>{axis})});
    std::vector<std::string> in = {v, c(ints({start})), c(ints({end})), c(ints({axis}))};
    if (step != 1) in.push_back(c(ints({step})));
    return add("Slice", in);
  }
  // Unsqueeze(table[position_ids], axis): gathered cos or sin (B, 1, S, width).
  std::string gathered(bool cosine, int64_t width, int64_t rotated = kHead, int64_t axis = 1) {
    return unsqueeze(add("Gather", {c(table(cosine, width, rotated)), "position_ids"}, {attr("axis", int64_t(0))}), {axis});
  }
  Model model(const std::string& y) {
    return refeval::build::model(graph("rope", nodes_, {testing::f32("q", {batch_, kHeads, seq_, kHead}), tensor_info("position_ids", DType::Int64, {batch_, seq_})},
                                       {testing::f32(y, {batch_, kHeads, seq_, kHead})}, inits_),
                                 {{"", opset_}});
  }

 private:
  int opset_;
  DimSpec batch_, seq_;
};

// a * cos - b * sin and a * sin + b * cos; `tables_first` writes Mul(cos, a) for Mul(a, cos).
std::pair<std::string, std::string> pair_products(G& g, const std::string& a, const std::string& b, const std::string& cos, const std::string& sin,
                                                  bool tables_first = false) {
  const auto mul = [&](const std::string& x, const std::string& t) { return tables_first ? g.add("Mul", {t, x}) : g.add("Mul", {x, t}); };
  const std::string even = g.add("Sub", {mul(a, cos), mul(b, sin)});
  const std::string odd = g.add("Add", {mul(a, sin), mul(b, cos)});
  return {even, odd};
}

// How Meta's llama cuts pairs[..., 0] and pairs[..., 1] from pairs = x viewed as (.., h/2, 2).
enum class Cut { Gather, GatherNegative, SplitSqueeze, SliceSqueeze, SliceStep2Squeeze, GatherSwapped };

// y = Reshape(stack([a', b'], -1), (0, 0, 0, h)), interleaved pairs.
Model neighbours(Cut cut) {
  G g;
  const std::string pairs = g.add("Reshape", {"q", g.c(ints({0, 0, 0, kHalf, 2}))});
  std::string a, b;
  switch (cut) {
    case Cut::Gather:
    case Cut::GatherNegative:
    case Cut::GatherSwapped: {
      const int64_t first = cut == Cut::GatherNegative ? -2 : cut == Cut::GatherSwapped ? 1 : 0;
      const int64_t second = cut == Cut::GatherNegative ? -1 : cut == Cut::GatherSwapped ? 0 : 1;
      a = g.add("Gather", {pairs, g.c(Tensor::scalar<int64_t>(first))}, {attr("axis", int64_t(-1))});
      b = g.add("Gather", {pairs, g.c(Tensor::scalar<int64_t>(second))}, {attr("axis", int64_t(-1))});
      break;
    }
    case Cut::SplitSqueeze: {  // pairs.unbind(-1) as ONNX exports it: Split then Squeeze
      a = g.add("Split", {pairs, g.c(ints({1, 1}))}, {attr("axis", int64_t(-1))}, 2);
      b = a + "_1";
      a = g.add("Squeeze", {a, g.c(ints({-1}))});
      b = g.add("Squeeze", {b, g.c(ints({4}))});
      break;
    }
    case Cut::SliceSqueeze:
    case Cut::SliceStep2Squeeze: {  // pairs[..., 0:1].squeeze(-1); the look-alike takes 0:1 with step 2
      a = g.add("Squeeze", {g.slice(pairs, 0, 1, -1, cut == Cut::SliceStep2Squeeze ? 2 : 1), g.c(ints({-1}))});
      b = g.add("Squeeze", {g.slice(pairs, 1, 2, 4), g.c(ints({-1}))});
      break;
    }
  }
  const std::string cos = g.gathered(true, kHalf), sin = g.gathered(false, kHalf);
  const auto [even, odd] = pair_products(g, a, b, cos, sin);
  const std::string stack = g.add("Concat", {g.unsqueeze(even, {-1}), g.unsqueeze(odd, {-1})}, {attr("axis", int64_t(-1))});
  return g.model(g.add("Reshape", {stack, g.c(ints({0, 0, 0, kHead}))}));
}

// How MixFormer's apply_rotary cuts the halves a = x[..., :h/2], b = x[..., h/2:].
enum class Halves { Slices, Split, NegativeStart, Strided, Reversed, TablesFirst };

// Concat(a * cos - b * sin, a * sin + b * cos) on the last axis.
Model mixformer(Halves halves) {
  G g;
  std::string a, b;
  switch (halves) {
    case Halves::Split:
      a = g.add("Split", {"q", g.c(ints({kHalf, kHalf}))}, {attr("axis", int64_t(3))}, 2), b = a + "_1";
      break;
    case Halves::NegativeStart:  // x[..., -4:]
      a = g.slice("q", 0, kHalf), b = g.slice("q", -kHalf, kBig);
      break;
    case Halves::Strided:  // x[..., 0::2]: the even columns, not a half
      a = g.slice("q", 0, kHead, -1, 2), b = g.slice("q", kHalf, kBig);
      break;
    case Halves::Reversed:  // (x2, x1): the rotation by the negative angle
      a = g.slice("q", kHalf, kBig), b = g.slice("q", 0, kHalf);
      break;
    default:
      a = g.slice("q", 0, kHalf), b = g.slice("q", kHalf, kBig);
  }
  const std::string cos = g.gathered(true, kHalf), sin = g.gathered(false, kHalf);
  const auto [even, odd] = pair_products(g, a, b, cos, sin, halves == Halves::TablesFirst);
  return g.model(g.add("Concat", {even, odd}, {attr("axis", int64_t(-1))}));
}

const Node& only(const Model& m, const std::string& op) {
  const auto it = std::find_if(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  REQUIRE(it != m.graph.nodes.end());
  return *it;
}

// Fused into one RotaryEmbedding with `interleaved`, equivalent to the original (optimized()).
void check_fused(const Model& m, int64_t interleaved, int64_t rotary_dim = 0) {
  const std::string lines = refusals(m, {"rotary-embedding"});
  const Model out = optimized(m, {"rotary-embedding"});
  REQUIRE_MESSAGE(count_ops(out, "RotaryEmbedding") == 1, lines);
  CHECK(count_ops(out, "Mul") == 0);
  const Node& r = only(out, "RotaryEmbedding");
  CHECK(r.find_attribute("interleaved")->i == interleaved);
  const Attribute* dim = r.find_attribute("rotary_embedding_dim");
  CHECK((dim ? dim->i : 0) == rotary_dim);
}

// Left as it was, with `reason` in the pass's "not fused" line.
void check_refused(const Model& m, const std::string& reason) {
  const std::string lines = refusals(m, {"rotary-embedding"});
  CHECK_MESSAGE(lines.find("not fused: rotary-embedding at") != std::string::npos, lines);
  CHECK_MESSAGE(lines.find(reason) != std::string::npos, lines);
  CHECK(count_ops(optimized(m, {"rotary-embedding"}), "RotaryEmbedding") == 0);
}

}  // namespace

TEST_CASE("rotary pairs: Meta's llama neighbours cut by Gather (either index sign), Split + Squeeze or Slice + Squeeze fuse interleaved") {
  check_fused(neighbours(Cut::Gather), 1);
  check_fused(neighbours(Cut::GatherNegative), 1);  // pairs[..., -2] and pairs[..., -1]
  check_fused(neighbours(Cut::SplitSqueeze), 1);    // torch.unbind(pairs, -1)
  check_fused(neighbours(Cut::SliceSqueeze), 1);    // pairs[..., 0:1].squeeze(-1), pairs[..., 1:2].squeeze(4)
}

TEST_CASE("rotary pairs: neighbours read out of order or with a stride stay, explained") {
  check_refused(neighbours(Cut::GatherSwapped), "are read as (x[2i + 1], x[2i]): the rotation by the negative angle");
  check_refused(neighbours(Cut::SliceStep2Squeeze), "the products do not read the two elements of one pairs value");
}

TEST_CASE("rotary pairs: MixFormer's halves by Split, from a negative start, or with the tables first fuse not interleaved") {
  check_fused(mixformer(Halves::Slices), 0);
  check_fused(mixformer(Halves::Split), 0);          // torch.chunk(x, 2, -1)
  check_fused(mixformer(Halves::NegativeStart), 0);  // x[..., -4:]
  check_fused(mixformer(Halves::TablesFirst), 0);    // cos * x1 - sin * x2
}

// A refusal names the parts in the order the products read them (a * cos - b * sin: a, then b).
TEST_CASE("rotary pairs: halves read swapped or strided stay, explained") {
  check_refused(mixformer(Halves::Reversed), "the halves are read as (x[h/2:], x[:h/2]): the rotation by the negative angle");
  check_refused(mixformer(Halves::Strided), "an unknown part and [4, 8) of the last axis of 'q', not its halves [0, 4) and [4, 8)");
}

namespace {

// Phi-2's partial rotation on halves: q[..., :4] cut by `split` (one Split) or two Slices, its
// halves rotated pair by pair, then Concat(a', b', q[..., 4:]).
Model partial_pairs(bool split) {
  G g;
  std::string rot, pass;
  if (split) {
    rot = g.add("Split", {"q", g.c(ints({kHalf, kHead - kHalf}))}, {attr("axis", int64_t(-1))}, 2), pass = rot + "_1";
  } else {
    rot = g.slice("q", 0, kHalf), pass = g.slice("q", kHalf, kBig);
  }
  const std::string a = g.slice(rot, 0, kHalf / 2), b = g.slice(rot, kHalf / 2, kBig);
  const std::string cos = g.gathered(true, kHalf / 2, kHalf), sin = g.gathered(false, kHalf / 2, kHalf);
  const auto [even, odd] = pair_products(g, a, b, cos, sin);
  return g.model(g.add("Concat", {even, odd, pass}, {attr("axis", int64_t(-1))}));
}

}  // namespace

TEST_CASE("rotary pairs: a partial rotation on halves cut by Slices fuses with rotary_embedding_dim") {
  check_fused(partial_pairs(false), 0, kHalf);
}

// torch.split(q, [rd, h - rd], -1): the rotated part and the rest cut by one Split.
TEST_CASE("rotary pairs: a partial rotation on halves cut by one Split fuses too") {
  check_fused(partial_pairs(true), 0, kHalf);
}

namespace {

// Hugging Face's rotate-half on q: x * cos + rotate_half(x) * sin with cos/sin from `trig` and the
// halves cut by Slices (attributes below opset 10).
Model rotate_half(G& g, const std::string& cos, const std::string& sin, const std::string& cos_operand = "q") {
  const std::string x1 = g.slice("q", 0, kHalf), x2 = g.slice("q", kHalf, kBig);
  const std::string rot = g.add("Concat", {g.add("Neg", {x2}), x1}, {attr("axis", int64_t(-1))});
  return g.model(g.add("Add", {g.add("Mul", {cos_operand, cos}), g.add("Mul", {rot, sin})}));
}

// Cos or Sin of emb = Concat(f, f), f (B, S, h/2) written by `freqs`, unsqueezed on the heads axis.
enum class Freqs { EinsumImplicit, EinsumImplicitSorted, InvUnsqueezed, InvDouble, TransposeNoPerm, CosOfUnsqueezed };

// The look-alikes are (4, 2, 4, 8), batch = sequence = h/2, so their transposed frequencies still broadcast.
Model computed(Freqs form) {
  const bool square = form == Freqs::EinsumImplicitSorted || form == Freqs::TransposeNoPerm;
  G g(17, square ? DimSpec(int64_t(4)) : DimSpec("batch"), square ? DimSpec(int64_t(4)) : DimSpec("seq"));
  const std::string p = g.add("Cast", {"position_ids"}, {attr("to", int64_t(DType::Float))});
  std::string f;
  switch (form) {
    case Freqs::EinsumImplicit:  // einsum("ij,k", p, inv): the implicit output "ijk"
    case Freqs::EinsumImplicitSorted:  // einsum("sb,k", ...): implicit output "bks" (labels sorted), (S, h/2, B)
      f = g.add("Einsum", {p, g.c(Tensor::from_vector<float>({kHalf}, inv_freq()))},
                {attr("equation", std::string(form == Freqs::EinsumImplicit ? "ij,k" : "sb,k"))});
      break;
    case Freqs::InvUnsqueezed:  // p[..., None] * inv_freq[None, None, :]
      f = g.add("Mul", {g.unsqueeze(p, {-1}), g.unsqueeze(g.c(Tensor::from_vector<float>({kHalf}, inv_freq())), {0, 1})});
      break;
    case Freqs::InvDouble: {  // inv_freq kept in double, cast to float
      const std::vector<float> single = inv_freq();
      const std::vector<double> inv(single.begin(), single.end());
      f = g.add("Mul", {g.unsqueeze(p, {-1}), g.add("Cast", {g.c(Tensor::from_vector<double>({kHalf}, inv))}, {attr("to", int64_t(DType::Float))})});
      break;
    }
    case Freqs::TransposeNoPerm: {  // (inv (B, h/2, 1) @ p (B, 1, S)) transposed without a perm: (S, h/2, B)
      const std::string prod = g.add("MatMul", {g.c(Tensor::from_vector<float>({1, kHalf, 1}, inv_freq())), g.unsqueeze(p, {1})});
      f = g.add("Transpose", {prod});
      break;
    }
    case Freqs::CosOfUnsqueezed:
      f = g.add("Mul", {g.unsqueeze(p, {-1}), g.c(Tensor::from_vector<float>({kHalf}, inv_freq()))});
      break;
  }
  const std::string emb = g.add("Concat", {f, f}, {attr("axis", int64_t(-1))});
  if (form == Freqs::CosOfUnsqueezed) {  // GPT-NeoX: emb[:, None].cos(), the Unsqueeze before Cos
    const std::string e = g.unsqueeze(emb, {1});
    return rotate_half(g, g.add("Cos", {e}), g.add("Sin", {e}));
  }
  return rotate_half(g, g.unsqueeze(g.add("Cos", {emb}), {1}), g.unsqueeze(g.add("Sin", {emb}), {1}));
}

}  // namespace

TEST_CASE("rotary: frequencies by an implicit-output Einsum, an unsqueezed or double inv_freq, or Cos of the unsqueezed argument fuse") {
  check_fused(computed(Freqs::EinsumImplicit), 0);
  check_fused(computed(Freqs::InvUnsqueezed), 0);
  check_fused(computed(Freqs::InvDouble), 0);
  check_fused(computed(Freqs::CosOfUnsqueezed), 0);
}

TEST_CASE("rotary: frequencies whose axes are not (batch, sequence, inv_freq) stay, naming the axes") {
  check_refused(computed(Freqs::EinsumImplicitSorted), "have axes (sequence, inv_freq, batch), not (batch, sequence, inv_freq)");
  check_refused(computed(Freqs::TransposeNoPerm), "have axes (sequence, inv_freq, batch), not (batch, sequence, inv_freq)");
}

TEST_CASE("rotary: opset 9's Slice with attribute bounds stays, the pattern naming its inputs") {
  // Slice-1 keeps its bounds in attributes; the rotate-half pattern reads them as inputs, so for
  // this pass the attribute branch of last_axis_range (rotary_common.cc:54) is never reached (only
  // mha-projections reaches it, attention_branches_test.cc).
  G g(9);
  const Model m = rotate_half(g, g.gathered(true, kHead), g.gathered(false, kHead));
  check_refused(m, "(Slice) has 1 inputs, the pattern 5");
}

TEST_CASE("rotary: x * cos on another value than the rotated one stays, explained") {
  // k * cos + rotate_half(q) * sin: a copy-paste slip, not a rotation of q.
  G g(17);
  Model m = rotate_half(g, g.gathered(true, kHead), g.gathered(false, kHead), "k");
  m.graph.inputs.push_back(testing::f32("k", {"batch", kHeads, "seq", kHead}));
  check_refused(m, "does not multiply the rotated value 'q'");
}

TEST_CASE("rotary: halves by opset 11's Split attribute, or Slices bounded by Shape(q)[3] / 2 unfolded, fuse") {
  {  // torch.chunk at opset 11: Split(q, split = [4, 4])
    G g(11);
    const std::string x1 = g.add("Split", {"q"}, {attr("axis", int64_t(-1)), attr("split", std::vector<int64_t>{kHalf, kHalf})}, 2), x2 = x1 + "_1";
    const std::string rot = g.add("Concat", {g.add("Neg", {x2}), x1}, {attr("axis", int64_t(-1))});
    check_fused(g.model(g.add("Add", {g.add("Mul", {"q", g.gathered(true, kHead)}), g.add("Mul", {rot, g.gathered(false, kHead)})})), 0);
  }
  {  // x[..., : x.shape[-1] // 2]: the bound computed from the shape, known to inference without constant folding
    G g;
    const std::string h = g.add("Gather", {g.add("Shape", {"q"}), g.c(Tensor::scalar<int64_t>(3))}, {attr("axis", int64_t(0))});
    const std::string half = g.unsqueeze(g.add("Div", {h, g.c(Tensor::scalar<int64_t>(2))}), {0});
    const std::string x1 = g.add("Slice", {"q", g.c(ints({0})), half, g.c(ints({-1}))});
    const std::string x2 = g.add("Slice", {"q", half, g.c(ints({kBig})), g.c(ints({-1}))});
    const std::string rot = g.add("Concat", {g.add("Neg", {x2}), x1}, {attr("axis", int64_t(-1))});
    check_fused(g.model(g.add("Add", {g.add("Mul", {"q", g.gathered(true, kHead)}), g.add("Mul", {rot, g.gathered(false, kHead)})})), 0);
  }
}
