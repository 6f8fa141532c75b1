// Checks of the rotary-embedding pass that no other test makes it take: Einsum frequencies that
// are not an outer product, a cos operand unsqueezed twice at once, a sin table fed at run time,
// halves cut at a bound fed at run time, and partial rotations whose parts are not the head's
// first columns and the rest, or whose head count is not known. q is (B, N, S, 8); each refusal is
// checked by its `--explain` line and the graph left as it was, equal to the original
// (optimized(), optimize_test_util.h).
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

constexpr int64_t kHead = 8, kHalf = kHead / 2, kRows = 32;
constexpr int64_t kBig = std::numeric_limits<int64_t>::max();

// cos or sin tables of kRows positions and the inverse frequencies (optimize_test_util.h).
Tensor table(bool cosine, int64_t width, int64_t rotated = kHead) { return testing::rope_table(cosine, kRows, width, rotated); }
Tensor inv_freq() { return Tensor::from_vector<float>({kHalf}, testing::rope_inv_freq(kHead)); }

// A graph under construction: q (B, N, S, 8) and position_ids (B, S) as inputs, one output.
class G : public testing::GraphUnderConstruction {
 public:
  G(DimSpec batch = "batch", DimSpec heads = int64_t(2), DimSpec seq = "seq") : batch_(batch), heads_(heads), seq_(seq) {}

  std::string slice(const std::string& v, int64_t start, int64_t end) { return add("Slice", {v, c(ints({start})), c(ints({end})), c(ints({-1}))}); }
  // Unsqueeze(table[position_ids], 1): gathered cos or sin (B, 1, S, width).
  std::string gathered(bool cosine, int64_t width, int64_t rotated = kHead) {
    return add("Unsqueeze", {add("Gather", {c(table(cosine, width, rotated)), "position_ids"}), c(ints({1}))});
  }
  Model model(const std::string& y) {
    std::vector<ValueInfo> inputs = {testing::f32("q", {batch_, heads_, seq_, kHead}), tensor_info("position_ids", DType::Int64, {batch_, seq_})};
    inputs.insert(inputs.end(), inputs_.begin(), inputs_.end());
    return refeval::build::model(graph("rope", nodes_, inputs, {testing::f32(y, {batch_, heads_, seq_, kHead})}, inits_), {{"", 17}});
  }

 private:
  DimSpec batch_, heads_, seq_;
};

// Hugging Face's rotate-half: q * cos + Concat(-x2, x1) * sin with x1, x2 given.
std::string rotate_half(G& g, const std::string& x1, const std::string& x2, const std::string& cos, const std::string& sin) {
  const std::string rot = g.add("Concat", {g.add("Neg", {x2}), x1}, {attr("axis", int64_t(-1))});
  return g.add("Add", {g.add("Mul", {"q", cos}), g.add("Mul", {rot, sin})});
}

// MixFormer's rotation on halves a, b: Concat(a * cos - b * sin, a * sin + b * cos, rest...).
std::string on_halves(G& g, const std::string& a, const std::string& b, const std::string& cos, const std::string& sin, std::vector<std::string> rest = {}) {
  std::vector<std::string> parts = {g.add("Sub", {g.add("Mul", {a, cos}), g.add("Mul", {b, sin})}),
                                    g.add("Add", {g.add("Mul", {a, sin}), g.add("Mul", {b, cos})})};
  parts.insert(parts.end(), rest.begin(), rest.end());
  return g.add("Concat", parts, {attr("axis", int64_t(-1))});
}

// Phi-2's partial rotation: the first 4 columns of q rotated on their halves, then joined to
// `rest` (q[..., 4:] in the model).
std::string partial(G& g, const std::string& rest) {
  const std::string rot = g.slice("q", 0, kHalf);
  const std::string a = g.slice(rot, 0, kHalf / 2), b = g.slice(rot, kHalf / 2, kBig);
  return on_halves(g, a, b, g.gathered(true, kHalf / 2, kHalf), g.gathered(false, kHalf / 2, kHalf), {rest});
}

// Left as it was (no RotaryEmbedding, equal to the original) with the one refusal `line`.
void check_refused(const Model& m, const std::string& line, const std::map<std::string, Value>& fed = {}) {
  CHECK(refusals(m, {"rotary-embedding"}) == "not fused: rotary-embedding at " + line + "\n");
  CHECK(count_ops(optimized(m, {"rotary-embedding"}, "", "all", fed), "RotaryEmbedding") == 0);
}

// Rotate-half on q (4, 4, 4, 8) (batch = heads = sequence = h/2: the look-alikes broadcast) with
// cos and sin of Concat(f, f), f = einsum(`equation`, float(position_ids), inv_freq); with
// `half_inv_freq`, inv_freq is stored as float16 and cast to float (a half-precision export's buffer);
// with `in_double`, the positions are cast to double and inv_freq is a double constant, the angles
// and their cos and sin double, cast to float before they meet q.
Model einsum_frequencies(const std::string& equation, bool half_inv_freq = false, bool in_double = false) {
  G g(int64_t(4), int64_t(4), int64_t(4));
  const std::string p = g.add("Cast", {"position_ids"}, {attr("to", int64_t(in_double ? DType::Double : DType::Float))});
  std::string inv = g.c(inv_freq());
  if (in_double) {
    const std::vector<float> f = testing::rope_inv_freq(kHead);
    inv = g.c(Tensor::from_vector<double>({kHalf}, std::vector<double>(f.begin(), f.end())));
  }
  if (half_inv_freq) {
    std::vector<float16> halves;
    for (float v : testing::rope_inv_freq(kHead)) halves.push_back(float16(v));
    inv = g.add("Cast", {g.c(Tensor::from_vector<float16>({kHalf}, halves))}, {attr("to", int64_t(DType::Float))});
  }
  const std::string f = g.add("Einsum", {p, inv}, {attr("equation", equation)});
  const std::string emb = g.add("Concat", {f, f}, {attr("axis", int64_t(-1))});
  std::string cos = g.add("Unsqueeze", {g.add("Cos", {emb}), g.c(ints({1}))}), sin = g.add("Unsqueeze", {g.add("Sin", {emb}), g.c(ints({1}))});
  if (in_double) {
    cos = g.add("Cast", {cos}, {attr("to", int64_t(DType::Float))});
    sin = g.add("Cast", {sin}, {attr("to", int64_t(DType::Float))});
  }
  return g.model(rotate_half(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, kBig), cos, sin));
}

// Rotate-half on q (4, 4, 4, 8) with f = float(position_ids)[..., None] * table, the table (S, 4)
// holding a different frequency row per position (row s: inv_freq * (s + 1)), not one inv_freq.
Model frequency_table() {
  G g(int64_t(4), int64_t(4), int64_t(4));
  const std::string p = g.add("Unsqueeze", {g.add("Cast", {"position_ids"}, {attr("to", int64_t(DType::Float))}), g.c(ints({-1}))});
  std::vector<float> rows;
  for (int64_t s = 0; s < 4; ++s)
    for (float v : testing::rope_inv_freq(kHead)) rows.push_back(v * float(s + 1));
  const std::string f = g.add("Mul", {p, g.c(Tensor::from_vector<float>({4, kHalf}, rows))});
  const std::string emb = g.add("Concat", {f, f}, {attr("axis", int64_t(-1))});
  const std::string cos = g.add("Unsqueeze", {g.add("Cos", {emb}), g.c(ints({1}))}), sin = g.add("Unsqueeze", {g.add("Sin", {emb}), g.c(ints({1}))});
  return g.model(rotate_half(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, kBig), cos, sin));
}

}  // namespace

TEST_CASE("rotary: frequencies from a table of one row per position are not position ids times inv_freq") {
  check_refused(frequency_table(), "'/Neg_10': the frequencies f ('Mul_2') of Concat(f, f) '/Concat_3' (from Mul '/Mul_2') are not position ids times a "
                                   "constant inv_freq (Mul, MatMul or Einsum, maybe transposed): '/Mul_2' (Mul) does not multiply the position ids "
                                   "cast to float by a constant inv_freq");
}

TEST_CASE("rotary pairs: a partial rotation joined to the rotated columns again, or of an unknown head count, stays") {
  {  // Concat(rotated q[..., :4], q[..., :4]): the pass-through part is not q[..., 4:]
    G g;
    const Model m = g.model(partial(g, g.slice("q", 0, kHalf)));
    check_refused(m, "'/Sub_10': '/Concat_14' joins 'Slice_0' to the rotated columns, not the rest of the value they were cut from");
  }
  {  // q (B, N, S, 8) with N not known: rotary_embedding_dim needs num_heads
    G g("batch", "heads");
    const Model m = g.model(partial(g, g.slice("q", kHalf, kBig)));
    check_refused(m, "'/Sub_10': the head count of 'q' is not known; RotaryEmbedding needs num_heads with rotary_embedding_dim");
  }
}

TEST_CASE("rotary: frequencies by an Einsum that is not an outer product of the positions and inv_freq stay") {
  const std::string einsum = "the frequencies f ('Einsum_1') of Concat(f, f) '/Concat_2' (from Einsum '/Einsum_1') are not position ids times a constant "
                             "inv_freq (Mul, MatMul or Einsum, maybe transposed): '/Einsum_1' (Einsum) is not an outer product of the position ids and inv_freq";
  // Each position times one frequency (inv_freq indexed by the sequence), not every frequency.
  check_refused(einsum_frequencies("bs,s->bs"), "'/Neg_9': " + einsum);
  // Each position times the sum of the frequencies.
  check_refused(einsum_frequencies("bs,d->bs"), "'/Neg_9': " + einsum);
}

TEST_CASE("rotary: frequencies from a float16 inv_freq cast to float fuse, the table built from the widened values") {
  const Model m = einsum_frequencies("bs,i->bsi", true);
  CHECK(count_ops(optimized(m, {"rotary-embedding"}), "RotaryEmbedding") == 1);
}

TEST_CASE("rotary: angles computed in double stay (the table would be built in float)") {
  // Positions cast to double times a double inv_freq: cos and sin of double angles, rounded to
  // float only at the end. A float table differs in the last bits at large positions.
  check_refused(einsum_frequencies("bs,i->bsi", false, true),
                "'/Neg_11': the frequencies f ('Einsum_1') of Concat(f, f) '/Concat_2' (from Einsum '/Einsum_1') are not position ids times a constant "
                "inv_freq (Mul, MatMul or Einsum, maybe transposed): 'Einsum_1' is DOUBLE, not float");
}

TEST_CASE("rotary: a cos operand unsqueezed on two axes at once, and a sin table fed at run time, stay") {
  {  // cos_cached[:S][None, None]: the rows of positions 0..S-1 for every batch, no position ids
    G g;
    const std::string rows = g.add("Slice", {g.c(table(true, kHead)), g.c(ints({0})), g.add("Shape", {"q"}, {attr("start", int64_t(2)), attr("end", int64_t(3))}), g.c(ints({0}))});
    const std::string cos = g.add("Unsqueeze", {rows, g.c(ints({0, 1}))});
    const Model m = g.model(rotate_half(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, kBig), cos, g.gathered(false, kHead)));
    check_refused(m, "'/Neg_7': the cos operand 'Unsqueeze_2' is not Unsqueeze(c, 1) or Unsqueeze(c, 2) of a (B, S, h) value");
  }
  {  // sin = sin_cache[position_ids] with sin_cache an input
    G g;
    g.input(testing::f32("sin_cache", {kRows, kHead}));
    const std::string sin = g.add("Unsqueeze", {g.add("Gather", {"sin_cache", "position_ids"}), g.c(ints({1}))});
    const Model m = g.model(rotate_half(g, g.slice("q", 0, kHalf), g.slice("q", kHalf, kBig), g.gathered(true, kHead), sin));
    check_refused(m, "'/Neg_6': the cos/sin table 'sin_cache' is not a constant (.., max_pos, h) with leading dims 1");
  }
}

TEST_CASE("rotary: halves cut at a bound fed at run time stay") {
  // x1 = q[..., :half], x2 = q[..., half:] with half an input (4 when run).
  G g;
  g.input(tensor_info("half", DType::Int64, {1}));
  const std::string x1 = g.add("Slice", {"q", g.c(ints({0})), "half", g.c(ints({-1}))}), x2 = g.add("Slice", {"q", "half", g.c(ints({kBig})), g.c(ints({-1}))});
  const Model m = g.model(rotate_half(g, x1, x2, g.gathered(true, kHead), g.gathered(false, kHead)));
  check_refused(m, "'/Neg_6': '/Slice_0' is not a Slice of the last axis with known bounds", {{"half", ints({kHalf})}});
}
