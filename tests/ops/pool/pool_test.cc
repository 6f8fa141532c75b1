// The pools: output geometry (pads, ceil_mode, auto_pad, dilations), count_include_pad, MaxPool's
// Indices with storage_order, LpPool, the global pools, MaxUnpool, MaxRoiPool; dtypes and errors.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "test_util.h"

#include "refeval/threads.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
using V = std::vector<int64_t>;
const Tensor x33 = tensor<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
}  // namespace

TEST_CASE("AveragePool geometry and divisors") {
  struct Case { const char* what; std::vector<Attribute> attrs; Tensor expected; };
  const Case cases[] = {
      {"2x2 windows", {attr("kernel_shape", V{2, 2})}, tensor<float>({1, 1, 2, 2}, {3, 4, 6, 7})},
      {"pads excluded from the divisor", {attr("kernel_shape", V{2, 2}), attr("pads", V{1, 1, 0, 0})},
       tensor<float>({1, 1, 3, 3}, {1, 1.5f, 2.5f, 2.5f, 3, 4, 5.5f, 6, 7})},
      {"count_include_pad=1 counts them", {attr("kernel_shape", V{2, 2}), attr("pads", V{1, 1, 0, 0}), attr("count_include_pad", int64_t(1))},
       tensor<float>({1, 1, 3, 3}, {0.25f, 0.75f, 1.25f, 1.25f, 3, 4, 2.75f, 6, 7})},
      {"ceil_mode adds a partial window", {attr("kernel_shape", V{2, 2}), attr("strides", V{2, 2}), attr("ceil_mode", int64_t(1))},
       tensor<float>({1, 1, 2, 2}, {3, 4.5f, 7.5f, 9})},
      {"floor mode drops it", {attr("kernel_shape", V{2, 2}), attr("strides", V{2, 2})}, tensor<float>({1, 1, 1, 1}, {3})},
      {"SAME_UPPER", {attr("kernel_shape", V{2, 2}), attr("auto_pad", "SAME_UPPER")},
       tensor<float>({1, 1, 3, 3}, {3, 4, 4.5f, 6, 7, 7.5f, 7.5f, 8.5f, 9})},
      {"dilations 2 (19)", {attr("kernel_shape", V{2, 2}), attr("dilations", V{2, 2})}, tensor<float>({1, 1, 1, 1}, {5})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node("AveragePool", {"x"}, {"y"}, c.attrs), {x33})[0], c.expected);
  }
  check_equal(run_node(node("AveragePool", {"x"}, {"y"}, {attr("kernel_shape", V{2})}), {tensor<double>({1, 1, 3}, {1, 2, 4})})[0],
              tensor<double>({1, 1, 2}, {1.5, 3}));
}

TEST_CASE("MaxPool values, Indices and storage_order") {
  const Tensor x = tensor<float>({1, 1, 2, 3}, {1, 9, 3, 4, 5, 8});
  auto out = run_node(node("MaxPool", {"x"}, {"y", "i"}, {attr("kernel_shape", V{2, 2})}), {x});
  check_equal(out[0], tensor<float>({1, 1, 1, 2}, {9, 9}));
  check_equal(out[1], tensor<int64_t>({1, 1, 1, 2}, {1, 1}));
  auto cm = run_node(node("MaxPool", {"x"}, {"y", "i"}, {attr("kernel_shape", V{2, 2}), attr("storage_order", int64_t(1))}), {x});
  check_equal(cm[1], tensor<int64_t>({1, 1, 1, 2}, {2, 2}));  // (0, 1) column-major over 2 rows
  // padding never wins, even over negative values
  check_equal(run_node(node("MaxPool", {"x"}, {"y"}, {attr("kernel_shape", V{2}), attr("pads", V{1, 1})}),
                       {tensor<float>({1, 1, 2}, {-3, -4})})[0], tensor<float>({1, 1, 3}, {-3, -3, -4}));
  // int8 (12) and NaN propagation
  check_equal(run_node(node("MaxPool", {"x"}, {"y"}, {attr("kernel_shape", V{2})}), {tensor<int8_t>({1, 1, 3}, {-5, 7, -128})})[0],
              tensor<int8_t>({1, 1, 2}, {7, 7}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto yn = run_node(node("MaxPool", {"x"}, {"y"}, {attr("kernel_shape", V{2})}), {tensor<float>({1, 1, 2}, {1, nan})})[0];
  CHECK(std::isnan(yn.tensor().data<float>()[0]));
  // dilations and ceil_mode with Indices over a batch of 2 planes
  auto d = run_node(node("MaxPool", {"x"}, {"y", "i"}, {attr("kernel_shape", V{2}), attr("dilations", V{2})}),
                    {tensor<float>({2, 1, 3}, {1, 0, 2, 5, 0, 4})});
  check_equal(d[0], tensor<float>({2, 1, 1}, {2, 5}));
  check_equal(d[1], tensor<int64_t>({2, 1, 1}, {2, 3}));
  CHECK_THROWS_AS(run_node(node("MaxPool", {"x"}, {"y"}, {attr("kernel_shape", V{2}), attr("storage_order", int64_t(2))}),
                           {tensor<float>({1, 1, 2}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_node(node("MaxPool", {"x"}, {"y"}, {attr("kernel_shape", V{2, 2})}), {tensor<float>({1, 1, 2}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_node(node("MaxPool", {"x"}, {"y"}), {tensor<float>({1, 1, 2}, {1, 2})}), Error);  // kernel_shape required
  CHECK_THROWS_AS(run_node(node("MaxPool", {"x"}, {"y"}, {attr("kernel_shape", V{2})}), {tensor<int8_t>({1, 1, 2}, {1, 2})}, 11), Error);
}

TEST_CASE("LpPool and the global pools") {
  check_equal(run_node(node("LpPool", {"x"}, {"y"}, {attr("kernel_shape", V{2})}), {tensor<float>({1, 1, 3}, {3, -4, 0})})[0],
              tensor<float>({1, 1, 2}, {5, 4}));
  check_equal(run_node(node("LpPool", {"x"}, {"y"}, {attr("kernel_shape", V{2}), attr("p", int64_t(1))}),
                       {tensor<float>({1, 1, 3}, {3, -4, 1})})[0], tensor<float>({1, 1, 2}, {7, 5}));
  check_equal(run_node(node("GlobalAveragePool", {"x"}, {"y"}), {x33})[0], tensor<float>({1, 1, 1, 1}, {5}));
  check_equal(run_node(node("GlobalMaxPool", {"x"}, {"y"}), {tensor<double>({1, 2, 2}, {1, 3, -1, -2})})[0],
              tensor<double>({1, 2, 1}, {3, -1}));
  check_equal(run_node(node("GlobalLpPool", {"x"}, {"y"}), {tensor<float>({1, 1, 2}, {3, 4})})[0], tensor<float>({1, 1, 1}, {5}));
  check_equal(run_node(node("GlobalLpPool", {"x"}, {"y"}, {attr("p", int64_t(1))}), {tensor<float16>({1, 1, 2}, {float16(-1.f), float16(2.f)})})[0],
              tensor<float16>({1, 1, 1}, {float16(3.f)}));
  CHECK_THROWS_AS(run_node(node("GlobalAveragePool", {"x"}, {"y"}), {tensor<float>({2}, {1, 2})}), Error);
}

TEST_CASE("MaxUnpool scatters MaxPool's maxima back") {
  const Tensor x = tensor<float>({1, 1, 1, 2}, {9, 8});
  const Tensor i = tensor<int64_t>({1, 1, 1, 2}, {1, 5});
  check_equal(run_node(node("MaxUnpool", {"x", "i"}, {"y"}, {attr("kernel_shape", V{2, 2}), attr("strides", V{2, 2})}), {x, i})[0],
              tensor<float>({1, 1, 2, 4}, {0, 9, 0, 0, 0, 8, 0, 0}));
  check_equal(run_node(node("MaxUnpool", {"x", "i", "s"}, {"y"}, {attr("kernel_shape", V{2, 2}), attr("strides", V{2, 2})}),
                       {x, i, tensor<int64_t>({4}, {1, 1, 3, 4})})[0],
              tensor<float>({1, 1, 3, 4}, {0, 9, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0}));  // indices address the default 2x4 shape
  CHECK_THROWS_AS(run_node(node("MaxUnpool", {"x", "i", "s"}, {"y"}, {attr("kernel_shape", V{2, 2}), attr("strides", V{2, 2})}),
                           {x, i, tensor<int64_t>({4}, {1, 1, 2, 3})}), Error);  // smaller than the default shape
  CHECK_THROWS_AS(run_node(node("MaxUnpool", {"x", "i"}, {"y"}, {attr("kernel_shape", V{2, 2})}), {x, tensor<int64_t>({1, 1, 1, 2}, {1, 99})}), Error);
}

TEST_CASE("MaxRoiPool") {
  const Tensor x = tensor<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // the whole image in 1x1 and 2x2 bins, and a region scaled by 0.5
  check_equal(run_node(node("MaxRoiPool", {"x", "r"}, {"y"}, {attr("pooled_shape", V{1, 1})}), {x, tensor<float>({1, 5}, {0, 0, 0, 2, 2})})[0],
              tensor<float>({1, 1, 1, 1}, {9}));
  check_equal(run_node(node("MaxRoiPool", {"x", "r"}, {"y"}, {attr("pooled_shape", V{2, 2})}), {x, tensor<float>({1, 5}, {0, 0, 0, 2, 2})})[0],
              tensor<float>({1, 1, 2, 2}, {5, 6, 8, 9}));
  check_equal(run_node(node("MaxRoiPool", {"x", "r"}, {"y"}, {attr("pooled_shape", V{1, 1}), attr("spatial_scale", 0.5f)}),
                       {x, tensor<float>({1, 5}, {0, 0, 0, 2, 2})})[0], tensor<float>({1, 1, 1, 1}, {5}));
  CHECK_THROWS_AS(run_node(node("MaxRoiPool", {"x", "r"}, {"y"}, {attr("pooled_shape", V{1, 1})}), {x, tensor<float>({1, 5}, {3, 0, 0, 1, 1})}), Error);
}

TEST_CASE("MaxPool 2-D float fast path equals the generic window walker (run for Indices) bit for bit: NaN payloads, signed zeros, -inf, 1 and 2 threads") {
  std::mt19937 gen(3);
  auto r = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(gen)); };
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0xffc00002u);
  for (int trial = 0; trial < 300; ++trial) {
    V kernel, strides, dilations, pads(4);
    Shape xs{r(1, 2), r(1, 3)};
    for (int d = 0; d < 2; ++d) {
      kernel.push_back(r(1, 4));
      strides.push_back(r(1, 3));
      dilations.push_back(r(1, 2));
      xs.push_back((kernel.back() - 1) * dilations.back() + 1 + r(0, 8));
    }
    // Begin and end pads differ (each below the kernel's extent, as the spec requires).
    for (int d = 0; d < 2; ++d) pads[size_t(d)] = r(0, (kernel[size_t(d)] - 1) / 2), pads[size_t(d + 2)] = r(0, (kernel[size_t(d)] - 1) / 2);
    std::vector<float> values(size_t(shape_size(xs)));
    for (float& v : values) {
      const int64_t pick = r(0, 60);
      v = pick == 0 ? nan_a : pick == 1 ? nan_b : pick == 2 ? -std::numeric_limits<float>::infinity()
        : pick < 12 ? (pick % 2 ? 0.0f : -0.0f) : float(r(-20, 0)) * 0.25f;  // ties at zero are common
    }
    const std::vector<Attribute> attrs{attr("kernel_shape", kernel), attr("strides", strides), attr("dilations", dilations),
                                       attr("pads", pads), attr("ceil_mode", r(0, 1))};
    CAPTURE(trial);
    CAPTURE(shape_to_string(xs));
    const Tensor x = tensor<float>(xs, values);
    const Tensor fast = run_node(node("MaxPool", {"x"}, {"y"}, attrs), {x})[0].tensor();
    set_thread_count(2);
    const Tensor fast2 = run_node(node("MaxPool", {"x"}, {"y"}, attrs), {x})[0].tensor();
    set_thread_count(1);
    const Tensor walker = run_node(node("MaxPool", {"x"}, {"y", "i"}, attrs), {x})[0].tensor();
    REQUIRE(fast.shape() == walker.shape());
    CHECK(std::memcmp(fast.data<float>(), walker.data<float>(), size_t(fast.size()) * sizeof(float)) == 0);
    CHECK(std::memcmp(fast.data<float>(), fast2.data<float>(), size_t(fast.size()) * sizeof(float)) == 0);
  }
  // Enough channels to split across two threads.
  std::vector<float> values(128 * 20 * 20);
  for (float& v : values) v = float(r(-50, 50)) * 0.5f;
  const Tensor x = tensor<float>({1, 128, 20, 20}, values);
  const Node pool = node("MaxPool", {"x"}, {"y"}, {attr("kernel_shape", V{3, 3}), attr("strides", V{2, 2}), attr("pads", V{1, 1, 1, 1})});
  const Tensor one = run_node(pool, {x})[0].tensor();
  set_thread_count(2);
  const Tensor two = run_node(pool, {x})[0].tensor();
  set_thread_count(1);
  CHECK(std::memcmp(one.data<float>(), two.data<float>(), size_t(one.size()) * sizeof(float)) == 0);
}

TEST_CASE("AveragePool and LpPool 2-D (one tap at a time over all outputs) equal a window-by-window oracle") {
  // The oracle sums the window's taps inside the input in kernel order, in double from +0.0, and
  // divides by the inside (or padded-input) count: the kernel must give the same float bits.
  std::mt19937 gen(9);
  auto r = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(gen)); };
  for (int trial = 0; trial < 200; ++trial) {
    V kernel, strides, dilations, pads(4);
    Shape xs{r(1, 2), r(1, 3)};
    for (int d = 0; d < 2; ++d) {
      kernel.push_back(r(1, 4));
      strides.push_back(r(1, 3));
      dilations.push_back(r(1, 2));
      xs.push_back((kernel.back() - 1) * dilations.back() + 1 + r(0, 8));
    }
    for (int d = 0; d < 2; ++d) pads[size_t(d)] = r(0, (kernel[size_t(d)] - 1) / 2), pads[size_t(d + 2)] = r(0, (kernel[size_t(d)] - 1) / 2);
    const int64_t ceil_mode = r(0, 1), include_pad = r(0, 1);
    std::vector<float> values(size_t(shape_size(xs)));
    for (float& v : values) v = float(r(-2000, 2000)) * 0.001f + (r(0, 30) == 0 ? -0.0f : 0.0f);
    const std::vector<Attribute> attrs{attr("kernel_shape", kernel), attr("strides", strides), attr("dilations", dilations),
                                       attr("pads", pads), attr("ceil_mode", ceil_mode), attr("count_include_pad", include_pad)};
    CAPTURE(trial);
    const Tensor x = tensor<float>(xs, values);
    const Tensor y = run_node(node("AveragePool", {"x"}, {"y"}, attrs), {x})[0].tensor();
    const Tensor lp = run_node(node("LpPool", {"x"}, {"y"}, {attr("kernel_shape", kernel), attr("strides", strides),
                                                              attr("dilations", dilations), attr("pads", pads),
                                                              attr("ceil_mode", ceil_mode), attr("p", int64_t(2))}),
                               {x})[0].tensor();
    REQUIRE(y.rank() == 4);
    REQUIRE(lp.shape() == y.shape());
    const int64_t OH = y.dim(2), OW = y.dim(3), H = xs[2], W = xs[3];
    for (int64_t p = 0; p < xs[0] * xs[1]; ++p)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double sum = 0, sq = 0;
          int64_t inside = 0, padded = 0;
          for (int64_t kh = 0; kh < kernel[0]; ++kh)
            for (int64_t kw = 0; kw < kernel[1]; ++kw) {
              const int64_t i = oh * strides[0] - pads[0] + kh * dilations[0], j = ow * strides[1] - pads[1] + kw * dilations[1];
              if (i >= -pads[0] && i < H + pads[2] && j >= -pads[1] && j < W + pads[3]) ++padded;
              if (i < 0 || i >= H || j < 0 || j >= W) continue;
              const double v = values[size_t((p * H + i) * W + j)];
              sum += v, sq += v * v, ++inside;
            }
          const int64_t count = include_pad ? padded : inside;
          const float want = float(count > 0 ? sum / double(count) : 0.0), got = y.data<float>()[(p * OH + oh) * OW + ow];
          if (std::memcmp(&want, &got, sizeof got) != 0) FAIL_CHECK("output " << oh << ", " << ow << ": " << got << " vs " << want);
          CHECK(lp.data<float>()[(p * OH + oh) * OW + ow] == doctest::Approx(std::sqrt(sq)).epsilon(1e-6));
        }
  }
}

TEST_CASE("GlobalAveragePool of large planes equals the exact mean (partial sums and their tails)") {
  for (int64_t hw : {1, 3, 4, 5, 3137}) {
    CAPTURE(hw);
    std::vector<float> x(size_t(2 * hw));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7919 % 2001) - 1000) * 0.125f;  // exact double sums
    const Tensor y = run_node(node("GlobalAveragePool", {"x"}, {"y"}), {tensor<float>({1, 2, hw, 1}, x)})[0].tensor();
    for (int64_t c = 0; c < 2; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < hw; ++i) sum += x[size_t(c * hw + i)];
      CHECK(y.data<float>()[c] == float(sum / double(hw)));
    }
  }
}
