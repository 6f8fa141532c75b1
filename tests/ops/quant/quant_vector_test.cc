// QuantizeLinear and DequantizeLinear between float and 8/16-bit integers with per-tensor and
// per-axis scales (their vector loops) against an oracle written here from the spec, in double:
// y = saturate(round_half_even(float(x / scale)) + zero_point), NaN to 0; x' = (x - zp) * scale.
// Random values with ties, NaN, infinities and values past the integer range, on 1-D to 3-D
// inputs and every axis.
#include <cmath>
#include <limits>
#include <random>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {

template <class Q>
void check_type(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-400.f, 400.f);
  std::uniform_int_distribution<int> zq(int(std::numeric_limits<Q>::lowest()) / 2, int(std::numeric_limits<Q>::max()) / 2);
  const Shape shape = {3, 5, 7};
  const int64_t n = shape_size(shape);
  for (int64_t axis : {-100, 0, 1, 2, -1}) {  // -100: one scale for the tensor
    CAPTURE(axis);
    const int64_t A = axis == -100 ? 1 : shape[size_t(axis < 0 ? axis + 3 : axis)];
    const int64_t inner = axis == -100 ? n : axis == 0 ? 35 : axis == 1 ? 7 : 1;
    std::vector<float> x(static_cast<size_t>(n)), s(static_cast<size_t>(A));
    std::vector<Q> z(static_cast<size_t>(A));
    for (int64_t a = 0; a < A; ++a) s[size_t(a)] = 0.25f * float(1 + a), z[size_t(a)] = Q(zq(rng));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = i % 5 == 0 ? std::round(u(rng)) * 0.125f : u(rng);  // ties x.5 of 0.25
    x[1] = std::numeric_limits<float>::quiet_NaN(), x[2] = INFINITY, x[3] = -INFINITY, x[4] = 1e30f, x[5] = -0.0f;
    const Tensor xt = tensor<float>(shape, x);
    const Tensor st = axis == -100 ? tensor<float>({}, s) : tensor<float>({A}, s);
    const Tensor zt = axis == -100 ? tensor<Q>({}, z) : tensor<Q>({A}, z);
    std::vector<Attribute> attrs;
    if (axis != -100) attrs.push_back(attr("axis", axis));
    const Tensor y = run_node(node("QuantizeLinear", {"x", "s", "z"}, {"y"}, attrs), {xt, st, zt})[0].tensor();
    std::vector<Q> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t a = (i / inner) % A;
      const double q = double(float(double(x[size_t(i)]) / double(s[size_t(a)])));  // the division in float
      double r = std::nearbyint(q) + double(z[size_t(a)]);
      if (std::isnan(r)) r = 0;
      want[size_t(i)] = Q(std::clamp(r, double(std::numeric_limits<Q>::lowest()), double(std::numeric_limits<Q>::max())));
    }
    check_equal(y, tensor<Q>(shape, want), Tolerance{0, 0});
    // Back to float: (q - zp) * scale.
    const Tensor back = run_node(node("DequantizeLinear", {"q", "s", "z"}, {"y"}, attrs), {y, st, zt})[0].tensor();
    std::vector<float> want_back(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t a = (i / inner) % A;
      want_back[size_t(i)] = float((double(want[size_t(i)]) - double(z[size_t(a)])) * double(s[size_t(a)]));
    }
    check_equal(back, tensor<float>(shape, want_back), Tolerance{0, 0});
  }
}

}  // namespace

TEST_CASE("QuantizeLinear / DequantizeLinear float <-> 8 and 16-bit integers, per tensor and per axis, match the oracle") {
  std::mt19937 rng(5);
  check_type<uint8_t>(rng);
  check_type<int8_t>(rng);
  check_type<uint16_t>(rng);
  check_type<int16_t>(rng);
}

TEST_CASE("DynamicQuantizeLinear on long inputs (lanes and tails, NaN, all-positive) matches the spec's formulas") {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-3.f, 7.f);
  for (int64_t n : {1, 7, 8, 9, 1001}) {
    for (bool positive : {false, true}) {
      CAPTURE(n);
      CAPTURE(positive);
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = positive ? std::abs(u(rng)) + 1.f : u(rng);
      if (n > 8) x[5] = std::numeric_limits<float>::quiet_NaN();
      const Values out = run_node(node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}), {tensor<float>({n}, x)});
      float lo = 0, hi = 0;
      for (float v : x)
        if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      const float scale = (hi - lo) / 255.0f;
      const double zp = std::nearbyint(std::clamp(double(0.0f - lo / scale), 0.0, 255.0));
      std::vector<uint8_t> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        double r = std::nearbyint(double(x[i] / scale)) + zp;
        if (std::isnan(r)) r = 0;
        want[i] = uint8_t(std::clamp(r, 0.0, 255.0));
      }
      CHECK(out[1].tensor().data<float>()[0] == scale);
      CHECK(out[2].tensor().data<uint8_t>()[0] == uint8_t(zp));
      check_equal(out[0], tensor<uint8_t>({n}, want), Tolerance{0, 0});
    }
  }
}
