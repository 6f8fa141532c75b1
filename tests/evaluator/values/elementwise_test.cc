// The broadcasting walker visits every output element with the right input offsets.
#include "refeval/elementwise.h"
#include "test_util.h"

using namespace refeval;
using refeval::testing::tensor;

TEST_CASE("broadcast shapes follow numpy") {
  CHECK(broadcast_shapes({{2, 1, 3}, {4, 1}}) == Shape{2, 4, 3});
  CHECK(broadcast_shapes({{}, {5}}) == Shape{5});
  CHECK(broadcast_shapes({{0, 3}, {1, 3}}) == Shape{0, 3});
  CHECK_THROWS_WITH_AS(broadcast_shapes({{2, 3}, {4}}), doctest::Contains("(2, 3), (4,) cannot be broadcast"), Error);
}

TEST_CASE("map_binary matches a literal index computation on mixed broadcasts, on one thread and two") {
  // The last three are split by rows across two threads (more outputs than kParallelElements),
  // the first starting mid-way along its outer dimensions.
  const Shape shapes[][2] = {{{2, 3, 4}, {3, 1}}, {{1, 3, 1}, {2, 1, 4}}, {{4}, {}}, {{2, 1}, {2, 1}}, {{3, 0}, {1}},
                             {{40, 5, 300}, {5, 1}}, {{40000, 1}, {1, 3}}, {{1, 32, 2304}, {2304}}};
  for (int threads : {1, 2})
  for (const auto& pair : shapes) {
    set_thread_count(threads);
    CAPTURE(threads);
    Tensor a(DType::Int64, pair[0]), b(DType::Int64, pair[1]);
    for (int64_t i = 0; i < a.size(); ++i) a.data<int64_t>()[i] = i;
    for (int64_t i = 0; i < b.size(); ++i) b.data<int64_t>()[i] = 1000 * i;
    const Tensor z = map_binary<int64_t, int64_t>(a, b, [](int64_t x, int64_t y) { return x + y; });
    const Shape out = broadcast_shapes({pair[0], pair[1]});
    REQUIRE(z.shape() == out);
    auto offset = [&](const Shape& s, const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : idx[idx.size() - s.size() + d]);
      return off;
    };
    std::vector<int64_t> idx(out.size(), 0);
    for (int64_t flat = 0; flat < z.size(); ++flat) {
      int64_t rest = flat;
      for (size_t d = out.size(); d-- > 0;) { idx[d] = rest % out[d]; rest /= out[d]; }
      REQUIRE(z.data<int64_t>()[flat] == a.data<int64_t>()[offset(pair[0], idx)] + b.data<int64_t>()[offset(pair[1], idx)]);
    }
  }
  set_thread_count(1);
}
