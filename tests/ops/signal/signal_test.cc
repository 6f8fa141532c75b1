// DFT, STFT, windows and MelWeightMatrix: known small transforms, lengths that are not powers of
// two (the Bluestein path), round trips, integer window types and bad inputs.
#include <cmath>
#include <numbers>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Value none() { return Value(); }

// A direct O(n^2) DFT of a real signal, as [n, 2].
std::vector<double> direct_dft(const std::vector<double>& x) {
  const size_t n = x.size();
  std::vector<double> out(2 * n);
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < n; ++j) {
      const double a = -2 * std::numbers::pi * double(j * k % n) / double(n);
      out[2 * k] += x[j] * std::cos(a);
      out[2 * k + 1] += x[j] * std::sin(a);
    }
  return out;
}
}  // namespace

TEST_CASE("DFT matches the direct sum for power-of-two and other lengths") {
  for (int64_t n : {1, 2, 3, 5, 7, 8, 12, 16, 17}) {
    CAPTURE(n);
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = std::sin(double(i) * 1.3) + double(i % 3);
    const Value y = run_node(node("DFT", {"x", "", "axis"}, {"y"}), {tensor<double>({1, n, 1}, x), none(), tensor<int64_t>({}, {1})})[0];
    check_equal(y, tensor<double>({1, n, 2}, direct_dft(x)));
  }
}

TEST_CASE("DFT: table of variants") {
  struct Case { const char* what; Node n; Values in; int64_t opset; Tensor expected; };
  const double h = std::sqrt(3.0) / 2;
  const Case cases[] = {
      // length 3 by hand: [6, -1.5 + 0.866i, -1.5 - 0.866i]
      {"length 3", node("DFT", {"x"}, {"y"}, {attr("axis", int64_t(0))}), {tensor<double>({3, 1}, {1, 2, 3})}, 17,
       tensor<double>({3, 2}, {6, 0, -1.5, h, -1.5, -h})},
      // onesided keeps n/2 + 1 bins
      {"rfft", node("DFT", {"x"}, {"y"}, {attr("axis", int64_t(0)), attr("onesided", int64_t(1))}),
       {tensor<double>({3, 1}, {1, 2, 3})}, 17, tensor<double>({2, 2}, {6, 0, -1.5, h})},
      // dft_length pads with zeros
      {"padded", node("DFT", {"x", "len"}, {"y"}, {attr("axis", int64_t(0))}),
       {tensor<float>({1, 1}, {2}), tensor<int32_t>({}, {3})}, 17, tensor<float>({3, 2}, {2, 0, 2, 0, 2, 0})},
      // inverse of a complex spectrum divides by n
      {"inverse", node("DFT", {"x"}, {"y"}, {attr("axis", int64_t(0)), attr("inverse", int64_t(1))}),
       {tensor<double>({3, 2}, {6, 0, -1.5, h, -1.5, -h})}, 17, tensor<double>({3, 2}, {1, 0, 2, 0, 3, 0})},
      // irfft of an odd-length real signal needs dft_length
      {"irfft odd", node("DFT", {"x", "len", "axis"}, {"y"}, {attr("inverse", int64_t(1)), attr("onesided", int64_t(1))}),
       {tensor<double>({2, 2}, {6, 0, -1.5, h}), tensor<int64_t>({}, {3}), tensor<int64_t>({}, {0})}, 20,
       tensor<double>({3, 1}, {1, 2, 3})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(c.n, c.in, c.opset)[0], c.expected);
  }
}

TEST_CASE("DFT and STFT refuse bad inputs") {
  // last dimension must be 1 or 2
  CHECK_THROWS_AS(run_node(node("DFT", {"x"}, {"y"}), {tensor<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6})}, 20), Error);
  // the last axis is not a signal axis
  CHECK_THROWS_AS(run_node(node("DFT", {"x", "", "axis"}, {"y"}), {tensor<float>({1, 2, 1}, {1, 2}), none(), tensor<int64_t>({}, {-1})}, 20), Error);
  // frame longer than the signal
  CHECK_THROWS_AS(run_node(node("STFT", {"s", "step", "", "len"}, {"y"}),
                           {tensor<float>({1, 2, 1}, {1, 2}), tensor<int64_t>({}, {1}), none(), tensor<int64_t>({}, {3})}, 17),
                  Error);
}

TEST_CASE("STFT with a rectangular frame equals per-frame DFTs") {
  const Value y = run_node(node("STFT", {"s", "step", "", "len"}, {"y"}, {attr("onesided", int64_t(0))}),
                           {tensor<double>({1, 4, 1}, {1, 2, 3, 4}), tensor<int64_t>({}, {2}), none(), tensor<int64_t>({}, {2})}, 17)[0];
  check_equal(y, tensor<double>({1, 2, 2, 2}, {3, 0, -1, 0, 7, 0, -1, 0}));
}

TEST_CASE("windows: periodic, symmetric and integer outputs") {
  struct Case { const char* op; int64_t periodic, dtype, size; Tensor expected; };
  const Case cases[] = {
      {"HannWindow", 1, 11, 4, tensor<double>({4}, {0, 0.5, 1, 0.5})},
      {"HannWindow", 0, 11, 3, tensor<double>({3}, {0, 1, 0})},
      {"HammingWindow", 0, 11, 3, tensor<double>({3}, {4.0 / 46, 1, 4.0 / 46})},
      {"BlackmanWindow", 0, 11, 3, tensor<double>({3}, {0, 1, 0})},
      // integer output types truncate: only the exact peak survives
      {"HannWindow", 1, 6, 4, tensor<int32_t>({4}, {0, 0, 1, 0})},
      {"HannWindow", 1, 1, 0, tensor<float>({0}, {})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    const Node n = node(c.op, {"size"}, {"w"}, {attr("periodic", c.periodic), attr("output_datatype", c.dtype)});
    check_equal(run_node(n, {tensor<int64_t>({}, {c.size})}, 17)[0], c.expected, Tolerance{1e-12, 1e-12});
  }
  CHECK_THROWS_AS(run_node(node("HannWindow", {"size"}, {"w"}), {tensor<int64_t>({}, {-1})}, 17), Error);
  CHECK_THROWS_AS(run_node(node("HannWindow", {"size"}, {"w"}, {attr("output_datatype", int64_t(8))}), {tensor<int64_t>({}, {2})}, 17), Error);
}

TEST_CASE("MelWeightMatrix has one triangular filter per column") {
  const Value y = run_node(node("MelWeightMatrix", {"bins", "dft", "sr", "lo", "hi"}, {"w"}),
                           {tensor<int64_t>({}, {2}), tensor<int64_t>({}, {16}), tensor<int64_t>({}, {16000}),
                            tensor<float>({}, {0}), tensor<float>({}, {8000})}, 17)[0];
  const Tensor& w = y.tensor();
  REQUIRE(w.shape() == Shape{9, 2});
  for (int col = 0; col < 2; ++col) {
    float peak = 0;
    for (int row = 0; row < 9; ++row) peak = std::max(peak, w.data<float>()[row * 2 + col]);
    CHECK(peak == 1.0f);
  }
}
