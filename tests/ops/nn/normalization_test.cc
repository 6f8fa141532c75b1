// BatchNormalization (inference, training, spatial=0), Instance/Group/RMS/MeanVariance/Lp
// normalization and LRN: small hand-computed cases, versions and errors.
#include <cmath>

#include <random>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor f(Shape s, std::vector<float> v) { return tensor<float>(std::move(s), std::move(v)); }
}  // namespace

TEST_CASE("BatchNormalization inference and training mode") {
  const Tensor x = f({2, 1, 2}, {1, 3, 5, 7});  // channel 0 holds 1, 3, 5, 7: mean 4, variance 5
  const Tensor one = f({1}, {1}), zero = f({1}, {0});
  // inference with the given statistics: (x - 1) / sqrt(4) * 2 + 1
  auto inf = run_node(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {attr("epsilon", 0.0f)}),
                      {x, f({1}, {2}), one, one, f({1}, {4})}, 15);
  check_equal(inf[0], f({2, 1, 2}, {1, 3, 5, 7}));
  // training: batch statistics normalise, the running ones move by momentum
  auto tr = run_node(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "rm", "rv"},
                          {attr("epsilon", 0.0f), attr("momentum", 0.5f), attr("training_mode", int64_t(1))}),
                     {x, one, zero, zero, one}, 15);
  const float r5 = 1 / std::sqrt(5.f);
  check_equal(tr[0], f({2, 1, 2}, {-3 * r5, -r5, r5, 3 * r5}));
  check_equal(tr[1], f({1}, {2}));
  check_equal(tr[2], f({1}, {3}));
}

TEST_CASE("BatchNormalization old versions: spatial=0 and legacy attributes") {
  const Tensor x = f({2, 1, 2}, {1, 3, 5, 7});
  // spatial=0 (v7): one parameter per element of X.shape[1:]
  auto out = run_node(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {attr("spatial", int64_t(0)), attr("epsilon", 0.0f)}),
                      {x, f({1, 2}, {1, 1}), f({1, 2}, {0, 0}), f({1, 2}, {1, 3}), f({1, 2}, {4, 16})}, 7);
  check_equal(out[0], f({2, 1, 2}, {0, 0, 2, 1}));
  // v1 reads consumed_inputs and is_test
  auto v1 = run_node(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"},
                          {attr("consumed_inputs", std::vector<int64_t>{0, 0, 0, 1, 1}), attr("is_test", int64_t(1)), attr("epsilon", 0.0f)}),
                     {x, f({1}, {1}), f({1}, {0}), f({1}, {0}), f({1}, {1})}, 1);
  check_equal(v1[0], x);
  CHECK_THROWS_AS(run_node(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}), {x, f({2}, {1, 1}), f({1}, {0}), f({1}, {0}), f({1}, {1})}, 15), Error);
}

TEST_CASE("InstanceNormalization and GroupNormalization") {
  const Tensor x = f({1, 2, 2}, {0, 2, 4, 8});
  const float r = 1 / std::sqrt(1 + 1e-5f), r4 = 2 / std::sqrt(4 + 1e-5f);
  // per channel: channel 0 {0, 2}, channel 1 {4, 8}
  check_equal(run_node(node("InstanceNormalization", {"x", "s", "b"}, {"y"}), {x, f({2}, {1, 2}), f({2}, {0, 1})}, 22)[0],
              f({1, 2, 2}, {-r, r, 1 - 2 * r4, 1 + 2 * r4}));
  // one group over both channels: mean 3.5, variance 8.75
  const float g = 1 / std::sqrt(8.75f + 1e-5f);
  check_equal(run_node(node("GroupNormalization", {"x", "s", "b"}, {"y"}, {attr("num_groups", int64_t(1))}),
                       {x, f({2}, {1, 2}), f({2}, {0, 1})}, 21)[0],
              f({1, 2, 2}, {-3.5f * g, -1.5f * g, 1 + 1 * g, 1 + 9 * g}));
  // version 18: scale and bias per group
  check_equal(run_node(node("GroupNormalization", {"x", "s", "b"}, {"y"}, {attr("num_groups", int64_t(2))}),
                       {x, f({2}, {1, 2}), f({2}, {0, 1})}, 18)[0],
              f({1, 2, 2}, {-r, r, 1 - 2 * r4, 1 + 2 * r4}));
  CHECK_THROWS_AS(run_node(node("GroupNormalization", {"x", "s", "b"}, {"y"}, {attr("num_groups", int64_t(3))}),
                           {x, f({3}, {1, 1, 1}), f({3}, {0, 0, 0})}, 21), Error);
}

TEST_CASE("RMSNormalization, MeanVarianceNormalization, LpNormalization, LRN") {
  // RMS over the last axis: sqrt(mean(9, 16)) = sqrt(12.5)
  const float rms = 1 / std::sqrt(12.5f);
  check_equal(run_node(node("RMSNormalization", {"x", "s"}, {"y"}, {attr("epsilon", 0.0f)}), {f({1, 2}, {3, 4}), f({2}, {1, 2})}, 23)[0],
              f({1, 2}, {3 * rms, 8 * rms}));
  // MVN over axis 1 only
  check_equal(run_node(node("MeanVarianceNormalization", {"x"}, {"y"}, {attr("axes", std::vector<int64_t>{1})}), {f({2, 2}, {1, 3, 5, 5})}, 13)[0],
              f({2, 2}, {-1, 1, 0, 0}));
  // L1 and L2 along the last axis
  check_equal(run_node(node("LpNormalization", {"x"}, {"y"}, {attr("p", int64_t(1))}), {f({2}, {1, -3})})[0], f({2}, {.25f, -.75f}));
  check_equal(run_node(node("LpNormalization", {"x"}, {"y"}, {attr("axis", int64_t(0))}), {f({2, 1}, {3, 4})})[0], f({2, 1}, {.6f, .8f}));
  check_equal(run_node(node("LpNormalization", {"x"}, {"y"}), {f({2, 2}, {0, 0, 3, 4})})[0], f({2, 2}, {0, 0, .6f, .8f}));  // zero norm
  CHECK_THROWS_AS(run_node(node("LpNormalization", {"x"}, {"y"}, {attr("p", int64_t(3))}), {f({1}, {1})}), Error);
  // LRN size 3 over 2 channels: both see x0^2 + x1^2 = 5
  const float d = std::pow(1 + 1.f / 3 * 5, 0.5f);
  check_equal(run_node(node("LRN", {"x"}, {"y"}, {attr("size", int64_t(3)), attr("alpha", 1.0f), attr("beta", 0.5f)}), {f({1, 2}, {1, 2})}, 13)[0],
              f({1, 2}, {1 / d, 2 / d}));
  CHECK_THROWS_AS(run_node(node("LRN", {"x"}, {"y"}), {f({1, 2}, {1, 2})}), Error);  // size is required
}

TEST_CASE("BatchNormalization inference and InstanceNormalization on larger inputs match the formulas in double") {
  std::mt19937 gen(8);
  std::uniform_real_distribution<float> u(-3, 3);
  const int64_t N = 2, C = 5, H = 7, W = 9, inner = H * W;
  const size_t nc = static_cast<size_t>(C);
  std::vector<float> x(static_cast<size_t>(N * C * inner)), s(nc), b(nc), m(nc), v(nc);
  for (float& e : x) e = u(gen);
  for (int64_t c = 0; c < C; ++c) s[size_t(c)] = u(gen), b[size_t(c)] = u(gen), m[size_t(c)] = u(gen), v[size_t(c)] = std::abs(u(gen)) + 0.1f;
  const Tensor xt = tensor<float>({N, C, H, W}, x), st = tensor<float>({C}, s), bt = tensor<float>({C}, b);
  // BatchNormalization: (x - mean) / sqrt(var + eps) * scale + B, rounded once: the same bits.
  const Tensor y = run_node(node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {attr("epsilon", 1e-3f)}),
                            {xt, st, bt, tensor<float>({C}, m), tensor<float>({C}, v)})[0].tensor();
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = size_t(int64_t(i) / inner % C);
    want[i] = float((double(x[i]) - m[c]) / std::sqrt(double(v[c]) + double(1e-3f)) * s[c] + b[c]);
  }
  check_equal(y, tensor<float>({N, C, H, W}, want), Tolerance{0, 0});
  // InstanceNormalization: statistics of each (n, c) plane.
  const Tensor yi = run_node(node("InstanceNormalization", {"x", "s", "b"}, {"y"}, {attr("epsilon", 1e-3f)}), {xt, st, bt})[0].tensor();
  for (int64_t p = 0; p < N * C; ++p) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) sum += x[size_t(p * inner + i)];
    const double mean = sum / double(inner);
    for (int64_t i = 0; i < inner; ++i) sq += (x[size_t(p * inner + i)] - mean) * (x[size_t(p * inner + i)] - mean);
    const double inv = 1 / std::sqrt(sq / double(inner) + double(1e-3f));
    for (int64_t i = 0; i < inner; ++i)
      want[size_t(p * inner + i)] = float((x[size_t(p * inner + i)] - mean) * inv * s[size_t(p % C)] + b[size_t(p % C)]);
  }
  check_equal(yi, tensor<float>({N, C, H, W}, want), Tolerance{1e-6, 1e-6});
}
