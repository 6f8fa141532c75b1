// ArgMax / ArgMin: ties (first vs select_last_index), NaN, keepdims, dtypes and bad axes.
#include <cmath>
#include <limits>
#include <random>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("ArgMax and ArgMin") {
  const Tensor x = tensor<float>({2, 3}, {1, 3, 3, 0, -1, 0});
  struct Case { const char* what; const char* op; std::vector<Attribute> attrs; Tensor x; Tensor expected; };
  const Case cases[] = {
      {"default axis 0, keepdims", "ArgMax", {}, x, tensor<int64_t>({1, 3}, {0, 0, 0})},
      {"axis 1, first of ties", "ArgMax", {attr("axis", int64_t(1))}, x, tensor<int64_t>({2, 1}, {1, 0})},
      {"axis -1, last of ties, no keepdims", "ArgMax", {attr("axis", int64_t(-1)), attr("select_last_index", int64_t(1)), attr("keepdims", int64_t(0))}, x,
       tensor<int64_t>({2}, {2, 2})},
      {"ArgMin last of ties", "ArgMin", {attr("axis", int64_t(1)), attr("select_last_index", int64_t(1))}, x, tensor<int64_t>({2, 1}, {0, 1})},
      {"NaN is the extreme", "ArgMin", {}, tensor<float>({3}, {1, NAN, -5}), tensor<int64_t>({1}, {1})},
      {"uint8", "ArgMax", {}, tensor<uint8_t>({3}, {0, 255, 7}), tensor<int64_t>({1}, {1})},
      {"float16", "ArgMin", {}, tensor<float16>({2}, {float16(2.f), float16(-2.f)}), tensor<int64_t>({1}, {1})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(run_node(node(c.op, {"x"}, {"y"}, c.attrs), {c.x}, 13)[0], c.expected);
  }
}

TEST_CASE("ArgMax errors") {
  CHECK_THROWS_AS(run_node(node("ArgMax", {"x"}, {"y"}, {attr("axis", int64_t(1))}), {tensor<float>({2}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_node(node("ArgMax", {"x"}, {"y"}), {tensor<float>({0, 2}, {})}), Error);
}

TEST_CASE("ArgMax/ArgMin of long float rows equal an element-by-element scan (ties, signed zeros, NaN, select_last_index)") {
  std::mt19937 gen(2);
  for (int64_t n : {3, 8, 17, 1000}) {
    std::vector<float> x(size_t(4 * n));
    for (float& v : x) v = float(std::uniform_int_distribution<int>(-5, 5)(gen));  // many ties
    for (int64_t j = 0; j < n; ++j) x[size_t(n + j)] = j % 3 == 0 ? -0.0f : -1.0f;  // row 1: maxima -0 ...
    x[size_t(n + n - 1)] = 0.0f;                                                  // ... and a last +0
    x[size_t(2 * n + n / 2)] = std::numeric_limits<float>::quiet_NaN();            // row 2: a NaN
    x[size_t(2 * n + n - 1)] = std::numeric_limits<float>::quiet_NaN();
    for (const char* op : {"ArgMax", "ArgMin"})
      for (int64_t last : {0, 1}) {
        CAPTURE(n);
        CAPTURE(op);
        CAPTURE(last);
        const Tensor y = run_node(node(op, {"x"}, {"y"}, {attr("axis", int64_t(1)), attr("keepdims", int64_t(0)),
                                                           attr("select_last_index", last)}),
                                  {tensor<float>({4, n}, x)})[0].tensor();
        const bool max = std::string(op) == "ArgMax";
        for (int64_t r = 0; r < 4; ++r) {
          int64_t best = 0;
          for (int64_t j = 1; j < n; ++j) {
            const float a = x[size_t(r * n + best)], b = x[size_t(r * n + j)];
            if (std::isnan(a)) continue;
            if (std::isnan(b) || (max ? b > a : b < a) || (last && b == a)) best = j;
          }
          CHECK(y.data<int64_t>()[r] == best);
        }
      }
  }
}
