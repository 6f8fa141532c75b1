// com.microsoft MoE: every activation, the three swiglu layouts, fc3 gating, k = 1 and 2 with and
// without renormalised routing weights, sparse mixer, ties, legacy weight shapes, float16 and
// errors, against the plain-loop oracle of moe_oracle.h and a hand-computed case.
#include <random>

#include "moe_oracle.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

std::mt19937 rng(7);
double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
std::vector<std::vector<double>> matrix(size_t rows, size_t cols, double lo = -1, double hi = 1) {
  std::vector<std::vector<double>> m(rows, std::vector<double>(cols));
  for (auto& r : m)
    for (auto& v : r) v = uniform(lo, hi);
  return m;
}
moe_oracle::Layer layer(int E, int n, int k, bool bias) {
  moe_oracle::Layer l;
  for (int e = 0; e < E; ++e) l.w.push_back(matrix(size_t(n), size_t(k), -0.5, 0.5));
  if (bias) l.b = matrix(size_t(E), size_t(n), -0.2, 0.2);
  return l;
}
std::vector<float> flat(const std::vector<std::vector<double>>& m) {
  std::vector<float> v;
  for (const auto& r : m)
    for (double x : r) v.push_back(float(x));
  return v;
}
// The oracle works on what the op sees: inputs rounded to float.
std::vector<std::vector<double>> rounded(std::vector<std::vector<double>> m) {
  for (auto& r : m)
    for (auto& v : r) v = double(float(v));
  return m;
}
moe_oracle::Layer rounded(moe_oracle::Layer l) {
  for (auto& m : l.w) m = rounded(m);
  l.b = rounded(l.b);
  return l;
}
Tensor weights(const moe_oracle::Layer& l) {
  std::vector<float> v;
  for (const auto& m : l.w)
    for (float x : flat(m)) v.push_back(x);
  return tensor<float>({int64_t(l.w.size()), int64_t(l.w[0].size()), int64_t(l.w[0][0].size())}, v);
}
Tensor bias(const moe_oracle::Layer& l) { return tensor<float>({int64_t(l.b.size()), int64_t(l.b[0].size())}, flat(l.b)); }

std::vector<Attribute> attrs_of(const moe_oracle::Config& c) {
  std::vector<Attribute> a{attr("k", int64_t(c.k)), attr("activation_type", c.activation),
                           attr("normalize_routing_weights", int64_t(c.normalize))};
  if (c.sparse_mixer) a.push_back(attr("use_sparse_mixer", int64_t(1)));
  if (c.activation == "swiglu") {
    a.push_back(attr("swiglu_fusion", int64_t(c.fusion)));
    if (std::isfinite(c.limit)) a.push_back(attr("swiglu_limit", float(c.limit)));
    a.push_back(attr("activation_alpha", float(c.alpha)));
    a.push_back(attr("activation_beta", float(c.beta)));
  }
  return a;
}

// Runs MoE on random data of the given sizes and compares with the oracle.
void check_moe(const moe_oracle::Config& c, int T, int H, int I, int E, bool with_bias, bool fc3) {
  const int fusion = c.activation == "swiglu" && c.fusion != 0 ? 2 : 1;
  const auto x = rounded(matrix(size_t(T), size_t(H), -2, 2)), logits = rounded(matrix(size_t(T), size_t(E), -2, 2));
  const moe_oracle::Layer fc1 = rounded(layer(E, fusion * I, H, with_bias)), fc2 = rounded(layer(E, H, I, with_bias));
  const moe_oracle::Layer fc3l = fc3 ? rounded(layer(E, I, H, with_bias)) : moe_oracle::Layer{};
  std::vector<std::string> names{"x", "r", "w1", with_bias ? "b1" : "", "w2", with_bias ? "b2" : ""};
  Values in{tensor<float>({T, H}, flat(x)), tensor<float>({T, E}, flat(logits)), weights(fc1),
            with_bias ? Value(bias(fc1)) : Value(), weights(fc2), with_bias ? Value(bias(fc2)) : Value()};
  if (fc3) {
    names.insert(names.end(), {"w3", with_bias ? "b3" : ""});
    in.insert(in.end(), {weights(fc3l), with_bias ? Value(bias(fc3l)) : Value()});
  }
  const Value y = run_node(node("MoE", names, {"y"}, attrs_of(c), "moe", "com.microsoft"), in)[0];
  const auto want = moe_oracle::run(x, logits, nullptr, fc1, fc2, fc3l, c);
  check_equal(y, tensor<float>({T, H}, flat(want)), {1e-5, 1e-6});
}

Value run_moe(const Values& in, std::vector<Attribute> attrs) {
  std::vector<std::string> names{"x", "r", "w1", "b1", "w2", "b2", "w3", "b3"};
  names.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].is_absent()) names[i] = "";
  return run_node(node("MoE", names, {"y"}, std::move(attrs), "moe", "com.microsoft"), in)[0];
}

}  // namespace

TEST_CASE("MoE: a hand-computed token, k = 1 and k = 2") {
  // E = 2 identity experts of hidden 1, inter 1: expert 0 doubles, expert 1 negates. Logits
  // (0, ln 3) give softmax (1/4, 3/4); k = 1 picks expert 1 alone.
  const Tensor x = tensor<float>({1, 1}, {2}), r = tensor<float>({1, 2}, {0, float(std::log(3.0))});
  const Tensor w1 = tensor<float>({2, 1, 1}, {2, -1}), w2 = tensor<float>({2, 1, 1}, {1, 1});
  auto moe = [&](int64_t k, int64_t norm) {
    return run_moe({x, r, w1, Value(), w2}, {attr("k", k), attr("activation_type", "identity"), attr("normalize_routing_weights", norm)});
  };
  check_equal(moe(1, 0), tensor<float>({1, 1}, {-1.5f}));            // 3/4 * -2
  check_equal(moe(1, 1), tensor<float>({1, 1}, {-2}));               // weight renormalised to 1
  check_equal(moe(2, 0), tensor<float>({1, 1}, {0.25f * 4 - 1.5f}));  // 1/4 * 4 + 3/4 * -2
}

TEST_CASE("MoE matches the oracle for every activation, k and routing normalisation") {
  for (const char* act : {"relu", "gelu", "silu", "identity"})
    for (int k : {1, 2})
      for (bool norm : {false, true}) {
        CAPTURE(act);
        CAPTURE(k);
        CAPTURE(norm);
        moe_oracle::Config c;
        c.activation = act, c.k = k, c.normalize = norm;
        check_moe(c, 5, 8, 6, 4, true, false);
      }
}

TEST_CASE("MoE swiglu: interleaved, concatenated and fc3 halves, with limit, alpha and beta") {
  for (int fusion : {0, 1, 2})
    for (double limit : {double(INFINITY), 0.3}) {
      CAPTURE(fusion);
      CAPTURE(limit);
      moe_oracle::Config c;
      c.activation = "swiglu", c.k = 2, c.normalize = true, c.fusion = fusion, c.limit = limit, c.alpha = 1.702, c.beta = 1;
      check_moe(c, 4, 8, 5, 3, true, fusion == 0);
    }
}

TEST_CASE("MoE: fc3 gates the activation (Mixtral style), biases optional, 3-D input") {
  moe_oracle::Config c;
  c.activation = "silu", c.k = 2, c.normalize = true;
  check_moe(c, 3, 6, 4, 4, false, true);
  check_moe(c, 3, 6, 4, 4, true, true);
  // (B, S, hidden) input: same numbers as the (B * S, hidden) form
  const Tensor x2 = tensor<float>({4, 2}, {1, -1, 0.5f, 2, -0.3f, 0.7f, 1.5f, -2}), x3 = x2.reshaped({2, 2, 2});
  const Tensor r = tensor<float>({4, 3}, {0.1f, 0.5f, -1, 2, 0, 1, -1, -1, 3, 0.3f, 0.2f, 0.1f});
  const Tensor w1 = tensor<float>({3, 2, 2}, {1, 2, 3, 4, -1, 0, 0.5f, 1, 2, -2, 1, 1});
  const Tensor w2 = tensor<float>({3, 2, 2}, {1, 0, 0, 1, 0.5f, 0.5f, -1, 2, 1, 1, 1, -1});
  const std::vector<Attribute> a{attr("k", int64_t(2)), attr("activation_type", "gelu")};
  const Value y2 = run_moe({x2, r, w1, Value(), w2}, a), y3 = run_moe({x3, r, w1, Value(), w2}, a);
  CHECK(y3.tensor().shape() == Shape{2, 2, 2});
  check_equal(Value(y3.tensor().reshaped({4, 2})), y2);
}

TEST_CASE("MoE: equal logits choose the larger expert index; sparse mixer") {
  // Logits (1, 1, 0): k = 1 takes expert 1 (ORT's CPU order), whose weight is the softmax e/(2e+1).
  const Tensor x = tensor<float>({1, 1}, {1}), r = tensor<float>({1, 3}, {1, 1, 0});
  const Tensor w1 = tensor<float>({3, 1, 1}, {1, 10, 100}), w2 = tensor<float>({3, 1, 1}, {1, 1, 1});
  const double e = std::exp(1.0);
  check_equal(run_moe({x, r, w1, Value(), w2}, {attr("k", int64_t(1)), attr("activation_type", "identity")}),
              tensor<float>({1, 1}, {float(10 * e / (2 * e + 1))}));
  for (int t = 0; t < 3; ++t) {  // sparse mixer: random logits, some close to the maximum
    CAPTURE(t);
    moe_oracle::Config c;
    c.activation = "relu", c.k = 2, c.sparse_mixer = true;
    check_moe(c, 6, 4, 3, 8, true, false);
  }
  // logits (1, 0.99, 0.5, 0.985): expert 0 first; 1 and 3 are within 2% of it, so its weight is
  // 1 / (1 + e^-0.01 + e^-0.015); expert 1 second, 3 within 2% of 0.99, expert 0 masked.
  const Tensor r4 = tensor<float>({1, 4}, {1, 0.99f, 0.5f, 0.985f});
  const Tensor w14 = tensor<float>({4, 1, 1}, {1, 10, 100, 1000}), w24 = tensor<float>({4, 1, 1}, {1, 1, 1, 1});
  const double x1 = 0.99f, x3 = 0.985f;
  const double wa = 1 / (1 + std::exp(x1 - 1) + std::exp(x3 - 1)), wb = 1 / (1 + std::exp(x3 - x1));
  check_equal(run_moe({x, r4, w14, Value(), w24}, {attr("k", int64_t(2)), attr("activation_type", "identity"), attr("use_sparse_mixer", int64_t(1))}),
              tensor<float>({1, 1}, {float(wa * 1 + wb * 10)}));
}

TEST_CASE("MoE: ORT's legacy weight shapes hold the same memory; float16") {
  const Tensor x = tensor<float>({2, 2}, {1, 2, -1, 0.5f}), r = tensor<float>({2, 2}, {0.2f, -0.1f, 0, 1});
  // hidden 2, inter 3: fc1 (2, 3, 2) / legacy (2, 2, 3); fc2 (2, 2, 3) / legacy (2, 3, 2)
  const std::vector<float> v1{1, 2, 3, 4, 5, 6, -1, 0, 1, 0.5f, 0.25f, 2}, v2{0.5f, -1, 1, 2, 0, 1, 1, 1, -1, 0, 2, 1};
  const std::vector<Attribute> a{attr("k", int64_t(2)), attr("activation_type", "relu")};
  const Value now = run_moe({x, r, tensor<float>({2, 3, 2}, v1), Value(), tensor<float>({2, 2, 3}, v2)}, a);
  check_equal(run_moe({x, r, tensor<float>({2, 2, 3}, v1), Value(), tensor<float>({2, 3, 2}, v2)}, a), now);
  auto half = [](const Tensor& t) {
    std::vector<float16> h;
    for (float f : t.to_vector<float>()) h.push_back(float16(f));
    return Tensor::from_vector<float16>(t.shape(), h);
  };
  const Value y16 = run_moe({half(x), half(r), half(tensor<float>({2, 3, 2}, v1)), Value(), half(tensor<float>({2, 2, 3}, v2))}, a);
  CHECK(y16.tensor().dtype() == DType::Float16);
  std::vector<float> back;
  for (float16 h : y16.tensor().to_vector<float16>()) back.push_back(float(h));
  check_equal(tensor<float>({2, 2}, back), now, {2e-3, 1e-3});
}

TEST_CASE("MoE errors name the problem") {
  const Tensor x = tensor<float>({1, 2}, {1, 2}), r = tensor<float>({1, 2}, {0, 1});
  const Tensor w1 = tensor<float>({2, 3, 2}, std::vector<float>(12, 1)), w2 = tensor<float>({2, 2, 3}, std::vector<float>(12, 1));
  auto with = [&](std::vector<Attribute> a) { return run_moe({x, r, w1, Value(), w2}, std::move(a)); };
  CHECK_THROWS_WITH_AS(with({attr("k", int64_t(1)), attr("activation_type", "tanh")}), doctest::Contains("unknown activation_type 'tanh'"), Error);
  CHECK_THROWS_WITH_AS(with({attr("k", int64_t(3))}), doctest::Contains("k = 3 exceeds the 2 experts"), Error);
  CHECK_THROWS_WITH_AS(with({attr("k", int64_t(0))}), doctest::Contains("k must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(with({}), doctest::Contains("required attribute 'k' is missing"), Error);
  CHECK_THROWS_WITH_AS(with({attr("k", int64_t(1)), attr("use_sparse_mixer", int64_t(1))}), doctest::Contains("use_sparse_mixer needs k = 2"), Error);
  CHECK_THROWS_WITH_AS(with({attr("k", int64_t(1)), attr("activation_type", "swiglu")}),
                       doctest::Contains("swiglu_fusion = 0 takes its linear half from fc3_experts_weights"), Error);
  CHECK_THROWS_WITH_AS(with({attr("k", int64_t(1)), attr("activation_type", "swiglu"), attr("swiglu_fusion", int64_t(1))}),
                       doctest::Contains("fc1_experts_weights has shape (2, 3, 2), expected (2, 6, 2)"), Error);
  CHECK_THROWS_WITH_AS(with({attr("k", int64_t(1)), attr("swiglu_fusion", int64_t(3))}), doctest::Contains("swiglu_fusion must be 0, 1 or 2"), Error);
  const std::vector<Attribute> k1{attr("k", int64_t(1))};
  CHECK_THROWS_WITH_AS(run_moe({x, tensor<float>({1, 3}, {0, 1, 2}), w1, Value(), w2}, k1),
                       doctest::Contains("fc1_experts_weights has shape (2, 3, 2), expected (3, 3, 2)"), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, tensor<float>({2, 2}, {0, 1, 2, 3}), w1, Value(), w2}, k1),
                       doctest::Contains("router_probs has shape (2, 2), expected (1, 2)"), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, w1, tensor<float>({2, 2}, {0, 0, 0, 0}), w2}, k1),
                       doctest::Contains("fc1_experts_bias has shape (2, 2), expected (2, 3)"), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, w1, Value(), w2, Value(), Value(), tensor<float>({2, 3}, std::vector<float>(6, 0))}, k1),
                       doctest::Contains("fc3_experts_bias is given without fc3_experts_weights"), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, tensor<double>({2, 3, 2}, std::vector<double>(12, 1)), Value(), w2}, k1),
                       doctest::Contains("fc1_experts_weights has element type double, expected float"), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, w1, Value(), tensor<float>({2, 2, 4}, std::vector<float>(16, 1))}, k1),
                       doctest::Contains("fc1_experts_weights has shape (2, 3, 2), expected (2, 4, 2)"), Error);
}

TEST_CASE("MoE refusals: one exact line each") {
  const std::string A = "node 'moe' (com.microsoft:MoE): ";
  const Tensor x = tensor<float>({1, 2}, {1, 2}), r = tensor<float>({1, 2}, {0, 1});
  const Tensor w1 = tensor<float>({2, 3, 2}, std::vector<float>(12, 1)), w2 = tensor<float>({2, 2, 3}, std::vector<float>(12, 1));
  const std::vector<Attribute> k1{attr("k", int64_t(1))};
  CHECK_THROWS_WITH_AS(run_moe({x, r, w1, Value(), w2}, {attr("k", int64_t(1)), attr("swiglu_limit", -1.0f)}),
                       (A + "swiglu_limit must be >= 0, got -1").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, tensor<float>({2, 6}, std::vector<float>(12, 1)), Value(), w2}, k1),
                       (A + "fc1_experts_weights must have rank 3, got shape (2, 6)").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, w1, Value(), tensor<float>({2, 6}, std::vector<float>(12, 1))}, k1),
                       (A + "fc2_experts_weights must have rank 3, got shape (2, 6)").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, w1, Value(), w2, Value(), tensor<float>({6, 2}, std::vector<float>(12, 1))}, k1),
                       (A + "fc3_experts_weights must have rank 3, got shape (6, 2)").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_moe({tensor<float>({1, 0}, {}), tensor<float>({0, 2}, {}), w1, Value(), w2}, k1),
                       (A + "input's hidden size must be at least 1").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_moe({x, r, w1, Value(), tensor<float>({2, 1, 3}, std::vector<float>(6, 1))}, k1),
                       (A + "fc2_experts_weights has shape (2, 1, 3), which does not hold (experts, hidden 2, inter) weights").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_moe({tensor<float>({2}, {1, 2}), r, w1, Value(), w2}, k1), (A + "input must have rank 2 to 3, got shape (2,)").c_str(),
                       Error);
}
