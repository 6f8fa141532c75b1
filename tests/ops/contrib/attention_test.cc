// com.microsoft Attention: a hand-computed one-head case under every mask_index form,
// unidirectional, past/present concatenation, attention_bias, and agreement with the GPT-2
// subgraph (MatMul, Add, Split, Reshape, Transpose, MatMul, Div, Where, Softmax, MatMul) it fuses.
#include "refeval/compute_vector.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
// One head of size 2 over two tokens x = identity rows, so Q = K = identity and V = [[1, 2], [3, 4]].
// Unmasked, token 0 attends with softmax(1/sqrt2, 0) = (0.66976, 0.33024): out = (1.66048, 2.66048).
const Tensor kX = tensor<float>({1, 2, 2}, {1, 0, 0, 1});
const Tensor kW = tensor<float>({2, 6}, {1, 0, 1, 0, 1, 2,    // q0 | k0 | v0
                                         0, 1, 0, 1, 3, 4});  // q1 | k1 | v1
const Tensor kBoth = tensor<float>({1, 2, 2}, {1.6604769f, 2.6604769f, 2.3395231f, 3.3395231f});

Values attention(std::vector<std::string> ins, Values feeds, std::vector<Attribute> attrs, std::vector<std::string> outs = {"y"}) {
  attrs.push_back(attr("num_heads", int64_t(1)));
  return run_node(node("Attention", std::move(ins), std::move(outs), std::move(attrs), "attn", "com.microsoft"), feeds);
}
Value masked(const Tensor& mask, std::vector<Attribute> attrs = {}) {
  return attention({"x", "w", "", "mask"}, {kX, kW, Value(), mask}, std::move(attrs))[0];
}
// A standard op on its own.
Value op(const char* type, Values feeds, std::vector<Attribute> attrs = {}, size_t outputs = 1) {
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < feeds.size(); ++i) ins.push_back("i" + std::to_string(i));
  for (size_t i = 0; i < outputs; ++i) outs.push_back("o" + std::to_string(i));
  return run_node(node(type, ins, outs, std::move(attrs)), feeds, 18)[0];
}
}  // namespace

TEST_CASE("Attention: hand-computed head under each mask_index form") {
  const Tensor first_only = tensor<float>({1, 2, 2}, {1, 2, 1, 2}), second_only = tensor<float>({1, 2, 2}, {3, 4, 3, 4});
  struct Case { const char* what; Tensor mask; Tensor expected; };
  const Case cases[] = {
      {"(B) key length 1: only key 0", tensor<int32_t>({1}, {1}), first_only},
      {"(2B) end 2, start 1: only key 1", tensor<int32_t>({2}, {2, 1}), second_only},
      {"(B, T) raw mask hides key 0", tensor<int32_t>({1, 2}, {0, 1}), second_only},
      {"(B, S, T) per query: token 1 loses key 1", tensor<int32_t>({1, 2, 2}, {1, 1, 1, 0}),
       tensor<float>({1, 2, 2}, {1.6604769f, 2.6604769f, 1, 2})},
      {"(1, 1) is a dummy mask: nothing hidden", tensor<int32_t>({1, 1}, {0}), kBoth},
      {"(B, 1, M, M) Megatron mask, M = 3 > T", tensor<int32_t>({1, 1, 3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1}),
       tensor<float>({1, 2, 2}, {1, 2, 2.3395231f, 3.3395231f})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(masked(c.mask), c.expected);
  }
  check_equal(attention({"x", "w"}, {kX, kW}, {})[0], kBoth);
}

TEST_CASE("Attention: unidirectional, bias, scale and attention_bias") {
  // token 0 may only see itself
  check_equal(attention({"x", "w"}, {kX, kW}, {attr("unidirectional", int64_t(1))})[0],
              tensor<float>({1, 2, 2}, {1, 2, 2.3395231f, 3.3395231f}));
  // a bias on V's columns shifts every output by it
  check_equal(attention({"x", "w", "b"}, {kX, kW, tensor<float>({6}, {0, 0, 0, 0, 1, -1})}, {})[0],
              tensor<float>({1, 2, 2}, {2.6604769f, 1.6604769f, 3.3395231f, 2.3395231f}));
  // scale 0 is ORT's "not set": 1 / sqrt(h), as without the attribute (ONNX Runtime 1.30's CPU kernel,
  // tests/data/ort/contrib_edges attn_scale0); scale 1e-30 is (nearly) uniform attention
  check_equal(attention({"x", "w"}, {kX, kW}, {attr("scale", 0.0f)})[0], attention({"x", "w"}, {kX, kW}, {})[0]);
  check_equal(attention({"x", "w"}, {kX, kW}, {attr("scale", 1e-30f)})[0], tensor<float>({1, 2, 2}, {2, 3, 2, 3}));
  // attention_bias -1000 on (token 0, key 1)
  check_equal(attention({"x", "w", "", "", "", "ab"}, {kX, kW, Value(), Value(), Value(), tensor<float>({1, 1, 2, 2}, {0, -1000, 0, 0})}, {})[0],
              tensor<float>({1, 2, 2}, {1, 2, 2.3395231f, 3.3395231f}));
}

TEST_CASE("Attention: past keys and values come first, present stacks them") {
  // one new token (q = k = [1, 0], v = [1, 2]) after a past key [2, 0] with value [10, 10]
  const Tensor x = tensor<float>({1, 1, 2}, {1, 0});
  const Tensor past = tensor<float>({2, 1, 1, 1, 2}, {2, 0, 10, 10});
  for (int64_t uni : {0, 1}) {  // causal allows both: key j <= past + i
    CAPTURE(uni);
    const Values out = attention({"x", "w", "", "", "past"}, {x, kW, Value(), Value(), past}, {attr("unidirectional", uni)}, {"y", "present"});
    REQUIRE(out.size() == 2);
    check_equal(out[0], tensor<float>({1, 1, 2}, {7.0278539f, 7.3580924f}));
    check_equal(out[1], tensor<float>({2, 1, 1, 2, 2}, {2, 0, 1, 0, 10, 10, 1, 2}));
  }
}

TEST_CASE("Attention equals the unidirectional GPT-2 subgraph run as standard ops") {
  // B 2, S 3, hidden 4, 2 heads of 2
  std::vector<float> xv(24), wv(48), bv(12);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(float(i) * 0.7f);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(float(i) * 0.3f);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = 0.1f * float(i) - 0.5f;
  const Tensor x = tensor<float>({2, 3, 4}, xv), w = tensor<float>({4, 12}, wv), b = tensor<float>({12}, bv);
  const Values fused = run_node(node("Attention", {"x", "w", "b"}, {"y"}, {attr("num_heads", int64_t(2)), attr("unidirectional", int64_t(1))},
                                     "attn", "com.microsoft"), {x, w, b});

  const Value qkv = op("Add", {op("MatMul", {x, w}), b});
  Values parts = run_node(node("Split", {"x"}, {"q", "k", "v"}, {attr("axis", int64_t(2)), attr("num_outputs", int64_t(3))}), {qkv}, 18);
  const Tensor heads_shape = tensor<int64_t>({4}, {2, 3, 2, 2});
  auto to_heads = [&](const Value& t, std::vector<int64_t> perm) { return op("Transpose", {op("Reshape", {t, heads_shape})}, {attr("perm", perm)}); };
  const Value q = to_heads(parts[0], {0, 2, 1, 3}), kt = to_heads(parts[1], {0, 2, 3, 1}), v = to_heads(parts[2], {0, 2, 1, 3});
  const Value scores = op("Div", {op("MatMul", {q, kt}), Tensor::scalar<float>(std::sqrt(2.0f))});
  const Tensor causal = tensor<bool>({3, 3}, {true, false, false, true, true, false, true, true, true});
  const Value probs = op("Softmax", {op("Where", {causal, scores, Tensor::scalar<float>(-10000.0f)})}, {attr("axis", int64_t(-1))});
  const Value ctx = op("Transpose", {op("MatMul", {probs, v})}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
  check_equal(fused[0], op("Reshape", {ctx, tensor<int64_t>({3}, {2, 3, 4})}), {1e-4, 1e-6});
}

TEST_CASE("Attention errors name the input and the expected shape") {
  CHECK_THROWS_WITH_AS(masked(tensor<int32_t>({3}, {1, 1, 1})), doctest::Contains("mask_index has shape (3,); expected (1), (2)"), Error);
  CHECK_THROWS_WITH_AS(attention({"x", "w"}, {kX, tensor<float>({3, 6}, std::vector<float>(18, 0))}, {}),
                       doctest::Contains("weights has shape (3, 6), expected 2 rows"), Error);
  CHECK_THROWS_WITH_AS(attention({"x", "w", "", "", "past"}, {kX, kW, Value(), Value(), tensor<float>({2, 1, 1, 1, 3}, std::vector<float>(6, 0))}, {}),
                       doctest::Contains("past has shape (2, 1, 1, 1, 3), expected (2, 1, 1, past_sequence_length, 2)"), Error);
  CHECK_THROWS_WITH_AS(attention({"x", "w"}, {kX, tensor<float>({2, 5}, std::vector<float>(10, 0))}, {}),
                       doctest::Contains("not 3 equal parts"), Error);
  CHECK_THROWS_WITH_AS(run_node(node("Attention", {"x", "w"}, {"y"}, {}, "attn", "com.microsoft"), {kX, kW}),
                       doctest::Contains("num_heads"), Error);
}

namespace {
Tensor to_half(const Tensor& t) { return from_doubles(DType::Float16, t.shape(), to_doubles(t)); }
}  // namespace

TEST_CASE("Attention in float16 (computed in double): no bias, the Megatron and dummy masks, present") {
  // The hand-computed head of the first test case, in half (its values are exact there); outputs
  // held to half's rounding (2^-11 relative).
  const Tolerance half_ulp{1e-3, 1e-3};
  const Tensor x = to_half(kX), w = to_half(kW);
  check_equal(attention({"x", "w"}, {x, w}, {})[0], to_half(kBoth), half_ulp);
  check_equal(attention({"x", "w", "", "mask"}, {x, w, Value(), tensor<int32_t>({1, 1, 3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1})}, {})[0],
              to_half(tensor<float>({1, 2, 2}, {1, 2, 2.3395231f, 3.3395231f})), half_ulp);
  check_equal(attention({"x", "w", "", "mask"}, {x, w, Value(), tensor<int32_t>({1, 1}, {0})}, {})[0], to_half(kBoth), half_ulp);
  // bias on V's columns, and present = stack(K, V) without a past
  const Values out = attention({"x", "w", "b"}, {x, w, to_half(tensor<float>({6}, {0, 0, 0, 0, 1, -1}))}, {}, {"y", "present"});
  REQUIRE(out.size() == 2);
  check_equal(out[0], to_half(tensor<float>({1, 2, 2}, {2.6604769f, 1.6604769f, 3.3395231f, 2.3395231f})), half_ulp);
  check_equal(out[1], to_half(tensor<float>({2, 1, 1, 2, 2}, {1, 0, 0, 1, 2, 1, 4, 3})));
}

TEST_CASE("Attention refuses what it does not implement and sizes that do not fit") {
  auto with = [&](std::vector<Attribute> attrs, std::vector<std::string> ins = {"x", "w"}, Values feeds = {kX, kW},
                  std::vector<std::string> outs = {"y"}) { return attention(std::move(ins), std::move(feeds), std::move(attrs), std::move(outs)); };
  using Sizes = std::vector<int64_t>;
  const std::string A = "node 'attn' (com.microsoft:Attention): ";
  // qkv_hidden_sizes: three positive sizes, Q's equal to K's, each a multiple of num_heads (1 here, 2 below)
  for (const Sizes& sizes : {Sizes{2, 2}, Sizes{2, 3, 2}, Sizes{0, 0, 2}, Sizes{2, 2, 0}}) {
    CAPTURE(sizes.size());
    CHECK_THROWS_WITH_AS(with({attr("qkv_hidden_sizes", sizes)}), (A + "qkv_hidden_sizes must be three positive sizes with Q's equal to K's").c_str(), Error);
  }
  CHECK_THROWS_WITH_AS(run_node(node("Attention", {"x", "w"}, {"y"}, {attr("num_heads", int64_t(2)), attr("qkv_hidden_sizes", Sizes{2, 2, 3})}, "attn",
                                     "com.microsoft"), {kX, kW}),
                       (A + "qkv_hidden_sizes 3 is not a multiple of num_heads 2").c_str(), Error);
  CHECK_THROWS_WITH_AS(with({attr("past_present_share_buffer", int64_t(1))}), (A + "past_present_share_buffer=1 is not supported").c_str(), Error);
  CHECK_THROWS_WITH_AS(with({attr("do_rotary", int64_t(1))}), (A + "do_rotary=1 is not supported").c_str(), Error);
  CHECK_THROWS_WITH_AS(with({}, {"x", "w", "", "", "", "", "psl"}, {kX, kW, Value(), Value(), Value(), Value(), tensor<int32_t>({1}, {0})}), (A + "input past_sequence_length (buffer sharing) is not supported").c_str(),
                       Error);
  // qkv_hidden_sizes 2, 2, 4 wants 8 columns; with them, past and present need V's size equal to K's
  CHECK_THROWS_WITH_AS(with({attr("qkv_hidden_sizes", Sizes{2, 2, 4})}), (A + "weights has 6 columns, expected 8 (qkv_hidden_sizes)").c_str(), Error);
  const Tensor w8 = tensor<float>({2, 8}, std::vector<float>(16, 0.5f));
  CHECK_THROWS_WITH_AS(with({attr("qkv_hidden_sizes", Sizes{2, 2, 4})}, {"x", "w", "", "", "past"},
                            {kX, w8, Value(), Value(), tensor<float>({2, 1, 1, 1, 2}, {0, 0, 0, 0})}),
                       (A + "past needs equal hidden sizes for Q, K and V").c_str(), Error);
  CHECK_THROWS_WITH_AS(with({attr("qkv_hidden_sizes", Sizes{2, 2, 4})}, {"x", "w"}, {kX, w8}, {"y", "present"}), (A + "output present needs equal hidden sizes for K and V").c_str(), Error);
  // past: the input's element type and rank 5
  CHECK_THROWS_WITH_AS(with({}, {"x", "w", "", "", "past"}, {kX, kW, Value(), Value(), tensor<double>({2, 1, 1, 1, 2}, {0, 0, 0, 0})}), (A + "past has element type double, expected float").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(with({}, {"x", "w", "", "", "past"}, {kX, kW, Value(), Value(), tensor<float>({2, 1, 1, 2}, {0, 0, 0, 0})}), (A + "past has shape (2, 1, 1, 2), expected (2, 1, 1, past_sequence_length, 2)").c_str(),
                       Error);  // input (B, S, hidden) and weights (hidden, width) by rank
  CHECK_THROWS_WITH_AS(with({}, {"x", "w"}, {tensor<float>({2, 2}, {1, 0, 0, 1}), kW}), (A + "input must have rank 3, got shape (2, 2)").c_str(), Error);
  CHECK_THROWS_WITH_AS(with({}, {"x", "w"}, {kX, tensor<float>({1, 2, 6}, std::vector<float>(12, 0))}),
                       (A + "weights must have rank 2, got shape (1, 2, 6)").c_str(), Error);
}
