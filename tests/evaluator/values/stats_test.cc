// Tensor statistics as dumps and the NaN finder report them.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "refeval/stats.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;

TEST_CASE("stats: min, max and mean over finite elements; NaN and Inf counted with their positions") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const TensorStats s = tensor_stats(tensor<float>({2, 3}, {1, nan, -2, inf, 4, nan}));
  CHECK(s.count == 6);
  CHECK(s.numeric);
  CHECK(s.min == -2);
  CHECK(s.max == 4);
  CHECK(s.mean == doctest::Approx(1.0));
  CHECK(s.nan == 2);
  CHECK(s.inf == 1);
  CHECK(s.first_nonfinite == std::vector<int64_t>{1, 3, 5});
  CHECK(unravel_index(5, {2, 3}) == std::vector<int64_t>{1, 2});
}

TEST_CASE("stats: integers and bools are numeric, strings are not") {
  const TensorStats i = tensor_stats(tensor<int64_t>({3}, {7, -1, 3}));
  CHECK(i.min == -1);
  CHECK(i.max == 7);
  CHECK(i.nan == 0);
  CHECK_FALSE(tensor_stats(tensor<std::string>({1}, {"a"})).numeric);
  CHECK(tensor_stats(tensor<float>({0}, {})).min == 0);  // empty: no finite element
}
