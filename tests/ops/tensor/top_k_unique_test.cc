// TopK and Unique: ties, NaN, smallest, integer types, axis forms, the four Unique outputs.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "test_util.h"
#include "isa_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

TEST_CASE("TopK keeps the lower index first among ties, largest and smallest") {
  testing::for_each_isa([&](Isa) {
    const Tensor x = tensor<int32_t>({5}, {3, 1, 3, 2, 1});
    const Tensor k = tensor<int64_t>({1}, {3});
    auto big = run_node(node("TopK", {"x", "k"}, {"v", "i"}), {x, k});
    check_equal(big[0], tensor<int32_t>({3}, {3, 3, 2}));
    check_equal(big[1], tensor<int64_t>({3}, {0, 2, 3}));
    auto small = run_node(node("TopK", {"x", "k"}, {"v", "i"}, {attr("largest", int64_t(0))}), {x, k});
    check_equal(small[0], tensor<int32_t>({3}, {1, 1, 2}));
    check_equal(small[1], tensor<int64_t>({3}, {1, 4, 3}));
  });
}

TEST_CASE("TopK: NaN is the largest, axis 0, version 1 attribute k, bad k") {
  testing::for_each_isa([&](Isa) {
    const float nan = std::nanf("");
    auto out = run_node(node("TopK", {"x", "k"}, {"v", "i"}), {tensor<float>({3}, {1, nan, 2}), tensor<int64_t>({1}, {2})});
    CHECK(std::isnan(out[0].tensor().data<float>()[0]));
    check_equal(out[1], tensor<int64_t>({2}, {1, 2}));
    auto v1 = run_node(node("TopK", {"x"}, {"v", "i"}, {attr("k", int64_t(1)), attr("axis", int64_t(0))}),
                       {tensor<float>({2, 2}, {1, 4, 3, 2})}, 1);
    check_equal(v1[0], tensor<float>({1, 2}, {3, 4}));
    check_equal(v1[1], tensor<int64_t>({1, 2}, {1, 0}));
    CHECK_THROWS_AS(run_node(node("TopK", {"x", "k"}, {"v", "i"}), {tensor<float>({2}, {1, 2}), tensor<int64_t>({1}, {3})}), Error);
    CHECK_THROWS_AS(run_node(node("TopK", {"x", "k"}, {"v", "i"}), {tensor<float>({2}, {1, 2}), tensor<int64_t>({1}, {-1})}), Error);
  });
}

TEST_CASE("TopK over long float rows (the 16-wide block scan) equals a stable sort: ties, NaN, largest and smallest") {
  testing::for_each_isa([&](Isa) {
    // Values from a small set so that ties are everywhere, NaN now and then, rows of 1000 and 37
    // (blocks of 16 and a tail); k from 1 to past the row's NaN count.
    std::mt19937 gen(5);
    for (int trial = 0; trial < 40; ++trial) {
      const int64_t rows = 3, n = trial % 2 ? 1000 : 37, k = 1 + trial % 23;
      std::vector<float> x(size_t(rows * n));
      for (float& v : x) {
        const int pick = int(gen() % 64);
        v = pick == 0 ? std::nanf("") : float(int(gen() % 40) - 20) * 0.5f;
      }
      for (bool largest : {true, false}) {
        CAPTURE(trial);
        CAPTURE(largest);
        auto out = run_node(node("TopK", {"x", "k"}, {"v", "i"}, {attr("largest", int64_t(largest))}),
                            {tensor<float>({rows, n}, x), tensor<int64_t>({1}, {k})});
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<int64_t> order(static_cast<size_t>(n));
          std::iota(order.begin(), order.end(), 0);
          const float* row = x.data() + r * n;
          // NaN first when largest (it is the largest value) and last when smallest; ties by index.
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            const float va = row[a], vb = row[b];
            if (std::isnan(va) || std::isnan(vb)) return largest ? std::isnan(va) && !std::isnan(vb) : !std::isnan(va) && std::isnan(vb);
            return largest ? va > vb : va < vb;
          });
          for (int64_t j = 0; j < k; ++j) CHECK(out[1].tensor().data<int64_t>()[r * k + j] == order[size_t(j)]);
        }
      }
    }
  });
}

TEST_CASE("Unique sorted and unsorted, all four outputs") {
  const Tensor x = tensor<int64_t>({6}, {2, 1, 1, 3, 4, 3});
  auto s = run_node(node("Unique", {"x"}, {"y", "i", "inv", "c"}), {x});
  check_equal(s[0], tensor<int64_t>({4}, {1, 2, 3, 4}));
  check_equal(s[1], tensor<int64_t>({4}, {1, 0, 3, 4}));
  check_equal(s[2], tensor<int64_t>({6}, {1, 0, 0, 2, 3, 2}));
  check_equal(s[3], tensor<int64_t>({4}, {2, 1, 2, 1}));
  auto u = run_node(node("Unique", {"x"}, {"y", "i", "inv", "c"}, {attr("sorted", int64_t(0))}), {x});
  check_equal(u[0], tensor<int64_t>({4}, {2, 1, 3, 4}));
  check_equal(u[1], tensor<int64_t>({4}, {0, 1, 3, 4}));
  check_equal(u[2], tensor<int64_t>({6}, {0, 1, 1, 2, 3, 2}));
  check_equal(u[3], tensor<int64_t>({4}, {1, 2, 2, 1}));
}

TEST_CASE("Unique along an axis and on strings") {
  const Tensor m = tensor<float>({3, 2}, {1, 2, 0, 5, 1, 2});
  auto out = run_node(node("Unique", {"x"}, {"y", "i", "inv", "c"}, {attr("axis", int64_t(0))}), {m});
  check_equal(out[0], tensor<float>({2, 2}, {0, 5, 1, 2}));
  check_equal(out[2], tensor<int64_t>({3}, {1, 0, 1}));
  auto cols = run_node(node("Unique", {"x"}, {"y"}, {attr("axis", int64_t(-1))}), {tensor<int32_t>({2, 3}, {1, 0, 1, 2, 0, 2})});
  check_equal(cols[0], tensor<int32_t>({2, 2}, {0, 1, 0, 2}));
  auto str = run_node(node("Unique", {"x"}, {"y"}), {tensor<std::string>({3}, {"b", "a", "b"})});
  check_equal(str[0], tensor<std::string>({2}, {"a", "b"}));
}

TEST_CASE("TopK of few elements out of many equals a stable sort's first k (ties, NaN, a middle axis)") {
  testing::for_each_isa([&](Isa) {
    // x is (2, 300, 3); TopK along axis 1 of k = 7: values repeat (ties), a NaN in one row, ten in another.
    std::vector<float> x(2 * 300 * 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 23) - 11);
    x[5 * 3 + 1] = std::nanf("");
    for (int64_t i = 100; i < 110; ++i) x[size_t((300 + i) * 3 + 2)] = std::nanf("");  // more NaNs than k in one row
    for (int64_t largest : {1, 0}) {
      CAPTURE(largest);
      auto out = run_node(node("TopK", {"x", "k"}, {"v", "i"}, {attr("axis", int64_t(1)), attr("largest", largest)}),
                          {tensor<float>({2, 300, 3}, x), tensor<int64_t>({1}, {7})});
      std::vector<float> want_v;
      std::vector<int64_t> want_i(2 * 7 * 3);
      want_v.resize(want_i.size());
      for (int64_t o = 0; o < 2; ++o)
        for (int64_t j = 0; j < 3; ++j) {
          std::vector<int64_t> order(300);
          std::iota(order.begin(), order.end(), 0);
          auto key = [&](int64_t a) { return x[size_t((o * 300 + a) * 3 + j)]; };
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            const float va = key(a), vb = key(b);  // NaN first when largest, last when smallest
            if (std::isnan(va) || std::isnan(vb)) return largest ? std::isnan(va) && !std::isnan(vb) : std::isnan(vb) && !std::isnan(va);
            return largest ? va > vb : va < vb;
          });
          for (int64_t i = 0; i < 7; ++i) {
            want_i[size_t((o * 7 + i) * 3 + j)] = order[size_t(i)];
            want_v[size_t((o * 7 + i) * 3 + j)] = key(order[size_t(i)]);
          }
        }
      check_equal(out[1], tensor<int64_t>({2, 7, 3}, want_i));
      check_equal(out[0], tensor<float>({2, 7, 3}, want_v));
    }
  });
}
