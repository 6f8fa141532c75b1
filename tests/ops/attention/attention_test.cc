// Attention: masks (bool, additive, shorter than the keys), causality with a KV cache, grouped
// heads, 3-D packing, qk_matmul_output modes and input errors, on inputs small enough to check
// by hand. Zero queries give uniform attention, so outputs are plain averages of V rows.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

Node attention(std::vector<Attribute> attrs, std::vector<std::string> inputs = {"Q", "K", "V"}) {
  return node("Attention", std::move(inputs), {"Y", "present_key", "present_value", "qk"}, std::move(attrs), "att");
}

// Q (1, 1, 2, 1) of zeros, K (1, 1, 2, 1), V (1, 1, 2, 1) = [1, 3].
const Tensor Q0 = tensor<float>({1, 1, 2, 1}, {0, 0});
const Tensor K2 = tensor<float>({1, 1, 2, 1}, {5, 7});
const Tensor V2 = tensor<float>({1, 1, 2, 1}, {1, 3});


// Runs n with its inputs past `in` (or Absent in it) left out, as a model would write them.
Values run_with(Node n, const Values& in, int64_t opset = kLatestOnnxOpset) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (i >= in.size() || in[i].is_absent()) n.inputs[i] = "";
  return run_node(n, in, opset);
}

}  // namespace

TEST_CASE("Attention masks") {
  struct Case { const char* what; std::vector<Attribute> attrs; Value mask; std::vector<float> expected; };
  const Case cases[] = {
      {"no mask: both rows average V", {}, Value(), {2, 2}},
      {"causal: row 0 sees key 0 only", {attr("is_causal", int64_t(1))}, Value(), {1, 2}},
      {"bool mask hides key 1", {}, tensor<bool>({2}, {true, false}), {1, 1}},
      {"bool mask shorter than the keys is padded with false", {}, tensor<bool>({1}, {true}), {1, 1}},
      {"additive mask per row", {}, tensor<float>({2, 2}, {-INFINITY, 0, 0, 0}), {3, 2}},
      {"causal and a bool mask combine", {attr("is_causal", int64_t(1))}, tensor<bool>({2}, {true, false}), {1, 1}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto out = run_with(attention(c.attrs, {"Q", "K", "V", "mask"}), {Q0, K2, V2, c.mask});
    check_equal(out[0], tensor<float>({1, 1, 2, 1}, c.expected));
  }
}

TEST_CASE("Attention with a KV cache: causal offset is the past length; present = past ++ new") {
  // One new query and key after one cached key; the query sees both.
  const Tensor q = tensor<float>({1, 1, 1, 1}, {0}), k = tensor<float>({1, 1, 1, 1}, {7}), v = tensor<float>({1, 1, 1, 1}, {3});
  const Tensor pk = tensor<float>({1, 1, 1, 1}, {5}), pv = tensor<float>({1, 1, 1, 1}, {1});
  auto out = run_with(attention({attr("is_causal", int64_t(1))}, {"Q", "K", "V", "", "pk", "pv"}), {q, k, v, Value(), pk, pv});
  check_equal(out[0], tensor<float>({1, 1, 1, 1}, {2}));
  check_equal(out[1], tensor<float>({1, 1, 2, 1}, {5, 7}));
  check_equal(out[2], tensor<float>({1, 1, 2, 1}, {1, 3}));
}

TEST_CASE("Attention groups query heads over KV heads; 3-D inputs pack heads") {
  // Two query heads share one KV head (GQA); 3-D: (batch 1, seq 1, heads * 1).
  const Tensor q = tensor<double>({1, 1, 2}, {0, 0}), k = tensor<double>({1, 2, 1}, {0, 0}), v = tensor<double>({1, 2, 1}, {1, 5});
  auto out = run_with(attention({attr("q_num_heads", int64_t(2)), attr("kv_num_heads", int64_t(1))}), {q, k, v});
  check_equal(out[0], tensor<double>({1, 1, 2}, {3, 3}));
  check_equal(out[1], tensor<double>({1, 1, 2, 1}, {0, 0}));  // present_key is 4-D
}

TEST_CASE("Attention qk_matmul_output modes") {
  // Scores are q.k * scale = 2 * 1 * {1, 2}: {2, 4}; softcap 1 gives tanh.
  const Tensor q = tensor<float>({1, 1, 1, 1}, {2}), k = tensor<float>({1, 1, 2, 1}, {1, 2}), v = tensor<float>({1, 1, 2, 1}, {0, 0});
  const Tensor mask = tensor<float>({1, 2}, {0, -1});
  const float e = std::exp(1.0f);
  struct Case { int64_t mode; std::vector<float> expected; };
  const Case cases[] = {{0, {2, 4}}, {2, {2, 3}}, {3, {1 / (1 + e), e / (1 + e)}}};
  for (const auto& c : cases) {
    CAPTURE(c.mode);
    auto out = run_with(attention({attr("scale", 1.0f), attr("qk_matmul_output_mode", c.mode)}, {"Q", "K", "V", "m"}), {q, k, v, mask});
    check_equal(out[3], tensor<float>({1, 1, 1, 2}, c.expected));
  }
  auto capped = run_with(attention({attr("scale", 1.0f), attr("softcap", 1.0f)}), {q, k, v});
  check_equal(capped[3], tensor<float>({1, 1, 1, 2}, {std::tanh(2.0f), std::tanh(4.0f)}));
}

TEST_CASE("Attention input errors") {
  const Tensor q3 = tensor<float>({1, 1, 2}, {0, 0});
  CHECK_THROWS_WITH_AS(run_with(attention({}), {q3, q3, q3}), doctest::Contains("q_num_heads and kv_num_heads"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "m"}), {Q0, K2, V2, tensor<bool>({3}, {true, true, true})}),
                       doctest::Contains("exceeds the total sequence length"), Error);
  CHECK_THROWS_WITH_AS(run_with(attention({}, {"Q", "K", "V", "m"}), {Q0, K2, V2, tensor<bool>({3, 2}, {1, 1, 1, 1, 1, 1})}),
                       doctest::Contains("does not broadcast"), Error);
  CHECK_THROWS_AS(run_with(attention({attr("qk_matmul_output_mode", int64_t(4))}), {Q0, K2, V2}), Error);
}
