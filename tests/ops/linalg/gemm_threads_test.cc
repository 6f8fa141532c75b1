// The GEMM behind MatMul, Gemm and the convolutions gives the same bits on any thread count
// (refeval/threads.h): work is split over output blocks, never over the reduction.
#include <doctest/doctest.h>

#include <cstring>

#include "refeval/threads.h"
#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::node;

TEST_CASE("MatMul: bit-identical results on 1, 2 and 4 threads, above the size where OpenBLAS takes over") {
  auto ramp = [](Shape s, float scale) {
    std::vector<float> v(size_t(shape_size(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 7919 % 1009) - 504) * scale;
    return tensor<float>(std::move(s), v);
  };
  const Tensor a = ramp({2, 37, 300}, 1e-3f), b = ramp({300, 517}, 3e-3f);
  std::vector<Tensor> results;
  for (int threads : {1, 2, 4}) {
    set_thread_count(threads);
    results.push_back(run_node(node("MatMul", {"a", "b"}, {"y"}), {a, b})[0].tensor());
  }
  set_thread_count(1);
  for (const Tensor& r : results) {
    REQUIRE(r.shape() == Shape{2, 37, 517});
    CHECK(std::memcmp(r.raw_data(), results[0].raw_data(), r.nbytes()) == 0);
  }
  CHECK(thread_count() == 1);
  set_thread_count(0);
  CHECK(thread_count() >= 1);  // 0: every core
  set_thread_count(1);
}
