// Randomized checks of the strided kernels against naive oracles: Slice against an index-by-index
// walk of the spec's clamping rules and Transpose against direct index arithmetic.
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
// The indices the spec's Slice visits on range(n): negatives get n added, then start is clamped to
// [0, n] (step > 0) or [0, n - 1] (step < 0) and end to [0, n] or [-1, n - 1]. Unlike Python, a
// start still before the beginning with a negative step keeps element 0.
std::vector<int64_t> spec_slice(int64_t n, int64_t start, int64_t end, int64_t step) {
  auto fix = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -n ? lo - 1 : v + n;  // avoids overflow at INT64_MIN
    return std::max(lo, std::min(v, hi));
  };
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = fix(start, 0, n), e = fix(end, 0, n); i < e; i += step) out.push_back(i);
  } else if (n > 0) {
    for (int64_t i = fix(start, 0, n - 1), e = fix(end, -1, n - 1); i > e; i += step) out.push_back(i);
  }
  return out;
}
}  // namespace

TEST_CASE("Slice agrees with a walk of the spec rules on random 1-D cases") {
  std::mt19937 rng(7);
  const int64_t extremes[] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = rng() % 7;
    auto pick = [&]() { return rng() % 10 == 0 ? extremes[rng() % 2] : int64_t(rng() % 21) - 10; };
    const int64_t start = pick(), end = pick();
    int64_t step = int64_t(rng() % 7) - 3;
    if (step == 0) step = 1;
    std::vector<int32_t> data(static_cast<size_t>(n));
    std::iota(data.begin(), data.end(), 0);
    std::vector<int32_t> expected;
    for (int64_t i : spec_slice(n, start, end, step)) expected.push_back(int32_t(i));
    CAPTURE(n); CAPTURE(start); CAPTURE(end); CAPTURE(step);
    auto out = run_node(node("Slice", {"x", "s", "e", "a", "p"}, {"y"}),
                        {tensor<int32_t>({n}, data), tensor<int64_t>({1}, {start}), tensor<int64_t>({1}, {end}),
                         tensor<int64_t>({1}, {0}), tensor<int64_t>({1}, {step})});
    check_equal(out[0], tensor<int32_t>({int64_t(expected.size())}, expected));
  }
}

TEST_CASE("Transpose agrees with index arithmetic for every 4-D permutation") {
  const Shape s{2, 3, 1, 4};
  std::vector<double> data(24);
  std::iota(data.begin(), data.end(), 0.0);
  const Tensor x = tensor<double>(s, data);
  std::vector<int64_t> perm{0, 1, 2, 3};
  do {
    CAPTURE(perm[0]); CAPTURE(perm[1]); CAPTURE(perm[2]); CAPTURE(perm[3]);
    Shape os(4);
    for (size_t i = 0; i < 4; ++i) os[i] = s[size_t(perm[i])];
    std::vector<double> expected;
    int64_t idx[4];
    for (idx[0] = 0; idx[0] < os[0]; ++idx[0])
      for (idx[1] = 0; idx[1] < os[1]; ++idx[1])
        for (idx[2] = 0; idx[2] < os[2]; ++idx[2])
          for (idx[3] = 0; idx[3] < os[3]; ++idx[3]) {
            int64_t in[4];
            for (size_t i = 0; i < 4; ++i) in[perm[i]] = idx[i];
            expected.push_back(data[size_t(((in[0] * s[1] + in[1]) * s[2] + in[2]) * s[3] + in[3])]);
          }
    auto out = run_node(node("Transpose", {"x"}, {"y"}, {attr("perm", perm)}), {x});
    check_equal(out[0], tensor<double>(os, expected));
  } while (std::next_permutation(perm.begin(), perm.end()));
}
