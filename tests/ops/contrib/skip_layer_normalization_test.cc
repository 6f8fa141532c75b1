// com.microsoft SkipLayerNormalization / SkipSimplifiedLayerNormalization: hand-computed rows,
// skip broadcasting, bias in the residual sum, every optional output, agreement with the standard
// ops they fuse (Add, Add, LayerNormalization / RMSNormalization), and shape errors.
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
const char* kMs = "com.microsoft";
Node skip_ln(std::vector<std::string> ins, std::vector<std::string> outs, float epsilon, const char* op = "SkipLayerNormalization") {
  return node(op, std::move(ins), std::move(outs), {attr("epsilon", epsilon)}, "sln", kMs);
}
}  // namespace

TEST_CASE("SkipLayerNormalization: residual sum with bias, then LayerNorm over H, all four outputs") {
  // s = input + skip + bias = [[3, 3], [4, 5]]; row 0 has variance 0 so it becomes beta;
  // row 1: mean 4.5, variance 0.25, epsilon 1 -> inv_std 1/sqrt(1.25)
  const float r = 1 / std::sqrt(1.25f);
  const Values out = run_node(skip_ln({"x", "skip", "gamma", "beta", "bias"}, {"y", "mean", "inv", "sum"}, 1.0f),
                              {tensor<float>({1, 2, 2}, {1, 2, 3, 5}), tensor<float>({2, 2}, {1, 0, 0, -1}),
                               tensor<float>({2}, {2, 3}), tensor<float>({2}, {0.5f, -0.5f}), tensor<float>({2}, {1, 1})});
  REQUIRE(out.size() == 4);
  check_equal(out[0], tensor<float>({1, 2, 2}, {0.5f, -0.5f, -0.5f * r * 2 + 0.5f, 0.5f * r * 3 - 0.5f}));
  check_equal(out[1], tensor<float>({1, 2, 1}, {3, 4.5f}));
  check_equal(out[2], tensor<float>({1, 2, 1}, {1, r}));
  check_equal(out[3], tensor<float>({1, 2, 2}, {3, 3, 4, 5}));
}

TEST_CASE("SkipLayerNormalization: skip forms repeat over the batch") {
  // input (2, 1, 2); s = [[2, 2], [6, 0]]: row 0 constant -> 0 (no beta; the default epsilon
  // 1e-12 keeps 0 / sqrt(0 + epsilon) finite), row 1 mean 3 var 9 -> (+-1) * gamma
  const Tensor x = tensor<float>({2, 1, 2}, {0, 2, 4, 0}), gamma = tensor<float>({2}, {1, 10});
  const Tensor expected = tensor<float>({2, 1, 2}, {0, 0, 1, -10});
  struct Case { const char* what; Tensor skip; };
  const Case cases[] = {
      {"same shape", tensor<float>({2, 1, 2}, {2, 0, 2, 0})},
      {"batch 1", tensor<float>({1, 1, 2}, {2, 0})},
      {"no batch dim", tensor<float>({1, 2}, {2, 0})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("SkipLayerNormalization", {"x", "skip", "gamma"}, {"y"}, {}, "sln", kMs), {x, c.skip, gamma})[0],
                expected);
  }
}

TEST_CASE("SkipLayerNormalization equals Add, Add, LayerNormalization-17 run as standard ops") {
  const Tensor x = tensor<float>({1, 3, 4}, {0.1f, -1, 2, 3, 0.5f, 0.25f, -2, 1, 4, 4, 4, 4.5f});
  const Tensor skip = tensor<float>({1, 3, 4}, {1, 2, 3, 4, -1, -2, -3, -4, 0, 0.5f, 0, 0.5f});
  const Tensor gamma = tensor<float>({4}, {1, 0.5f, -1, 2}), beta = tensor<float>({4}, {0, 1, 0, -1}),
               bias = tensor<float>({4}, {0.3f, 0, -0.3f, 0.1f});
  const float eps = 1e-5f;
  const Values fused = run_node(skip_ln({"x", "skip", "gamma", "beta", "bias"}, {"y", "", "", "sum"}, eps), {x, skip, gamma, beta, bias});
  const Value xs = run_node(node("Add", {"a", "b"}, {"c"}), {x, skip})[0];
  const Value s = run_node(node("Add", {"a", "b"}, {"c"}), {xs, bias})[0];
  const Value y = run_node(node("LayerNormalization", {"s", "g", "b"}, {"y"}, {attr("epsilon", eps)}), {s, gamma, beta}, 17)[0];
  check_equal(fused[0], y);
  check_equal(fused[1], s);  // unnamed outputs are not returned: [y, sum]
}

TEST_CASE("SkipSimplifiedLayerNormalization: RMS of input + skip + bias, and RMSNormalization-23 agrees") {
  // s = [[1, 7], [3, 3]]: root mean squares 5 and 3
  const Tensor x = tensor<float>({2, 2}, {0, 4, 1, 3}), skip = tensor<float>({2, 2}, {0, 4, 1, 1});
  const Tensor gamma = tensor<float>({2}, {1, 2}), bias = tensor<float>({2}, {1, -1});
  const Values out = run_node(skip_ln({"x", "skip", "gamma", "bias"}, {"y", "", "inv", "sum"}, 0.0f, "SkipSimplifiedLayerNormalization"),
                              {x, skip, gamma, bias});
  REQUIRE(out.size() == 3);  // y, inv, sum
  check_equal(out[0], tensor<float>({2, 2}, {0.2f, 2.8f, 1, 2}));
  check_equal(out[1], tensor<float>({2, 1}, {0.2f, 1 / 3.0f}));
  check_equal(out[2], tensor<float>({2, 2}, {1, 7, 3, 3}));
  const Value rms = run_node(node("RMSNormalization", {"s", "g"}, {"y"}, {attr("epsilon", 1e-6f)}), {out[2], gamma}, 23)[0];
  const Value fused = run_node(skip_ln({"x", "skip", "gamma", "bias"}, {"y"}, 1e-6f, "SkipSimplifiedLayerNormalization"), {x, skip, gamma, bias})[0];
  check_equal(fused, rms);
}

TEST_CASE("SkipSimplifiedLayerNormalization takes 2-D (token_count, hidden) input, as genai's graphs feed it") {
  // 3 tokens of hidden 4; the oracle: s = x + skip + bias, y = s / sqrt(mean(s^2) + eps) * gamma
  const int64_t tokens = 3, hidden = 4;
  std::vector<float> xv, sv;
  for (int64_t i = 0; i < tokens * hidden; ++i) xv.push_back(std::sin(0.7f * float(i))), sv.push_back(0.25f * float(i % 5) - 0.5f);
  const std::vector<float> gv = {1, -0.5f, 2, 0.75f}, bv = {0.1f, 0, -0.2f, 0.3f};
  const float eps = 1e-5f;
  std::vector<float> y, inv, sum;
  for (int64_t t = 0; t < tokens; ++t) {
    double ms = 0;
    for (int64_t d = 0; d < hidden; ++d) {
      const double v = double(xv[size_t(t * hidden + d)]) + sv[size_t(t * hidden + d)] + bv[size_t(d)];
      sum.push_back(float(v)), ms += v * v / double(hidden);
    }
    inv.push_back(float(1 / std::sqrt(ms + eps)));
    for (int64_t d = 0; d < hidden; ++d) y.push_back(float(sum[size_t(t * hidden + d)] * inv.back() * gv[size_t(d)]));
  }
  const Tensor x = tensor<float>({tokens, hidden}, xv), skip = tensor<float>({tokens, hidden}, sv);
  const Values out = run_node(skip_ln({"x", "skip", "gamma", "bias"}, {"y", "", "inv", "sum"}, eps, "SkipSimplifiedLayerNormalization"),
                              {x, skip, tensor<float>({hidden}, gv), tensor<float>({hidden}, bv)});
  REQUIRE(out.size() == 3);
  check_equal(out[0], tensor<float>({tokens, hidden}, y));
  check_equal(out[1], tensor<float>({tokens, 1}, inv));
  check_equal(out[2], tensor<float>({tokens, hidden}, sum));
  // with 2-D input ORT wants skip of the same shape ("last two dimensions of skip needs to be same as input")
  CHECK_THROWS_WITH_AS(run_node(skip_ln({"x", "skip", "gamma"}, {"y"}, eps, "SkipSimplifiedLayerNormalization"),
                                {x, tensor<float>({1, hidden}, gv), tensor<float>({hidden}, gv)}),
                       doctest::Contains("skip has shape (1, 4), expected input's shape (3, 4)"), Error);
}

TEST_CASE("SkipLayerNormalization errors name the input and the expected shape") {
  const Tensor x = tensor<float>({1, 2, 2}, {1, 2, 3, 4}), gamma = tensor<float>({2}, {1, 1});
  CHECK_THROWS_WITH_AS(run_node(skip_ln({"x", "skip", "gamma"}, {"y"}, 1e-5f), {x, tensor<float>({2, 1}, {1, 2}), gamma}),
                       doctest::Contains("skip has shape (2, 1), expected input's shape (1, 2, 2)"), Error);
  CHECK_THROWS_WITH_AS(run_node(skip_ln({"x", "skip", "gamma"}, {"y"}, 1e-5f), {x, x, tensor<float>({3}, {1, 1, 1})}),
                       doctest::Contains("gamma has shape (3,), expected (2,)"), Error);
  CHECK_THROWS_WITH_AS(run_node(skip_ln({"x", "skip", "gamma"}, {"y"}, 1e-5f), {x, tensor<double>({1, 2, 2}, {1, 2, 3, 4}), gamma}),
                       doctest::Contains("skip has element type"), Error);
  CHECK_THROWS_WITH_AS(run_node(skip_ln({"x", "skip", "gamma"}, {"y", "mean"}, 1e-5f, "SkipSimplifiedLayerNormalization"), {x, x, gamma}),
                       doctest::Contains("mean"), Error);
}

TEST_CASE("Skip(Simplified)LayerNormalization float32 matches a double oracle at many hidden sizes") {
  // s = input + skip + bias and its statistics in double, each output rounded once to float
  for (const bool rms : {false, true})
    for (int64_t H : {1, 3, 7, 8, 9, 16, 33, 64, 768, 1001})
      for (int64_t rows : {1, 5}) {
        CAPTURE(rms); CAPTURE(H); CAPTURE(rows);
        const int64_t n = 2 * rows * H;  // batch 2, the skip (rows, H) repeating over it
        const std::vector<float> xv = wave(size_t(n), 0.37f), sv = wave(size_t(rows * H), 1.3f, 0.9f), gv = wave(size_t(H), 0.21f, 1.0f),
                                 bv = wave(size_t(H), 0.77f, 2.0f), biasv = wave(size_t(H), 0.05f, 0.4f);
        const char* op = rms ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization";
        const Values out = rms ? run_node(skip_ln({"x", "skip", "gamma", "bias"}, {"y", "", "inv", "sum"}, 1e-5f, op),
                                          {tensor<float>({2, rows, H}, xv), tensor<float>({rows, H}, sv), tensor<float>({H}, gv), tensor<float>({H}, biasv)})
                               : run_node(skip_ln({"x", "skip", "gamma", "beta", "bias"}, {"y", "mean", "inv", "sum"}, 1e-5f, op),
                                          {tensor<float>({2, rows, H}, xv), tensor<float>({rows, H}, sv), tensor<float>({H}, gv),
                                           tensor<float>({H}, bv), tensor<float>({H}, biasv)});
        const size_t k = rms ? 1 : 2;  // the outputs named, the unnamed mean left out
        const float *y = out[0].tensor().data<float>(), *inv = out[k].tensor().data<float>(), *sum = out[k + 1].tensor().data<float>();
        for (int64_t r = 0; r < 2 * rows; ++r) {
          std::vector<double> s(static_cast<size_t>(H));
          double m = 0, sq = 0;
          for (int64_t j = 0; j < H; ++j) s[size_t(j)] = double(xv[size_t(r * H + j)]) + double(sv[size_t((r % rows) * H + j)]) + double(biasv[size_t(j)]);
          if (!rms) {
            for (double v : s) m += v;
            m /= double(H);
          }
          for (double v : s) sq += (v - m) * (v - m);
          const double is = 1 / std::sqrt(sq / double(H) + 1e-5);
          CHECK(inv[r] == doctest::Approx(is).epsilon(1e-6));
          if (!rms) CHECK(out[1].tensor().data<float>()[r] == doctest::Approx(m).epsilon(1e-6).scale(1e-6));
          for (int64_t j = 0; j < H; ++j) {
            const double want = (s[size_t(j)] - m) * is * gv[size_t(j)] + (rms ? 0.0 : bv[size_t(j)]);
            REQUIRE(std::fabs(y[r * H + j] - want) <= 1e-6 * std::fabs(want) + 1e-6);
            REQUIRE(std::fabs(sum[r * H + j] - s[size_t(j)]) <= 1e-7 * std::fabs(s[size_t(j)]));
          }
        }
      }
}

TEST_CASE("Skip(Simplified)LayerNormalization refuse a negative epsilon, one line") {
  const Tensor x = tensor<float>({1, 2, 2}, {1, 2, 3, 4}), gamma = tensor<float>({2}, {1, 1});
  for (const char* op : {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization"}) {
    CAPTURE(op);
    CHECK_THROWS_WITH_AS(run_node(skip_ln({"x", "skip", "gamma"}, {"y"}, -1.0f, op), {x, x, gamma}),
                         (std::string("node 'sln' (com.microsoft:") + op + "): epsilon -1 is negative").c_str(), Error);
  }
}
