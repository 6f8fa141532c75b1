// The split-qkv and mha-projections passes on the forms their conditions check one at a time:
// GPT-NeoX's (B, S, N, 3h) view cut by a Slice or a Split, timm's unbound (3, B, N, S, h) view, and
// MultiHeadAttention's inputs as projections. x is (B, S, 16), 2 heads of 8; every rewrite is
// checked against the original with the evaluator (optimized(), optimize_test_util.h).
#include <doctest/doctest.h>

#include <functional>
#include <limits>

#include "optimize_test_util.h"

using namespace refeval;
using namespace refeval::build;
using refeval::testing::count_ops;
using refeval::testing::f32;
using refeval::testing::ints;
using refeval::testing::optimized;
using refeval::testing::ramp;

namespace {

constexpr int64_t kHeads = 2, kHead = 8, kHidden = kHeads * kHead;
constexpr int64_t kBig = std::numeric_limits<int64_t>::max();

class G : public testing::GraphUnderConstruction {
 public:
  explicit G(int opset = 17) : opset_(opset) {}
  std::string x = input(f32("x", {"batch", "seq", kHidden}));
  // x W + b of `width` columns.
  std::string product(int64_t width = 3 * kHidden, bool bias = true) {
    const std::string y = add("MatMul", {x, c(ramp({kHidden, width}, -0.4f, 0.035f))});
    return bias ? add("Add", {y, c(ramp({width}, -0.3f, 0.03f))}) : y;
  }
  Model model() {
    Model m = build::model(graph("qkv", nodes_, inputs_, outputs_, inits_), {{"", opset_}});
    for (const Node& n : m.graph.nodes)
      if (n.domain == "com.microsoft") m.opsets["com.microsoft"] = 1;
    return m;
  }
  Node& last() { return nodes_.back(); }

 private:
  int opset_;
};

// GPT-NeoX: `p` viewed (B, S, 2, 24), every part `cut` takes a graph output.
Model neox(const std::function<std::vector<std::string>(G&, const std::string&)>& cut, int opset = 17,
           const std::function<std::string(G&)>& p = [](G& g) { return g.product(); }) {
  G g(opset);
  const std::string v = g.add("Reshape", {p(g), g.c(ints({0, 0, kHeads, 3 * kHead}))});
  for (const std::string& part : cut(g, v)) g.out(part);
  return g.model();
}

// The products after split-qkv: 3 when split, 1 when the packed one stayed (0: none).
int products(const Model& m) { return count_ops(optimized(m, {"split-qkv"}), "MatMul"); }

// The Slices left after split-qkv: a part split off is a product of its own, no longer a Slice.
int slices_left(const Model& m) { return count_ops(optimized(m, {"split-qkv"}), "Slice"); }

std::string slice(G& g, const std::string& v, int64_t from, int64_t to, std::vector<std::string> extra = {}) {
  std::vector<std::string> in = {v, g.c(ints({from})), g.c(ints({to}))};
  in.insert(in.end(), extra.begin(), extra.end());
  if (in.size() == 3) in.push_back(g.c(ints({-1})));
  return g.add("Slice", in);
}

}  // namespace

TEST_CASE("qkv branches: GPT-NeoX's parts cut by Slices with an empty step input, or a Split on axis 3 with an empty sizes input, become products") {
  CHECK(products(neox([](G& g, const std::string& v) {
          std::vector<std::string> parts;
          for (int64_t j = 0; j < 3; ++j) parts.push_back(slice(g, v, j * kHead, (j + 1) * kHead, {g.c(ints({-1})), ""}));
          return parts;
        })) == 3);
  CHECK(products(neox([](G& g, const std::string& v) {
          const std::string s = g.add("Split", {v, ""}, {attr("axis", int64_t(3))}, 3);
          return std::vector<std::string>{s, s + "_1", s + "_2"};
        }, 13)) == 3);
  // The value part left unnamed (an unread output an exporter dropped): two products, none for it.
  CHECK(products(neox([](G& g, const std::string& v) {
          const std::string s = g.add("Split", {v}, {attr("axis", int64_t(-1))}, 3);
          g.last().outputs[2].clear();
          return std::vector<std::string>{s, s + "_1"};
        })) == 2);
  // x W without a bias: three products without Adds
  const Model plain = optimized(neox([](G& g, const std::string& v) { return std::vector<std::string>{slice(g, v, 0, kHead)}; }, 17,
                                     [](G& g) { return g.product(3 * kHidden, false); }),
                                {"split-qkv"});
  CHECK(count_ops(plain, "MatMul") == 1);
  CHECK(count_ops(plain, "Add") + count_ops(plain, "Slice") == 0);
}

TEST_CASE("qkv branches: Slices of GPT-NeoX's view that are not one part (bounds at run time, two axes, from the end, past the end) stay") {
  const auto one = [](const std::function<std::string(G&, const std::string&)>& cut) {
    return slices_left(neox([&](G& g, const std::string& v) { return std::vector<std::string>{cut(g, v)}; }));
  };
  CHECK(one([](G& g, const std::string& v) { return slice(g, v, 0, kHead); }) == 0);  // q: split off, its own product
  CHECK(one([](G& g, const std::string& v) {  // starts fed at run time
          return g.add("Slice", {v, g.input(tensor_info("start", DType::Int64, {1})), g.c(ints({kHead})), g.c(ints({-1}))});
        }) == 1);
  CHECK(one([](G& g, const std::string& v) {  // two axes
          return g.add("Slice", {v, g.c(ints({0, 0})), g.c(ints({kBig, kHead})), g.c(ints({2, 3}))});
        }) == 1);
  CHECK(one([](G& g, const std::string& v) { return slice(g, v, -kHead, kBig); }) == 1);  // the last 8 columns, counted from the end
  CHECK(one([](G& g, const std::string& v) { return slice(g, v, 3 * kHead, kBig); }) == 1);  // nothing: past the last part
  CHECK(one([](G& g, const std::string& v) { return slice(g, v, 0, kHead, {g.c(ints({-1})), g.c(ints({2}))}); }) == 1);  // every other column of q
  CHECK(one([](G& g, const std::string& v) {  // q's columns of the first head only (axes 2 and 3 as one Slice)
          return g.add("Slice", {v, g.c(ints({0})), g.c(ints({kHead})), g.c(ints({2}))});
        }) == 1);
  // the view's input not a product: x given as (B, S, 48), or an Add of two inputs
  CHECK(slices_left(neox([](G& g, const std::string& v) { return std::vector<std::string>{slice(g, v, 0, kHead)}; }, 17,
                      [](G& g) { return g.input(f32("qkv", {"batch", "seq", 3 * kHidden})); })) == 1);
  CHECK(slices_left(neox([](G& g, const std::string& v) { return std::vector<std::string>{slice(g, v, 0, kHead)}; }, 17, [](G& g) {
          return g.add("Add", {g.input(f32("y", {"batch", "seq", 3 * kHidden})), g.input(f32("b", {3 * kHidden}))});
        })) == 1);
  // a bias of one value broadcast to every column: not (48)
  CHECK(slices_left(neox([](G& g, const std::string& v) { return std::vector<std::string>{slice(g, v, 0, kHead)}; }, 17, [](G& g) {
          return g.add("Add", {g.product(3 * kHidden, false), g.c(Tensor::from_vector<float>({1}, {0.25f}))});
        })) == 1);
}

namespace {

// timm: `p` viewed (B, S, 3, 2, 8), permuted 2 0 3 1 4; `unbind` takes the parts.
Model timm(const std::function<std::vector<std::string>(G&, const std::string&)>& unbind, const std::string& perm_input = "") {
  G g;
  const std::string v = perm_input.empty() ? g.add("Reshape", {g.product(), g.c(ints({0, 0, 3, kHeads, kHead}))}) : perm_input;
  if (!perm_input.empty()) g.input(f32(perm_input, {"batch", "seq", 3, kHeads, kHead}));
  const std::string t = g.add("Transpose", {v}, {attr("perm", std::vector<int64_t>{2, 0, 3, 1, 4})});
  for (const std::string& part : unbind(g, t)) g.out(part);
  return g.model();
}

int cut_parts(const Model& m) { return count_ops(optimized(m, {"split-qkv"}), "Slice"); }

}  // namespace

TEST_CASE("qkv branches: timm's parts read by Gather of an unviewed value, or of a view that is not (B, S, 3, N, h) of the product, stay") {
  const auto gather0 = [](G& g, const std::string& t) { return std::vector<std::string>{g.add("Gather", {t, g.c(Tensor::scalar<int64_t>(0))}, {attr("axis", int64_t(0))})}; };
  CHECK(cut_parts(timm(gather0)) == 1);
  // q, k, v = qkv[0], qkv[1], qkv[-1]: the last counted from the end, as Gather does
  CHECK(cut_parts(timm([](G& g, const std::string& t) {
          std::vector<std::string> parts;
          for (int64_t j : {0, 1, -1}) parts.push_back(g.add("Gather", {t, g.c(Tensor::scalar<int64_t>(j))}, {attr("axis", int64_t(0))}));
          return parts;
        })) == 3);
  // the permuted value a graph input: no view to read N and h from
  CHECK(cut_parts(timm(gather0, "qkv5")) == 0);
  // Split into (q and k) and v, then v squeezed: the second of two parts is not k
  CHECK(cut_parts(timm([](G& g, const std::string& t) {
          const std::string s = g.add("Split", {t, g.c(ints({2, 1}))}, {attr("axis", int64_t(0))}, 2);
          return std::vector<std::string>{g.add("Squeeze", {s + "_1", g.c(ints({0}))})};
        })) == 0);
  // Gather on axis 0 of an input: not a Transpose
  G g;
  g.input(f32("t", {3, "batch", kHeads, "seq", kHead}));
  g.out(g.add("Gather", {"t", g.c(Tensor::scalar<int64_t>(1))}, {attr("axis", int64_t(0))}));
  CHECK(cut_parts(g.model()) == 0);
  // MixFormer's Gather on axis 2 of an input (B, S, 3, N, h): not a view of a product
  G mix;
  mix.input(f32("qkv5", {"batch", "seq", 3, kHeads, kHead}));
  mix.out(mix.add("Gather", {"qkv5", mix.c(Tensor::scalar<int64_t>(1))}, {attr("axis", int64_t(2))}));
  CHECK(cut_parts(mix.model()) == 0);
  // ... or a vector index [1]: a (B, S, 1, N, h) slice, not a part
  G vec;
  const std::string v = vec.add("Reshape", {vec.product(), vec.c(ints({0, 0, 3, kHeads, kHead}))});
  vec.out(vec.add("Gather", {v, vec.c(ints({1}))}, {attr("axis", int64_t(2))}));
  CHECK(cut_parts(vec.model()) == 0);
}

// ---- mha-projections ----
namespace {

// MultiHeadAttention (2 heads) on `in`; the pass's refusal.
std::string mha_refusal(G& g, std::vector<std::string> in) {
  g.out(g.add("MultiHeadAttention", std::move(in), {attr("num_heads", kHeads)}, 1, "/mha"));
  g.last().domain = "com.microsoft";
  return testing::refusals(g.model(), {"mha-projections"});
}

std::string proj16(G& g, float start) { return g.add("Add", {g.add("MatMul", {g.x, g.c(ramp({kHidden, kHidden}, start, 0.013f))}), g.c(ramp({kHidden}, -0.1f, 0.01f))}); }

const std::string kMha = "not fused: mha-projections at '/mha': ";

}  // namespace

TEST_CASE("qkv branches: MultiHeadAttention on two values, q read as k, or with a past value is not rewritten, explained") {
  const std::string not_three = kMha + "q, k and v are not three values (packed, or one value read twice)\n";
  {
    G g;
    CHECK(mha_refusal(g, {proj16(g, -0.2f), proj16(g, 0.2f)}) == not_three);
  }
  {
    G g;
    const std::string q = proj16(g, -0.2f);
    CHECK(mha_refusal(g, {q, q, proj16(g, 0.1f)}) == not_three);
  }
  {
    G g;
    const std::string past = g.input(f32("past_value", {"batch", kHeads, "past", kHead}));
    const std::string q = proj16(g, -0.2f), k = proj16(g, 0.2f), v = proj16(g, 0.1f);
    CHECK(mha_refusal(g, {q, k, v, "", "", "", "", past}) == kMha + "it has a past (a bias would apply to the new keys and values only)\n");
  }
}

TEST_CASE("qkv branches: MultiHeadAttention inputs that are not x W + b (b at run time, W 3-D, x 2-D, an empty Slice, a Split of tokens) stay, named") {
  const auto refused = [](const std::string& v) { return kMha + "'" + v + "' is not MatMul(x, W) [+ b] [sliced on the last axis] with a constant 2-D W and 1-D b\n"; };
  {  // the bias a graph input
    G g;
    const std::string q = g.add("Add", {g.add("MatMul", {g.x, g.c(ramp({kHidden, kHidden}, -0.2f, 0.013f))}), g.input(f32("bq", {kHidden}))});
    CHECK(mha_refusal(g, {q, proj16(g, 0.2f), proj16(g, 0.1f)}) == refused(q));
  }
  {  // a (1, 16, 16) weight
    G g;
    const std::string q = g.add("MatMul", {g.x, g.c(ramp({1, kHidden, kHidden}, -0.2f, 0.013f))});
    CHECK(mha_refusal(g, {q, proj16(g, 0.2f), proj16(g, 0.1f)}) == refused(q));
  }
  {  // x of unknown shape
    G g;
    const std::string q = g.add("MatMul", {g.input({"xq", ValueType::tensor_of_unknown_rank(DType::Float)}), g.c(ramp({kHidden, kHidden}, -0.2f, 0.013f))});
    CHECK(mha_refusal(g, {q, proj16(g, 0.2f), proj16(g, 0.1f)}) == refused(q));
  }
  {  // x 2-D (S, 16)
    G g;
    const std::string q = g.add("MatMul", {g.input(f32("xq", {"seq", kHidden})), g.c(ramp({kHidden, kHidden}, -0.2f, 0.013f))});
    CHECK(mha_refusal(g, {q, proj16(g, 0.2f), proj16(g, 0.1f)}) == refused(q));
  }
  {  // columns [16, 16) of the packed product: no columns
    G g;
    const std::string p = g.product();
    const std::string q = g.add("Slice", {p, g.c(ints({kHidden})), g.c(ints({kHidden})), g.c(ints({-1}))});
    const std::string k = g.add("Slice", {p, g.c(ints({kHidden})), g.c(ints({2 * kHidden})), g.c(ints({-1}))});
    const std::string v = g.add("Slice", {p, g.c(ints({2 * kHidden})), g.c(ints({3 * kHidden})), g.c(ints({-1}))});
    CHECK(mha_refusal(g, {q, k, v}) == refused(q));
  }
  {  // a Split of the tokens (axis 1), not of the columns
    G g;
    const std::string s = g.add("Split", {g.product(kHidden), g.c(ints({1, 1, 1}))}, {attr("axis", int64_t(1))}, 3);
    CHECK(mha_refusal(g, {s, proj16(g, 0.2f), proj16(g, 0.1f)}) == refused(s));
  }
}

TEST_CASE("qkv branches: a packed product split on axis 2 (not -1) with an empty sizes input becomes three products (--forms cpu)") {
  G g(13);
  const std::string s = g.add("Split", {g.product(), ""}, {attr("axis", int64_t(2))}, 3);
  g.out(g.add("MultiHeadAttention", {s, s + "_1", s + "_2"}, {attr("num_heads", kHeads)}, 1, "/mha"));
  g.last().domain = "com.microsoft";
  const Model cpu = optimized(g.model(), {"mha-projections"}, "", "cpu");
  CHECK(count_ops(cpu, "MatMul") == 3);
  CHECK(count_ops(cpu, "Split") == 0);
}

TEST_CASE("qkv branches: a Slice of GPT-NeoX's view without axes (its first axis) is not a part; the view of a 4-D value or of an unknown width stays") {
  CHECK(slices_left(neox([](G& g, const std::string& v) { return std::vector<std::string>{g.add("Slice", {v, g.c(ints({0})), g.c(ints({1}))})}; })) == 1);
  // timm's view (B, S, 3, N, h) of a (B, S, 3, 16) input, or of a (B, S, width) one
  const auto viewed = [](ValueInfo in) {
    G g;
    const std::string p = g.input(std::move(in));
    const std::string t = g.add("Transpose", {g.add("Reshape", {p, g.c(ints({0, 0, 3, kHeads, kHead}))})}, {attr("perm", std::vector<int64_t>{2, 0, 3, 1, 4})});
    g.out(g.add("Gather", {t, g.c(Tensor::scalar<int64_t>(0))}, {attr("axis", int64_t(0))}));
    return g.model();
  };
  CHECK(cut_parts(viewed(f32("p4", {"batch", "seq", 3, kHidden}))) == 0);
  CHECK(count_ops(testing::optimized(viewed(f32("pw", {"batch", "seq", "width"})), {"split-qkv"}, "", "all",
                                     {{"pw", Tensor::from_vector<float>({3, 3, 48}, std::vector<float>(9 * 48, 0.5f))}}),
                  "Slice") == 0);
}

TEST_CASE("qkv branches: timm's unbind of a transposed value that is not the view (an Identity between) stays; split in sizes fed at run time, it is cut") {
  {
    G g;
    const std::string view = g.add("Reshape", {g.product(), g.c(ints({0, 0, 3, kHeads, kHead}))});
    const std::string t = g.add("Transpose", {g.add("Identity", {view})}, {attr("perm", std::vector<int64_t>{2, 0, 3, 1, 4})});
    g.out(g.add("Gather", {t, g.c(Tensor::scalar<int64_t>(2))}, {attr("axis", int64_t(0))}));
    CHECK(cut_parts(g.model()) == 0);
  }
  G g;
  const std::string t = g.add("Transpose", {g.add("Reshape", {g.product(), g.c(ints({0, 0, 3, kHeads, kHead}))})}, {attr("perm", std::vector<int64_t>{2, 0, 3, 1, 4})});
  const std::string s = g.add("Split", {t, g.input(tensor_info("sizes", DType::Int64, {3}))}, {attr("axis", int64_t(0))}, 3);
  for (const std::string& part : {s, s + "_1", s + "_2"}) g.out(g.add("Squeeze", {part, g.c(ints({0}))}));
  // each part squeezed on axis 0 holds one of the three: the sizes can only be 1, 1, 1
  const Model out = testing::optimized(g.model(), {"split-qkv"}, "", "all", {{"sizes", ints({1, 1, 1})}});
  CHECK(count_ops(out, "Split") + count_ops(out, "Squeeze") == 0);
  CHECK(count_ops(out, "Slice") == 3);
}

TEST_CASE("qkv branches: an unnamed Gather's part is named after its output") {
  G g;
  const std::string view = g.add("Reshape", {g.product(), g.c(ints({0, 0, 3, kHeads, kHead}))});
  const std::string t = g.add("Transpose", {view}, {attr("perm", std::vector<int64_t>{2, 0, 3, 1, 4})});
  const std::string part = g.add("Gather", {t, g.c(Tensor::scalar<int64_t>(1))}, {attr("axis", int64_t(0))}, 1, "-");
  g.out(part);
  const Model out = testing::optimized(g.model(), {"split-qkv"});
  REQUIRE(count_ops(out, "Slice") == 1);
  const auto it = std::find_if(out.graph.nodes.begin(), out.graph.nodes.end(), [](const Node& n) { return n.op_type == "Slice"; });
  CHECK(it->name == part + "/Slice");
}

TEST_CASE("qkv branches: GPT-NeoX's view of a product that is not x W + b with W (16, 48) and b (48), or a view changing the batch, stays") {
  const auto q_of = [](const std::function<std::string(G&)>& p) {
    return slices_left(neox([](G& g, const std::string& v) { return std::vector<std::string>{slice(g, v, 0, kHead)}; }, 17, p));
  };
  // y + b with y an input: no product to split
  CHECK(q_of([](G& g) { return g.add("Add", {g.input(f32("y", {"batch", "seq", 3 * kHidden})), g.c(ramp({3 * kHidden}, -0.3f, 0.03f))}); }) == 1);
  // W (1, 16, 48); b (1, 48)
  CHECK(q_of([](G& g) { return g.add("MatMul", {g.x, g.c(ramp({1, kHidden, 3 * kHidden}, -0.4f, 0.035f))}); }) == 1);
  CHECK(q_of([](G& g) { return g.add("Add", {g.product(3 * kHidden, false), g.c(ramp({1, 3 * kHidden}, -0.3f, 0.03f))}); }) == 1);
  // x W + b as it should be: split off
  CHECK(q_of([](G& g) { return g.product(); }) == 0);
  // viewed (1, -1, 2, 24): every batch row's tokens in one
  G g;
  const std::string v = g.add("Reshape", {g.product(), g.c(ints({1, -1, kHeads, 3 * kHead}))});
  g.out(slice(g, v, 0, kHead));
  CHECK(slices_left(g.model()) == 1);
}
