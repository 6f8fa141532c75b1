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
#include "refeval/compute_vector.h"

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
  Node& last() { return nodes_.back(); }

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

// ---------------------------------------------------------------------------------------------
// "rotary branches:": the forms of each condition of rotary.cc, rotary_pairs.cc and
// rotary_common.cc no case above reaches. Graphs the evaluator cannot run (a Slice whose bounds do
// not fit the pattern's shapes) are only explained, with the pass's exact reason, and left unfused.

namespace {

// The rotary pass alone, without the evaluator's check.
Model unverified(const Model& m) {
  optimize::OptimizeOptions o;
  o.only = {"rotary-embedding"};
  return optimize::optimize(m, Registry::builtin(), o).model;
}

// Refused with `reason`, on a graph only explained (not evaluated).
void refused_only(const Model& m, const std::string& reason) {
  const std::string lines = refusals(m, {"rotary-embedding"});
  CHECK_MESSAGE(lines.find(reason) != std::string::npos, lines);
  CHECK(count_ops(unverified(m), "RotaryEmbedding") == 0);
}

// Unsqueeze(Gather(table, position_ids), axis) of any table value.
std::string gathered_from(G& g, const std::string& table_value, int64_t axis = 1) {
  return g.unsqueeze(g.add("Gather", {table_value, "position_ids"}, {attr("axis", int64_t(0))}), {axis});
}

// x * cos + Concat(-x2, x1) * sin on the given halves of q.
Model rotate_halves(G& g, const std::string& x1, const std::string& x2, const std::string& cos, const std::string& sin, int64_t axis = -1) {
  const std::string rot = g.add("Concat", {g.add("Neg", {x2}), x1}, {attr("axis", axis)});
  return g.model(g.add("Add", {g.add("Mul", {"q", cos}), g.add("Mul", {rot, sin})}));
}

// The rotate-half of q's Slice halves with gathered full-width tables.
Model plain(G& g, const std::string& cos, const std::string& sin) { return rotate_half(g, cos, sin); }

std::string inv_const(G& g, Shape shape = {kHalf}) { return g.c(Tensor::from_vector<float>(std::move(shape), inv_freq())); }
std::string p_float(G& g) { return g.add("Cast", {"position_ids"}, {attr("to", int64_t(DType::Float))}); }

// Rotate-half with cos / sin = Unsqueeze(Cos / Sin(Concat(f, f)), 1).
Model from_freqs(G& g, const std::string& f, int64_t cat_axis = -1) {
  const std::string emb = g.add("Concat", {f, f}, {attr("axis", cat_axis)});
  return rotate_half(g, g.unsqueeze(g.add("Cos", {emb}), {1}), g.unsqueeze(g.add("Sin", {emb}), {1}));
}

// Meta's llama on given pair parts a, b of q's pairs, with (B, 1, S, h/2) tables.
Model neighbours_of(G& g, const std::string& a, const std::string& b) {
  const auto [even, odd] = pair_products(g, a, b, g.gathered(true, kHalf), g.gathered(false, kHalf));
  const std::string stack = g.add("Concat", {g.unsqueeze(even, {-1}), g.unsqueeze(odd, {-1})}, {attr("axis", int64_t(-1))});
  return g.model(g.add("Reshape", {stack, g.c(ints({0, 0, 0, kHead}))}));
}
std::string pairs_of(G& g) { return g.add("Reshape", {"q", g.c(ints({0, 0, 0, kHalf, 2}))}); }
std::string element(G& g, const std::string& pairs, int64_t k) {
  return g.add("Gather", {pairs, g.c(Tensor::scalar<int64_t>(k))}, {attr("axis", int64_t(-1))});
}

// MixFormer on given halves a, b (and a `tail` of columns not rotated), with (B, 1, S, w) tables.
Model halves_of(G& g, const std::string& a, const std::string& b, const std::string& tail = "", int64_t width = kHalf, int64_t rotated = kHead) {
  const auto [even, odd] = pair_products(g, a, b, g.gathered(true, width, rotated), g.gathered(false, width, rotated));
  std::vector<std::string> parts = {even, odd};
  if (!tail.empty()) parts.push_back(tail);
  return g.model(g.add("Concat", parts, {attr("axis", int64_t(-1))}));
}

}  // namespace

TEST_CASE("rotary branches: tables from a Constant node, through a Cast, Squeezes of negative axes, Slices on axis -2 or with empty steps, scaled first, fuse") {
  {  // Constant node tables
    G g;
    const std::string ct = g.add("Constant", {}, {attr("value", table(true, kHead))}), st = g.add("Constant", {}, {attr("value", table(false, kHead))});
    check_fused(plain(g, gathered_from(g, ct), gathered_from(g, st)), 0);
  }
  {  // Cast(table) and Squeeze([-4, -3]) of a (1, 1, 32, 8) table
    G g;
    Tensor s4 = table(false, kHead);
    s4 = Tensor::from_vector<float>({1, 1, kRows, kHead}, s4.to_vector<float>());
    const std::string ct = g.add("Cast", {g.c(table(true, kHead))}, {attr("to", int64_t(DType::Float))});
    const std::string st = g.add("Squeeze", {g.c(s4), g.c(ints({-4, -3}))});
    check_fused(plain(g, gathered_from(g, ct), gathered_from(g, st)), 0);
  }
  {  // Slice(table, [0], [32], [-2]) and Slice(table, [0], [32], [0], "")
    G g;
    const std::string ct = g.add("Slice", {g.c(table(true, kHead)), g.c(ints({0})), g.c(ints({kRows})), g.c(ints({-2}))});
    const std::string st = g.add("Slice", {g.c(table(false, kHead)), g.c(ints({0})), g.c(ints({kRows})), g.c(ints({0})), ""});
    check_fused(plain(g, gathered_from(g, ct), gathered_from(g, st)), 0);
  }
  {  // cos * 0.5 written 0.5 * Identity(Unsqueeze(cos, -3)) (attention_scaling first)
    G g;
    const std::string cos = g.add("Mul", {g.c(Tensor::scalar<float>(0.5f)), g.add("Identity", {gathered_from(g, g.c(table(true, kHead)), -3)})});
    const std::string sin = g.add("Mul", {gathered_from(g, g.c(table(false, kHead))), g.c(Tensor::scalar<float>(0.5f))});
    check_fused(plain(g, cos, sin), 0);
  }
}

TEST_CASE("rotary branches: a table sliced without axes is its rows from 0 and fuses") {
  G g;
  const std::string ct = g.add("Slice", {g.c(testing::rope_table(true, 2 * kRows, kHead, kHead)), g.c(ints({0})), g.c(ints({kRows}))});
  const std::string st = g.add("Slice", {g.c(testing::rope_table(false, 2 * kRows, kHead, kHead)), g.c(ints({0})), g.c(ints({kRows}))});
  check_fused(plain(g, gathered_from(g, ct), gathered_from(g, st)), 0);
}

TEST_CASE("rotary branches: tables sliced with step 2 or on columns, squeezed without axes, a sin table of unequal halves stay, explained") {
  {  // rows 0, 2, 4, ... of a (64, 8) table
    G g;
    const std::string ct = g.add("Slice", {g.c(testing::rope_table(true, 2 * kRows, kHead, kHead)), g.c(ints({0})), g.c(ints({2 * kRows})), g.c(ints({0})), g.c(ints({2}))});
    check_refused(plain(g, gathered_from(g, ct), gathered_from(g, g.c(table(false, kHead)))), "does not slice the cos/sin table's rows from 0");
  }
  {  // columns [0, 8) of a (32, 16) table
    G g;
    const std::string ct = g.add("Slice", {g.c(testing::rope_table(true, kRows, 2 * kHead, kHead)), g.c(ints({0})), g.c(ints({kHead})), g.c(ints({1}))});
    check_refused(plain(g, gathered_from(g, ct), gathered_from(g, g.c(table(false, kHead)))), "does not slice the cos/sin table's rows from 0");
  }
  {  // a sin table whose halves differ
    G g;
    std::vector<float> v = table(false, kHead).to_vector<float>();
    v[kHead - 1] += 0.25f;
    const std::string st = g.c(Tensor::from_vector<float>({kRows, kHead}, v));
    check_refused(plain(g, gathered_from(g, g.c(table(true, kHead))), gathered_from(g, st)), "the sin table 'c");
  }
}

TEST_CASE("rotary branches: cos operands that are inputs, unsqueezed inputs, unsqueezed twice or from frequencies of another Concat stay, explained") {
  {  // cos fed (B, 1, S, 8)
    G g;
    Model m = plain(g, "cos_in", gathered_from(g, g.c(table(false, kHead))));
    m.graph.inputs.push_back(testing::f32("cos_in", {"batch", 1, "seq", kHead}));
    check_refused(m, "the cos operand 'cos_in' is not Unsqueeze(c, 1) or Unsqueeze(c, 2) of a (B, S, h) value");
  }
  {  // Unsqueeze(cos (B, S, 8) fed, 1)
    G g;
    Model m = plain(g, g.unsqueeze("cos3", {1}), gathered_from(g, g.c(table(false, kHead))));
    m.graph.inputs.push_back(testing::f32("cos3", {"batch", "seq", kHead}));
    check_refused(m, "the cos operand 'cos3' is neither gathered from a constant table by position nor Cos / Sin of position frequencies");
  }
  {  // Unsqueeze(Unsqueeze(table[position_ids[0]], 0), 1): (1, 1, S, 8)
    G g;
    const std::string row = g.add("Gather", {"position_ids", g.c(Tensor::scalar<int64_t>(0))}, {attr("axis", int64_t(0))});
    const std::string cos = g.unsqueeze(g.unsqueeze(g.add("Gather", {g.c(table(true, kHead)), row}, {attr("axis", int64_t(0))}), {0}), {1});
    check_refused(plain(g, cos, gathered_from(g, g.c(table(false, kHead)))), "is neither gathered from a constant table by position nor Cos / Sin");
  }
  {  // cos and sin of two Concat(f, f) nodes of one f
    G g;
    const std::string f = g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv_const(g)});
    const std::string e1 = g.add("Concat", {f, f}, {attr("axis", int64_t(-1))}), e2 = g.add("Concat", {f, f}, {attr("axis", int64_t(-1))});
    check_refused(plain(g, g.unsqueeze(g.add("Cos", {e1}), {1}), g.unsqueeze(g.add("Sin", {e2}), {1})), "cos and sin are not computed from the same frequencies");
  }
  {  // Cos(Concat(f, g)) of two different frequencies
    G g;
    const std::string f = g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv_const(g)});
    const std::string f2 = g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv_const(g)});
    const std::string e = g.add("Concat", {f, f2}, {attr("axis", int64_t(-1))});
    check_refused(plain(g, g.unsqueeze(g.add("Cos", {e}), {1}), g.unsqueeze(g.add("Sin", {e}), {1})), "is not Concat(f, f) on the last axis");
  }
}

TEST_CASE("rotary branches: frequencies through Identities, a double cast, inv_freq first or in bfloat16, an ellipsis Einsum, Concat on axis 2 fuse") {
  {  // positions Identity -> Cast(double) -> Cast(float); inv_freq Identity; f Identity; Concat axis 2
    G g;
    const std::string p = g.add("Cast", {g.add("Cast", {g.add("Identity", {"position_ids"})}, {attr("to", int64_t(DType::Double))})}, {attr("to", int64_t(DType::Float))});
    const std::string f = g.add("Identity", {g.add("Mul", {g.unsqueeze(p, {-1}), g.add("Identity", {inv_const(g)})})});
    check_fused(from_freqs(g, f, 2), 0);
  }
  {  // inv_freq (h/2) first: Mul(inv, p[..., None])
    G g;
    check_fused(from_freqs(g, g.add("Mul", {inv_const(g), g.unsqueeze(p_float(g), {-1})})), 0);
  }
  {  // inv_freq stored as bfloat16
    G g;
    const std::vector<float> single = inv_freq();
    const std::string inv = g.add("Cast", {g.c(from_doubles(DType::BFloat16, {kHalf}, std::vector<double>(single.begin(), single.end())))},
                                  {attr("to", int64_t(DType::Float))});
    check_fused(from_freqs(g, g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv})), 0);
  }
  for (const char* eq : {"...,d", "...,d->...d"}) {  // einsum over an ellipsis, implicit or explicit
    CAPTURE(eq);
    G g;
    check_fused(from_freqs(g, g.add("Einsum", {p_float(g), inv_const(g)}, {attr("equation", std::string(eq))})), 0);
  }
  {  // Cos(Unsqueeze(emb, -3))
    G g;
    const std::string f = g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv_const(g)});
    const std::string e = g.unsqueeze(g.add("Concat", {f, f}, {attr("axis", int64_t(-1))}), {-3});
    check_fused(plain(g, g.add("Cos", {e}), g.add("Sin", {e})), 0);
  }
}

TEST_CASE("rotary branches: frequencies cast from double, positions or inv_freq through an int cast, an int64 inv_freq stay, explained") {
  const std::string mul_refusal = "does not multiply the position ids cast to float by a constant inv_freq";
  {  // Cast(float) of a double product
    G g;
    const std::vector<float> single = inv_freq();
    const std::string pd = g.add("Cast", {"position_ids"}, {attr("to", int64_t(DType::Double))});
    const std::string prod = g.add("Mul", {g.unsqueeze(pd, {-1}), g.c(Tensor::from_vector<double>({kHalf}, std::vector<double>(single.begin(), single.end())))});
    check_refused(from_freqs(g, g.add("Cast", {prod}, {attr("to", int64_t(DType::Float))})), "casts a DOUBLE value");
  }
  {  // positions cast to int32 first
    G g;
    const std::string p = g.add("Cast", {g.add("Cast", {"position_ids"}, {attr("to", int64_t(DType::Int32))})}, {attr("to", int64_t(DType::Float))});
    check_refused(from_freqs(g, g.add("Mul", {g.unsqueeze(p, {-1}), inv_const(g)})), mul_refusal);
  }
  {  // inv_freq through an int32 cast, and an int64 inv_freq cast to float
    for (const bool int64_constant : {false, true}) {
      G g;
      const std::string inv = int64_constant ? g.add("Cast", {g.c(ints({1, 2, 3, 4}))}, {attr("to", int64_t(DType::Float))})
                                             : g.add("Cast", {g.add("Cast", {inv_const(g)}, {attr("to", int64_t(DType::Int32))})}, {attr("to", int64_t(DType::Float))});
      check_refused(from_freqs(g, g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv})), mul_refusal);
    }
  }
}

TEST_CASE("rotary branches: Einsum and MatMul look-alikes are not outer products, explained") {
  const std::string not_outer = "is not an outer product of the position ids and inv_freq";
  for (const char* eq : {"b1,d->b1d", "bb,d->bbd", "bs,d->bsdd", "bs,d->bsdx", "bs,s->bsd"}) {
    const std::string equation = eq;
    CAPTURE(equation);
    G g;
    refused_only(from_freqs(g, g.add("Einsum", {p_float(g), inv_const(g)}, {attr("equation", equation)})), not_outer);
  }
  {  // three operands
    G g;
    refused_only(from_freqs(g, g.add("Einsum", {p_float(g), inv_const(g), inv_const(g)}, {attr("equation", std::string("bs,d,e->bsd"))})), "is Einsum");
  }
}

TEST_CASE("rotary branches: positions or inv_freq unsqueezed by fed or repeated axes, or expanded to a shape of unknown rank, stay, explained") {
  const std::string mul_refusal = "does not multiply the position ids cast to float by a constant inv_freq";
  {
    G g;
    Model m = from_freqs(g, g.add("Mul", {g.add("Unsqueeze", {p_float(g), "axes_in"}), inv_const(g)}));
    m.graph.inputs.push_back(tensor_info("axes_in", DType::Int64, {1}));
    refused_only(m, mul_refusal);
  }
  {
    G g;
    Model m = from_freqs(g, g.add("Mul", {g.unsqueeze(p_float(g), {-1}), g.add("Unsqueeze", {inv_const(g), "axes_in"})}));
    m.graph.inputs.push_back(tensor_info("axes_in", DType::Int64, {1}));
    refused_only(m, mul_refusal);
  }
  {
    G g;
    refused_only(from_freqs(g, g.add("Mul", {g.unsqueeze(p_float(g), {-1}), g.unsqueeze(inv_const(g), {0, 0})})), mul_refusal);
  }
  {
    G g;
    Model m = from_freqs(g, g.add("Mul", {g.unsqueeze(p_float(g), {-1}), g.add("Expand", {inv_const(g), "shape_in"})}));
    m.graph.inputs.push_back(tensor_info("shape_in", DType::Int64, {"rank"}));  // Expand to a shape of unknown rank
    refused_only(m, mul_refusal);
  }
  {  // (1, B, S, h/2) frequencies: a unit axis named "1"
    G g;
    refused_only(from_freqs(g, g.add("Mul", {g.unsqueeze(p_float(g), {0, 3}), inv_const(g)})), "have axes (1, batch, sequence, inv_freq)");
  }
}

TEST_CASE("rotary branches: cos/sin Unsqueezed on axis 0, by unknown axes, Cos not unsqueezed, tables 1-D or squeezed on a row axis stay, explained") {
  const std::string not_unsqueezed = "is not Unsqueeze(c, 1) or Unsqueeze(c, 2) of a (B, S, h) value";
  {
    G g;
    refused_only(plain(g, gathered_from(g, g.c(table(true, kHead)), 0), gathered_from(g, g.c(table(false, kHead)), 0)), not_unsqueezed);
  }
  {
    G g;
    Model m = plain(g, g.add("Unsqueeze", {g.add("Gather", {g.c(table(true, kHead)), "position_ids"}), "axes_in"}), gathered_from(g, g.c(table(false, kHead))));
    m.graph.inputs.push_back(tensor_info("axes_in", DType::Int64, {1}));
    refused_only(m, not_unsqueezed);
  }
  {  // Cos(emb) without Unsqueeze; Cos(Unsqueeze(emb, axes_in)); Cos(Unsqueeze(emb, [1, 2])); Cos(f_in)
    for (int form = 0; form < 4; ++form) {
      CAPTURE(form);
      G g;
      const std::string f = g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv_const(g)});
      std::string e = g.add("Concat", {f, f}, {attr("axis", int64_t(-1))});
      if (form == 1) e = g.add("Unsqueeze", {e, "axes_in"});
      if (form == 2) e = g.unsqueeze(e, {1, 2});
      if (form == 3) e = "f_in";
      Model m = plain(g, g.add("Cos", {e}), g.add("Sin", {e}));
      m.graph.inputs.push_back(tensor_info("axes_in", DType::Int64, {1}));
      m.graph.inputs.push_back(testing::f32("f_in", {"batch", 1, "seq", kHead}));
      refused_only(m, not_unsqueezed);
    }
  }
  {  // a 1-D table
    G g;
    const std::string t = g.c(Tensor::from_vector<float>({kRows}, std::vector<float>(kRows, 1.0f)));
    refused_only(plain(g, gathered_from(g, t), gathered_from(g, g.c(table(false, kHead)))), "is not a constant (.., max_pos, h) with leading dims 1");
  }
  {  // Squeeze([3, 0]) of a (1, 1, 1, 32, 8) table: 3 is a row axis
    G g;
    const std::string t = g.add("Squeeze", {g.c(Tensor::from_vector<float>({1, 1, 1, kRows, kHead}, table(true, kHead).to_vector<float>())), g.c(ints({3, 0}))});
    refused_only(plain(g, gathered_from(g, t), gathered_from(g, g.c(table(false, kHead)))), "does not squeeze leading unit dims of the cos/sin table");
  }
  for (int fed = 0; fed < 3; ++fed) {  // Slice(table, ...) with fed starts, axes or steps
    CAPTURE(fed);
    G g;
    std::vector<std::string> in = {g.c(table(true, kHead)), g.c(ints({0})), g.c(ints({kRows})), g.c(ints({0})), g.c(ints({1}))};
    in[size_t(fed == 0 ? 1 : fed == 1 ? 3 : 4)] = "v_in";
    Model m = plain(g, gathered_from(g, g.add("Slice", in)), gathered_from(g, g.c(table(false, kHead))));
    m.graph.inputs.push_back(tensor_info("v_in", DType::Int64, {1}));
    refused_only(m, "does not slice the cos/sin table's rows from 0");
  }
}

TEST_CASE("rotary branches: position ids of another sequence, of unknown shape or of an unnamed batch stay, naming their dims") {
  const auto with_positions = [](ValueInfo positions) {
    G g;
    const std::string cos = g.unsqueeze(g.add("Gather", {g.c(table(true, kHead)), "pos2"}, {attr("axis", int64_t(0))}), {1});
    const std::string sin = g.unsqueeze(g.add("Gather", {g.c(table(false, kHead)), "pos2"}, {attr("axis", int64_t(0))}), {1});
    Model m = plain(g, cos, sin);
    m.graph.inputs.push_back(std::move(positions));
    return m;
  };
  check_refused(with_positions(tensor_info("pos2", DType::Int64, {"batch", "other"})),
                "the position ids 'pos2' are INT64 (batch, other), not int64 (B, S) = (batch, seq) of the rotated value (batch, 2, seq, 8)");
  refused_only(with_positions(tensor_info_unknown_rank("pos2", DType::Int64)), "the position ids 'pos2' are INT64 of unknown shape");
  ValueInfo unnamed = tensor_info("pos2", DType::Int64, {"batch", "seq"});
  unnamed.type.dims[0] = Dim{};
  check_refused(with_positions(unnamed), "the position ids 'pos2' are INT64 (?, seq)");
}

TEST_CASE("rotary branches: a double q, a symbolic or odd head size stay, explained") {
  {
    G g;
    const auto dbl = [](Tensor t) {
      const std::vector<float> v = t.to_vector<float>();
      return Tensor::from_vector<double>(t.shape(), std::vector<double>(v.begin(), v.end()));
    };
    Model m = plain(g, gathered_from(g, g.c(dbl(table(true, kHead)))), gathered_from(g, g.c(dbl(table(false, kHead)))));
    m.graph.inputs[0] = tensor_info("q", DType::Double, {"batch", kHeads, "seq", kHead});
    m.graph.outputs[0].type.dtype = DType::Double;
    refused_only(m, "the rotated value is DOUBLE; RotaryEmbedding takes float or float16");
  }
  for (const bool odd : {false, true}) {
    G g;
    Model m = plain(g, gathered_from(g, g.c(table(true, kHead))), gathered_from(g, g.c(table(false, kHead))));
    m.graph.inputs[0] = odd ? testing::f32("q", {"batch", kHeads, "seq", 7}) : testing::f32("q", {"batch", kHeads, "seq", "head"});
    refused_only(m, "the rotated value 'q' is not known to be 4-D with an even head size");
  }
}

TEST_CASE("rotary branches: halves by Split on axis 3 or with an empty split, Concat on axis 3, Slices with empty steps fuse") {
  {
    G g;
    const std::string x1 = g.add("Split", {"q", g.c(ints({kHalf, kHalf}))}, {attr("axis", int64_t(3))}, 2);
    check_fused(rotate_halves(g, x1, x1 + "_1", gathered_from(g, g.c(table(true, kHead))), gathered_from(g, g.c(table(false, kHead))), 3), 0);
  }
  {
    G g;
    const std::string x1 = g.add("Split", {"q", ""}, {attr("axis", int64_t(-1))}, 2);
    check_fused(rotate_halves(g, x1, x1 + "_1", gathered_from(g, g.c(table(true, kHead))), gathered_from(g, g.c(table(false, kHead)))), 0);
  }
  {
    G g;
    const std::string x1 = g.add("Slice", {"q", g.c(ints({0})), g.c(ints({kHalf})), g.c(ints({-1})), ""});
    const std::string x2 = g.add("Slice", {"q", g.c(ints({kHalf})), g.c(ints({kHead})), g.c(ints({3})), ""});
    check_fused(rotate_halves(g, x1, x2, gathered_from(g, g.c(table(true, kHead))), gathered_from(g, g.c(table(false, kHead)))), 0);
  }
}

TEST_CASE("rotary branches: rotate-half halves by a Split of another axis or into three, Slices of unknown or other bounds stay, explained") {
  const auto tables = [](G& g) { return std::pair{gathered_from(g, g.c(table(true, kHead))), gathered_from(g, g.c(table(false, kHead)))}; };
  {
    G g;
    const std::string x1 = g.add("Split", {"q", g.c(ints({1, 1}))}, {attr("axis", int64_t(1))}, 2);
    const auto [c, s] = tables(g);
    refused_only(rotate_halves(g, x1, x1 + "_1", c, s), "does not split the last axis into two halves of 4");
  }
  {
    G g;
    const std::string x1 = g.add("Split", {"q", g.c(ints({4, 2, 2}))}, {attr("axis", int64_t(-1))}, 3);
    const auto [c, s] = tables(g);
    refused_only(rotate_halves(g, x1, x1 + "_1", c, s), "does not split the last axis into two halves of 4");
  }
  const std::string unknown = "is not a Slice of the last axis with known bounds";
  {  // the second half ends at Shape(q)[2], the symbolic sequence
    G g;
    const std::string s_end = g.add("Shape", {"q"}, {attr("start", int64_t(2)), attr("end", int64_t(3))});
    const std::string x2 = g.add("Slice", {"q", g.c(ints({kHalf})), s_end, g.c(ints({-1}))}, {}, 1, "/second");
    const auto [c, s] = tables(g);
    refused_only(rotate_halves(g, g.slice("q", 0, kHalf), x2, c, s), "'/second' " + unknown);
  }
  {  // x[..., 5:8] as the second half
    G g;
    const auto [c, s] = tables(g);
    refused_only(rotate_halves(g, g.slice("q", 0, kHalf), g.slice("q", 5, kHead), c, s), "the Concat reads -x[5:8] and x[0:4]");
  }
  // The first half by Slices without axes, with empty axes, steps fed, two starts, two ends or two axes.
  for (int form = 0; form < 6; ++form) {
    CAPTURE(form);
    G g;
    std::vector<std::string> in = {"q", g.c(ints({0})), g.c(ints({kHalf}))};
    if (form == 1) in.push_back("");
    if (form == 2) in.push_back(g.c(ints({-1}))), in.push_back("steps_in");
    if (form == 3) in = {"q", g.c(ints({0, 0})), g.c(ints({2, kHalf})), g.c(ints({1, 3}))};
    if (form == 4) in = {"q", g.c(ints({0})), g.c(ints({kHalf, kHalf})), g.c(ints({-1}))};
    if (form == 5) in = {"q", g.c(ints({0})), g.c(ints({kHalf})), g.c(ints({2, 3}))};
    const std::string x1 = g.add("Slice", in, {}, 1, "/first");
    const auto [c, s] = tables(g);
    Model m = rotate_halves(g, x1, g.slice("q", kHalf, kBig), c, s);
    m.graph.inputs.push_back(tensor_info("steps_in", DType::Int64, {1}));
    refused_only(m, "'/first' " + unknown);
  }
}

namespace {

// Concat(RotaryEmbedding(rot, position_ids, caches of `rd` columns), pass): a rotation the pass
// fused on q's first columns, to become one RotaryEmbedding with rotary_embedding_dim.
Model partial_of(G& g, const std::string& rot, const std::string& pass, int64_t rd, int64_t axis = -1) {
  const std::string re = g.add("RotaryEmbedding", {rot, "position_ids", g.c(testing::rope_table(true, kRows, rd / 2, rd)), g.c(testing::rope_table(false, kRows, rd / 2, rd))},
                               {attr("interleaved", int64_t(0))});
  g.last().domain = "com.microsoft";
  Model m = g.model(g.add("Concat", {re, pass}, {attr("axis", axis)}));
  m.opsets["com.microsoft"] = 1;
  return m;
}

// Left a Concat of a RotaryEmbedding, the refusal in the pass's line.
void partial_refused(const Model& m, const std::string& reason, bool evaluate = true) {
  const std::string lines = refusals(m, {"rotary-embedding"});
  CHECK_MESSAGE(lines.find("the partial rotation stays Slice + RotaryEmbedding + Concat: ") != std::string::npos, lines);
  CHECK_MESSAGE(lines.find(reason) != std::string::npos, lines);
  const Model out = evaluate ? optimized(m, {"rotary-embedding"}) : unverified(m);
  CHECK(count_ops(out, "Concat") == 1);
  const Node& r = only(out, "RotaryEmbedding");
  CHECK(r.find_attribute("rotary_embedding_dim") == nullptr);
}

}  // namespace

TEST_CASE("rotary branches: a partial rotation joined on axis 3, or cut by a Split on axis 3, becomes one RotaryEmbedding") {
  for (const bool split : {false, true}) {
    CAPTURE(split);
    G g;
    std::string rot, pass;
    if (split) {
      rot = g.add("Split", {"q", g.c(ints({kHalf, kHalf}))}, {attr("axis", int64_t(3))}, 2), pass = rot + "_1";
    } else {
      rot = g.slice("q", 0, kHalf), pass = g.slice("q", kHalf, kBig);
    }
    const Model out = optimized(partial_of(g, rot, pass, kHalf, split ? -1 : 3), {"rotary-embedding"});
    REQUIRE(count_ops(out, "RotaryEmbedding") == 1);
    CHECK(count_ops(out, "Concat") == 0);
    const Node& r = only(out, "RotaryEmbedding");
    CHECK(r.find_attribute("rotary_embedding_dim")->i == kHalf);
    CHECK(r.find_attribute("num_heads")->i == kHeads);
  }
}

TEST_CASE("rotary branches: partial rotations cut by a Split of heads or in three, by Slices of other columns stay, explained") {
  {  // Split of the heads: RotaryEmbedding of (B, 1, S, 8) and the other head joined on the last axis
    G g;
    const std::string rot = g.add("Split", {"q", g.c(ints({1, 1}))}, {attr("axis", int64_t(1))}, 2);
    partial_refused(partial_of(g, rot, rot + "_1", kHead), "does not split the last axis of 'q' into two parts of known sizes");
  }
  {  // Split(q, [4, 2, 2]): the rest is two parts
    G g;
    const std::string rot = g.add("Split", {"q", g.c(ints({4, 2, 2}))}, {attr("axis", int64_t(-1))}, 3);
    partial_refused(partial_of(g, rot, rot + "_1", kHalf), "does not split the last axis of 'q' into two parts of known sizes");
  }
  const std::string parts = "the parts of 'q' are not [0, rd) and [rd, 8) of the last axis";
  {  // q[..., 2:6] rotated, q[..., 6:] joined
    G g;
    partial_refused(partial_of(g, g.slice("q", 2, 6), g.slice("q", 6, kBig), kHalf), parts);
  }
  {  // q[..., :4] rotated, q[..., 4:6] joined
    G g;
    partial_refused(partial_of(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, 6), kHalf), parts);
  }
  {  // the rotated part ends at Shape(q)[2] (unknown)
    G g;
    const std::string end = g.add("Shape", {"q"}, {attr("start", int64_t(2)), attr("end", int64_t(3))});
    const std::string rot = g.add("Slice", {"q", g.c(ints({0})), end, g.c(ints({-1}))});
    partial_refused(partial_of(g, rot, g.slice("q", kHalf, kBig), kHalf), parts, false);
  }
  {  // the rest's start unknown
    G g;
    const std::string start = g.add("Shape", {"q"}, {attr("start", int64_t(2)), attr("end", int64_t(3))});
    const std::string pass = g.add("Slice", {"q", start, g.c(ints({kBig})), g.c(ints({-1}))});
    partial_refused(partial_of(g, g.slice("q", 0, kHalf), pass, kHalf), parts, false);
  }
  for (const int64_t rd : {int64_t(0), int64_t(3)}) {  // 0 or 3 columns rotated
    CAPTURE(rd);
    G g;
    partial_refused(partial_of(g, g.slice("q", 0, rd), g.slice("q", rd, kBig), rd == 0 ? 2 : 4), "the rotated part has " + std::to_string(rd) + " of 8 columns", false);
  }
  {  // q of unknown rank, and 3-D
    for (const bool rank3 : {false, true}) {
      G g;
      Model m = partial_of(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, kBig), kHalf);
      m.graph.inputs[0] = rank3 ? testing::f32("q", {"batch", "seq", 16}) : tensor_info_unknown_rank("q", DType::Float);
      partial_refused(m, "'q' is not 4-D with a known head size", false);
    }
  }
}

TEST_CASE("rotary branches: neighbours cut by a Slice with empty steps fuse; other cuts of the pairs stay, explained") {
  {
    G g;
    const std::string pairs = pairs_of(g);
    const std::string a = g.add("Squeeze", {g.add("Slice", {pairs, g.c(ints({0})), g.c(ints({1})), g.c(ints({-1})), ""}), g.c(ints({-1}))});
    check_fused(neighbours_of(g, a, element(g, pairs, 1)), 1);
  }
  const std::string not_pairs = "the products do not read the two elements of one pairs value";
  {  // a fed part (squeezed), a part behind an Identity, b fed
    for (int form = 0; form < 3; ++form) {
      CAPTURE(form);
      G g;
      const std::string pairs = pairs_of(g);
      std::string a = element(g, pairs, 0), b = element(g, pairs, 1);
      if (form == 0) a = g.add("Squeeze", {"a_in", g.c(ints({-1}))});
      if (form == 1) a = g.add("Squeeze", {g.add("Identity", {g.slice(pairs, 0, 1)}), g.c(ints({-1}))});
      if (form == 2) b = "b_in";
      Model m = neighbours_of(g, a, b);
      m.graph.inputs.push_back(testing::f32("a_in", {"batch", kHeads, "seq", kHalf, 1}));
      m.graph.inputs.push_back(testing::f32("b_in", {"batch", kHeads, "seq", kHalf}));
      check_refused(m, not_pairs);
    }
  }
  {  // Gathers of a 1-D index, of two indices, of a fed index, on the pairs' axis 3
    for (int form = 0; form < 4; ++form) {
      CAPTURE(form);
      G g;
      const std::string pairs = pairs_of(g);
      const std::string k = form == 0 ? g.c(ints({0})) : form == 1 ? g.c(ints({0, 0})) : form == 2 ? std::string("k_in") : g.c(Tensor::scalar<int64_t>(0));
      const std::string a = g.add("Gather", {pairs, k}, {attr("axis", int64_t(form == 3 ? 3 : -1))});
      Model m = neighbours_of(g, a, element(g, pairs, 1));
      m.graph.inputs.push_back(tensor_info("k_in", DType::Int64, {}));
      refused_only(m, not_pairs);
    }
  }
  {  // Squeezes by fed axes, of two axes, of axis 3; of Slices without axes, from fed starts, on axis 3, of 2 elements, from 2
    for (int form = 0; form < 12; ++form) {
      CAPTURE(form);
      G g;
      const std::string pairs = pairs_of(g);
      std::string a;
      if (form < 3) {
        const std::string part = g.add("Split", {pairs, g.c(ints({1, 1}))}, {attr("axis", int64_t(-1))}, 2);
        const std::string axes = form == 0 ? std::string("axes_in") : form == 1 ? g.c(ints({3, 4})) : g.c(ints({3}));
        a = g.add("Squeeze", {part, axes});
      } else {
        std::vector<std::string> in = {pairs, g.c(ints({0})), g.c(ints({1}))};
        if (form == 4) in = {pairs, "starts_in", g.c(ints({1})), g.c(ints({-1}))};
        if (form == 5) in.push_back(g.c(ints({3})));
        if (form == 6) in = {pairs, g.c(ints({0})), g.c(ints({2})), g.c(ints({-1}))};
        if (form == 7) in = {pairs, g.c(ints({2})), g.c(ints({3})), g.c(ints({-1}))};
        if (form == 8) in = {pairs, g.c(ints({0})), "starts_in", g.c(ints({-1}))};  // ends fed
        if (form == 9) in = {pairs, g.c(ints({0})), g.c(ints({1})), "starts_in"};  // axes fed
        if (form == 10) in = {pairs, g.c(ints({0})), g.c(ints({1})), g.c(ints({-1})), "starts_in"};  // steps fed
        if (form == 11) in = {pairs, g.c(ints({0, 0})), g.c(ints({1, 1})), g.c(ints({3, 4}))};  // two axes
        a = g.add("Squeeze", {g.add("Slice", in), g.c(ints({-1}))});
      }
      Model m = neighbours_of(g, a, element(g, pairs, 1));
      m.graph.inputs.push_back(tensor_info("axes_in", DType::Int64, {1}));
      m.graph.inputs.push_back(tensor_info("starts_in", DType::Int64, {1}));
      refused_only(m, not_pairs);
    }
  }
  {  // a Split on the pairs' axis 3
    G g;
    const std::string pairs = pairs_of(g);
    const std::string part = g.add("Split", {pairs, g.c(ints({2, 2}))}, {attr("axis", int64_t(3))}, 2);
    refused_only(neighbours_of(g, g.add("Squeeze", {part, g.c(ints({-1}))}), element(g, pairs, 1)), not_pairs);
  }
}

TEST_CASE("rotary branches: a (1, 1, max_pos, h) table squeezed without axes (every unit dim: the leading ones) fuses") {
  G g;
  const std::string ct = g.add("Squeeze", {g.c(Tensor::from_vector<float>({1, 1, kRows, kHead}, table(true, kHead).to_vector<float>()))});
  check_fused(plain(g, gathered_from(g, ct), gathered_from(g, g.c(table(false, kHead)))), 0);
}

TEST_CASE("rotary branches: neighbours cut by Slices counted from the end or open-ended, pairs[..., -2:-1] and pairs[..., 1:], fuse") {
  G g;
  const std::string pairs = pairs_of(g);
  const int64_t open = std::numeric_limits<int64_t>::max();
  const std::string a = g.add("Squeeze", {g.add("Slice", {pairs, g.c(ints({-2})), g.c(ints({-1})), g.c(ints({-1}))}), g.c(ints({-1}))});
  const std::string b = g.add("Squeeze", {g.add("Slice", {pairs, g.c(ints({1})), g.c(ints({open})), g.c(ints({-1}))}), g.c(ints({-1}))});
  check_fused(neighbours_of(g, a, b), 1);
}

TEST_CASE("rotary branches: neighbours read twice, of pairs not from a Reshape, stacked by fed axes stay, explained") {
  {  // (pairs[..., 0], pairs[..., 0])
    G g;
    const std::string pairs = pairs_of(g);
    check_refused(neighbours_of(g, element(g, pairs, 0), element(g, pairs, 0)), "read one element of each pair");
  }
  {  // pairs = stack(x[..., :4], x[..., 4:]): not a Reshape of q
    G g;
    const std::string pairs = g.add("Concat", {g.unsqueeze(g.slice("q", 0, kHalf), {-1}), g.unsqueeze(g.slice("q", kHalf, kBig), {-1})}, {attr("axis", int64_t(-1))});
    check_refused(neighbours_of(g, element(g, pairs, 0), element(g, pairs, 1)), "is not a Reshape of a 4-D value with a known head size into pairs");
  }
  for (const bool fed : {true, false}) {  // Unsqueeze(even, axes_in) or (even, [4, 5])
    CAPTURE(fed);
    G g;
    const std::string pairs = pairs_of(g);
    const auto [even, odd] = pair_products(g, element(g, pairs, 0), element(g, pairs, 1), g.gathered(true, kHalf), g.gathered(false, kHalf));
    const std::string ue = fed ? g.add("Unsqueeze", {even, "axes_in"}) : g.unsqueeze(even, {4, 5});
    const std::string stack = g.add("Concat", {ue, g.unsqueeze(odd, {-1})}, {attr("axis", int64_t(-1))}, 1, "/stack");
    Model m = g.model(g.add("Reshape", {stack, g.c(ints({0, 0, 0, kHead}))}));
    m.graph.inputs.push_back(tensor_info("axes_in", DType::Int64, {1}));
    refused_only(m, "does not add the last axis the pairs are stacked on");
  }
}

TEST_CASE("rotary branches: halves by Slices with empty steps fuse; halves fed, of unknown width or cut otherwise stay, explained") {
  {
    G g;
    const std::string a = g.add("Slice", {"q", g.c(ints({0})), g.c(ints({kHalf})), g.c(ints({-1})), ""});
    check_fused(halves_of(g, a, g.slice("q", kHalf, kBig)), 0);
  }
  const std::string two_parts = "the products do not read two parts of one value";
  for (int form = 0; form < 3; ++form) {  // a fed with cos fed, a Constant cos, a Constant sin
    CAPTURE(form);
    G g;
    const std::string b = g.slice("q", kHalf, kBig);
    const std::string k = g.add("Constant", {}, {attr("value", Tensor::from_vector<float>({1, 1, 1, kHalf}, {1.0f, 0.5f, 0.25f, 0.0f}))});
    const std::string cos = form == 0 ? std::string("cos_in") : form == 1 ? k : g.gathered(true, kHalf);
    const std::string sin = form == 2 ? k : g.gathered(false, kHalf);
    const auto [even, odd] = pair_products(g, "a_in", b, cos, sin);
    Model m = g.model(g.add("Concat", {even, odd}, {attr("axis", int64_t(-1))}));
    m.graph.inputs.push_back(testing::f32("a_in", {"batch", kHeads, "seq", kHalf}));
    m.graph.inputs.push_back(testing::f32("cos_in", {"batch", 1, "seq", kHalf}));
    check_refused(m, two_parts);
  }
  {  // a symbolic head size
    G g;
    Model m = halves_of(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, kBig));
    m.graph.inputs[0] = testing::f32("q", {"batch", kHeads, "seq", "head"});
    refused_only(m, "'q' is not 4-D with a known even head size");
  }
  const std::string unknown_b = "the products read [0, 4) and an unknown part of the last axis of 'q'";
  const std::string unknown_a = "the products read an unknown part and [4, 8) of the last axis of 'q'";
  {  // the second half ends at a fed bound
    G g;
    Model m = halves_of(g, g.slice("q", 0, kHalf), g.add("Slice", {"q", g.c(ints({kHalf})), "end_in", g.c(ints({-1}))}));
    m.graph.inputs.push_back(tensor_info("end_in", DType::Int64, {1}));
    refused_only(m, unknown_b);
  }
  {  // Split(q, [4, 2, 2]) and Split of the heads
    G g;
    const std::string s = g.add("Split", {"q", g.c(ints({4, 2, 2}))}, {attr("axis", int64_t(-1))}, 3);
    refused_only(halves_of(g, s, s + "_1"), "the products read an unknown part and an unknown part");
    G h;
    const std::string t = h.add("Split", {"q", h.c(ints({1, 1}))}, {attr("axis", int64_t(1))}, 2);
    refused_only(halves_of(h, t, t + "_1"), "the products read an unknown part and an unknown part");
  }
  // The first half by Slices without axes, from fed starts, of fed axes, fed steps, two starts, two axes.
  for (int form = 0; form < 6; ++form) {
    CAPTURE(form);
    G g;
    std::vector<std::string> in = {"q", g.c(ints({0})), g.c(ints({kHalf}))};
    if (form == 1) in = {"q", "v_in", g.c(ints({kHalf})), g.c(ints({-1}))};
    if (form == 2) in.push_back("v_in");
    if (form == 3) in.push_back(g.c(ints({-1}))), in.push_back("v_in");
    if (form == 4) in = {"q", g.c(ints({0, 0})), g.c(ints({2, kHalf})), g.c(ints({1, 3}))};
    if (form == 5) in = {"q", g.c(ints({0})), g.c(ints({kHalf})), g.c(ints({2, 3}))};
    Model m = halves_of(g, g.add("Slice", in), g.slice("q", kHalf, kBig));
    m.graph.inputs.push_back(tensor_info("v_in", DType::Int64, {1}));
    refused_only(m, unknown_a);
  }
}

TEST_CASE("rotary branches: a partial rotation on halves joined to a fed value, to another value's columns, or to parts not following stays, explained") {
  const std::string joins = "to the rotated columns, not the rest of the value they were cut from";
  // q[..., :4] cut by `head`, its halves rotated, joined to `tail`.
  const auto partial = [](G& g, const std::string& head, const std::string& tail) {
    return halves_of(g, g.slice(head, 0, kHalf / 2), g.slice(head, kHalf / 2, kBig), tail, kHalf / 2, kHalf);
  };
  for (int form = 0; form < 8; ++form) {
    CAPTURE(form);
    G g;
    std::string head = g.slice("q", 0, kHalf), tail;
    if (form == 0) tail = "tail_in";
    if (form == 1) tail = g.slice("k", kHalf, kBig);
    if (form == 2) head = g.add("Split", {"q", g.c(ints({kHalf, kHalf}))}, {attr("axis", int64_t(-1))}, 2), tail = head;  // the rotated part twice
    if (form == 3) {  // Split(q, [4, 2, 2]): the rest is one of two parts
      head = g.add("Split", {"q", g.c(ints({kHalf, 2, 2}))}, {attr("axis", int64_t(-1))}, 3), tail = head + "_1";
    }
    if (form == 4) {  // parts swapped: the rotated part is the Split's second
      const std::string s = g.add("Split", {"q", g.c(ints({kHalf, kHalf}))}, {attr("axis", int64_t(-1))}, 2);
      head = s + "_1", tail = s;
    }
    if (form == 5) {  // a Split for the rotated part, a Slice for the rest
      const std::string s = g.add("Split", {"q", g.c(ints({kHalf, 2, 2}))}, {attr("axis", int64_t(-1))}, 3);
      head = s, tail = g.slice("q", kHalf, kBig);
    }
    if (form == 6) tail = g.add("Split", {"q", g.c(ints({kHalf, kHalf}))}, {attr("axis", int64_t(-1))}, 2) + "_1";  // a Slice, then a Split
    if (form == 7) tail = g.slice("q", 6, kBig);  // q[..., 6:]: columns 4, 5 dropped
    Model m = partial(g, head, tail);
    m.graph.inputs.push_back(testing::f32("tail_in", {"batch", kHeads, "seq", kHalf}));
    m.graph.inputs.push_back(testing::f32("k", {"batch", kHeads, "seq", kHead}));
    check_refused(m, joins);
  }
  {  // Split of the heads: the rotated head's halves, the other head joined
    G g;
    const std::string s = g.add("Split", {"q", g.c(ints({1, 1}))}, {attr("axis", int64_t(1))}, 2);
    check_refused(halves_of(g, g.slice(s, 0, kHalf), g.slice(s, kHalf, kBig), s + "_1"), joins);
  }
}

TEST_CASE("rotary branches: tables of one column, positions (1, B, S), pairs with full-width tables, Concat(f, f, f) stay, explained") {
  for (const bool on_sin : {false, true}) {  // a (32, 1) table broadcast over the head: not (max_pos, 8)
    CAPTURE(on_sin);
    G g;
    const std::string narrow = g.c(Tensor::from_vector<float>({kRows, 1}, std::vector<float>(kRows, 0.5f)));
    const std::string cos = gathered_from(g, on_sin ? g.c(table(true, kHead)) : narrow), sin = gathered_from(g, on_sin ? narrow : g.c(table(false, kHead)));
    check_refused(plain(g, cos, sin), on_sin ? "are not (max_pos, 8) both" : "the cos/sin tables (32, 1) and (32, 8) are not (max_pos, 8) both");
  }
  {  // position ids (1, B, S)
    G g;
    const std::string cos = g.unsqueeze(g.add("Gather", {g.c(table(true, kHead)), "pos3"}, {attr("axis", int64_t(0))}), {1});
    const std::string sin = g.unsqueeze(g.add("Gather", {g.c(table(false, kHead)), "pos3"}, {attr("axis", int64_t(0))}), {1});
    Model m = plain(g, cos, sin);
    m.graph.inputs.push_back(tensor_info("pos3", DType::Int64, {1, "batch", "seq"}));
    refused_only(m, "the position ids 'pos3' are INT64 (1, batch, seq)");
  }
  {  // halves (B, 2, S, 4) times (B, 1, S, 8) tables: one value per column, not per pair
    G g;
    const auto [even, odd] = pair_products(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, kBig), g.gathered(true, kHead), g.gathered(false, kHead));
    refused_only(g.model(g.add("Concat", {even, odd}, {attr("axis", int64_t(-1))})), "the cos/sin tables (32, 8) and (32, 8) are not (max_pos, 4) both");
  }
  {  // Cos(Concat(f, f, f))
    G g;
    const std::string f = g.add("Mul", {g.unsqueeze(p_float(g), {-1}), inv_const(g)});
    const std::string e = g.add("Concat", {f, f, f}, {attr("axis", int64_t(-1))});
    refused_only(plain(g, g.unsqueeze(g.add("Cos", {e}), {1}), g.unsqueeze(g.add("Sin", {e}), {1})), "is not Concat(f, f) on the last axis");
  }
}

TEST_CASE("rotary branches: neighbours of a Constant, of pairs fed, of pairs not (.., h/2, 2) stay, explained") {
  const std::string not_pairs = "the products do not read the two elements of one pairs value";
  {  // a = a Constant (1, 1, 1, 4)
    G g;
    const std::string a = g.add("Constant", {}, {attr("value", Tensor::from_vector<float>({1, 1, 1, kHalf}, {1.0f, 0.5f, 0.25f, 0.0f}))});
    check_refused(neighbours_of(g, a, element(g, pairs_of(g), 1)), not_pairs);
  }
  {  // pairs fed, of unknown shape
    G g;
    Model m = neighbours_of(g, element(g, "pairs_in", 0), element(g, "pairs_in", 1));
    m.graph.inputs.push_back(tensor_info_unknown_rank("pairs_in", DType::Float));
    refused_only(m, not_pairs);
  }
  {  // Squeeze(Split(pairs fed of unknown shape))
    G g;
    const std::string part = g.add("Split", {"pairs_in", g.c(ints({1, 1}))}, {attr("axis", int64_t(-1))}, 2);
    Model m = neighbours_of(g, g.add("Squeeze", {part, g.c(ints({-1}))}), g.add("Squeeze", {part + "_1", g.c(ints({-1}))}));
    m.graph.inputs.push_back(tensor_info_unknown_rank("pairs_in", DType::Float));
    refused_only(m, not_pairs);
  }
  // q reshaped to (B, 2, 4, 2), to a fed shape of 5 values (pairs of unknown dims), to (B, 2, 2S, 2, 2).
  const std::vector<std::pair<std::string, std::string>> forms = {{"4-D", "is not a Reshape of a 4-D value with a known head size into pairs"},
                                                                   {"fed", "the products do not read the two elements of one pairs value"},
                                                                   {"2x2", "does not cut the last axis of 8 into 4 pairs (.., 4, 2)"}};
  for (const auto& [form, reason] : forms) {
    const std::string which = form;  // a copy: clang 14 cannot capture a structured binding
    CAPTURE(which);
    G g;
    const std::string shape = form == "4-D" ? g.c(ints({0, 0, kHalf, 2})) : form == "fed" ? std::string("shape_in") : g.c(ints({0, 0, -1, 2, 2}));
    const std::string pairs = g.add("Reshape", {"q", shape}, {}, 1, "/pairs");
    Model m = neighbours_of(g, element(g, pairs, 0), element(g, pairs, 1));
    m.graph.inputs.push_back(tensor_info("shape_in", DType::Int64, {5}));
    refused_only(m, reason);
  }
}

TEST_CASE("rotary branches: neighbours of a Split in three, of pairs fed whole, of a q of symbolic head size stay, explained") {
  {  // Split(pairs, [1, 1, 0]): three outputs, the last empty
    G g;
    const std::string pairs = pairs_of(g);
    const std::string part = g.add("Split", {pairs, g.c(ints({1, 1, 0}))}, {attr("axis", int64_t(-1))}, 3);
    check_refused(neighbours_of(g, g.add("Squeeze", {part, g.c(ints({-1}))}), element(g, pairs, 1)),
                  "the products do not read the two elements of one pairs value");
  }
  {  // pairs (B, 2, S, 4, 2) fed: no Reshape of q to read the head size from
    G g;
    Model m = neighbours_of(g, element(g, "pairs_in", 0), element(g, "pairs_in", 1));
    m.graph.inputs.push_back(testing::f32("pairs_in", {"batch", kHeads, "seq", kHalf, 2}));
    check_refused(m, "'pairs_in' is not a Reshape of a 4-D value with a known head size into pairs");
  }
  {  // q (B, 2, S, head)
    G g;
    const std::string pairs = pairs_of(g);
    Model m = neighbours_of(g, element(g, pairs, 0), element(g, pairs, 1));
    m.graph.inputs[0] = testing::f32("q", {"batch", kHeads, "seq", "head"});
    refused_only(m, "is not a Reshape of a 4-D value with a known head size into pairs");
  }
}

TEST_CASE("rotary branches: Cos of a fed or a product argument, not Concat(f, f), stays, explained") {
  for (const bool fed : {true, false}) {
    CAPTURE(fed);
    G g;
    // f (B, S, 8): fed, or p[..., None] * inv_freq of 8 values
    const std::string f = fed ? std::string("f_in") : g.add("Mul", {g.unsqueeze(p_float(g), {-1}), g.c(Tensor::from_vector<float>({kHead}, testing::rope_inv_freq(2 * kHead)))});
    Model m = plain(g, g.unsqueeze(g.add("Cos", {f}), {1}), g.unsqueeze(g.add("Sin", {f}), {1}));
    m.graph.inputs.push_back(testing::f32("f_in", {"batch", "seq", kHead}));
    check_refused(m, "is not Concat(f, f) on the last axis");
  }
}
