// The masks and scores the attention decompositions share (decompositions/attention_common.cc),
// through check-fusion's node form: com.microsoft MultiHeadAttention and Attention with each form
// of padding mask they decompose (lengths [B], raw [B, T], [B, S, T]), an attention bias, causal
// masking after a past and an explicit scale, each against refeval's kernel of the operator
// (ops/contrib, written apart from the decompositions and checked against ONNX Runtime by the
// ort-fused_ops fixtures). A mask of another shape is refused with its shape named.
#include <random>

#include "decompositions/decompositions.h"
#include "node_check.h"
#include "refeval/address.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::build;
using namespace refeval::fusion;

namespace {

Tensor uniform(Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(size_t(shape_size(shape)));
  for (float& x : v) x = u(rng);
  return Tensor::from_vector<float>(std::move(shape), v);
}

// The kernel of `n` (com.microsoft, opset 1) against its decomposition on `inputs`.
FusionReport check(const Node& n, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::vector<ValueInfo> in, out;
  std::map<std::string, Value> feeds;
  for (const auto& [name, t] : inputs) {
    in.push_back(tensor_info(name, t.dtype(), std::vector<DimSpec>(t.shape().begin(), t.shape().end())));
    feeds[name] = t;
  }
  for (const std::string& o : n.outputs)
    if (!o.empty()) out.push_back(untyped_info(o));
  const Model m = model(graph("g", {n}, in, out), {{"", 21}, {"com.microsoft", 1}}, 9);
  CheckOptions options;
  options.repeat = 1;
  return check_node(m, find_nodes(m.graph, "#0")[0], Registry::builtin(), feeds, options);
}

void check_equivalent(const char* what, const Node& n, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  CAPTURE(what);
  const FusionReport r = check(n, inputs);
  const SetResult* failure = r.first_failure();
  CHECK_MESSAGE(r.equivalent(), (failure ? failure->set + ": " + failure->outputs[0].reason : ""));
}

const Attribute kHeads = attr("num_heads", int64_t(2));
const char* const kMs = "com.microsoft";
constexpr int64_t B = 2, S = 3, L = 4;  // batch, queries, keys (D = 8: 2 heads of 4)

Node mha(std::vector<std::string> inputs, std::vector<Attribute> attrs = {}) {
  attrs.push_back(kHeads);
  return node("MultiHeadAttention", std::move(inputs), {"y"}, std::move(attrs), "", kMs);
}

}  // namespace

TEST_CASE("attention decompositions: MultiHeadAttention with each padding mask form") {
  const Tensor q = uniform({B, S, 8}, 1), k = uniform({B, L, 8}, 2), v = uniform({B, L, 8}, 3);
  check_equivalent("key lengths [B]", mha({"q", "k", "v", "", "mask"}),
                   {{"q", q}, {"k", k}, {"v", v}, {"mask", Tensor::from_vector<int32_t>({B}, {3, 4})}});
  check_equivalent("raw [B, T]", mha({"q", "k", "v", "", "mask"}),
                   {{"q", q}, {"k", k}, {"v", v}, {"mask", Tensor::from_vector<int32_t>({B, L}, {1, 1, 0, 1, 1, 1, 1, 0})}});
  check_equivalent("per query [B, S, T]", mha({"q", "k", "v", "", "mask"}),
                   {{"q", q}, {"k", k}, {"v", v},
                    {"mask", Tensor::from_vector<int32_t>({B, S, L}, {1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1})}});
}

TEST_CASE("attention decompositions: an attention bias, a scale, and causal masking after a past") {
  const Tensor q = uniform({B, S, 8}, 4), k = uniform({B, S, 8}, 5), v = uniform({B, S, 8}, 6);
  check_equivalent("MultiHeadAttention, bias [B, N, S, T] and scale", mha({"q", "k", "v", "", "", "bias"}, {attr("scale", 0.7f)}),
                   {{"q", q}, {"k", k}, {"v", v}, {"bias", uniform({B, 2, S, S}, 7)}});
  // Attention (GPT-2's): past of 2 positions, causal, lengths [B] of the 5 keys and a bias.
  check_equivalent("Attention, past, causal, lengths and bias",
                   node("Attention", {"x", "w", "b", "mask", "past", "bias"}, {"y", "present"}, {kHeads, attr("unidirectional", int64_t(1))}, "", kMs),
                   {{"x", uniform({B, S, 8}, 8)}, {"w", uniform({8, 24}, 9)}, {"b", uniform({24}, 10)},
                    {"mask", Tensor::from_vector<int32_t>({B}, {5, 4})}, {"past", uniform({2, B, 2, 2, 4}, 11)},
                    {"bias", uniform({B, 2, S, 5}, 12)}});
}

TEST_CASE("attention decompositions: a mask of another shape is refused, naming it") {
  const Tensor q = uniform({B, S, 8}, 1), k = uniform({B, L, 8}, 2), v = uniform({B, L, 8}, 3);
  // [2 B]: each row's end and start positions, which the kernel reads and the decomposition does not.
  CHECK_THROWS_WITH_AS(check(mha({"q", "k", "v", "", "mask"}), {{"q", q}, {"k", k}, {"v", v}, {"mask", Tensor::from_vector<int32_t>({2 * B}, {3, 4, 0, 0})}}),
                       doctest::Contains("no built-in decomposition for this form: mask of shape (4,) (lengths [B], raw [B, T] or [B, S, T] are decomposed)"),
                       Error);
}
