// com.microsoft MultiHeadAttention: the one-head example of attention_test.cc given as separate,
// packed QKV, packed KV and BNSH inputs; bias, key_padding_mask, unidirectional, past/present;
// cross attention (S != L) against Reshape/Transpose/MatMul/Softmax run as standard ops; errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "refeval/compute_vector.h"
#include "refeval/threads.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
// Q = K = identity rows, V = [[1, 2], [3, 4]], one head of 2: see attention_test.cc.
const Tensor kQ = tensor<float>({1, 2, 2}, {1, 0, 0, 1}), kV = tensor<float>({1, 2, 2}, {1, 2, 3, 4});
const Tensor kBoth = tensor<float>({1, 2, 2}, {1.6604769f, 2.6604769f, 2.3395231f, 3.3395231f});

Values mha(std::vector<std::string> ins, Values feeds, std::vector<Attribute> attrs = {}, std::vector<std::string> outs = {"y"},
           int64_t heads = 1) {
  attrs.push_back(attr("num_heads", heads));
  return run_node(node("MultiHeadAttention", std::move(ins), std::move(outs), std::move(attrs), "mha", "com.microsoft"), feeds);
}
Value op(const char* type, Values feeds, std::vector<Attribute> attrs = {}) {
  std::vector<std::string> ins;
  for (size_t i = 0; i < feeds.size(); ++i) ins.push_back("i" + std::to_string(i));
  return run_node(node(type, ins, {"o"}, std::move(attrs)), feeds, 18)[0];
}
}  // namespace

TEST_CASE("MultiHeadAttention: the same head from every input layout") {
  struct Case { const char* what; std::vector<std::string> ins; Values feeds; };
  const Case cases[] = {
      {"separate (B, L, D)", {"q", "k", "v"}, {kQ, kQ, kV}},
      // (B, S, N, 3, h): per token q | k | v
      {"packed QKV", {"qkv"}, {tensor<float>({1, 2, 1, 3, 2}, {1, 0, 1, 0, 1, 2, 0, 1, 0, 1, 3, 4})}},
      // (B, L, N, 2, h): per token k | v
      {"packed KV", {"q", "kv"}, {kQ, tensor<float>({1, 2, 1, 2, 2}, {1, 0, 1, 2, 0, 1, 3, 4})}},
      {"BNSH key and value", {"q", "k", "v"}, {kQ, tensor<float>({1, 1, 2, 2}, {1, 0, 0, 1}), tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4})}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(mha(c.ins, c.feeds)[0], kBoth);
  }
}

TEST_CASE("MultiHeadAttention: bias, key_padding_mask, unidirectional, past and present") {
  check_equal(mha({"q", "k", "v", "b"}, {kQ, kQ, kV, tensor<float>({6}, {0, 0, 0, 0, 1, -1})})[0],
              tensor<float>({1, 2, 2}, {2.6604769f, 1.6604769f, 3.3395231f, 2.3395231f}));
  check_equal(mha({"q", "k", "v", "", "mask"}, {kQ, kQ, kV, Value(), tensor<int32_t>({1, 2}, {0, 1})})[0],
              tensor<float>({1, 2, 2}, {3, 4, 3, 4}));
  check_equal(mha({"q", "k", "v"}, {kQ, kQ, kV}, {attr("unidirectional", int64_t(1))})[0],
              tensor<float>({1, 2, 2}, {1, 2, 2.3395231f, 3.3395231f}));
  // one new token after a past key [2, 0] with value [10, 10]
  const Tensor t = tensor<float>({1, 1, 2}, {1, 0});
  const Values out = mha({"q", "k", "v", "", "", "", "pk", "pv"},
                         {t, t, tensor<float>({1, 1, 2}, {1, 2}), Value(), Value(), Value(), tensor<float>({1, 1, 1, 2}, {2, 0}),
                          tensor<float>({1, 1, 1, 2}, {10, 10})},
                         {}, {"y", "present_key", "present_value"});
  REQUIRE(out.size() == 3);
  check_equal(out[0], tensor<float>({1, 1, 2}, {7.0278539f, 7.3580924f}));
  check_equal(out[1], tensor<float>({1, 1, 2, 2}, {2, 0, 1, 0}));
  check_equal(out[2], tensor<float>({1, 1, 2, 2}, {10, 10, 1, 2}));
}

TEST_CASE("MultiHeadAttention decoding step: many heads, a long past and a bias against a double oracle, on 1 and 2 threads") {
  // One query row takes its scores as dot products (head size 20: two blocks of 8 and a tail of 4)
  // and its output as a sum of value rows; heads split across the threads must give the same bits.
  const int64_t B = 2, N = 6, h = 20, P = 300, T = P + 1, D = N * h;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-1, 1);
  auto values = [&](int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    for (float& x : out) x = u(gen);
    return out;
  };
  const std::vector<float> q = values(B * D), k = values(B * D), v = values(B * D), pk = values(B * N * P * h),
                           pv = values(B * N * P * h), bias = values(3 * D);
  const Values feeds = {tensor<float>({B, 1, D}, q), tensor<float>({B, 1, D}, k), tensor<float>({B, 1, D}, v),
                        tensor<float>({3 * D}, bias), Value(), Value(), tensor<float>({B, N, P, h}, pk),
                        tensor<float>({B, N, P, h}, pv)};
  const std::vector<std::string> ins = {"q", "k", "v", "b", "", "", "pk", "pv"};
  set_thread_count(1);
  const Values one = mha(ins, feeds, {}, {"y", "present_key", "present_value"}, N);
  set_thread_count(2);
  const Values two = mha(ins, feeds, {}, {"y", "present_key", "present_value"}, N);
  set_thread_count(1);
  REQUIRE(one.size() == 3);
  REQUIRE(two.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const Tensor &x = one[i].tensor(), &y = two[i].tensor();
    REQUIRE(x.shape() == y.shape());
    CHECK(std::memcmp(x.data<float>(), y.data<float>(), size_t(x.size()) * sizeof(float)) == 0);
  }
  // the oracle: keys and values are past ++ (new + bias), queries q + bias, scale 1/sqrt(h)
  std::vector<double> want(static_cast<size_t>(B * D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      auto key = [&](int64_t j, int64_t d) {
        return j < P ? double(pk[size_t(((b * N + n) * P + j) * h + d)]) : double(k[size_t(b * D + n * h + d)]) + bias[size_t(D + n * h + d)];
      };
      auto value = [&](int64_t j, int64_t d) {
        return j < P ? double(pv[size_t(((b * N + n) * P + j) * h + d)]) : double(v[size_t(b * D + n * h + d)]) + bias[size_t(2 * D + n * h + d)];
      };
      std::vector<double> score(static_cast<size_t>(T));
      double top = -1e300, sum = 0;
      for (int64_t j = 0; j < T; ++j) {
        double s = 0;
        for (int64_t d = 0; d < h; ++d) s += (double(q[size_t(b * D + n * h + d)]) + bias[size_t(n * h + d)]) * key(j, d);
        score[size_t(j)] = s / std::sqrt(double(h));
        top = std::max(top, score[size_t(j)]);
      }
      for (double& s : score) sum += s = std::exp(s - top);
      for (int64_t d = 0; d < h; ++d) {
        double y = 0;
        for (int64_t j = 0; j < T; ++j) y += score[size_t(j)] / sum * value(j, d);
        want[size_t(b * D + n * h + d)] = y;
      }
    }
  check_equal(one[0], from_doubles(DType::Float, {B, 1, D}, want), {1e-5, 1e-6});
}

TEST_CASE("MultiHeadAttention: a masked score is a float, so a row whose every key is masked by -1e9 is uniform") {
  // Query 0's keys both carry -1e9 (Meta's llama padding bias on a left-padded row's first
  // query): in float, as ONNX Runtime's kernel and the unfused export compute, score - 1e9 is
  // -1e9 for both keys, and the query averages the values; double kept the scores' ranking.
  // Query 1 is unmasked. A bias of float's lowest on both keys is uniform too.
  for (float filler : {-1e9f, std::numeric_limits<float>::lowest()}) {
    CAPTURE(filler);
    const Tensor bias = tensor<float>({1, 1, 2, 2}, {filler, filler, 0, 0});
    check_equal(mha({"q", "k", "v", "", "", "bias"}, {kQ, kQ, kV, Value(), Value(), bias})[0],
                tensor<float>({1, 2, 2}, {2, 3, 2.3395231f, 3.3395231f}));
  }
}

TEST_CASE("MultiHeadAttention cross attention equals the standard-op graph") {
  // B 1, S 2 queries, L 3 keys, 2 heads of 2
  std::vector<float> qv(4 * 2), kv(4 * 3), vv(4 * 3);
  for (size_t i = 0; i < qv.size(); ++i) qv[i] = std::sin(0.9f * float(i));
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = std::cos(0.4f * float(i));
  for (size_t i = 0; i < vv.size(); ++i) vv[i] = 0.25f * float(i) - 1;
  const Tensor q = tensor<float>({1, 2, 4}, qv), k = tensor<float>({1, 3, 4}, kv), v = tensor<float>({1, 3, 4}, vv);
  const Value fused = mha({"q", "k", "v"}, {q, k, v}, {}, {"y"}, 2)[0];
  auto heads = [&](const Tensor& t, int64_t len, std::vector<int64_t> perm) {
    return op("Transpose", {op("Reshape", {t, tensor<int64_t>({4}, {1, len, 2, 2})})}, {attr("perm", perm)});
  };
  const Value scores = op("Div", {op("MatMul", {heads(q, 2, {0, 2, 1, 3}), heads(k, 3, {0, 2, 3, 1})}), Tensor::scalar<float>(std::sqrt(2.0f))});
  const Value ctx = op("MatMul", {op("Softmax", {scores}, {attr("axis", int64_t(-1))}), heads(v, 3, {0, 2, 1, 3})});
  const Value expected = op("Reshape", {op("Transpose", {ctx}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})}), tensor<int64_t>({3}, {1, 2, 4})});
  check_equal(fused, expected, {1e-4, 1e-6});
}

TEST_CASE("MultiHeadAttention errors name the input and the expected shape") {
  CHECK_THROWS_WITH_AS(mha({"q", "k", "v"}, {kQ, tensor<float>({1, 2, 3}, {0, 0, 0, 0, 0, 0}), kV}),
                       doctest::Contains("key has shape (1, 2, 3), expected (1, L, 2)"), Error);
  CHECK_THROWS_WITH_AS(mha({"q", "k", "v", "", "", "", "pk", "pv"}, {kQ, kQ, kV, Value(), Value(), Value(), tensor<float>({1, 1, 1, 3}, {0, 0, 0}), tensor<float>({1, 1, 1, 2}, {0, 0})}),
                       doctest::Contains("past_key has shape (1, 1, 1, 3), expected (1, 1, 1, 2)"), Error);
  CHECK_THROWS_WITH_AS(mha({"q", "k", "v", "", "", "", "pk"}, {kQ, kQ, kV, Value(), Value(), Value(), tensor<float>({1, 1, 1, 2}, {0, 0})}),
                       doctest::Contains("past_key and past_value must be given together"), Error);
}

TEST_CASE("MultiHeadAttention's qk output is the pre-softmax scores (B, N, S, T); a scale of 0 is ORT's unset one") {
  // Q = K = identity rows, one head of 2: q . k / sqrt(2) is the identity over sqrt(2)
  const float d = 1 / std::sqrt(2.0f);
  for (const std::vector<Attribute>& attrs : {std::vector<Attribute>{}, std::vector<Attribute>{attr("scale", 0.0f)}}) {
    const Values out = mha({"q", "k", "v"}, {kQ, kQ, kV}, attrs, {"y", "", "", "qk"});
    REQUIRE(out.size() == 2);  // y and qk (the unnamed presents are not outputs)
    check_equal(out[1], tensor<float>({1, 1, 2, 2}, {d, 0, 0, d}), {1e-6, 1e-7});
    check_equal(out[0], kBoth, {1e-6, 1e-7});
  }
}

namespace {
Tensor to_half(const Tensor& t) { return from_doubles(DType::Float16, t.shape(), to_doubles(t)); }
}  // namespace

TEST_CASE("MultiHeadAttention in float16 (computed in double): the same head from every input layout, with a bias") {
  // The first test case's head in half (exact there), V's bias (0, 0 | 1, -1) swapping its
  // outputs' order as in the second; held to half's rounding.
  const Tensor bias = to_half(tensor<float>({6}, {0, 0, 0, 0, 1, -1}));
  const Tensor want = to_half(tensor<float>({1, 2, 2}, {2.6604769f, 1.6604769f, 3.3395231f, 2.3395231f}));
  const Tensor q = to_half(kQ), v = to_half(kV);
  struct Case { const char* what; std::vector<std::string> ins; Values feeds; };
  const Case cases[] = {
      {"separate (B, L, D)", {"q", "k", "v", "b"}, {q, q, v, bias}},
      {"packed QKV", {"qkv", "", "", "b"}, {to_half(tensor<float>({1, 2, 1, 3, 2}, {1, 0, 1, 0, 1, 2, 0, 1, 0, 1, 3, 4})), Value(), Value(), bias}},
      {"packed KV", {"q", "kv", "", "b"}, {q, to_half(tensor<float>({1, 2, 1, 2, 2}, {1, 0, 1, 2, 0, 1, 3, 4})), Value(), bias}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(mha(c.ins, c.feeds)[0], want, {1e-3, 1e-3});
  }
  // BNSH key and value take no bias of their own: V's part of the bias is not added
  check_equal(mha({"q", "k", "v"}, {q, to_half(tensor<float>({1, 1, 2, 2}, {1, 0, 0, 1})), to_half(tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4}))})[0],
              to_half(kBoth), {1e-3, 1e-3});
}

TEST_CASE("MultiHeadAttention refuses inputs of the wrong form, one line each") {
  const std::string A = "node 'mha' (com.microsoft:MultiHeadAttention): ";
  const Tensor qkv = tensor<float>({1, 2, 1, 3, 2}, std::vector<float>(12, 0)), kv = tensor<float>({1, 2, 1, 2, 2}, std::vector<float>(8, 0));
  const Tensor bnsh = tensor<float>({1, 1, 2, 2}, {1, 0, 0, 1});
  struct Case { const char* message; std::vector<std::string> ins; Values feeds; };
  const Case cases[] = {
      {"packed QKV query (rank 5) takes no key or value", {"qkv", "k"}, {qkv, kQ}},
      {"query has shape (1, 2, 1, 2, 2), expected (B, S, 1, 3, h)", {"qkv"}, {kv}},
      {"packed KV key (rank 5) takes no value", {"q", "kv", "v"}, {kQ, kv, kV}},
      {"key has shape (1, 2, 1, 2, 3), expected (1, L, 1, 2, 2)", {"q", "kv"}, {kQ, tensor<float>({1, 2, 1, 2, 3}, std::vector<float>(12, 0))}},
      {"key has shape (1, 1, 2, 3), expected (1, 1, L, 2)", {"q", "k", "v"}, {kQ, tensor<float>({1, 1, 2, 3}, std::vector<float>(6, 0)), bnsh}},
      {"value must have rank 4, got shape (1, 2, 2)", {"q", "k", "v"}, {kQ, bnsh, kV}},
      {"value has shape (1, 1, 3, 2), expected (1, 1, 2, hv)", {"q", "k", "v"}, {kQ, bnsh, tensor<float>({1, 1, 3, 2}, std::vector<float>(6, 0))}},
      {"past_key cannot be combined with key and value in (B, N, L, h) form", {"q", "k", "v", "", "", "", "pk", "pv"},
       {kQ, bnsh, bnsh, Value(), Value(), Value(), bnsh, bnsh}},
      {"value has shape (1, 3, 2), expected (1, 2, a multiple of 1)", {"q", "k", "v"}, {kQ, kQ, tensor<float>({1, 3, 2}, std::vector<float>(6, 0))}},
      {"query's hidden size 3 is not a multiple of num_heads 2", {"q", "k", "v"}, {tensor<float>({1, 1, 3}, {0, 0, 0}), kQ, kV}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(mha(c.ins, c.feeds, {}, {"y"}, std::string(c.message).find("num_heads 2") != std::string::npos ? 2 : 1),
                         (A + c.message).c_str(), Error);
  }
  // buffer sharing and beam search inputs are refused when the node is made
  for (const char* extra : {"psl", "ci"}) {
    CAPTURE(extra);
    std::vector<std::string> ins = {"q", "k", "v", "", "", "", "", "", std::string(extra) == "psl" ? "psl" : ""};
    if (std::string(extra) == "ci") ins.push_back("ci");
    CHECK_THROWS_WITH_AS(mha(ins, {kQ, kQ, kV}), (A + "inputs past_sequence_length and cache_indirection are not supported").c_str(), Error);
  }
}

TEST_CASE("MultiHeadAttention refuses attention_bias and key_padding_mask shapes it cannot read, one line each") {
  const std::string A = "node 'mha' (com.microsoft:MultiHeadAttention): ";
  auto zeros = [](Shape s) { return tensor<float>(s, std::vector<float>(size_t(shape_size(s)), 0.0f)); };
  auto with_bias = [&](const Tensor& bias) { return mha({"q", "k", "v", "", "", "ab"}, {kQ, kQ, kV, Value(), Value(), bias}); };
  const std::string expected = ", expected (1 or 1, 1 or 1, 2, 2)";
  for (const Shape& s : {Shape{1, 2, 2}, Shape{2, 1, 2, 2}, Shape{1, 2, 2, 2}, Shape{1, 1, 3, 2}, Shape{1, 1, 2, 3}}) {
    CAPTURE(shape_to_string(s));
    CHECK_THROWS_WITH_AS(with_bias(zeros(s)), (A + "attention_bias has shape " + shape_to_string(s) + expected).c_str(), Error);
  }
  CHECK_THROWS_WITH_AS(with_bias(tensor<double>({1, 1, 2, 2}, {0, 0, 0, 0})), (A + "attention_bias has element type double, expected float").c_str(), Error);
  // a 4-D mask must be (B, 1, M, M) with M >= past + S
  for (const Shape& s : {Shape{1, 1, 2, 3}, Shape{1, 1, 1, 1}, Shape{1, 2, 2, 2}}) {
    CAPTURE(shape_to_string(s));
    CHECK_THROWS_WITH_AS(mha({"q", "k", "v", "", "m"}, {kQ, kQ, kV, Value(), tensor<int32_t>(s, std::vector<int32_t>(size_t(shape_size(s)), 1))}),
                         (A + "key_padding_mask has shape " + shape_to_string(s) + "; expected (1), (2), (1, 2), (1, 2, 2) or (1, 1, M, M) with M >= 2").c_str(),
                         Error);
  }
}

TEST_CASE("MultiHeadAttention refuses each dimension of each input form that disagrees") {
  const std::string A = "node 'mha' (com.microsoft:MultiHeadAttention): ";
  auto zeros = [](Shape s) { return tensor<float>(s, std::vector<float>(size_t(shape_size(s)), 0.0f)); };
  const Tensor bnsh = zeros({1, 1, 2, 2});
  struct Case { std::string message; std::vector<std::string> ins; Values feeds; int64_t heads = 1; };
  const Case cases[] = {
      {"query has shape (1, 2, 2, 3, 2), expected (B, S, 1, 3, h)", {"qkv"}, {zeros({1, 2, 2, 3, 2})}},
      {"key has shape (2, 2, 1, 2, 2), expected (1, L, 1, 2, 2)", {"q", "kv"}, {kQ, zeros({2, 2, 1, 2, 2})}},
      {"key has shape (1, 2, 2, 2, 2), expected (1, L, 1, 2, 2)", {"q", "kv"}, {kQ, zeros({1, 2, 2, 2, 2})}},
      {"key has shape (1, 2, 1, 3, 2), expected (1, L, 1, 2, 2)", {"q", "kv"}, {kQ, zeros({1, 2, 1, 3, 2})}},
      {"key has shape (2, 1, 2, 2), expected (1, 1, L, 2)", {"q", "k", "v"}, {kQ, zeros({2, 1, 2, 2}), bnsh}},
      {"key has shape (1, 2, 2, 2), expected (1, 1, L, 2)", {"q", "k", "v"}, {kQ, zeros({1, 2, 2, 2}), bnsh}},
      {"value has shape (2, 1, 2, 2), expected (1, 1, 2, hv)", {"q", "k", "v"}, {kQ, bnsh, zeros({2, 1, 2, 2})}},
      {"value has shape (1, 2, 2, 2), expected (1, 1, 2, hv)", {"q", "k", "v"}, {kQ, bnsh, zeros({1, 2, 2, 2})}},
      {"key has shape (2, 2, 2), expected (1, L, 2)", {"q", "k", "v"}, {kQ, zeros({2, 2, 2}), kV}},
      {"value has shape (2, 2, 2), expected (1, 2, a multiple of 1)", {"q", "k", "v"}, {kQ, kQ, zeros({2, 2, 2})}},
      {"value has shape (1, 2, 3), expected (1, 2, a multiple of 2)", {"q", "k", "v"}, {kQ, kQ, zeros({1, 2, 3})}, 2},
      {"past_key and past_value must be given together", {"q", "k", "v", "", "", "", "", "pv"},
       {kQ, kQ, kV, Value(), Value(), Value(), Value(), zeros({1, 1, 1, 2})}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    CHECK_THROWS_WITH_AS(mha(c.ins, c.feeds, {}, {"y"}, c.heads), (A + c.message).c_str(), Error);
  }
}
