// The figures of `refeval compare` over data, worked out by hand on tiny vocabularies and vectors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "lm_figures.h"
#include "output_stats.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::quality;
using refeval::testing::tensor;

TEST_CASE("language-model figures: perplexity, KL(A||B), top-1 and top-5 from two models' logits") {
  // Window of 3 tokens over a vocabulary of 2: positions 0 and 1 predict tokens 1 and 0.
  // A is uniform at both; B gives token 0 three times token 1's odds at both.
  const std::vector<int64_t> tokens = {0, 1, 0};
  const float l3 = float(std::log(3.0));
  const std::vector<float> a = {0, 0, 0, 0, 0, 0}, b = {l3, 0, l3, 0, l3, 0};
  const std::vector<TokenFigures> f = window_figures(0, tokens, a.data(), b.data(), 2);
  REQUIRE(f.size() == 2);
  CHECK(f[0].nll_a == doctest::Approx(std::log(2.0)));
  CHECK(f[0].nll_b == doctest::Approx(std::log(4.0)));  // p_B(1) = 1/4
  CHECK(f[1].nll_b == doctest::Approx(std::log(4.0 / 3)));
  const double kl = 0.5 * std::log(0.5 / 0.75) + 0.5 * std::log(0.5 / 0.25);
  CHECK(f[0].kl == doctest::Approx(kl).epsilon(1e-6));
  CHECK(f[0].top1_a == 0);  // A's tie: the first maximum
  CHECK(f[0].top1_b == 0);
  CHECK(f[0].top5_common == 2);  // both of two ids are among both top-5s
  const LmFigures s = summarize(f, 1, 3);
  CHECK(s.tokens == 2);
  CHECK(s.perplexity_a == doctest::Approx(2.0));
  CHECK(s.perplexity_b == doctest::Approx(std::exp((std::log(4.0) + std::log(4.0 / 3)) / 2)));
  CHECK(s.kl_mean == doctest::Approx(kl).epsilon(1e-6));
  CHECK(s.top1_agreement == 1.0);
}

TEST_CASE("language-model figures: p99 of the per-token KL interpolates as numpy.percentile") {
  std::vector<TokenFigures> rows;
  for (int i = 0; i < 101; ++i) {
    TokenFigures t;
    t.kl = i;  // 0 .. 100: p99 is 99
    t.position = i;
    rows.push_back(t);
  }
  rows[7].top1_b = 5;  // one top-1 disagreement
  const LmFigures s = summarize(rows, 1, 102);
  CHECK(s.kl_p99 == doctest::Approx(99.0));
  CHECK(s.kl_max == 100.0);
  CHECK(s.kl_max_position == 100);
  CHECK(s.top1_agreement == doctest::Approx(100.0 / 101));
  rows.resize(10);  // 0 .. 9: rank 0.99 * 9 = 8.91 -> 8.91
  CHECK(summarize(rows, 1, 11).kl_p99 == doctest::Approx(8.91));
}

TEST_CASE("statistics over sets: a NaN or an infinity on one side only is no agreement") {
  // A quantized model that overflows writes NaN: every comparison with NaN is false, so before
  // this a NaN output read as max_abs 0 and passed --min-snr.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf, -inf}) {
    CAPTURE(bad);
    OutputStats s;
    s.add("one", tensor<float>({1, 3}, {1, 2, 3}), tensor<float>({1, 3}, {1, bad, 3}));
    CHECK(std::isinf(s.max_abs));
    CHECK(s.snr_db_min == -std::numeric_limits<double>::infinity());
    CHECK(s.cosine_min == 0.0);
  }
  OutputStats same;  // NaN against NaN and equal infinities agree
  same.add("one", tensor<float>({1, 3}, {nan, inf, 3}), tensor<float>({1, 3}, {nan, inf, 3}));
  CHECK(same.max_abs == 0.0);
  CHECK(std::isinf(same.snr_db_min));
  CHECK(same.snr_db_min > 0);
}

TEST_CASE("statistics over sets: max errors, cosine, SNR, top-1 along the last axis, the worst set") {
  OutputStats s;
  s.name = "y";
  // set one: b = a exactly; set two: one element off by 1 (a = [3, 4 | 1, 0], b = [3, 4 | 0, 0])
  s.add("one", tensor<float>({2, 2}, {3, 4, 1, 0}), tensor<float>({2, 2}, {3, 4, 1, 0}));
  CHECK(std::isinf(s.snr_db_min));
  s.add("two", tensor<float>({2, 2}, {3, 4, 1, 0}), tensor<float>({2, 2}, {3, 4, 0, 0}));
  CHECK(s.sets == 2);
  CHECK(s.max_abs == 1.0);
  CHECK(s.snr_db_min == doctest::Approx(10 * std::log10(26.0)));  // |a|^2 = 26, noise 1
  CHECK(s.worst_set == "two");
  CHECK(s.cosine_min == doctest::Approx(25 / std::sqrt(26.0 * 25)));
  CHECK(s.rows == 4);
  CHECK(s.top1_same == 4);  // B's row [0, 0] ties: its first maximum, 0, as A's row [1, 0]
  // set three: the two values swapped, a top-1 disagreement
  s.add("three", tensor<float>({1, 2}, {1, 2}), tensor<float>({1, 2}, {2, 1}));
  CHECK(s.rows == 5);
  CHECK(s.top1_agreement() == doctest::Approx(0.8));
  CHECK(s.cosine_min == doctest::Approx(0.8));
  CHECK(s.snr_db_min == doctest::Approx(10 * std::log10(5.0 / 2)));
  CHECK(s.worst_set == "three");
  CHECK(s.max_rel == doctest::Approx(1.0));  // |1 - 2| / 1 in set three; set two's 1 / 0 is left out
}
