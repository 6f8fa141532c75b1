// com.microsoft QMoE: 2-, 4- and 8-bit expert weights with row or block scales, with and without
// zero points, router_weights, swiglu and fc3, float16 scales, agreement with MoE on the
// dequantized weights, and errors. The oracle dequantizes with its own unpacking loops and runs
// moe_oracle.h.
#include <algorithm>
#include <random>

#include "moe_oracle.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

std::mt19937 rng(11);
double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// Values q[e][n][k] in [0, 2^bits) packed along k, 8 / bits per byte, the first in the low bits.
std::vector<uint8_t> pack_rows(const std::vector<std::vector<std::vector<int>>>& q, int bits) {
  std::vector<uint8_t> out;
  const int per = 8 / bits;
  for (const auto& m : q)
    for (const auto& row : m)
      for (size_t c = 0; c < row.size(); c += size_t(per)) {
        int byte = 0;
        for (int j = 0; j < per && c + size_t(j) < row.size(); ++j) byte |= row[c + size_t(j)] << (j * bits);
        out.push_back(uint8_t(byte));
      }
  return out;
}

// One quantized layer: q (E, N, K), scales and zero points per (E, N, block) (block = 0 means one
// per row), and what it dequantizes to. Scales have 10 significant bits: exact in float16.
struct QLayer {
  int E, N, K, bits, block;
  bool zp;
  std::vector<std::vector<std::vector<int>>> q, z;     // z[e][n][b]
  std::vector<std::vector<std::vector<double>>> s;     // s[e][n][b]
  moe_oracle::Layer deq;

  QLayer(int E_, int N_, int K_, int bits_, int block_, bool zp_, bool bias)
      : E(E_), N(N_), K(K_), bits(bits_), block(block_), zp(zp_) {
    const int nb = block ? (K + block - 1) / block : 1, top = (1 << bits) - 1;
    for (int e = 0; e < E; ++e) {
      q.emplace_back(), z.emplace_back(), s.emplace_back(), deq.w.emplace_back();
      for (int n = 0; n < N; ++n) {
        std::vector<int> row, zr;
        std::vector<double> sr;
        for (int k = 0; k < K; ++k) row.push_back(integer(0, top));
        for (int b = 0; b < nb; ++b) {
          zr.push_back(zp ? integer(0, top) : 1 << (bits - 1));
          sr.push_back((512 + integer(0, 511)) / 1024.0 / (1 << bits));  // exact in float16
        }
        std::vector<double> w;
        for (int k = 0; k < K; ++k) w.push_back((row[size_t(k)] - zr[size_t(block ? k / block : 0)]) * sr[size_t(block ? k / block : 0)]);
        q.back().push_back(row), z.back().push_back(zr), s.back().push_back(sr), deq.w.back().push_back(w);
      }
    }
    if (bias)
      for (int e = 0; e < E; ++e) {
        deq.b.emplace_back();
        for (int n = 0; n < N; ++n) deq.b.back().push_back(double(float(uniform(-0.2, 0.2))));
      }
  }

  Tensor weights() const { return tensor<uint8_t>({E, N, K * bits / 8}, pack_rows(q, bits)); }
  Tensor scales() const {
    std::vector<float> v;
    for (const auto& m : s)
      for (const auto& r : m)
        for (double x : r) v.push_back(float(x));
    return block ? tensor<float>({E, N, int64_t(s[0][0].size())}, v) : tensor<float>({E, N}, v);
  }
  Tensor zero_points() const {
    const int per = 8 / bits;
    if (block) {  // packed along the blocks of each row
      return tensor<uint8_t>({E, N, int64_t((z[0][0].size() + size_t(per) - 1) / size_t(per))}, pack_rows(z, bits));
    }
    // one per row, packed along the rows of each expert
    std::vector<std::vector<std::vector<int>>> rows(size_t(E), std::vector<std::vector<int>>(1));
    for (int e = 0; e < E; ++e)
      for (int n = 0; n < N; ++n) rows[size_t(e)][0].push_back(z[size_t(e)][size_t(n)][0]);
    return tensor<uint8_t>({E, int64_t((N + per - 1) / per)}, pack_rows(rows, bits));
  }
  Tensor bias() const {
    std::vector<float> v;
    for (const auto& r : deq.b)
      for (double x : r) v.push_back(float(x));
    return tensor<float>({E, N}, v);
  }
};

std::vector<std::vector<double>> matrix(size_t rows, size_t cols, double lo, double hi) {
  std::vector<std::vector<double>> m(rows, std::vector<double>(cols));
  for (auto& r : m)
    for (auto& v : r) v = double(float(uniform(lo, hi)));
  return m;
}
std::vector<float> flat(const std::vector<std::vector<double>>& m) {
  std::vector<float> v;
  for (const auto& r : m)
    for (double x : r) v.push_back(float(x));
  return v;
}

struct Case {
  int bits = 4, block = 0;
  bool zp = false, bias = true, fc3 = false, router_weights = false;
  moe_oracle::Config c;
};

Value run_qmoe(const Values& in, std::vector<Attribute> attrs) {
  std::vector<std::string> names{"x", "r", "w1", "s1", "b1", "w2", "s2", "b2", "w3", "s3", "b3", "z1", "z2", "z3", "rw",
                                 "g1", "g2", "a1", "a2", "ab1", "ab2"};
  names.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].is_absent()) names[i] = "";
  return run_node(node("QMoE", names, {"y"}, std::move(attrs), "qmoe", "com.microsoft"), in)[0];
}

std::vector<Attribute> attrs_of(const Case& t) {
  std::vector<Attribute> a{attr("k", int64_t(t.c.k)), attr("activation_type", t.c.activation),
                           attr("normalize_routing_weights", int64_t(t.c.normalize)), attr("expert_weight_bits", int64_t(t.bits))};
  if (t.block) a.push_back(attr("block_size", int64_t(t.block)));
  if (t.c.activation == "swiglu") {
    a.push_back(attr("swiglu_fusion", int64_t(t.c.fusion)));
    if (std::isfinite(t.c.limit)) a.push_back(attr("swiglu_limit", float(t.c.limit)));
    a.push_back(attr("activation_alpha", float(t.c.alpha)));
    a.push_back(attr("activation_beta", float(t.c.beta)));
  }
  return a;
}

void check_qmoe(const Case& t, int T, int H, int I, int E) {
  const int fusion = t.c.activation == "swiglu" && t.c.fusion != 0 ? 2 : 1;
  const QLayer fc1(E, fusion * I, H, t.bits, t.block, t.zp, t.bias), fc2(E, H, I, t.bits, t.block, t.zp, t.bias);
  const QLayer fc3(t.fc3 ? E : 0, I, H, t.bits, t.block, t.zp, t.bias);
  const auto x = matrix(size_t(T), size_t(H), -2, 2), logits = matrix(size_t(T), size_t(E), -2, 2);
  const auto mix = matrix(size_t(T), size_t(E), 0, 1);
  Values in{tensor<float>({T, H}, flat(x)), tensor<float>({T, E}, flat(logits)),
            fc1.weights(), fc1.scales(), t.bias ? Value(fc1.bias()) : Value(),
            fc2.weights(), fc2.scales(), t.bias ? Value(fc2.bias()) : Value()};
  if (t.fc3) in.insert(in.end(), {fc3.weights(), fc3.scales(), t.bias ? Value(fc3.bias()) : Value()});
  else in.insert(in.end(), {Value(), Value(), Value()});
  if (t.zp) in.insert(in.end(), {fc1.zero_points(), fc2.zero_points(), t.fc3 ? Value(fc3.zero_points()) : Value()});
  else in.insert(in.end(), {Value(), Value(), Value()});
  if (t.router_weights) in.push_back(tensor<float>({T, E}, flat(mix)));
  const Value y = run_qmoe(in, attrs_of(t));
  const auto want = moe_oracle::run(x, logits, t.router_weights ? &mix : nullptr, fc1.deq, fc2.deq, fc3.deq, t.c);
  check_equal(y, tensor<float>({T, H}, flat(want)), {1e-5, 1e-6});
}

}  // namespace

TEST_CASE("QMoE: a hand-computed 4-bit token") {
  // One expert, hidden 2, inter 2, identity, two values per byte, the first in the low nibble,
  // default zero point 8. fc1 rows (9, 6) and (8, 8) with scale 0.5: (0.5, -1) and (0, 0);
  // fc2 rows (10, 8) and (7, 8) with scale 1: (2, 0) and (-1, 0).
  const Tensor x = tensor<float>({1, 2}, {2, 1}), r = tensor<float>({1, 1}, {0});
  const Tensor w1 = tensor<uint8_t>({1, 2, 1}, {0x69, 0x88}), s1 = tensor<float>({1, 2}, {0.5f, 0.5f});
  const Tensor w2 = tensor<uint8_t>({1, 2, 1}, {0x8a, 0x87}), s2 = tensor<float>({1, 2}, {1, 1});
  // h = (0.5 * 2 - 1 * 1, 0) = (0, 0) -> y = (0, 0); with x = (4, 1): h = (1, 0) -> y = (2, -1)
  const std::vector<Attribute> a{attr("k", int64_t(1)), attr("activation_type", "identity"), attr("expert_weight_bits", int64_t(4))};
  check_equal(run_qmoe({x, r, w1, s1, Value(), w2, s2}, a), tensor<float>({1, 2}, {0, 0}));
  check_equal(run_qmoe({tensor<float>({1, 2}, {4, 1}), r, w1, s1, Value(), w2, s2}, a), tensor<float>({1, 2}, {2, -1}));
}

TEST_CASE("QMoE matches the oracle: bits 2, 4, 8, row or block scales, zero points, k, normalisation") {
  for (int bits : {2, 4, 8})
    for (int block : {0, 16})
      for (bool zp : {false, true})
        for (int k : {1, 2}) {
          CAPTURE(bits);
          CAPTURE(block);
          CAPTURE(zp);
          CAPTURE(k);
          Case t;
          t.bits = bits, t.block = block, t.zp = zp;
          t.c.k = k, t.c.normalize = k == 2 && zp, t.c.activation = bits == 4 ? "gelu" : "silu";
          check_qmoe(t, 3, 32, 48, 4);
        }
}

TEST_CASE("QMoE: a partial last block, an odd block count for packed zero points, row-wise zero points") {
  Case t;
  t.bits = 4, t.block = 16, t.zp = true, t.c.k = 2;  // hidden 40: blocks 16, 16, 8 (3, packed in 2 bytes)
  check_qmoe(t, 2, 40, 24, 3);
  t.block = 0;  // one zero point per row, packed along the rows of each expert
  check_qmoe(t, 2, 12, 4, 3);
  t.bits = 2;
  check_qmoe(t, 2, 8, 4, 2);
}

TEST_CASE("QMoE: swiglu layouts, fc3, router_weights") {
  for (int fusion : {0, 1, 2}) {
    CAPTURE(fusion);
    Case t;
    t.bits = 4, t.block = 16, t.fc3 = fusion == 0;
    t.c.activation = "swiglu", t.c.k = 2, t.c.normalize = true, t.c.fusion = fusion, t.c.limit = 7, t.c.alpha = 1.702, t.c.beta = 1;
    check_qmoe(t, 3, 32, 16, 4);
  }
  Case t;  // Mixtral-style gating by fc3 with 8-bit weights
  t.bits = 8, t.fc3 = true, t.zp = true, t.c.activation = "silu", t.c.k = 2, t.c.normalize = true;
  check_qmoe(t, 3, 16, 8, 4);
  for (bool norm : {false, true}) {  // router_weights mix the experts router_probs selects
    CAPTURE(norm);
    Case r;
    r.bits = 4, r.block = 16, r.router_weights = true, r.c.k = 2, r.c.normalize = norm;
    check_qmoe(r, 4, 16, 16, 4);
  }
}

TEST_CASE("QMoE equals MoE on the dequantized weights; float16 scales") {
  const QLayer fc1(3, 4, 16, 8, 16, true, false), fc2(3, 16, 4, 8, 16, true, false);
  const Tensor x = tensor<float>({2, 16}, flat(matrix(2, 16, -1, 1))), r = tensor<float>({2, 3}, {0.1f, 0.4f, -0.2f, 1, 0.5f, 0});
  auto dense = [](const QLayer& l) {
    std::vector<float> v;
    for (const auto& m : l.deq.w)
      for (const auto& row : m)
        for (double d : row) v.push_back(float(d));
    return tensor<float>({l.E, l.N, l.K}, v);
  };
  const std::vector<Attribute> common{attr("k", int64_t(2)), attr("activation_type", "relu"), attr("normalize_routing_weights", int64_t(1))};
  std::vector<Attribute> q = common;
  q.push_back(attr("expert_weight_bits", int64_t(8))), q.push_back(attr("block_size", int64_t(16)));
  const Value moe = run_node(node("MoE", {"x", "r", "w1", "", "w2"}, {"y"}, common, "moe", "com.microsoft"), {x, r, dense(fc1), Value(), dense(fc2)})[0];
  const Value qmoe = run_qmoe({x, r, fc1.weights(), fc1.scales(), Value(), fc2.weights(), fc2.scales(), Value(), Value(), Value(),
                               Value(), fc1.zero_points(), fc2.zero_points()}, q);
  check_equal(qmoe, moe, {1e-5, 1e-6});
  auto half = [](const Tensor& t) {  // the scales are exact in float16
    std::vector<float16> h;
    for (float f : t.to_vector<float>()) h.push_back(float16(f));
    return Tensor::from_vector<float16>(t.shape(), h);
  };
  const Value q16 = run_qmoe({x, r, fc1.weights(), half(fc1.scales()), Value(), fc2.weights(), half(fc2.scales()), Value(), Value(),
                              Value(), Value(), fc1.zero_points(), fc2.zero_points()}, q);
  check_equal(q16, moe, {1e-5, 1e-6});
}

TEST_CASE("QMoE errors name the problem") {
  const QLayer fc1(2, 4, 16, 4, 16, true, false), fc2(2, 16, 4, 4, 16, true, false);
  const Tensor x = tensor<float>({1, 16}, std::vector<float>(16, 0.5f)), r = tensor<float>({1, 2}, {0, 1});
  auto base = [&]() {
    return Values{x, r, fc1.weights(), fc1.scales(), Value(), fc2.weights(), fc2.scales(), Value(), Value(), Value(), Value(),
                  fc1.zero_points(), fc2.zero_points()};
  };
  auto attrs = [](std::vector<Attribute> changes) {  // defaults, each replaced or extended by `changes`
    std::vector<Attribute> a{attr("k", int64_t(1)), attr("expert_weight_bits", int64_t(4)), attr("block_size", int64_t(16))};
    for (const Attribute& c : changes) {
      auto same = std::find_if(a.begin(), a.end(), [&](const Attribute& x) { return x.name == c.name; });
      if (same != a.end()) *same = c;
      else a.push_back(c);
    }
    return a;
  };
  CHECK_NOTHROW(run_qmoe(base(), attrs({})));
  CHECK_THROWS_WITH_AS(run_qmoe(base(), attrs({attr("expert_weight_bits", int64_t(3))})), doctest::Contains("expert_weight_bits must be 2, 4 or 8, got 3"), Error);
  CHECK_THROWS_WITH_AS(run_qmoe(base(), {attr("k", int64_t(1)), attr("block_size", int64_t(24))}),
                       doctest::Contains("block_size must be a power of 2 and at least 16, got 24"), Error);
  CHECK_THROWS_WITH_AS(run_qmoe(base(), attrs({attr("quant_type", "fp4")})), doctest::Contains("quant_type 'fp4' is not supported"), Error);
  CHECK_THROWS_WITH_AS(run_qmoe(base(), attrs({attr("weights_prepacked", int64_t(1))})), doctest::Contains("weights_prepacked = 1"), Error);
  CHECK_THROWS_WITH_AS(run_qmoe(base(), attrs({attr("activation_type", "gelu_fast")})), doctest::Contains("unknown activation_type 'gelu_fast'"), Error);
  Values v = base();
  v[3] = Value();
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("fc1_scales is required"), Error);
  v = base();
  v[6] = tensor<float>({2, 16}, std::vector<float>(32, 1));
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("fc2_scales has shape (2, 16), expected (2, 16, 1)"), Error);
  v = base();
  v[11] = tensor<uint8_t>({2, 4, 2}, std::vector<uint8_t>(16, 0));
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("fc1_zero_points has shape (2, 4, 2), expected (2, 4, 1)"), Error);
  v = base();
  v[2] = tensor<int8_t>({2, 4, 8}, std::vector<int8_t>(64, 0));
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("fc1_experts_weights has element type int8, expected uint8"), Error);
  v = base();
  v[2] = tensor<uint8_t>({2, 4, 16}, std::vector<uint8_t>(128, 0));  // unpacked 4-bit: twice too wide
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("fc1_experts_weights has shape (2, 4, 16), expected (2, 4, 8)"), Error);
  v = base();
  v[9] = fc1.scales();  // fc3's scales with no fc3 weights to scale
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("fc3_scales, fc3_experts_bias or fc3_zero_points is given without fc3_experts_weights"), Error);
  v = base();
  v.resize(16), v[15] = tensor<float>({2}, {1, 1});
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("fc1_global_scale belongs to the FP4/FP8 quant_type modes"), Error);
  v = base();
  v.resize(15), v[14] = tensor<float>({2, 2}, {1, 1, 1, 1});
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({})), doctest::Contains("router_weights has shape (2, 2), expected (1, 2)"), Error);
  v[14] = tensor<float>({1, 2}, {1, 1});
  CHECK_THROWS_WITH_AS(run_qmoe(v, attrs({attr("k", int64_t(2)), attr("use_sparse_mixer", int64_t(1))})),
                       doctest::Contains("use_sparse_mixer cannot be combined with router_weights"), Error);
}

TEST_CASE("QMoE refusals: one exact line each") {
  const std::string A = "node 'qmoe' (com.microsoft:QMoE): ";
  const QLayer fc1(2, 4, 16, 4, 16, true, false), fc2(2, 16, 4, 4, 16, true, false);
  const Tensor x = tensor<float>({1, 16}, std::vector<float>(16, 0.5f)), r = tensor<float>({1, 2}, {0, 1});
  const Values in{x, r, fc1.weights(), fc1.scales(), Value(), fc2.weights(), fc2.scales(), Value(), Value(), Value(), Value(),
                  fc1.zero_points(), fc2.zero_points()};
  auto with = [](std::vector<Attribute> more) {
    std::vector<Attribute> a{attr("k", int64_t(1)), attr("expert_weight_bits", int64_t(4))};
    for (Attribute& m : more) a.push_back(std::move(m));
    return a;
  };
  CHECK_THROWS_WITH_AS(run_qmoe(in, with({attr("weights_prepacked", int64_t(2))})), (A + "weights_prepacked must be -1, 0 or 1, got 2").c_str(), Error);
  CHECK_THROWS_WITH_AS(run_qmoe(in, with({attr("block_size", int64_t(8))})), (A + "block_size must be a power of 2 and at least 16, got 8").c_str(),
                       Error);
  Values routed = in;
  routed.resize(15);
  routed[14] = tensor<float>({1, 2}, {0.5f, 0.5f});
  CHECK_THROWS_WITH_AS(run_qmoe(routed, {attr("k", int64_t(2)), attr("expert_weight_bits", int64_t(4)), attr("block_size", int64_t(16)),
                                         attr("use_sparse_mixer", int64_t(1))}),
                       (A + "use_sparse_mixer cannot be combined with router_weights").c_str(), Error);
}

TEST_CASE("QMoE: router_weights that sum to 0 over the chosen experts give zero weights, not NaN") {
  // normalize_routing_weights divides by the chosen weights' sum; a zero sum gives zeros (as ORT
  // does), so every token's output is 0 whatever the experts compute.
  const QLayer fc1(2, 4, 16, 4, 16, true, false), fc2(2, 16, 4, 4, 16, true, false);
  Values in{tensor<float>({2, 16}, std::vector<float>(32, 0.5f)), tensor<float>({2, 2}, {0, 1, 1, 0}), fc1.weights(), fc1.scales(), Value(),
            fc2.weights(), fc2.scales(), Value(), Value(), Value(), Value(), fc1.zero_points(), fc2.zero_points(), Value(),
            tensor<float>({2, 2}, {0, 0, 0, 0})};
  const Value y = run_qmoe(in, {attr("k", int64_t(2)), attr("expert_weight_bits", int64_t(4)), attr("block_size", int64_t(16)),
                                attr("normalize_routing_weights", int64_t(1))});
  check_equal(y, tensor<float>({2, 16}, std::vector<float>(32, 0.0f)), {0, 0});
}
